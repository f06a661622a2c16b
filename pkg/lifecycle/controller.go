// Package lifecycle carries claims from launch to registered node and cleans up after failures:
// it matches registering Nodes to their claims (by providerID), applies the labels and taints
// the plan promised, times out instances that never register, resumes launches interrupted by a
// restart, terminates tagged instances whose claim is gone, and deletes launch templates no
// pool or claim uses.
package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
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

// Launcher launches recorded claims (pkg/provisioning's Launcher implements it): the controller
// resumes launches a restart or a crash interrupted.
type Launcher interface {
	// LaunchAsync launches a claim in the background unless this process is launching it.
	LaunchAsync(ctx context.Context, c *v1alpha1.Claim)
	// InFlight reports whether a launch of the claim is running in this process.
	InFlight(claim string) bool
}

// Controller is the claim lifecycle controller.
type Controller struct {
	Args         *config.TailorArgs
	Cloud        cloud.Provider
	Claims       *claims.Store
	Ledger       *ledger.Ledger
	Launcher     Launcher
	Client       kubernetes.Interface
	Nodes        corelisters.NodeLister
	NodeInformer cache.SharedIndexInformer
	Recorder     events.EventRecorder
	Activate     func([]*corev1.Pod)
	// Observed learns each instance type's real allocatable from the nodes that register.
	Observed    *catalog.Observed
	SweepPeriod time.Duration
	OrphanGrace time.Duration
	// Clock reads the time for the sweep's timeouts and grace periods; default the real one.
	Clock clock.PassiveClock
	// TemplateGCPeriod and TemplateGrace pace the deletion of unused launch templates
	// (defaults DefaultTemplateGCPeriod and DefaultTemplateGrace).
	TemplateGCPeriod time.Duration
	TemplateGrace    time.Duration
	// lastTemplateGC is when the sweep last listed launch templates; zero makes the next sweep
	// list them. Only the sweep goroutine uses it.
	lastTemplateGC time.Time

	// Run may run again after the lease is lost and won back: handlers are registered once and
	// reach the current queue through enqueue.
	mu           sync.Mutex
	queue        workqueue.TypedRateLimitingInterface[string]
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
	c.mu.Lock()
	c.queue = queue
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.queue = nil
		c.mu.Unlock()
		queue.ShutDown()
	}()
	c.handlersOnce.Do(func() { c.handlersErr = c.addHandlers() })
	if c.handlersErr != nil {
		return c.handlersErr
	}
	// Nodes registered while no replica held the lease are caught up here.
	if nodes, err := c.Nodes.List(labels.Everything()); err == nil {
		for _, n := range nodes {
			if n.Spec.ProviderID != "" {
				queue.Add(n.Name)
			}
		}
	}

	// After a restart: claims interrupted before their launch was recorded are launched again.
	for _, cl := range c.Claims.List() {
		if (cl.Status.Phase == "" || cl.Status.Phase == v1alpha1.ClaimPending) && cl.DeletionTimestamp == nil {
			logger.Info("Resuming interrupted launch", "claim", cl.Name)
			c.Launcher.LaunchAsync(ctx, cl)
		}
	}
	var workers sync.WaitGroup
	for i := 0; i < registrationWorkers; i++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			c.worker(ctx, queue)
		}()
	}
	wait.UntilWithContext(ctx, c.sweep, c.SweepPeriod)
	queue.ShutDown()
	workers.Wait()
	return nil
}

func (c *Controller) addHandlers() error {
	enqueueNode := func(obj interface{}) {
		if n, ok := obj.(*corev1.Node); ok && n.Spec.ProviderID != "" {
			c.enqueue(n.Name)
		}
	}
	if _, err := c.NodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueNode,
		UpdateFunc: func(_, obj interface{}) { enqueueNode(obj) },
	}); err != nil {
		return err
	}
	return c.Claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, obj interface{}) {
			if cl := obj.(*v1alpha1.Claim); cl.Status.Phase == v1alpha1.ClaimLaunched && cl.Status.NodeName != "" {
				c.enqueue(cl.Status.NodeName)
			}
		},
	})
}

// registrationWorkers register nodes side by side: a batch's claims come up together, and
// each registration is several API calls (node labels and taints, the claim's status).
const registrationWorkers = 8

func (c *Controller) worker(ctx context.Context, queue workqueue.TypedRateLimitingInterface[string]) {
	for {
		name, quit := queue.Get()
		if quit {
			return
		}
		if err := c.register(ctx, name); err != nil {
			klog.FromContext(ctx).V(2).Info("Registration will be retried", "node", name, "err", err)
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

// register matches a node to its claim and makes it look as promised. Nodes without a claim are
// not Tailor's and are never touched.
func (c *Controller) register(ctx context.Context, name string) error {
	node, err := c.Nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	cl, ok := c.Claims.ByInstanceID(InstanceID(node.Spec.ProviderID))
	if !ok || Deleting(cl, node) {
		return nil // not Tailor's, or going: the sweep and the drain deal with it
	}
	if c.Observed != nil && cl.Status.InstanceType != "" {
		c.Observed.Record(cl.Spec.Pool, cl.Status.InstanceType, node.Status.Allocatable)
	}
	if cl.Status.Phase == v1alpha1.ClaimRegistered && !hasTaint(node, v1alpha1.TaintUnregistered) && slices.Contains(node.Finalizers, v1alpha1.FinalizerTermination) {
		if cl.Status.InitializedAt == nil {
			// Recorded as soon as the node says so, not at the next sweep: consolidation
			// waits for every claim of a scale-up to be initialized.
			c.recordInitialized(ctx, cl, node, c.clock().Now())
		}
		return nil
	}
	pool := c.Args.Pool(cl.Spec.Pool)
	if pool == nil {
		return fmt.Errorf("claim %s names pool %q, which is not configured", cl.Name, cl.Spec.Pool)
	}
	// The planner matched pods against the instance labels of the type; the node must carry them.
	it, ok, err := c.Cloud.InstanceType(ctx, cl.Status.InstanceType)
	if err != nil {
		return err
	}
	var typeLabels map[string]string
	if ok {
		typeLabels = catalog.Labels(&it)
	}
	// The first try updates the informer's copy; a conflict reads the node afresh. Each round
	// trip counts: the batch's pods wait for this node.
	n := node
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if n == nil {
			if n, err = c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		n = n.DeepCopy()
		n.Labels = nodeshape.RegisteredLabels(n.Labels, pool, typeLabels, cl.Spec.CapacityType, cl.Name)
		// Deleting the node drains it and terminates the instance before the Node goes.
		if !slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
			n.Finalizers = append(n.Finalizers, v1alpha1.FinalizerTermination)
		}
		n.Spec.Taints = nodeshape.RegisteredTaints(n.Spec.Taints, pool)
		_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			n = nil
		}
		return err
	})
	if err != nil {
		return err
	}
	firstRegistration := cl.Status.Phase != v1alpha1.ClaimRegistered
	now := metav1.Now()
	// The launcher may have written the claim since the informer saw it: a conflict reads the
	// claim afresh and writes only its status again, not the node.
	skip := false
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		// Going: the termination stage deals with it. Registered on this node already: an
		// earlier pass wrote it, and the informer had not caught up.
		if skip = Deleting(cl, node) || cl.Status.Phase == v1alpha1.ClaimRegistered && cl.Status.NodeName == node.Name; skip {
			return nil
		}
		cl = cl.DeepCopy()
		cl.Status.Phase, cl.Status.NodeName, cl.Status.RegisteredAt = v1alpha1.ClaimRegistered, node.Name, &now
		_, err := c.Claims.UpdateStatus(ctx, cl)
		if apierrors.IsConflict(err) {
			if fresh, ferr := c.Claims.Fetch(ctx, cl.Name); ferr == nil {
				cl = fresh
			}
		}
		return err
	})
	if err != nil || skip {
		return err
	}
	c.Ledger.SetNodeName(cl.Name, node.Name)
	if firstRegistration && cl.Status.LaunchedAt != nil {
		metrics.RegistrationDuration.WithLabelValues(cl.Spec.Pool).Observe(now.Sub(cl.Status.LaunchedAt.Time).Seconds())
	}
	klog.FromContext(ctx).Info("Registered", "node", node.Name, "claim", cl.Name, "instance", cl.Status.InstanceID)
	c.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "Registered", "Registration", "matched to claim %s (%s, pool %s)", cl.Name, cl.Status.InstanceType, cl.Spec.Pool)
	return nil
}

// sweep times out claims, resumes stuck launches, deletes finished claims, collects orphans and
// deletes launch templates nothing uses.
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
	for _, cl := range cls {
		if cl.DeletionTimestamp != nil && cl.Status.Phase != v1alpha1.ClaimRegistered {
			c.removeDeletedClaim(ctx, cl, running, nodeOf)
			continue
		}
		if cl.DeletionTimestamp == nil && !slices.Contains(cl.Finalizers, v1alpha1.FinalizerTermination) {
			c.addFinalizer(ctx, cl) // a claim from before finalizers, or stripped by hand
		}
		switch cl.Status.Phase {
		case "", v1alpha1.ClaimPending:
			if !c.Launcher.InFlight(cl.Name) && now.Sub(cl.CreationTimestamp.Time) > resumeAfter {
				logger.Info("Resuming stuck launch", "claim", cl.Name)
				c.Launcher.LaunchAsync(ctx, cl)
			}
		case v1alpha1.ClaimLaunched:
			if _, ok := running[cl.Status.InstanceID]; !ok && cl.Status.LaunchedAt != nil && now.Sub(cl.Status.LaunchedAt.Time) > time.Minute {
				c.remove(ctx, cl, running, "its instance is gone before its node registered", true)
			} else if cl.Status.LaunchedAt != nil && now.Sub(cl.Status.LaunchedAt.Time) > c.Args.RegistrationTimeout.Duration {
				c.remove(ctx, cl, running, fmt.Sprintf("its node did not register within %s", c.Args.RegistrationTimeout.Duration), true)
			}
		case v1alpha1.ClaimRegistered:
			if _, ok := running[cl.Status.InstanceID]; ok && cl.Status.InitializedAt == nil {
				c.checkInitialized(ctx, cl, running, now)
			}
			if _, ok := running[cl.Status.InstanceID]; !ok {
				// The instance is gone (terminated by hand, or by a drain that crashed before
				// cleaning up): once its node is gone or going, so is the claim.
				n, err := c.Nodes.Get(cl.Status.NodeName)
				if apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp != nil {
					if err == nil {
						c.releaseDeletingNode(ctx, n, cl, running)
					}
					c.remove(ctx, cl, running, "its instance and node are gone", true)
				}
			}
		case v1alpha1.ClaimFailed:
			c.remove(ctx, cl, running, "its launch failed: "+cl.Status.Message, false)
		}
	}
	for _, in := range live {
		name := in.Tags[v1alpha1.TagClaim]
		if name == "" || now.Sub(in.LaunchTime) < c.OrphanGrace {
			continue // not launched by Tailor, or too young to judge
		}
		// A claim of that name owns the instance unless it has recorded another one: claims are
		// named after their pods, so a later claim for the same pods may carry the name of one
		// whose launch left an instance behind (CreateFleet acted, its answer an error).
		owned := func(cl *v1alpha1.Claim) bool { return cl.Status.InstanceID == "" || cl.Status.InstanceID == in.ID }
		if cl, ok := c.Claims.Get(name); ok && owned(cl) {
			continue
		}
		// Only an instance that never joined is collected: no Node, or one Tailor never matched
		// to a claim (still tainted unregistered, so no pod runs there). A registered node whose
		// claim vanished (its finalizer removed by hand) may run pods: it is left alone, and said.
		if n, ok := nodeOf[in.ID]; ok && !hasTaint(n, v1alpha1.TaintUnregistered) {
			logger.Info("Instance has a registered node but no claim; not terminating it", "instance", in.ID, "node", n.Name, "claim", name)
			continue
		}
		// The cache may lag a claim created a moment ago: ask the API server before terminating.
		if cl, err := c.Claims.Fetch(ctx, name); err == nil && owned(cl) || err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		logger.Info("Terminating orphaned instance", "instance", in.ID, "claim", name)
		if err := c.Cloud.Terminate(ctx, in.ID); err != nil {
			logger.Error(err, "Cannot terminate orphan", "instance", in.ID)
		}
	}
	c.collectTemplates(ctx, now, cls)
}

// remove terminates a claim's instance, deletes the claim and, if replan, asks the scheduler to
// plan its pods again (a failed launch has already done so). running holds the cluster's live
// instances: an instance is terminated only if its own tags name this claim.
func (c *Controller) remove(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance, why string, replan bool) {
	logger := klog.FromContext(ctx)
	logger.Info("Removing claim", "claim", cl.Name, "instance", cl.Status.InstanceID, "reason", why)
	if in, ok := running[cl.Status.InstanceID]; ok && in.Tags[v1alpha1.TagClaim] == cl.Name {
		if err := c.Cloud.Terminate(ctx, in.ID); err != nil {
			logger.Error(err, "Cannot terminate; will retry", "instance", in.ID)
			return
		}
	}
	if err := c.Claims.Delete(ctx, cl.Name); err != nil {
		logger.Error(err, "Cannot delete claim; will retry", "claim", cl.Name)
		return
	}
	c.Ledger.DropClaim(cl.Name)
	if !replan {
		return
	}
	var pods []*corev1.Pod
	for _, ref := range cl.Spec.Pods {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: types.UID(ref.UID)}})
	}
	c.Activate(pods)
}

// recordInitialized records on the claim that its node is initialized, if it is: Ready without
// startup taints. It says whether it is.
func (c *Controller) recordInitialized(ctx context.Context, cl *v1alpha1.Claim, n *corev1.Node, now time.Time) bool {
	if !Ready(n) || Starting(c.Args, withoutOperationalTaints(n)) {
		return false
	}
	cl = cl.DeepCopy()
	at := metav1.NewTime(now)
	cl.Status.InitializedAt = &at
	if _, err := c.Claims.UpdateStatus(ctx, cl); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot record the node initialized; will retry", "claim", cl.Name)
	}
	return true
}

// checkInitialized records when a registered claim's node is first Ready without startup
// taints; a node still not there registrationTimeout after its launch (a kubelet that never
// becomes Ready, an agent that never lifts its startup taint) is given up like one that never
// registered: the instance is terminated, the claim removed and its pods planned again. A node
// initialized once is never given up for being NotReady later: that is repair, not this.
func (c *Controller) checkInitialized(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance, now time.Time) {
	n, err := c.Nodes.Get(cl.Status.NodeName)
	if err != nil || n.DeletionTimestamp != nil {
		return
	}
	if c.recordInitialized(ctx, cl, n, now) {
		return
	}
	if cl.Status.LaunchedAt != nil && now.Sub(cl.Status.LaunchedAt.Time) > c.Args.RegistrationTimeout.Duration {
		c.Recorder.Eventf(n, nil, corev1.EventTypeWarning, "InitializationTimedOut", "Registration",
			"not Ready without startup taints within %s of its launch; Tailor terminates it and plans its pods again", c.Args.RegistrationTimeout.Duration)
		c.remove(ctx, cl, running, fmt.Sprintf("its node did not become Ready without startup taints within %s", c.Args.RegistrationTimeout.Duration), true)
	}
}

// withoutOperationalTaints is n without the node.kubernetes.io taints that say what happens to
// a node in service (cordoned, under pressure), not that it is still coming up.
func withoutOperationalTaints(n *corev1.Node) *corev1.Node {
	out := n.DeepCopy()
	out.Spec.Taints = slices.DeleteFunc(out.Spec.Taints, func(t corev1.Taint) bool {
		switch t.Key {
		case corev1.TaintNodeUnschedulable, corev1.TaintNodeMemoryPressure, corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure:
			return true
		}
		return false
	})
	return out
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}
