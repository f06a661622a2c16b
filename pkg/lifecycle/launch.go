package lifecycle

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/offerings"
)

// The launch stage: provisioning and consolidation record claims (Pending); this stage launches
// each one it sees, and records the instance (Launched) or the failure (Failed, with when its
// pods are planned again). Every launch of a claim uses the claim's UID as the EC2 client token,
// so a launch a restart or a crash interrupted, launched again here, gets the instance EC2 may
// already have started instead of a second one.

// Demand says which claims pods still want (pkg/provisioning implements it from its ledger and
// the workloads).
type Demand interface {
	// Wanted says whether a pod the claim was planned for still waits for a node, or a workload
	// it was planned for still creates pods: an unwanted claim is dropped, not launched.
	Wanted(c *v1alpha1.Claim) bool
	// Waits says whether pods wait on the claim now.
	Waits(claim string) bool
	// Waiting lists the claim's pods that still wait for a node: they are told what became of
	// its launch.
	Waiting(c *v1alpha1.Claim) []*corev1.Pod
}

// Offerings resolves a pool's network (pkg/offerings' Cache implements it). The offerings a
// launch finds without capacity are recorded on the claim, and every replica's provisioning
// leaves them out of its plans from there.
type Offerings interface {
	Network(ctx context.Context, pool *config.Pool) (offerings.Network, error)
}

// retryAfterFailure is how long pods of a launch that failed for another reason (an API or
// configuration error) wait before they are planned again, so a persistent error is not a hot
// loop.
const retryAfterFailure = 30 * time.Second

// maxLaunchesInFlight bounds the claims launched at once: a burst of pending pods becomes many
// claims, and EC2 throttles an account's CreateFleet calls; claims past the bound wait their
// turn, still Pending and still counted as in-flight capacity.
const maxLaunchesInFlight = 8

// launchTimeout bounds one launch, so a hung cloud call cannot stall the stage.
const launchTimeout = 2 * time.Minute

// Backoff after EC2 pushed back (cloud.Transient: throttling or 5xx, which the SDK has already
// retried): the pods of every claim that failed so wait before they are planned again, from
// transientBackoffMin doubling to transientBackoffMax with up to 20% jitter, until a launch
// succeeds. It is shared by all claims: the pressure is the account's, not one claim's.
const (
	transientBackoffMin = 2 * time.Second
	transientBackoffMax = 2 * time.Minute
	transientBackoffKey = "ec2"
)

// Backoff after EC2 refused a pool's launch as misconfigured or not permitted: the pods of the
// claims that failed so wait from refusalBackoffMin doubling to refusalBackoffMax before they are
// planned again, until a launch of the pool succeeds. Such a refusal lasts until someone changes a
// setting, and another offering does not help: the wait keeps a broken pool from launching in a
// loop, and the claim's event and status say what to fix.
const (
	refusalBackoffMin = 30 * time.Second
	refusalBackoffMax = 5 * time.Minute
)

// launches are the claims being launched or waiting for a worker. Claims go to EC2 in the order
// they came, those pods wait on before those only kept for pods still to come (a batch planned
// with a rollout's pods to come is mostly the latter): a pod never waits behind them for its node.
type launches struct {
	mu sync.Mutex
	// inflight names every claim queued or launching: a claim is launched once at a time.
	inflight map[string]bool
	// waited and kept hold the queued claims, those with pods and those only kept for pods still
	// to come; running counts the workers (at most maxLaunchesInFlight).
	waited, kept []queuedLaunch
	running      int
	workers      sync.WaitGroup

	backoffOnce sync.Once
	backoff     *flowcontrol.Backoff
	// refusals is the wait after refusals, by pool (see refusalBackoffMin).
	refusalsOnce sync.Once
	refusals     *flowcontrol.Backoff
	// waitMu makes nextWait's check and doubling one step.
	waitMu sync.Mutex

	// slots bound the launches talking to EC2 at once, single claims' and gangs' together.
	slotsOnce sync.Once
	slots     chan struct{}
}

// takeSlot waits for a launch slot; false if ctx ends first.
func (ls *launches) takeSlot(ctx context.Context) bool {
	ls.slotsOnce.Do(func() { ls.slots = make(chan struct{}, maxLaunchesInFlight) })
	select {
	case ls.slots <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// giveSlot returns a slot takeSlot took.
func (ls *launches) giveSlot() { <-ls.slots }

// queuedLaunch is a claim waiting for a worker; key is its entry in inflight (the claim's name,
// or its gang's key: a gang is launched as one).
type queuedLaunch struct {
	ctx   context.Context
	claim *v1alpha1.Claim
	key   string
}

// mark puts the claims in the in-flight set and returns the names it added.
func (ls *launches) mark(claims []*v1alpha1.Claim) []string {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.inflight == nil {
		ls.inflight = map[string]bool{}
	}
	var added []string
	for _, cl := range claims {
		if !ls.inflight[cl.Name] {
			ls.inflight[cl.Name] = true
			added = append(added, cl.Name)
		}
	}
	return added
}

// unmark takes the names mark added out of the in-flight set.
func (ls *launches) unmark(names []string) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, name := range names {
		delete(ls.inflight, name)
	}
}

// transientBackoff is the shared wait after transient EC2 failures.
func (c *Controller) transientBackoff() *flowcontrol.Backoff {
	ls := &c.launches
	ls.backoffOnce.Do(func() { ls.backoff = c.newBackoff(transientBackoffMin, transientBackoffMax) })
	return ls.backoff
}

// refusalBackoff is the wait, by pool, after launches EC2 refused as misconfigured or not
// permitted.
func (c *Controller) refusalBackoff() *flowcontrol.Backoff {
	ls := &c.launches
	ls.refusalsOnce.Do(func() { ls.refusals = c.newBackoff(refusalBackoffMin, refusalBackoffMax) })
	return ls.refusals
}

// newBackoff is a backoff from min doubling to max with up to 20% jitter, on the controller's
// clock when that is a full one (it stamps each update with its own clock's time, and the waves
// are told apart by the controller's).
func (c *Controller) newBackoff(min, max time.Duration) *flowcontrol.Backoff {
	b := flowcontrol.NewBackOffWithJitter(min, max, 0.2)
	if full, ok := c.clock().(clock.Clock); ok {
		b.Clock = full
	}
	return b
}

// nextWait is key's wait in backoff after a failure now. Claims failing together are one wave:
// the wait doubles once per wave, not once per claim. The check and the doubling are one step,
// or workers failing at once would each double it.
func (c *Controller) nextWait(backoff *flowcontrol.Backoff, key string) time.Duration {
	ls := &c.launches
	ls.waitMu.Lock()
	defer ls.waitMu.Unlock()
	if now := c.clock().Now(); !backoff.IsInBackOffSinceUpdate(key, now) {
		backoff.Next(key, now)
	}
	return backoff.Get(key)
}

// InFlight reports whether a launch of the claim is queued or running in this process.
func (c *Controller) InFlight(claim string) bool {
	c.launches.mu.Lock()
	defer c.launches.mu.Unlock()
	return c.launches.inflight[claim]
}

// launchAsync launches a recorded claim in the background unless a launch of it is already
// queued or running in this process; it says whether it queued one.
func (c *Controller) launchAsync(ctx context.Context, cl *v1alpha1.Claim) bool {
	ls := &c.launches
	ls.mu.Lock()
	defer ls.mu.Unlock()
	key := cl.Name
	if cl.Spec.Gang != nil {
		key = gangKey(cl.Spec.Gang)
	}
	if ls.inflight[key] || ls.inflight[cl.Name] || ctx.Err() != nil {
		return false
	}
	if ls.inflight == nil {
		ls.inflight = map[string]bool{}
	}
	ls.inflight[key] = true
	q := queuedLaunch{ctx: ctx, claim: cl, key: key}
	if len(cl.Spec.Pods) > 0 {
		ls.waited = append(ls.waited, q)
	} else {
		ls.kept = append(ls.kept, q)
	}
	if ls.running < maxLaunchesInFlight {
		ls.running++
		ls.workers.Add(1)
		go c.launchWorker()
	}
	return true
}

// stop waits for the workers once the contexts of their launches are done: no launch starts
// after (launchAsync refuses a done context under mu), and those queued return at once.
func (ls *launches) stop() {
	// An empty critical section: every launchAsync that took mu before has added its worker.
	ls.mu.Lock()
	ls.mu.Unlock() //nolint:staticcheck // SA2001: the lock is the point
	ls.workers.Wait()
}

// launchWorker launches queued claims, waited-on first (see nextLaunch), until none is left.
func (c *Controller) launchWorker() {
	ls := &c.launches
	defer ls.workers.Done()
	for {
		ls.mu.Lock()
		next, ok := c.nextLaunch()
		if !ok {
			ls.running--
			ls.mu.Unlock()
			return
		}
		ls.mu.Unlock()
		c.launch(next.ctx, next.claim)
		ls.mu.Lock()
		delete(ls.inflight, next.key)
		ls.mu.Unlock()
	}
}

// nextLaunch takes the next claim to launch: the oldest of those that had pods when they were
// queued, then the oldest of the others that pods have come to wait on since (a rollout's pods
// fill the claims planned for them before they existed), then the oldest of the rest. Callers
// hold launches.mu (Demand never calls back into the controller).
func (c *Controller) nextLaunch() (queuedLaunch, bool) {
	ls := &c.launches
	take := func(q *[]queuedLaunch, i int) queuedLaunch {
		next := (*q)[i]
		*q = slices.Delete(*q, i, i+1)
		return next
	}
	if len(ls.waited) > 0 {
		return take(&ls.waited, 0), true
	}
	for i, q := range ls.kept {
		if c.Demand.Waits(q.claim.Name) {
			return take(&ls.kept, i), true
		}
	}
	if len(ls.kept) > 0 {
		return take(&ls.kept, 0), true
	}
	return queuedLaunch{}, false
}

// launch launches a recorded claim and records the result. It is safe to call again for the
// same claim: the client token makes EC2 return the first launch's instance.
func (c *Controller) launch(ctx context.Context, cl *v1alpha1.Claim) {
	if cl.Spec.Gang != nil {
		c.launchGang(ctx, cl)
		return
	}
	logger := klog.FromContext(ctx).WithValues("claim", cl.Name)
	ctx = klog.NewContext(ctx, logger)
	// The claim as it is now: gone, deleted, or launched by another replica while it waited its
	// turn, it is not launched (a deleted claim's instance would only be terminated again). Every
	// claim queued came from the cache, so one the cache no longer has is gone.
	cur, ok := c.Claims.Get(cl.Name)
	if !ok || cur.DeletionTimestamp != nil || !pending(cur) || c.dropUnwanted(ctx, cur) {
		return
	}
	cl = cur
	if ctx.Err() != nil {
		return // shutting down: the claim stays Pending and is resumed
	}
	if !c.launches.takeSlot(ctx) {
		return // shutting down: the claim stays Pending and is resumed
	}
	defer c.launches.giveSlot()
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	inst, price, offeringErrs, err := c.createInstance(ctx, cl)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down (or timed out) mid-call: EC2 may have acted. The claim stays Pending
		// and is resumed with the same client token, which returns any instance launched.
		logger.Info("Launch interrupted; it will be resumed", "err", err)
	case err != nil:
		c.launchFailed(ctx, cl, err, offeringErrs)
	default:
		c.launched(ctx, cl, inst, price, offeringErrs)
	}
}

// dropUnwanted deletes the claim, and says so, if nobody wants it any more (Demand.Wanted): every
// pod it was planned for is gone (deleted, or placed elsewhere) before it launched, as when a
// rollout is undone during a restart, and no workload it was planned for still creates pods.
// Had an attempt before a crash launched after all, its instance is tagged with this claim, and
// the liveness stage's orphan collection terminates it once the claim is gone.
func (c *Controller) dropUnwanted(ctx context.Context, cl *v1alpha1.Claim) bool {
	if len(cl.Spec.Pods) == 0 && len(cl.Spec.ExpectedPods) == 0 || c.Demand.Wanted(cl) {
		return false
	}
	logger := klog.FromContext(ctx)
	if err := c.Claims.Delete(ctx, cl.Name); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Cannot drop claim whose pods are gone; will retry")
		return true
	}
	logger.Info("Dropped claim: its pods are gone before launch", "pods", len(cl.Spec.Pods), "expectedPods", len(cl.Spec.ExpectedPods))
	return true
}

// launchFailed records the claim Failed, with when its pods are planned again: at once when
// offerings without capacity or the account's spot quota were the cause, since the claim records
// them and every replica leaves them out of its plans; after a backoff for any other failure. If
// the failure cannot be recorded the pods stay on the claim, which is launched again with the
// same client token.
func (c *Controller) launchFailed(ctx context.Context, cl *v1alpha1.Claim, err error, offeringErrs []cloud.OfferingError) {
	delay, result, capacityType := c.retryAfter(cl, err, offeringErrs)
	metrics.Launches.WithLabelValues(cl.Spec.Pool, "", cl.Spec.CapacityType, result).Inc()
	klog.FromContext(ctx).Info("Launch failed; pods will be planned again", "err", err, "kind", cloud.KindOf(err), "after", delay)
	c.recordFailed(ctx, cl, err, offeringErrs, delay, capacityType, nil)
}

// retryAfter says when the pods of a claim whose launch failed with err are planned again, the
// launch result for the metrics, and the capacity type found unavailable ("" if none).
func (c *Controller) retryAfter(cl *v1alpha1.Claim, err error, offeringErrs []cloud.OfferingError) (time.Duration, string, string) {
	spot := cl.Spec.CapacityType == string(cloud.Spot)
	switch kind := cloud.KindOf(err); {
	case spot && kind == cloud.KindQuota:
		// The account's spot quota: no spot offering launches until it frees up, whatever
		// the type or zone. Spot is left out of plans for a while and the pods are planned
		// again at once, onto on-demand where their pools allow it, as Karpenter falls back.
		return 0, metrics.ResultQuota, "SpotQuota"
	case spot && errors.Is(err, cloud.ErrSpotNotEnabled):
		// The account cannot launch spot until someone creates the spot service-linked role:
		// left out alike, and the claim's event says how to create it.
		return 0, metrics.ResultError, "SpotNotEnabled"
	case kind == cloud.KindTransient:
		return c.nextWait(c.transientBackoff(), transientBackoffKey), metrics.ResultFailed, ""
	case kind == cloud.KindConfiguration, kind == cloud.KindPermission:
		// No offering is to blame (none is marked): another would be refused alike.
		return c.nextWait(c.refusalBackoff(), cl.Spec.Pool), metrics.ResultError, ""
	case kind == cloud.KindQuota:
		return retryAfterFailure, metrics.ResultQuota, ""
	case len(offeringErrs) > 0:
		return 0, metrics.ResultInsufficientCapacity, ""
	}
	return retryAfterFailure, metrics.ResultFailed, ""
}

// recordFailed records the claim Failed, its pods planned again after delay, and tells them. inst,
// if set, is an instance the claim launched that was then given up (a gang that could not be
// whole): recorded, the sweep terminates it should the caller's termination have failed.
func (c *Controller) recordFailed(ctx context.Context, cl *v1alpha1.Claim, err error, offeringErrs []cloud.OfferingError, delay time.Duration, capacityType string, inst *cloud.Instance) {
	logger := klog.FromContext(ctx)
	retryAt := metav1.NewTime(c.clock().Now().Add(delay))
	updated, werr := c.updateStatus(ctx, cl, func(st *v1alpha1.ClaimStatus) {
		st.Phase, st.Message, st.RetryAt = v1alpha1.ClaimFailed, err.Error(), &retryAt
		st.UnavailableOfferings, st.CapacityTypeUnavailable = unavailable(offeringErrs), capacityType
		if inst != nil {
			st.InstanceID, st.InstanceType, st.Zone, st.CapacityType = inst.ID, inst.Type, inst.Zone, string(inst.CapacityType)
		}
	})
	switch {
	case apierrors.IsNotFound(werr):
	case werr != nil:
		logger.Error(werr, "Cannot mark claim failed; it will be resumed")
	case updated != nil:
		c.Recorder.Eventf(updated, nil, corev1.EventTypeWarning, "LaunchFailed", "Launch", "launch failed (%s), pods planned again at %s: %v",
			failureKind(err, offeringErrs), retryAt.UTC().Format(time.RFC3339), err)
		for _, p := range c.Demand.Waiting(updated) {
			c.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "claim %s: launch failed: %v", cl.Name, err)
		}
	}
}

// failureKind names what failed a launch for its event: "insufficient capacity" when offerings
// had none, else the kind of EC2's error (quota, configuration, permission, transient, other).
func failureKind(err error, offeringErrs []cloud.OfferingError) string {
	if kind := cloud.KindOf(err); kind != cloud.KindOther || len(offeringErrs) == 0 {
		return kind.String()
	}
	return "insufficient capacity"
}

// unavailable is what the claim records of the offerings a launch found without capacity.
func unavailable(errs []cloud.OfferingError) []v1alpha1.UnavailableOffering {
	var out []v1alpha1.UnavailableOffering
	for _, e := range errs {
		out = append(out, v1alpha1.UnavailableOffering{InstanceType: e.InstanceType, Zone: e.Zone, Code: e.Code})
	}
	return out
}

// launched records the claim's instance (and the offerings EC2 had no capacity for before it);
// provisioning, following the claim, sends its pods back to the scheduler.
func (c *Controller) launched(ctx context.Context, cl *v1alpha1.Claim, inst *cloud.Instance, price float64, offeringErrs []cloud.OfferingError) {
	logger := klog.FromContext(ctx)
	c.transientBackoff().Reset(transientBackoffKey)
	c.refusalBackoff().Reset(cl.Spec.Pool)
	metrics.Launches.WithLabelValues(cl.Spec.Pool, inst.Type, string(inst.CapacityType), metrics.ResultLaunched).Inc()
	now := metav1.NewTime(c.clock().Now())
	updated, err := c.updateStatus(ctx, cl, func(st *v1alpha1.ClaimStatus) {
		*st = v1alpha1.ClaimStatus{
			Phase: v1alpha1.ClaimLaunched, InstanceID: inst.ID, InstanceType: inst.Type, Zone: inst.Zone,
			CapacityType: string(inst.CapacityType), PricePerHour: strconv.FormatFloat(price, 'f', 4, 64),
			ProviderID: inst.ProviderID(), NodeName: inst.PrivateDNSName, LaunchedAt: &now,
			Request: st.Request, UnavailableOfferings: unavailable(offeringErrs),
		}
	})
	if err != nil {
		// The instance exists and is tagged with the claim; the claim stays Pending and is
		// launched again with the same token, which finds it, so nothing is lost.
		logger.Error(err, "Cannot record launch; will resume", "instance", inst.ID)
		return
	}
	if updated == nil {
		return // no longer Pending: another replica's launch of it recorded first
	}
	pods := c.Demand.Waiting(updated)
	logger.Info("Launched", "instance", inst.ID, "type", inst.Type, "zone", inst.Zone, "capacityType", inst.CapacityType, "pricePerHour", price, "pods", len(pods))
	for _, p := range pods {
		c.Recorder.Eventf(p, nil, corev1.EventTypeNormal, "Launched", "Provisioning", "claim %s: launched %s %s in %s (%s, $%.4f/h) as node %s for this pod",
			cl.Name, inst.Type, inst.ID, inst.Zone, inst.CapacityType, price, inst.PrivateDNSName)
	}
}

// updateStatus changes a Pending claim's status on its newest version: its spec may have grown
// (pods added to in-flight capacity) since the caller read it. It starts from the cached claim
// (cl until the cache has it), so a write costs a read only when that was not the newest. A
// claim no longer Pending (another replica's launch recorded first) is left as it is: the
// answer is nil, and no error.
func (c *Controller) updateStatus(ctx context.Context, cl *v1alpha1.Claim, mutate func(*v1alpha1.ClaimStatus)) (*v1alpha1.Claim, error) {
	start, ok := c.Claims.Get(cl.Name)
	if !ok {
		start = cl
	}
	var updated *v1alpha1.Claim
	err := c.Claims.UpdateFrom(ctx, start, func(cur *v1alpha1.Claim) error {
		if !pending(cur) {
			updated = nil
			return nil
		}
		mutate(&cur.Status)
		var err error
		updated, err = c.Claims.UpdateStatus(ctx, cur)
		return err
	})
	return updated, err
}

// resumeInterruptedLaunches launches again, when this replica takes over, every claim recorded
// but not yet launched.
func (c *Controller) resumeInterruptedLaunches(ctx context.Context) {
	for _, cl := range c.Claims.List() {
		if pending(cl) && cl.DeletionTimestamp == nil && c.launchAsync(ctx, cl) {
			klog.FromContext(ctx).Info("Resuming interrupted launch", "claim", cl.Name)
		}
	}
}

// resumeStuckLaunch launches a Pending claim again once it has waited resumeAfter with no launch
// of it queued or running in this process.
func (c *Controller) resumeStuckLaunch(ctx context.Context, cl *v1alpha1.Claim, now time.Time) {
	if now.Sub(cl.CreationTimestamp.Time) > resumeAfter && c.launchAsync(ctx, cl) {
		klog.FromContext(ctx).Info("Resuming stuck launch", "claim", cl.Name)
	}
}

// pending says whether the claim is recorded but not launched.
func pending(cl *v1alpha1.Claim) bool {
	return cl.Status.Phase == "" || cl.Status.Phase == v1alpha1.ClaimPending
}
