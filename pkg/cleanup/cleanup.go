// Package cleanup gives back everything Tailor launched in a cluster and takes its finalizers
// off, so that uninstalling Tailor leaves no Claim or Node stuck on tailor.dev/termination (a
// finalizer only a running Tailor removes) and no instance running that nobody will terminate.
// The scheduler binary runs it as `tailor-scheduler cleanup`, which the chart's pre-delete hook
// runs before Helm deletes the scheduler.
//
// Run goes in this order, each step logged with counts:
//  1. Every Claim is deleted with its finalizer on: while Tailor runs, its normal path drains
//     each node through the Eviction API (PodDisruptionBudgets respected), terminates the
//     instance and lets the Claim go. Run waits up to Timeout for the Claims to be gone, deleting
//     again any Claim launched meanwhile; a clean uninstall ends here.
//  2. Tailor is stopped (StopTailor), so nothing launches behind the steps that follow.
//  3. What is left is forced: the cluster's instances that their own tags say Tailor launched
//     (this cluster's ownership tag, a pool and a claim tag) are terminated, whichever claim,
//     live or gone, they name; Tailor's finalizer comes off the remaining Claims and Tailor's
//     Nodes, and the Claims and the Nodes of those instances are deleted.
//  4. The launch templates Tailor created for the cluster are deleted.
//  5. Run fails unless no Claim and no Node with Tailor's finalizer is left.
package cleanup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// DefaultInterval is how often Run looks whether Tailor has finished with the Claims.
const DefaultInterval = 2 * time.Second

// Cleaner removes Tailor's capacity and finalizers from one cluster.
type Cleaner struct {
	// Kube and Claims are clients of the cluster, with the install's identity: the chart's
	// ClusterRole grants what Run does (list, delete and update Claims and Nodes).
	Kube   kubernetes.Interface
	Claims versioned.Interface
	// Cloud is an EC2 provider of the cluster's region and ClusterName.
	Cloud cloud.Provider
	// ClusterName scopes every instance Run terminates: only those tagged
	// kubernetes.io/cluster/<ClusterName>=owned.
	ClusterName string
	// Timeout is how long Tailor's own termination path gets to finish with the Claims before
	// Run forces what is left; 0 forces at once (Tailor is known not to run).
	Timeout time.Duration
	// Interval is how often Run looks at the Claims meanwhile (default DefaultInterval).
	Interval time.Duration
	// StopTailor, if set, stops the running scheduler once its own path has had its chance: one
	// still running would launch again for the pods the drain evicted, behind the forced steps.
	// It returns once nothing of Tailor runs any more.
	StopTailor func(ctx context.Context) error
}

// Result counts what Run did.
type Result struct {
	ClaimsDeleted        int // deleted in step 1
	ClaimsGoneGracefully bool
	InstancesTerminated  int
	ClaimsForced         int // finalizer removed and deleted in step 3
	NodesReleased        int // finalizer removed
	NodesDeleted         int
	TemplatesDeleted     int
}

// LeftError says what Run could not remove.
type LeftError struct {
	Claims []string
	Nodes  []string // Nodes still carrying Tailor's finalizer
}

func (e *LeftError) Error() string {
	var parts []string
	if len(e.Claims) > 0 {
		parts = append(parts, fmt.Sprintf("%d claims (%s)", len(e.Claims), abbreviate(e.Claims)))
	}
	if len(e.Nodes) > 0 {
		parts = append(parts, fmt.Sprintf("%d nodes with the %s finalizer (%s)", len(e.Nodes), v1alpha1.FinalizerTermination, abbreviate(e.Nodes)))
	}
	return "cleanup left " + strings.Join(parts, " and ")
}

func abbreviate(names []string) string {
	const most = 10
	if len(names) <= most {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:most], ", ") + fmt.Sprintf(" and %d more", len(names)-most)
}

// Run removes everything (see the package comment). Its error names what failed, or, as a
// *LeftError, what is left.
func (c *Cleaner) Run(ctx context.Context) (Result, error) {
	var res Result
	if c.ClusterName == "" {
		return res, errors.New("cleanup: the cluster name is required")
	}
	logger := klog.FromContext(ctx)
	store := claims.NewStoreForClient(c.Claims)

	deleted, gone, err := c.deleteClaims(ctx, store)
	res.ClaimsDeleted, res.ClaimsGoneGracefully = deleted, gone
	if err != nil {
		return res, err
	}
	if c.StopTailor != nil {
		logger.Info("Stopping Tailor's scheduler, so nothing launches while the rest is removed")
		if err := c.StopTailor(ctx); err != nil {
			return res, fmt.Errorf("stopping Tailor's scheduler: %w", err)
		}
	}
	if err := c.force(ctx, store, &res); err != nil {
		return res, err
	}
	if err := c.deleteTemplates(ctx, &res); err != nil {
		return res, err
	}
	left, err := c.left(ctx)
	if err != nil {
		return res, err
	}
	if left != nil {
		return res, left
	}
	logger.Info("Cleanup done: no Claim and no Node with Tailor's finalizer is left", "claimsDeleted", res.ClaimsDeleted,
		"instancesTerminated", res.InstancesTerminated, "claimsForced", res.ClaimsForced, "nodesReleased", res.NodesReleased,
		"nodesDeleted", res.NodesDeleted, "launchTemplatesDeleted", res.TemplatesDeleted)
	return res, nil
}

// deleteClaims is step 1: every Claim deleted with its finalizer on, for Tailor's own path, and
// a wait of up to Timeout for them to go. Claims created meanwhile (a launch under way, or one
// for a pod the drain evicted) are deleted in turn. It says how many it deleted and whether
// they all went.
func (c *Cleaner) deleteClaims(ctx context.Context, store *claims.Store) (int, bool, error) {
	logger := klog.FromContext(ctx)
	deleted := map[string]bool{}
	pass := func(ctx context.Context) (int, error) {
		list, err := c.Claims.TailorV1alpha1().Claims().List(ctx, metav1.ListOptions{})
		if err != nil {
			return 0, fmt.Errorf("listing claims: %w", err)
		}
		for i := range list.Items {
			cl := &list.Items[i]
			if cl.DeletionTimestamp != nil || deleted[string(cl.UID)] {
				continue
			}
			// Terminate puts the finalizer back on a Claim stripped of it, so its instance is
			// not lost with it.
			if err := store.Terminate(ctx, cl.Name); err != nil {
				return 0, fmt.Errorf("deleting claim %s: %w", cl.Name, err)
			}
			deleted[string(cl.UID)] = true
		}
		return len(list.Items), nil
	}
	n, err := pass(ctx)
	if err != nil {
		return 0, false, err
	}
	logger.Info("Deleted every Claim: Tailor drains and terminates their nodes while it runs", "claims", n, "timeout", c.Timeout)
	if n == 0 {
		return 0, true, nil
	}
	if c.Timeout <= 0 {
		return len(deleted), false, nil
	}
	interval := c.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	start, lastLog := time.Now(), time.Now()
	err = wait.PollUntilContextTimeout(ctx, interval, c.Timeout, false, func(ctx context.Context) (bool, error) {
		left, err := pass(ctx)
		if err != nil {
			// A failing API server may come back before the timeout; the forced steps report it
			// if it does not.
			logger.Error(err, "Cannot look at the claims; will retry")
			return false, nil
		}
		if time.Since(lastLog) >= 30*time.Second {
			logger.Info("Waiting for Tailor to terminate the claims' nodes", "claimsLeft", left, "waited", time.Since(start).Round(time.Second))
			lastLog = time.Now()
		}
		return left == 0, nil
	})
	switch {
	case err == nil:
		logger.Info("Tailor terminated every claim's node", "claims", len(deleted), "took", time.Since(start).Round(time.Second))
		return len(deleted), true, nil
	case ctx.Err() != nil:
		return len(deleted), false, ctx.Err()
	}
	logger.Info("Claims still there after the timeout: Tailor is not running, or could not drain their nodes; forcing", "timeout", c.Timeout)
	return len(deleted), false, nil
}

// force is step 3: Tailor's instances terminated, then its finalizers removed and its Claims and
// the Nodes of terminated instances deleted. An instance that cannot be terminated leaves every
// object in place, as the record of what still runs.
func (c *Cleaner) force(ctx context.Context, store *claims.Store, res *Result) error {
	logger := klog.FromContext(ctx)
	list, err := c.Claims.TailorV1alpha1().Claims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing claims: %w", err)
	}
	cls := make([]*v1alpha1.Claim, len(list.Items))
	for i := range list.Items {
		cls[i] = &list.Items[i]
	}
	nodeList, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	// Every live instance with the cluster's ownership tag: the managed node groups' carry it
	// too, which is why each one's own tags decide (Decide), and why a Tailor Node whose
	// instance is one of those is never deleted.
	ins, err := c.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + c.ClusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		return fmt.Errorf("listing the cluster's instances: %w", err)
	}
	p := Decide(c.ClusterName, cls, nodeList.Items, ins)
	logger.Info("Forcing what is left", "claims", len(cls), "tailorNodes", len(p.ReleaseNodes),
		"instancesToTerminate", len(p.Terminate), "instancesKept", p.Kept)
	if len(p.Terminate) > 0 {
		ids := make([]string, len(p.Terminate))
		for i, t := range p.Terminate {
			ids[i] = t.ID
			logger.Info("Terminating instance", "instance", t.ID, "claim", t.Claim, "why", t.Why)
		}
		if err := c.Cloud.Terminate(ctx, ids...); err != nil {
			return fmt.Errorf("terminating Tailor's instances %s: %w", strings.Join(ids, ", "), err)
		}
		res.InstancesTerminated = len(ids)
	}
	for _, name := range p.ReleaseNodes {
		if err := lifecycle.RemoveNodeFinalizer(ctx, c.Kube, name); err != nil {
			return fmt.Errorf("removing the %s finalizer from node %s: %w", v1alpha1.FinalizerTermination, name, err)
		}
		res.NodesReleased++
	}
	for _, name := range p.DeleteNodes {
		err := c.Kube.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting node %s: %w", name, err)
		}
		res.NodesDeleted++
	}
	for _, cl := range cls {
		if err := store.Delete(ctx, cl.Name); err != nil {
			return fmt.Errorf("removing claim %s: %w", cl.Name, err)
		}
		res.ClaimsForced++
	}
	logger.Info("Forced", "instancesTerminated", res.InstancesTerminated, "nodesReleased", res.NodesReleased,
		"nodesDeleted", res.NodesDeleted, "claimsRemoved", res.ClaimsForced)
	return nil
}

// deleteTemplates is step 4: the launch templates Tailor created for the cluster (the cluster's
// ownership tag and a pool tag, which the controller IAM policy requires to delete them).
func (c *Cleaner) deleteTemplates(ctx context.Context, res *Result) error {
	tmpls, err := c.Cloud.LaunchTemplates(ctx, map[string]string{v1alpha1.TagPool: "*"})
	if err != nil {
		return fmt.Errorf("listing Tailor's launch templates: %w", err)
	}
	for _, lt := range tmpls {
		if err := c.Cloud.DeleteLaunchTemplate(ctx, lt.ID); err != nil {
			return fmt.Errorf("deleting launch template %s (%s): %w", lt.Name, lt.ID, err)
		}
		res.TemplatesDeleted++
	}
	klog.FromContext(ctx).Info("Deleted Tailor's launch templates", "launchTemplates", res.TemplatesDeleted)
	return nil
}

// left is step 5: the Claims, and the Nodes with Tailor's finalizer, still there (nil if none).
func (c *Cleaner) left(ctx context.Context) (*LeftError, error) {
	list, err := c.Claims.TailorV1alpha1().Claims().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing claims: %w", err)
	}
	nodes, err := c.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	var e LeftError
	for _, cl := range list.Items {
		e.Claims = append(e.Claims, cl.Name)
	}
	for _, n := range nodes.Items {
		if slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
			e.Nodes = append(e.Nodes, n.Name)
		}
	}
	if len(e.Claims) == 0 && len(e.Nodes) == 0 {
		return nil, nil
	}
	return &e, nil
}

// Termination is one instance the forced step terminates, and why it is Tailor's.
type Termination struct {
	ID, Claim, Why string
}

// Plan is what the forced step does, decided from the cluster's Claims, Nodes and instances.
type Plan struct {
	Terminate []Termination
	// Kept counts the cluster's live instances that are not Tailor's by their own tags.
	Kept int
	// ReleaseNodes lose Tailor's finalizer: every Node carrying it.
	ReleaseNodes []string
	// DeleteNodes are Tailor's Nodes (labelled with a claim, or with its finalizer) whose
	// instance is no longer live or is terminated now; a Node on a live instance Tailor does not
	// own is left (the finalizer still comes off).
	DeleteNodes []string
}

// Decide plans the forced step. An instance is terminated only if its own tags say Tailor
// launched it for this cluster: kubernetes.io/cluster/<cluster>=owned, a tailor.dev/pool and a
// tailor.dev/claim tag (the controller IAM policy lets Tailor terminate nothing else). The claim
// it names may be live and own it (lifecycle.InstanceOf), be gone, or have recorded another
// instance: uninstalling, every one of them goes. Instances already going are left to finish.
func Decide(cluster string, cls []*v1alpha1.Claim, nodes []corev1.Node, ins []cloud.Instance) Plan {
	byName := make(map[string]*v1alpha1.Claim, len(cls))
	for _, cl := range cls {
		byName[cl.Name] = cl
	}
	var p Plan
	gone := map[string]bool{} // instances terminated now or already going
	live := map[string]bool{} // live instances kept
	for _, in := range ins {
		if in.State == cloud.StateShuttingDown || in.State == cloud.StateTerminated {
			gone[in.ID] = true
			continue
		}
		why := tailorLaunched(cluster, in, byName)
		if why == "" {
			p.Kept++
			live[in.ID] = true
			continue
		}
		gone[in.ID] = true
		p.Terminate = append(p.Terminate, Termination{ID: in.ID, Claim: in.Tags[v1alpha1.TagClaim], Why: why})
	}
	for _, n := range nodes {
		fin := slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination)
		_, labelled := n.Labels[v1alpha1.LabelClaim]
		if fin {
			p.ReleaseNodes = append(p.ReleaseNodes, n.Name)
		}
		// A Node is deleted only if its instance is gone; one whose instance the listing did not
		// show (not live, or not the cluster's) has none to keep it either.
		if id := lifecycle.InstanceID(n.Spec.ProviderID); (fin || labelled) && !live[id] {
			p.DeleteNodes = append(p.DeleteNodes, n.Name)
		}
	}
	return p
}

// tailorLaunched says why the instance is one Tailor launched for the cluster, or "" if its tags
// do not say so.
func tailorLaunched(cluster string, in cloud.Instance, byName map[string]*v1alpha1.Claim) string {
	claim, hasClaim := in.Tags[v1alpha1.TagClaim]
	_, hasPool := in.Tags[v1alpha1.TagPool]
	if in.Tags[v1alpha1.TagClusterPrefix+cluster] != v1alpha1.TagOwnedValue || !hasClaim || claim == "" || !hasPool {
		return ""
	}
	cl, ok := byName[claim]
	switch {
	case !ok:
		return "orphan: its claim is gone"
	case lifecycle.InstanceOf(cl, in):
		return "the claim's instance"
	default:
		return "orphan: its claim recorded another instance"
	}
}
