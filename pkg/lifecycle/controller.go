// Package lifecycle carries claims from launch to registered node and cleans up after failures;
// it alone writes a claim's status. Each stage of a claim's life is a file, with its test: launch
// (a claim provisioning or consolidation recorded is launched, and Launched or Failed recorded;
// launches a restart interrupted are launched again), registration (a registering Node is
// matched to its claim by providerID and given the labels and taints the plan promised; a node
// that never registers is given up), initialization (the node Ready without startup taints),
// liveness (claims whose instance vanished, tagged instances no claim owns) and termination
// (deleted claims and nodes: once consolidation has drained a node, its instance, Node and claim;
// InstanceOf is the one test before an instance is terminated for a claim). It alone terminates
// instances and deletes Nodes. templates.go deletes launch templates no pool or claim uses. The
// controller launches claims, registers nodes and terminates claims from their events, and runs
// every stage from a periodic sweep over every claim as well.
package lifecycle

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Defaults for the sweep; RegistrationTimeout comes from the plugin args.
const (
	DefaultSweepPeriod = 10 * time.Second
	// DefaultOrphanGrace is how old a tagged instance without a claim must be before it is
	// terminated: long enough to cover the moment between a launch and its claim update.
	DefaultOrphanGrace = 2 * time.Minute
	// resumeAfter is how long a Pending claim not launching in this process waits before it is
	// launched again (with its original client token).
	resumeAfter = 30 * time.Second
)

// Controller is the claim lifecycle controller.
type Controller struct {
	Args   *config.TailorArgs
	Cloud  cloud.Provider
	Claims *claims.Store
	// Demand says which claims pods still want and wait on; Offerings resolves pools' networks
	// and learns which offerings had no capacity. The launch stage needs both.
	Demand       Demand
	Offerings    Offerings
	Client       kubernetes.Interface
	Nodes        corelisters.NodeLister
	NodeInformer cache.SharedIndexInformer
	Recorder     events.EventRecorder
	// Observed learns each instance type's real allocatable from the nodes that register.
	Observed *catalog.Observed
	// EndingCapacityBlock hands over the node of a claim whose Capacity Block ends soon, to be
	// replaced and drained (consolidation's interruption method does it), at once if late; nil
	// does nothing.
	EndingCapacityBlock func(ctx context.Context, claim string, late bool) error
	SweepPeriod         time.Duration
	OrphanGrace         time.Duration
	// Clock reads the time for the sweep's timeouts and grace periods; default the real one.
	Clock clock.PassiveClock
	// TemplateGCPeriod and TemplateGrace pace the deletion of unused launch templates
	// (defaults DefaultTemplateGCPeriod and DefaultTemplateGrace).
	TemplateGCPeriod time.Duration
	TemplateGrace    time.Duration
	// lastTemplateGC is when the sweep last listed launch templates; zero makes the next sweep
	// list them. Only the sweep goroutine uses it.
	lastTemplateGC time.Time

	// launches are the launches queued and running.
	launches launches

	// Run may run again after the lease is lost and won back: handlers are registered once and
	// reach the current run's queue and context through enqueue and launchRecorded.
	mu           sync.Mutex
	queue        workqueue.TypedRateLimitingInterface[string]
	terminations workqueue.TypedRateLimitingInterface[string]
	runCtx       context.Context
	handlersOnce sync.Once
	handlersErr  error
}

func (c *Controller) enqueue(name string) {
	c.mu.Lock()
	q := c.queue
	c.mu.Unlock()
	if q != nil {
		q.Add(name)
	}
}

// enqueueTermination queues the named claim for the termination stage.
func (c *Controller) enqueueTermination(claim string) {
	c.mu.Lock()
	q := c.terminations
	c.mu.Unlock()
	if q != nil && claim != "" {
		q.Add(claim)
	}
}

// launchRecorded launches a claim just recorded, if this replica runs the lifecycle.
func (c *Controller) launchRecorded(cl *v1alpha1.Claim) {
	c.mu.Lock()
	ctx := c.runCtx
	c.mu.Unlock()
	if ctx == nil || !pending(cl) || cl.DeletionTimestamp != nil {
		return
	}
	// A gang launches once all its claims are recorded: when the cache has the last one, the
	// others are in it already.
	if cl.Spec.Gang != nil && !c.gangRecorded(cl) {
		return
	}
	c.launchAsync(ctx, cl)
}

// clock is Clock, or the real one.
func (c *Controller) clock() clock.PassiveClock {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// Run registers handlers and works until ctx ends. The caches must have synced.
func (c *Controller) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithName("lifecycle")
	ctx = klog.NewContext(ctx, logger)
	if c.SweepPeriod == 0 {
		c.SweepPeriod = DefaultSweepPeriod
	}
	if c.OrphanGrace == 0 {
		c.OrphanGrace = DefaultOrphanGrace
	}

	if c.TemplateGCPeriod == 0 {
		c.TemplateGCPeriod = DefaultTemplateGCPeriod
	}
	if c.TemplateGrace == 0 {
		c.TemplateGrace = DefaultTemplateGrace
	}
	c.lastTemplateGC = time.Time{}
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "tailor-registration"})
	terminations := workqueue.NewTypedRateLimitingQueueWithConfig(workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "tailor-termination"})
	// Launches end with the run: one cut short leaves its claim Pending for the next leader.
	ctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.queue, c.terminations, c.runCtx = queue, terminations, ctx
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.queue, c.terminations, c.runCtx = nil, nil, nil
		c.mu.Unlock()
		queue.ShutDown()
		terminations.ShutDown()
		cancel()
		c.launches.stop()
	}()
	c.handlersOnce.Do(func() { c.handlersErr = c.addHandlers() })
	if c.handlersErr != nil {
		return c.handlersErr
	}
	// Claims recorded while no replica held the lease are launched first, in the order listed.
	c.resumeInterruptedLaunches(ctx)
	// Nodes registered while no replica held the lease are caught up here.
	if nodes, err := c.Nodes.List(labels.Everything()); err == nil {
		for _, n := range nodes {
			if n.Spec.ProviderID != "" {
				queue.Add(n.Name)
			}
		}
	}

	var workers sync.WaitGroup
	for i := 0; i < registrationWorkers+terminationWorkers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			if i < registrationWorkers {
				c.worker(ctx, queue, "node", c.register)
			} else {
				c.worker(ctx, terminations, "claim", c.terminate)
			}
		}()
	}
	wait.UntilWithContext(ctx, c.sweep, c.SweepPeriod)
	queue.ShutDown()
	terminations.ShutDown()
	workers.Wait()
	return nil
}

func (c *Controller) addHandlers() error {
	enqueueNode := func(obj interface{}) {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			c.enqueue(n.Name)
			if Drained(n) {
				c.enqueueTermination(n.Labels[v1alpha1.LabelClaim])
			}
		}
	}
	if _, err := c.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNode,
		UpdateFunc: func(_, obj interface{}) { enqueueNode(obj) },
	}); err != nil {
		return err
	}
	return c.Claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.launchRecorded(obj.(*v1alpha1.Claim)) },
		UpdateFunc: func(_, obj interface{}) {
			cl := obj.(*v1alpha1.Claim)
			if cl.Status.Phase == v1alpha1.ClaimLaunched && cl.Status.NodeName != "" {
				c.enqueue(cl.Status.NodeName)
			}
			if cl.DeletionTimestamp != nil {
				c.enqueueTermination(cl.Name)
			}
		},
	})
}

// registrationWorkers register nodes side by side: a batch's claims come up together, and
// each registration is several API calls (node labels and taints, the claim's status).
// terminationWorkers terminate claims side by side (a cloud call and a few API calls each).
const (
	registrationWorkers = 8
	terminationWorkers  = 2
)

// worker does the queue's work with do until the queue shuts down; a failure is retried with
// the queue's backoff. kind names the queued objects in the log.
func (c *Controller) worker(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string], kind string, do func(context.Context, string) error) {
	for {
		name, quit := queue.Get()
		if quit {
			return
		}
		if err := do(ctx, name); err != nil {
			klog.FromContext(ctx).V(2).Info("Will retry", kind, name, "err", err)
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// InstanceID extracts the instance ID from an AWS providerID (aws:///us-east-1a/i-0abc).
func InstanceID(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	i := strings.LastIndex(providerID, "/")
	return providerID[i+1:]
}

// sweep looks at every claim and every instance Tailor tagged, stage by stage: launches a
// restart interrupted, registrations and initializations that timed out, instances that
// vanished, deleted claims and nodes, orphaned instances and unused launch templates.
func (c *Controller) sweep(ctx context.Context) {
	logger := klog.FromContext(ctx)
	cls := c.Claims.List()
	live, err := c.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + c.Args.ClusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		logger.Error(err, "Cannot list instances; skipping this sweep")
		return
	}
	running := map[string]cloud.Instance{}
	for _, in := range live {
		running[in.ID] = in
	}
	now := c.clock().Now()
	nodes, err := c.Nodes.List(labels.Everything())
	if err != nil {
		logger.Error(err, "Cannot list nodes; skipping this sweep")
		return
	}
	nodeOf := map[string]*corev1.Node{} // by instance ID
	for _, n := range nodes {
		if id := InstanceID(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	for _, n := range nodes {
		if n.DeletionTimestamp != nil {
			cl, _ := c.Claims.ByInstanceID(InstanceID(n.Spec.ProviderID))
			c.releaseDeletingNode(ctx, n, cl, running)
		}
	}
	blockEnds, _ := c.blockEnds(ctx, cls, now)
	for _, cl := range cls {
		if cl.DeletionTimestamp != nil && cl.Status.Phase == v1alpha1.ClaimRegistered {
			c.terminateDrained(ctx, cl, running)
			continue
		}
		if cl.DeletionTimestamp != nil {
			c.removeDeletedClaim(ctx, cl, running, nodeOf)
			continue
		}
		if cl.DeletionTimestamp == nil && !slices.Contains(cl.Finalizers, v1alpha1.FinalizerTermination) {
			c.addFinalizer(ctx, cl) // a claim from before finalizers, or stripped by hand
		}
		switch cl.Status.Phase {
		case "", v1alpha1.ClaimPending:
			c.resumeStuckLaunch(ctx, cl, now)
		case v1alpha1.ClaimLaunched:
			c.checkRegistered(ctx, cl, running, now)
		case v1alpha1.ClaimRegistered:
			if _, ok := running[cl.Status.InstanceID]; ok {
				if cl.Status.InitializedAt == nil {
					c.checkInitialized(ctx, cl, running, now)
				}
				c.checkImageDrift(ctx, cl)
				c.checkCapacityBlock(ctx, cl, blockEnds, now)
			} else {
				c.instanceGone(ctx, cl, running)
			}
		case v1alpha1.ClaimFailed:
			c.remove(ctx, cl, running, "its launch failed: "+cl.Status.Message)
		}
	}
	c.collectOrphans(ctx, live, nodeOf, now)
	c.collectTemplates(ctx, now, cls)
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
