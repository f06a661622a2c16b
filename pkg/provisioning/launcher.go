package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// retryAfterFailure is how long pods of a launch that failed for another reason (an API or
// configuration error) wait before they are planned again, so a persistent error is not a hot
// loop.
const retryAfterFailure = 30 * time.Second

// maxLaunchesInFlight bounds the claims this process launches at once (LaunchAsync's workers): a
// burst of pending pods becomes many claims, and EC2 throttles an account's CreateFleet calls;
// claims past the bound wait their turn, still Pending and still counted as in-flight capacity.
const maxLaunchesInFlight = 8

// Backoff after EC2 pushed back (cloud.Transient: throttling or 5xx, which the SDK has already
// retried): the pods of every claim that failed so wait before they are planned again, from
// transientBackoffMin doubling to transientBackoffMax with up to 20% jitter, until a launch
// succeeds. It is shared by all claims: the pressure is the account's, not one claim's.
const (
	transientBackoffMin = 2 * time.Second
	transientBackoffMax = 2 * time.Minute
	transientBackoffKey = "ec2"
)

// Launcher records planned nodes as claims and launches them. Every launch of a claim uses the
// claim's UID as the EC2 client token, so launching a claim again (after a crash, or a retry)
// returns the instance already launched instead of a second one.
type Launcher struct {
	Options

	limits poolLimits

	mu       sync.Mutex
	inflight map[string]bool
	// waited and kept hold the claims LaunchAsync was given, those with pods waiting and those
	// only kept for pods still to come, launched by up to maxLaunchesInFlight workers (running
	// counts them): every claim a pod waits on, by then, goes before any of the others.
	waited, kept []queuedLaunch
	running      int

	// backoff is the shared wait after transient EC2 failures (see transientBackoffMin).
	backoff *flowcontrol.Backoff
}

// NewLauncher builds a Launcher.
func NewLauncher(o Options) *Launcher {
	return &Launcher{
		Options: o, inflight: map[string]bool{},
		backoff: flowcontrol.NewBackOffWithJitter(transientBackoffMin, transientBackoffMax, 0.2),
	}
}

// Record records a planned node as a claim and reserves its pods on it; the caller launches it.
// It returns nil (after telling the pods why) if the claim cannot be recorded or the pool is at
// its limit.
//
// Pods their controllers have not created yet (expected.go) are not the claim's pods: the claim
// counts them per workload (shares names each pod's workload) in its ExpectedPods.
func (l *Launcher) Record(ctx context.Context, n *planning.PlannedNode, shares map[types.UID]rollout.Workload) *v1alpha1.Claim {
	logger := klog.FromContext(ctx)
	t := n.Template
	claim := newClaim(n)
	uids := make([]types.UID, 0, len(n.Pods))
	// Named after every pod planned onto it, those still to come included, so two nodes planned
	// for pods still to come never share a name.
	var named []v1alpha1.PodRef
	for _, p := range n.Pods {
		ref := v1alpha1.PodRef{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: string(p.Pod.UID)}
		named = append(named, ref)
		if isExpected(p) {
			continue
		}
		claim.Spec.Pods = append(claim.Spec.Pods, ref)
		uids = append(uids, p.Pod.UID)
	}
	claim.Spec.PodCount = len(claim.Spec.Pods)
	claim.Spec.ExpectedPods = expectedOn(n, shares)
	var created *v1alpha1.Claim
	_, err := l.limits.admit(ctx, l, t.Pool, claim.Spec.InstanceTypes, func() (string, error) {
		var err error
		created, err = l.createClaim(ctx, claim, podsKey(named))
		if err != nil {
			return "", err
		}
		return created.Name, nil
	})
	if err != nil {
		logger.Info("No launch; pods will be retried", "pool", t.Pool.Name, "err", err, "after", retryAfterFailure)
		pods := make([]*corev1.Pod, 0, len(n.Pods))
		for _, p := range n.Pods {
			if isExpected(p) {
				continue
			}
			l.Recorder.Eventf(p.Pod, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "no launch: %v", err)
			pods = append(pods, p.Pod)
		}
		l.clock().AfterFunc(retryAfterFailure, func() { l.Activate(pods) })
		return nil
	}
	l.Ledger.Add(created.Name, "", uids)
	return created
}

// newClaim is the claim of a planned node, without its pods.
func newClaim(n *planning.PlannedNode) *v1alpha1.Claim {
	t := n.Template
	claim := &v1alpha1.Claim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: t.Pool.Name + "-", Labels: map[string]string{v1alpha1.LabelPool: t.Pool.Name},
			Annotations: map[string]string{v1alpha1.AnnotationPoolHash: t.Pool.LaunchHash()},
			// A deleted claim's instance is drained and terminated before the claim goes.
			Finalizers: []string{v1alpha1.FinalizerTermination}},
		Spec: v1alpha1.ClaimSpec{
			Pool:         t.Pool.Name,
			CapacityType: string(t.Offering.CapacityType),
			Zone:         t.Offering.Zone,
			PodCount:     len(n.Pods),
			Resources:    t.Allocatable,
			Daemons:      daemonsOn(t),
		},
	}
	for _, alt := range n.Alternatives {
		claim.Spec.InstanceTypes = append(claim.Spec.InstanceTypes, alt.Type.Name)
	}
	return claim
}

// daemonsOn names the DaemonSets whose pods the plan counted on a node of t.
func daemonsOn(t *planning.Template) []v1alpha1.DaemonPod {
	var out []v1alpha1.DaemonPod
	for _, d := range t.Daemons {
		ds := metav1.GetControllerOfNoCopy(d)
		if ds == nil {
			continue
		}
		out = append(out, v1alpha1.DaemonPod{Namespace: d.Namespace, Name: ds.Name, UID: string(ds.UID),
			Requests: resourcehelper.PodRequests(d, resourcehelper.PodResourcesOptions{})})
	}
	return out
}

// RecordReplacement records a planned node launched to replace running nodes (consolidation):
// no pods wait for it (they run on the old nodes until those drain), and it names the nodes it
// replaces. The caller launches it.
func (l *Launcher) RecordReplacement(ctx context.Context, n *planning.PlannedNode, replaces []string, count int) (*v1alpha1.Claim, error) {
	claim := newClaim(n)
	claim.Spec.PodCount = 0
	claim.Spec.Replacement = &v1alpha1.Replacement{Nodes: replaces, Claims: count}
	var created *v1alpha1.Claim
	_, err := l.limits.admit(ctx, l, n.Template.Pool, claim.Spec.InstanceTypes, func() (string, error) {
		var err error
		// Generated names: one decision may record several replacements for the same nodes,
		// and consolidation finds the replacements of a node by their spec.
		created, err = l.Claims.Create(ctx, claim)
		if err != nil {
			return "", err
		}
		return created.Name, nil
	})
	return created, err
}

// launchTimeout bounds one launch, so a hung cloud call cannot stall provisioning.
const launchTimeout = 2 * time.Minute

// queuedLaunch is a claim waiting in LaunchAsync's queue.
type queuedLaunch struct {
	ctx   context.Context
	claim *v1alpha1.Claim
}

// LaunchAsync launches a recorded claim in the background unless a launch of it is already
// running in this process. Claims are launched in the order they are given, those with pods
// waiting before those only kept for pods still to come (a batch planned with a rollout's pods
// to come is mostly the latter): a pod never waits behind them for its node.
func (l *Launcher) LaunchAsync(ctx context.Context, c *v1alpha1.Claim) {
	if !l.begin(c.Name) {
		return
	}
	l.mu.Lock()
	if len(c.Spec.Pods) > 0 {
		l.waited = append(l.waited, queuedLaunch{ctx: ctx, claim: c})
	} else {
		l.kept = append(l.kept, queuedLaunch{ctx: ctx, claim: c})
	}
	start := l.running < maxLaunchesInFlight
	if start {
		l.running++
	}
	l.mu.Unlock()
	if start {
		go l.work()
	}
}

// work launches queued claims, waited-on first (see dequeue), until both queues are empty.
func (l *Launcher) work() {
	for {
		l.mu.Lock()
		next, ok := l.dequeue()
		if !ok {
			l.running--
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		l.launchClaim(next.ctx, next.claim)
	}
}

// dequeue takes the next claim to launch: the oldest of those that had pods when they were
// queued, then the oldest of the others that pods have come to wait on since (a rollout's pods
// fill the claims planned for them before they existed), then the oldest of the rest. Callers
// hold l.mu (the ledger never calls back into the launcher under its own lock).
func (l *Launcher) dequeue() (queuedLaunch, bool) {
	take := func(q *[]queuedLaunch, i int) queuedLaunch {
		next := (*q)[i]
		*q = slices.Delete(*q, i, i+1)
		return next
	}
	if len(l.waited) > 0 {
		return take(&l.waited, 0), true
	}
	for i, q := range l.kept {
		if l.Ledger.Waits(q.claim.Name) {
			return take(&l.kept, i), true
		}
	}
	if len(l.kept) > 0 {
		return take(&l.kept, 0), true
	}
	return queuedLaunch{}, false
}

// Launch launches a recorded claim and records the result. It is safe to call again for the
// same claim: the client token makes EC2 return the first launch's instance.
func (l *Launcher) Launch(ctx context.Context, c *v1alpha1.Claim) {
	if l.begin(c.Name) {
		l.launchClaim(ctx, c)
	}
}

func (l *Launcher) begin(claim string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.inflight[claim] {
		return false
	}
	l.inflight[claim] = true
	return true
}

func (l *Launcher) launchClaim(ctx context.Context, c *v1alpha1.Claim) {
	logger := klog.FromContext(ctx).WithValues("claim", c.Name)
	ctx = klog.NewContext(ctx, logger)
	defer func() {
		l.mu.Lock()
		delete(l.inflight, c.Name)
		l.mu.Unlock()
	}()
	if l.dropUnwanted(ctx, c) {
		return
	}
	if ctx.Err() != nil {
		return // shutting down: the claim stays Pending and is resumed
	}
	ctx, cancel := context.WithTimeout(ctx, launchTimeout)
	defer cancel()
	inst, price, offeringErrs, err := l.launch(ctx, c)
	l.Offerings.MarkFailed(cloud.CapacityType(c.Spec.CapacityType), offeringErrs)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down (or timed out) mid-call: EC2 may have acted. The claim stays Pending
		// and is resumed with the same client token, which returns any instance launched.
		logger.Info("Launch interrupted; it will be resumed", "err", err)
	case err != nil:
		l.launchFailed(ctx, c, err, len(offeringErrs) > 0)
	default:
		l.launched(ctx, c, inst, price)
	}
}

// dropUnwanted deletes the claim, and says so, if every pod it was planned for is gone (deleted,
// or placed elsewhere) before it launched, as when a rollout is undone during a restart, and no
// workload it was planned for still creates pods (one scaled back before the launch): no node is
// launched that nobody waits for. Had an attempt before a crash launched after all, its instance
// is tagged with this claim, and the garbage collector terminates it once the claim is gone.
func (l *Launcher) dropUnwanted(ctx context.Context, c *v1alpha1.Claim) bool {
	if len(c.Spec.Pods) == 0 && len(c.Spec.ExpectedPods) == 0 || len(l.claimPods(c)) > 0 || l.stillExpected(c) {
		return false
	}
	logger := klog.FromContext(ctx)
	if err := l.Claims.Delete(ctx, c.Name); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Cannot drop claim whose pods are gone; will retry")
		return true
	}
	logger.Info("Dropped claim: its pods are gone before launch", "pods", len(c.Spec.Pods), "expectedPods", len(c.Spec.ExpectedPods))
	return true
}

// launchFailed fails the claim after its launch failed, so that its pods are planned again:
// at once when offerings without capacity (offeringsFailed) or the account's spot quota were
// the cause, since those are now left out of plans; after a backoff for any other failure.
func (l *Launcher) launchFailed(ctx context.Context, c *v1alpha1.Claim, err error, offeringsFailed bool) {
	delay, result := retryAfterFailure, metrics.ResultFailed
	switch spot := c.Spec.CapacityType == string(cloud.Spot); {
	case spot && cloud.KindOf(err) == cloud.KindQuota:
		// The account's spot quota: no spot offering launches until it frees up, whatever
		// the type or zone. Spot is left out of plans for a while and the pods are planned
		// again at once, onto on-demand where their pools allow it, as Karpenter falls back.
		l.Offerings.MarkCapacityTypeUnavailable(cloud.Spot, "SpotQuota")
		delay, result = 0, metrics.ResultQuota
	case cloud.Transient(err):
		// Claims failing together are one wave of pressure: the wait doubles once per wave.
		if now := l.clock().Now(); !l.backoff.IsInBackOffSinceUpdate(transientBackoffKey, now) {
			l.backoff.Next(transientBackoffKey, now)
		}
		delay = l.backoff.Get(transientBackoffKey)
	case offeringsFailed:
		delay, result = 0, metrics.ResultInsufficientCapacity
	}
	metrics.Launches.WithLabelValues(c.Spec.Pool, "", c.Spec.CapacityType, result).Inc()
	klog.FromContext(ctx).Info("Launch failed; pods will be planned again", "err", err, "after", delay)
	pods := l.claimPods(c)
	l.fail(ctx, c, err.Error(), delay)
	for _, p := range pods {
		l.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "claim %s: launch failed: %v", c.Name, err)
	}
}

// launched records the claim's instance and announces it to the claim's pods, sending them back
// to the scheduler.
func (l *Launcher) launched(ctx context.Context, c *v1alpha1.Claim, inst *cloud.Instance, price float64) {
	logger := klog.FromContext(ctx)
	l.backoff.Reset(transientBackoffKey)
	metrics.Launches.WithLabelValues(c.Spec.Pool, inst.Type, string(inst.CapacityType), metrics.ResultLaunched).Inc()
	now := metav1.Now()
	updated, err := l.updateStatus(ctx, c, func(st *v1alpha1.ClaimStatus) {
		*st = v1alpha1.ClaimStatus{
			Phase: v1alpha1.ClaimLaunched, InstanceID: inst.ID, InstanceType: inst.Type, Zone: inst.Zone,
			CapacityType: string(inst.CapacityType), PricePerHour: strconv.FormatFloat(price, 'f', 4, 64),
			ProviderID: inst.ProviderID(), NodeName: inst.PrivateDNSName, LaunchedAt: &now,
			Request: st.Request,
		}
	})
	if err != nil {
		// The instance exists and is tagged with the claim; the lifecycle controller finds it
		// again by launching with the same token, so nothing is lost.
		logger.Error(err, "Cannot record launch; will resume", "instance", inst.ID)
		return
	}
	// Pods may have been added to the claim while it launched: announce to all of them.
	c = updated
	pods := l.claimPods(c)
	l.Ledger.SetNodeName(c.Name, inst.PrivateDNSName)
	logger.Info("Launched", "instance", inst.ID, "type", inst.Type, "zone", inst.Zone, "capacityType", inst.CapacityType, "pricePerHour", price, "pods", len(pods))
	for _, p := range pods {
		l.Recorder.Eventf(p, nil, corev1.EventTypeNormal, "Launched", "Provisioning", "claim %s: launched %s %s in %s (%s, $%.4f/h) as node %s for this pod",
			c.Name, inst.Type, inst.ID, inst.Zone, inst.CapacityType, price, inst.PrivateDNSName)
	}
	l.Activate(pods)
}

func (l *Launcher) launch(ctx context.Context, c *v1alpha1.Claim) (*cloud.Instance, float64, []cloud.OfferingError, error) {
	pool := l.Args.Pool(c.Spec.Pool)
	if pool == nil {
		return nil, 0, nil, fmt.Errorf("pool %q is no longer configured", c.Spec.Pool)
	}
	req, err := l.request(ctx, c, pool)
	if err != nil {
		return nil, 0, nil, err
	}
	var overrides []cloud.Override
	for _, it := range c.Spec.InstanceTypes {
		for _, s := range req.SubnetIDs {
			overrides = append(overrides, cloud.Override{InstanceType: it, SubnetID: s})
		}
	}
	res, err := l.Cloud.Launch(ctx, cloud.LaunchRequest{
		ClientToken:      string(c.UID),
		CapacityType:     cloud.CapacityType(c.Spec.CapacityType),
		Overrides:        overrides,
		Image:            pool.AMI,
		ImageID:          req.ImageID,
		InstanceProfile:  pool.InstanceProfile,
		SecurityGroupIDs: req.SecurityGroupIDs,
		NodeLabels:       nodeshape.NodeLabels(pool, c.Spec.CapacityType),
		NodeTaints:       nodeshape.RegistrationTaints(pool),
		Tags:             nodeshape.Tags(l.Args.ClusterName, pool.Name, c.Name),
		TemplateTags:     nodeshape.TemplateTags(pool),
	})
	if err != nil {
		return nil, 0, nil, err
	}
	if res.Instance == nil {
		msgs := make([]string, 0, len(res.Errors))
		for _, e := range res.Errors {
			msgs = append(msgs, e.Error())
		}
		return nil, 0, res.Errors, fmt.Errorf("no offering could be launched: %s", strings.Join(msgs, "; "))
	}
	return res.Instance, l.price(ctx, res.Instance), res.Errors, nil
}

// request returns the claim's launch request as its first attempt resolved it: the image and
// network are resolved from the pool once, and recorded on the claim before anything is sent,
// so that every later attempt with the claim's client token (a retry, or the resume after a
// crash that lost EC2's answer) sends the same request and gets the first attempt's instance.
// Resolved anew, an image alias released meanwhile or a changed subnet would make EC2 refuse
// the token (IdempotentParameterMismatch), which the provider can only answer by searching
// for the instance by its tags.
func (l *Launcher) request(ctx context.Context, c *v1alpha1.Claim, pool *config.Pool) (*v1alpha1.LaunchRequest, error) {
	if c.Status.Request != nil {
		return c.Status.Request, nil
	}
	nw, err := l.Offerings.Network(ctx, pool)
	if err != nil {
		return nil, err
	}
	var subnets []string
	for _, s := range nw.Subnets {
		if s.Zone == c.Spec.Zone {
			subnets = append(subnets, s.ID)
		}
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("pool %s has no subnet in %s", pool.Name, c.Spec.Zone)
	}
	image, err := l.Cloud.ResolveImage(ctx, pool.AMI, c.Spec.InstanceTypes)
	if err != nil {
		return nil, err
	}
	resolved := &v1alpha1.LaunchRequest{ImageID: image, SubnetIDs: subnets, SecurityGroupIDs: slices.Clone(nw.Groups)}
	// On the claim's newest version: an attempt of another process may have recorded its own
	// first, and then that one is the request.
	updated, err := l.updateStatus(ctx, c, func(st *v1alpha1.ClaimStatus) {
		if st.Request == nil {
			st.Request = resolved
		}
	})
	if err != nil {
		return nil, fmt.Errorf("recording the launch request on claim %s: %w", c.Name, err)
	}
	return updated.Status.Request, nil
}

func (l *Launcher) price(ctx context.Context, inst *cloud.Instance) float64 {
	it, ok, err := l.Cloud.InstanceType(ctx, inst.Type)
	if err != nil || !ok {
		return 0
	}
	for _, o := range it.Offerings {
		if o.Zone == inst.Zone && o.CapacityType == inst.CapacityType {
			return o.PricePerHour
		}
	}
	return 0
}

// fail records a failed claim and then releases its pods for planning again after delay. If the
// failure cannot be recorded the pods stay on the claim: the lifecycle controller resumes a
// Pending claim with the same client token, so releasing them now could double the launch.
func (l *Launcher) fail(ctx context.Context, c *v1alpha1.Claim, msg string, delay time.Duration) {
	updated, err := l.updateStatus(ctx, c, func(st *v1alpha1.ClaimStatus) {
		st.Phase, st.Message = v1alpha1.ClaimFailed, msg
	})
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		klog.FromContext(ctx).Error(err, "Cannot mark claim failed; it will be resumed")
		return
	default:
		c = updated // with every pod recorded on it, including those added while it launched
	}
	l.Ledger.DropClaim(c.Name)
	l.clock().AfterFunc(delay, func() { l.Activate(l.claimPods(c)) })
}

// updateStatus changes a claim's status on its newest version: its spec may have grown (pods
// added to in-flight capacity) since the caller read it. It starts from the cached claim (c
// until the cache has it), so a write costs a read only when that was not the newest.
func (l *Launcher) updateStatus(ctx context.Context, c *v1alpha1.Claim, mutate func(*v1alpha1.ClaimStatus)) (*v1alpha1.Claim, error) {
	start, ok := l.Claims.Get(c.Name)
	if !ok {
		start = c
	}
	var updated *v1alpha1.Claim
	err := l.Claims.UpdateFrom(ctx, start, func(cur *v1alpha1.Claim) error {
		mutate(&cur.Status)
		var err error
		updated, err = l.Claims.UpdateStatus(ctx, cur)
		return err
	})
	return updated, err
}

// Release drops a deleted claim from the ledger and asks the scheduler to plan again the pods
// that were still waiting on it, whoever deleted it (the lifecycle's timeouts, a drain, a user).
func (l *Launcher) Release(c *v1alpha1.Claim) {
	l.limits.forget(c.Name) // gone: it no longer counts against its pool's limits
	dropped := l.Ledger.DropClaim(c.Name)
	if len(dropped) == 0 {
		return
	}
	waited := make(map[types.UID]bool, len(dropped))
	for _, uid := range dropped {
		waited[uid] = true
	}
	var pods []*corev1.Pod
	for _, p := range l.claimPods(c) {
		if waited[p.UID] {
			pods = append(pods, p)
		}
	}
	l.Activate(pods)
}

func (l *Launcher) claimPods(c *v1alpha1.Claim) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ref := range c.Spec.Pods {
		if p, err := l.Pods.Pods(ref.Namespace).Get(ref.Name); err == nil && string(p.UID) == ref.UID && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// InFlight reports whether a launch of the claim is running in this process.
func (l *Launcher) InFlight(claim string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.inflight[claim]
}

// Follow brings the ledger up to date with a changed claim: pods newly recorded on it wait for
// it, its node name, once known, is theirs, and once its node is initialized they are tried
// again (see waitingOn). Pods the ledger already moved elsewhere (a re-plan) are not pulled
// back, and a resync without change does nothing.
func (l *Launcher) Follow(old, cur *v1alpha1.Claim) {
	if old.ResourceVersion == cur.ResourceVersion || cur.Status.Phase == v1alpha1.ClaimFailed {
		return
	}
	known := map[string]bool{}
	for _, ref := range old.Spec.Pods {
		known[ref.UID] = true
	}
	var added []types.UID
	for _, p := range l.claimPods(cur) {
		if !known[string(p.UID)] {
			added = append(added, p.UID)
		}
	}
	if len(added) > 0 {
		l.Ledger.Add(cur.Name, cur.Status.NodeName, added)
	}
	if cur.Status.NodeName != "" && cur.Status.NodeName != old.Status.NodeName {
		l.Ledger.SetNodeName(cur.Name, cur.Status.NodeName)
	}
	if cur.Status.InitializedAt != nil && old.Status.InitializedAt == nil {
		l.Activate(l.waitingOn(cur))
	}
}

// waitingOn returns the claim's pods that still wait for it in the ledger. Once its node is up
// (Ready, no startup taint: the claim is initialized) they are tried again: a pod the node
// refused while it was still starting waits for no event the scheduler would retry it on (a
// not-ready taint the pod tolerates going away, a Ready condition), yet must now bind there or,
// refused by the node that is up, be planned anew.
func (l *Launcher) waitingOn(c *v1alpha1.Claim) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range l.claimPods(c) {
		if r, ok := l.Ledger.Lookup(p.UID); ok && r.Claim == c.Name {
			out = append(out, p)
		}
	}
	return out
}

// Rebuild fills the ledger from the claims, after a start: every pod of a live claim that is
// still unbound waits for that claim again.
func (l *Launcher) Rebuild(cs []*v1alpha1.Claim) {
	for _, c := range cs {
		if c.Status.Phase == v1alpha1.ClaimFailed {
			continue
		}
		var uids []types.UID
		for _, p := range l.claimPods(c) {
			uids = append(uids, p.UID)
		}
		l.Ledger.Add(c.Name, c.Status.NodeName, uids)
	}
}
