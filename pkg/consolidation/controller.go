// Package consolidation gives back capacity nobody needs: a descheduler-style loop, run by the
// elected leader, that removes empty and expired nodes and nodes whose pods fit elsewhere,
// within each pool's disruption budgets, through the Eviction API. Where pods would go is the
// planner's answer, so the profile's Filter plugins decide, as they do for launches.
package consolidation

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// cloudTimeout bounds every cloud call of a pass, so one slow answer never stalls the loop.
const cloudTimeout = 20 * time.Second

// DefaultDrainTimeout is how long a drain may wait for pods to leave before it is rolled back.
const DefaultDrainTimeout = 10 * time.Minute

// Offerings lists what may be launched now (pkg/offerings' Cache implements it).
type Offerings interface {
	Templates(ctx context.Context) ([]*planning.Template, error)
}

// ReplacementRecorder records replacement nodes as claims, which the lifecycle launches
// (pkg/provisioning's Reservations implements it).
type ReplacementRecorder interface {
	RecordReplacement(ctx context.Context, n *planning.PlannedNode, replaces []string, count int) (*v1alpha1.Claim, error)
}

// Controller is the consolidation loop.
type Controller struct {
	Args        *config.TailorArgs
	Cloud       cloud.Provider
	Claims      *claims.Store
	Client      kubernetes.Interface
	Nodes       corelisters.NodeLister
	Pods        corelisters.PodLister
	PodInformer cache.SharedIndexInformer
	// NodeInformer, if set, makes a new node prompt a pass (its room may let others go).
	NodeInformer cache.SharedIndexInformer
	PDBs         policylisters.PodDisruptionBudgetLister
	// Framework runs the profile's plugins over snapshots the loop sets; the loop is its only
	// user.
	Framework *profile.Framework
	// Offerings lists what may be launched and Replacements records replacement nodes;
	// without both, the loop only removes nodes.
	Offerings    Offerings
	Replacements ReplacementRecorder
	Recorder     events.EventRecorder
	DrainTimeout time.Duration
	// Clock reads the time for drains, budgets and consolidateAfter; default the real one.
	Clock clock.PassiveClock
	// SchedulerName is the profile's: its pending pods are on their way to the nodes, and no
	// decision takes the room they need.
	SchedulerName string
	// Gangs says the profile runs Coscheduling: the pods of a PodGroup are a gang, which
	// consolidation never splits (the gangMember rule).
	Gangs bool
	// Provisioning, if set, says whether this process is planning a batch of pending pods (a
	// scale-up is under way).
	Provisioning func() bool
	// Rollouts, if set, finds the workloads whose controllers are still creating pods: the
	// next wave of a scale-up.
	Rollouts *rollout.Lister

	mu       sync.Mutex
	started  time.Time
	activity map[string]time.Time
	events   map[string]time.Time
	passes   int
	// decided holds nodes this process decided about lately: the caches may not show the taint
	// or the replacement claims yet, and the next pass must neither decide again nor spend the
	// budget twice.
	decided map[string]time.Time
	queue   workqueue.TypedDelayingInterface[string]
	// progress tells workloads creating pods from those that stopped.
	progress rollout.Progress
	// scaledUpAt is when a pass last saw the cluster scaling up.
	scaledUpAt time.Time
	// deletions counts the pods that left (a node's room freed); quiet is what the fruitless
	// passes since the last change saw (only the loop's goroutine uses it).
	deletions atomic.Uint64
	quiet     quiet
	// podInfos keeps the pods' PodInfos from pass to pass (only the loop's goroutine uses it).
	podInfos *planning.PodInfos
}

const passKey = "pass"

// Prompt asks for a pass now (a claim was deleted); it does nothing while the loop is not
// running here.
func (c *Controller) Prompt() {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.Add(passKey)
	}
}

// Run consolidates until ctx ends: every ConsolidationInterval, and soon after pods leave a node.
func (c *Controller) Run(ctx context.Context) error {
	RegisterMetrics()
	logger := klog.FromContext(ctx).WithName("consolidation")
	ctx = klog.NewContext(ctx, logger)
	if c.DrainTimeout == 0 {
		c.DrainTimeout = DefaultDrainTimeout
	}
	c.started = c.now()
	queue := workqueue.NewTypedDelayingQueue[string]()
	c.mu.Lock()
	c.activity, c.events, c.decided = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{}
	c.queue = queue
	c.quiet.reset() // a replica that leads again looks at the cluster afresh
	c.mu.Unlock()
	defer func() {
		queue.ShutDown()
		c.mu.Lock()
		c.queue = nil
		c.mu.Unlock()
	}()
	reg, err := c.PodInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.touch(obj) },
		UpdateFunc: func(old, obj interface{}) {
			if o, n := old.(*corev1.Pod), obj.(*corev1.Pod); o.Spec.NodeName != n.Spec.NodeName {
				c.touch(obj)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			c.deletions.Add(1)
			c.touch(obj)
		},
	})
	if err != nil {
		return err
	}
	defer func() { _ = c.PodInformer.RemoveEventHandler(reg) }()
	if c.NodeInformer != nil {
		nreg, err := c.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(interface{}) { queue.AddAfter(passKey, time.Second) },
			// A node someone deleted is drained at once, not at the next interval.
			UpdateFunc: func(_, obj interface{}) {
				if n, ok := obj.(*corev1.Node); ok && n.DeletionTimestamp != nil {
					queue.Add(passKey)
				}
			},
		})
		if err != nil {
			return err
		}
		defer func() { _ = c.NodeInformer.RemoveEventHandler(nreg) }()
	}
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	logger.Info("Consolidation running", "interval", c.Args.ConsolidationInterval.Duration)
	queue.Add(passKey)
	for {
		key, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		next := c.Args.ConsolidationInterval.Duration
		if draining := c.pass(ctx); draining && next > drainPoll {
			next = drainPoll
		}
		queue.Done(key)
		queue.AddAfter(passKey, next)
	}
}

// touch notes that a pod arrived on or left a node, and looks again once the node could be idle.
func (c *Controller) touch(obj interface{}) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.Spec.NodeName == "" {
		return
	}
	c.mu.Lock()
	c.activity[p.Spec.NodeName] = c.now()
	c.mu.Unlock()
	wait := time.Duration(-1)
	for i := range c.Args.Pools {
		if d := c.Args.Pools[i].Disruption.ConsolidateAfter.Duration; wait < 0 || d < wait {
			wait = d
		}
	}
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.AddAfter(passKey, wait+time.Second)
	}
}

func (c *Controller) now() time.Time {
	if c.Clock != nil {
		return c.Clock.Now()
	}
	return time.Now()
}

// drainPoll is how soon the next pass comes while a drain is under way: each eviction a
// PodDisruptionBudget refused is asked again this often, not once per interval.
const drainPoll = 2 * time.Second

// pass moves every drain along, then decides what else to disrupt and starts it. It says
// whether a drain is under way.
func (c *Controller) pass(ctx context.Context) (draining bool) {
	logger := klog.FromContext(ctx)
	s, err := c.snapshot()
	if err != nil {
		logger.Error(err, "Cannot read the cluster; skipping this pass")
		return false
	}
	podsOn := map[string][]*corev1.Pod{}
	for _, p := range s.pods {
		podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
	}
	reserved := c.replacements(ctx, s, podsOn)
	if reserved == nil {
		reserved = map[string]bool{}
	}
	candidates, draining := c.triage(ctx, s, podsOn, reserved)
	s.owned = candidates
	s.excluded = reserved
	// Only a pass with nothing under way and nothing scaling up may be quiet: a drain is
	// watched every pass, and a scale-up's passes are few and cheap.
	settled := !draining && s.scaleUp == "" && !s.creating
	var fp uint64 // only a settled pass needs it
	if settled {
		if fp = fingerprint(s); c.quiet.holds(fp, s.now) {
			return false
		}
	}
	lookedAtAll := true // every method could ask its questions
	if c.Replacements != nil && c.Offerings != nil && len(candidates) > 0 {
		// Bounded: a slow catalog refresh costs this pass its replacements, never the drains
		// of the next passes.
		tctx, cancel := context.WithTimeout(ctx, cloudTimeout)
		if ts, err := c.Offerings.Templates(tctx); err == nil {
			s.templates = ts
		} else {
			lookedAtAll = false
			logger.Info("No replacements this pass: cannot list what to launch", "err", err)
		}
		cancel()
	}
	if s.scaleUp != "" && len(candidates) > 0 {
		logger.V(2).Info("Scaling up: only empty nodes no pending pod could use, and interrupted nodes, are decided about", "reason", s.scaleUp)
	}
	ds, kept := decide(ctx, s, c.Framework)
	for _, k := range kept {
		c.eventOnce(k.node.node, "DisruptionBlocked", "Tailor keeps this node: "+k.why)
	}
	c.noteQuiet(ctx, s, settled && lookedAtAll && len(ds) == 0 && len(kept) == 0, fp)
	for _, d := range ds {
		if ctx.Err() != nil {
			return draining // no longer the leader: the next one decides again
		}
		if len(d.replacements) > 0 {
			if c.launchReplacements(ctx, d) || d.method != methodInterruption {
				continue
			}
			// No replacement could be recorded: an interrupted node drains all the same, and
			// its pods are provisioned as usual.
		}
		if d.method == methodInterruption {
			c.forcedDrainStep(ctx, d.node, d.evict, d, false)
			draining = true
			continue
		}
		if err := c.mark(ctx, d); err != nil {
			logger.Error(err, "Cannot mark node for disruption", "node", d.node.node.Name)
			continue
		}
		logger.Info("Disrupting node", "node", d.node.node.Name, "method", d.method, "reason", d.why, "pods", len(d.evict))
		c.drainStep(ctx, d.node, d.evict)
		draining = true
	}
	return draining
}

// triage moves every drain under way along and returns the owned nodes a decision may take:
// interrupted ones whatever their state, and those Ready, initialized and not cordoned that
// nothing else holds. reserved gains the nodes no pod may be planned onto this pass. It says
// whether a drain is under way.
func (c *Controller) triage(ctx context.Context, s *snapshot, podsOn map[string][]*corev1.Pod, reserved map[string]bool) (candidates []*ownedNode, draining bool) {
	for _, o := range s.owned {
		switch {
		case lifecycle.Drained(o.node) && (disrupting(o.node) || instanceGoing(o.node)):
			// Handed over (finish marks only nodes it drained, or whose instance is going; an
			// annotation put on any other node by hand is not a drain): the lifecycle
			// terminates it.
			reserved[o.node.Name] = true
			c.handOver(ctx, o)
		case instanceGoing(o.node):
			// Stopping or terminating: nothing to drain, nothing to wait for.
			reserved[o.node.Name] = true
			c.finish(ctx, o, false)
		case lifecycle.Deleting(o.claim, o.node):
			draining = true
			reserved[o.node.Name] = true // going: no pod is planned onto it this pass
			c.deletionStep(ctx, o, podsOn[o.node.Name])
		case disrupting(o.node) && interruption(o.node) != "":
			draining = true
			c.forcedDrainStep(ctx, o, podsOn[o.node.Name], interruptedDecision(o, nil, s.now), false)
		case disrupting(o.node):
			draining = true
			c.drainStep(ctx, o, podsOn[o.node.Name])
		case reserved[o.node.Name] || c.recentlyDecided(o.node.Name):
			// Being replaced, a replacement, or just decided about: not a candidate now.
			if interruption(o.node) != "" {
				draining = true // its replacements are watched closely
			}
		case interruption(o.node) != "":
			// Interrupted: decided about this pass whatever its state.
			draining = true
			candidates = append(candidates, o)
		case !o.node.Spec.Unschedulable && lifecycle.Ready(o.node) && !lifecycle.Starting(c.Args, o.node) && o.claim.Status.InitializedAt != nil:
			// A node not yet initialized is capacity still arriving, never a candidate.
			candidates = append(candidates, o)
		}
	}
	return candidates, draining
}

// snapshot reads what a pass needs from the caches.
func (c *Controller) snapshot() (*snapshot, error) {
	// Read before the pods: a pod that leaves after this is counted by the next pass, which
	// lists it gone.
	deletions := c.deletions.Load()
	nodes, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	pods, err := c.Pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	c.passes++
	if c.podInfos == nil {
		c.podInfos = planning.NewPodInfos()
	}
	s := &snapshot{now: c.now(), gangs: c.Gangs, nodes: nodes, budget: map[string]int{}, minSavings: float64(c.Args.ConsolidationMinSavingsPercent) / 100,
		rotation: c.passes * maxReplaceQuestions, deletions: deletions, podInfos: c.podInfos}
	nominated := map[string]bool{}
	var pending, starting []*corev1.Pod
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			s.pods = append(s.pods, p)
			if c.startsOnNode(p) {
				starting = append(starting, p)
			}
			continue
		}
		if p.Status.NominatedNodeName != "" {
			nominated[p.Status.NominatedNodeName] = true
		}
		if c.waitsForNode(p) {
			pending = append(pending, p)
		}
	}
	if c.PDBs != nil {
		if s.pdbs, err = c.PDBs.List(labels.Everything()); err != nil {
			return nil, err
		}
	}
	var owing []rollout.Workload
	if c.Rollouts != nil {
		ws, err := c.Rollouts.Owing()
		if err != nil {
			return nil, err
		}
		c.progress.Stall = rolloutStall
		owing = c.progress.Moving(ws, s.now)
	}
	// Listed once: the store copies every claim on each list.
	claims := c.Claims.List()
	s.claims = claims
	for name := range awaitedNodes(claims, pending, s.now) {
		nominated[name] = true
	}
	waiting := append(slices.Clip(pending), starting...)
	s.scaleUp = scaleUp(claims, waiting, owing, c.Provisioning != nil && c.Provisioning(), s.now)
	if s.scaleUp != "" {
		c.scaledUpAt = s.now
	}
	// A claim's node coming up for pending pods marks a scale-up too: a replica that just took
	// over, or a pass that missed a short burst, sees it on the claims.
	s.scaledUpAt = lastScaleUp(claims, c.scaledUpAt)
	s.creating = len(owing) > 0
	s.arriving = append(pending, leavingDrainedNodes(nodes, s.pods, s.pdbs, s.now)...)
	c.ownedNodes(s, nodes, claims, nominated)
	return s, nil
}

// ownedNodes fills s with the nodes Tailor owns, each with how long it has been idle, and each
// pool's budget left. nominated are the nodes pods are on their way to.
func (c *Controller) ownedNodes(s *snapshot, nodes []*corev1.Node, claims []*v1alpha1.Claim, nominated map[string]bool) {
	poolNodes, poolDisrupting := map[string]int{}, map[string]int{}
	// Nodes waiting for their replacements count against the budget as if already draining.
	replaced := map[string]bool{}
	claimsByName := make(map[string]*v1alpha1.Claim, len(claims))
	for _, cl := range claims {
		claimsByName[cl.Name] = cl
		for _, name := range replacedBy(cl) {
			replaced[name] = true
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	present := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		present[n.Name] = true
	}
	for name := range c.activity {
		if !present[name] {
			delete(c.activity, name)
		}
	}
	for _, n := range nodes {
		o := c.owned(n, claimsByName)
		if o == nil {
			if pool := leavingPool(n); pool != "" {
				// No Registered claim owns it any more, but its Node waits for Tailor's finalizer:
				// it is still leaving the pool, and a budget of one must not let the next node go
				// meanwhile. The lifecycle releases such a node within a sweep.
				poolNodes[pool]++
				poolDisrupting[pool]++
			}
			continue
		}
		o.idleSince = c.idleSince(o, nominated[n.Name], s.now)
		s.owned = append(s.owned, o)
		poolNodes[o.pool.Name]++
		if t, ok := c.decided[n.Name]; disrupting(n) || replaced[n.Name] || ok && s.now.Sub(t) < decidedMemory {
			poolDisrupting[o.pool.Name]++
		}
	}
	for i := range c.Args.Pools {
		p := &c.Args.Pools[i]
		s.budget[p.Name] = allowed(&p.Disruption, poolNodes[p.Name], s.now) - poolDisrupting[p.Name]
	}
}

// leavingPool names the pool of a node of Tailor's that is being deleted and still holds
// Tailor's finalizer, though no Registered claim owns it any more; "" for any other. A node
// held only by someone else's finalizer, or marked but never deleted (its claim's finalizer
// removed by hand), is out of Tailor's hands and holds no budget.
func leavingPool(n *corev1.Node) string {
	if n.Labels[v1alpha1.LabelClaim] == "" || n.DeletionTimestamp == nil || !slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
		return ""
	}
	return n.Labels[v1alpha1.LabelPool]
}

// idleSince is when a pod last arrived on or left the owned node: not before this process
// started watching, the node was created or it became usable; now if pods are on their way to
// it. Callers hold c.mu.
func (c *Controller) idleSince(o *ownedNode, nominated bool, now time.Time) time.Time {
	if nominated {
		return now
	}
	since := c.started
	if t := o.node.CreationTimestamp.Time; t.After(since) {
		since = t
	}
	if t := o.claim.Status.InitializedAt; t != nil && t.After(since) {
		// No pod could land before: a node just usable has not been idle yet.
		since = t.Time
	}
	if t, ok := c.activity[o.node.Name]; ok && t.After(since) {
		since = t
	}
	return since
}

// awaitedNodes are the nodes of claims launched for pods still pending, created less than
// recentPending before now: the scheduler has those pods on their way there (Reserve kept the
// claim's room for them), whatever room the other nodes have. An older one may never bind there
// and must not keep the node for good (it still keeps an empty node it could be bound to: see
// couldLand).
func awaitedNodes(claims []*v1alpha1.Claim, pending []*corev1.Pod, now time.Time) map[string]bool {
	waiting := make(map[types.UID]bool, len(pending))
	for _, p := range pending {
		if now.Sub(p.CreationTimestamp.Time) < recentPending {
			waiting[p.UID] = true
		}
	}
	if len(waiting) == 0 {
		return nil
	}
	out := map[string]bool{}
	for _, cl := range claims {
		if cl.Status.NodeName == "" {
			continue
		}
		for _, ref := range cl.Spec.Pods {
			if waiting[types.UID(ref.UID)] {
				out[cl.Status.NodeName] = true
				break
			}
		}
	}
	return out
}

// waitsForNode says whether p is one of the profile's pods still waiting to be scheduled.
func (c *Controller) waitsForNode(p *corev1.Pod) bool {
	return c.notRunningYet(p) && p.Spec.NodeName == ""
}

// startsOnNode says whether p is one of the profile's pods bound to a node and not yet running.
func (c *Controller) startsOnNode(p *corev1.Pod) bool {
	return c.notRunningYet(p) && p.Spec.NodeName != ""
}

// notRunningYet says whether p is one of the profile's pods, not going, that has not started.
func (c *Controller) notRunningYet(p *corev1.Pod) bool {
	return p.Spec.SchedulerName == c.SchedulerName && p.DeletionTimestamp == nil &&
		(p.Status.Phase == corev1.PodPending || p.Status.Phase == "")
}

// leavingDrainedNodes are unbound copies of the pods a drain under way will evict: they need
// room elsewhere as much as pending pods do.
func leavingDrainedNodes(nodes []*corev1.Node, pods []*corev1.Pod, pdbs []*policyv1.PodDisruptionBudget, now time.Time) []*corev1.Pod {
	going := map[string]bool{}
	for _, n := range nodes {
		if disrupting(n) || n.DeletionTimestamp != nil {
			going[n.Name] = true
		}
	}
	if len(going) == 0 {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if !going[p.Spec.NodeName] || p.DeletionTimestamp != nil {
			continue
		}
		if v, _ := judge(p, ruleInput{pdbs: pdbs, now: now}); v == skip {
			continue
		}
		out = append(out, boundTo(p, ""))
	}
	return out
}

// decidedMemory is how long a decision is remembered beyond what the caches show.
const decidedMemory = 30 * time.Second

// remember notes nodes just decided about.
func (c *Controller) remember(names ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range names {
		c.decided[n] = c.now()
	}
	for n, t := range c.decided {
		if c.now().Sub(t) > decidedMemory {
			delete(c.decided, n)
		}
	}
}

func (c *Controller) recentlyDecided(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.decided[name]
	return ok && c.now().Sub(t) < decidedMemory
}

// owned returns the node as Tailor's if its claim (of claims, by name) is Registered on it; any
// other node, Tailor never touches.
func (c *Controller) owned(n *corev1.Node, claims map[string]*v1alpha1.Claim) *ownedNode {
	name := n.Labels[v1alpha1.LabelClaim]
	if name == "" {
		return nil
	}
	cl, ok := claims[name]
	if !ok || cl.Status.Phase != v1alpha1.ClaimRegistered || cl.Status.NodeName != n.Name {
		return nil
	}
	pool := c.Args.Pool(cl.Spec.Pool)
	if pool == nil {
		if !lifecycle.Deleting(cl, n) && interruption(n) == "" {
			return nil
		}
		// Its pool is gone from the configuration, but someone deleted it or EC2 takes it: it
		// still drains (that needs no pool setting), or it would hang with its instance running.
		pool = &config.Pool{Name: cl.Spec.Pool}
	}
	price, _ := strconv.ParseFloat(cl.Status.PricePerHour, 64)
	return &ownedNode{node: n, claim: cl, pool: pool, price: price}
}

// eventOnce records an event at most every five minutes per object and reason, so a node kept
// pass after pass says why without flooding.
func (c *Controller) eventOnce(obj eventObject, reason, note string) {
	key := obj.GetNamespace() + "/" + obj.GetName() + "/" + reason
	c.mu.Lock()
	last, seen := c.events[key]
	if seen && c.now().Sub(last) < 5*time.Minute {
		c.mu.Unlock()
		return
	}
	c.events[key] = c.now()
	c.mu.Unlock()
	c.Recorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Consolidate", "%s", note)
}

// eventObject is a Node or a Pod.
type eventObject interface {
	runtime.Object
	GetNamespace() string
	GetName() string
}
