package lifecycle

import (
	"context"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Deletion of claims and nodes. Every claim and every node Tailor registered carries
// v1alpha1.FinalizerTermination, so nobody's delete can take an instance away under its pods:
//   - a Registered claim (or its node) being deleted while the instance runs is drained by the
//     consolidation loop, which owns the drain (taint, Eviction API, PDBs) and marks the node
//     drained (v1alpha1.AnnotationDrained) when it is over; then its instance is terminated here,
//     its Node deleted and the claim let go (terminateDrained);
//   - a claim that never registered has no pods to drain: its instance, if any, is terminated
//     here and the claim goes;
//   - a node being deleted whose instance is gone, or which no claim owns, has nothing left to
//     protect: its finalizer comes off.
// The sweep finds every such claim; a claim's deletion and its node's drain, as the informers
// report them, queue it at once (terminate).

// InstanceOf says whether in is cl's instance, the one test before Tailor terminates an instance
// for a claim: its own tags name the claim, and the claim recorded no other instance. Claims are
// named after their pods, so an instance a failed launch left behind may carry the name of a
// later claim for the same pods; it is that claim's only if the claim recorded none.
func InstanceOf(cl *v1alpha1.Claim, in cloud.Instance) bool {
	return in.Tags[v1alpha1.TagClaim] == cl.Name && (cl.Status.InstanceID == "" || cl.Status.InstanceID == in.ID)
}

// Drained says whether the node's drain is over: consolidation handed it over for termination.
func Drained(n *corev1.Node) bool {
	_, ok := n.Annotations[v1alpha1.AnnotationDrained]
	return ok
}

// handedOver says whether the drain has handed the claim's node over: marked Drained, and drained
// indeed (the disrupting taint the drain puts on) or with nothing left to drain (its instance no
// longer runs, or is going, as EC2 said). The annotation alone, put on by hand, is no drain.
func handedOver(n *corev1.Node, cl *v1alpha1.Claim, running map[string]cloud.Instance) bool {
	in, ok := running[cl.Status.InstanceID]
	up := ok && (in.State == "" || in.State == cloud.StatePending || in.State == cloud.StateRunning)
	going := strings.HasPrefix(n.Annotations[v1alpha1.AnnotationInterrupted], v1alpha1.InterruptedInstanceGoing)
	return Drained(n) && (hasTaint(n, v1alpha1.TaintDisrupting) || going || !up)
}

// Deleting says whether a claim or its node is being deleted.
func Deleting(cl *v1alpha1.Claim, n *corev1.Node) bool {
	return cl != nil && cl.DeletionTimestamp != nil || n != nil && n.DeletionTimestamp != nil
}

// deleteNode takes Tailor's finalizer off a node and deletes it (a node already gone is fine).
func deleteNode(ctx context.Context, client kubernetes.Interface, name string) error {
	if err := RemoveNodeFinalizer(ctx, client, name); err != nil {
		return err
	}
	if err := client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// RemoveNodeFinalizer takes Tailor's finalizer off a node, leaving anyone else's.
func RemoveNodeFinalizer(ctx context.Context, client kubernetes.Interface, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fins := slices.DeleteFunc(slices.Clone(n.Finalizers), func(f string) bool { return f == v1alpha1.FinalizerTermination })
		if len(fins) == len(n.Finalizers) {
			return nil
		}
		n.Finalizers = fins
		_, err = client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// releaseDeletingNode handles a node being deleted that the drain does not: no claim owns it
// any more, or its instance is gone. Nothing runs there that a drain could save.
func (c *Controller) releaseDeletingNode(ctx context.Context, node *corev1.Node, cl *v1alpha1.Claim, running map[string]cloud.Instance) {
	if !slices.Contains(node.Finalizers, v1alpha1.FinalizerTermination) {
		return
	}
	owned := cl != nil && cl.Status.Phase == v1alpha1.ClaimRegistered && cl.Status.NodeName == node.Name
	if _, up := running[InstanceID(node.Spec.ProviderID)]; owned && up {
		return // the consolidation loop drains it
	}
	if err := RemoveNodeFinalizer(ctx, c.Client, node.Name); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot release deleted node; will retry", "node", node.Name)
		return
	}
	klog.FromContext(ctx).Info("Released deleted node: its instance is gone or no claim owns it", "node", node.Name)
}

// removeDeletedClaim finishes the deletion of a claim that never registered a node: its
// instance, if one was launched, is terminated (it carries no pods) and the claim goes.
func (c *Controller) removeDeletedClaim(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance, nodeOf map[string]*corev1.Node) {
	logger := klog.FromContext(ctx)
	if c.InFlight(cl.Name) {
		return // its launch answers first; the next sweep sees the instance
	}
	// The cache may lag a registration that happened meanwhile: a Registered claim is the
	// drain's, never terminated here.
	cur, err := c.Claims.Fetch(ctx, cl.Name)
	if apierrors.IsNotFound(err) {
		return
	} else if err != nil || cur.Status.Phase == v1alpha1.ClaimRegistered {
		return
	}
	cl = cur
	for _, in := range running {
		if !InstanceOf(cl, in) {
			continue // not its instance; an orphan, if Tailor's at all, is collected as one
		}
		if n, ok := nodeOf[in.ID]; ok && !hasTaint(n, v1alpha1.TaintUnregistered) {
			return // its node registered after all: pods may run there; the drain takes it
		}
		if err := c.Cloud.Terminate(ctx, in.ID); err != nil {
			logger.Error(err, "Cannot terminate the deleted claim's instance; will retry", "claim", cl.Name, "instance", in.ID)
			return
		}
	}
	if err := c.Claims.Delete(ctx, cl.Name); err != nil {
		logger.Error(err, "Cannot finish deleting claim; will retry", "claim", cl.Name)
		return
	}
	logger.Info("Deleted claim removed", "claim", cl.Name, "phase", cl.Status.Phase, "instance", cl.Status.InstanceID)
}

// terminate finishes the deletion of the named claim as soon as the informers report it deleted
// or its node drained, as the sweep would at its next pass.
func (c *Controller) terminate(ctx context.Context, name string) error {
	cl, ok := c.Claims.Get(name)
	if !ok || cl.DeletionTimestamp == nil {
		return nil
	}
	// This cluster's instances only: another cluster may have a claim of the same name.
	ins, err := c.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + c.Args.ClusterName: v1alpha1.TagOwnedValue, v1alpha1.TagClaim: name})
	if err != nil {
		return err
	}
	running := make(map[string]cloud.Instance, len(ins))
	for _, in := range ins {
		running[in.ID] = in
	}
	if cl.Status.Phase == v1alpha1.ClaimRegistered {
		c.terminateDrained(ctx, cl, running)
		return nil
	}
	nodes, err := c.Nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	nodeOf := map[string]*corev1.Node{}
	for _, n := range nodes {
		if _, ok := running[InstanceID(n.Spec.ProviderID)]; ok {
			nodeOf[InstanceID(n.Spec.ProviderID)] = n
		}
	}
	c.removeDeletedClaim(ctx, cl, running, nodeOf)
	return nil
}

// terminateDrained finishes a Registered claim being deleted once the drain has handed its node
// over, or the node is gone: the instance is terminated if it is the claim's, the Node deleted
// and the claim let go. Until then the node is the drain's.
func (c *Controller) terminateDrained(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance) {
	logger := klog.FromContext(ctx).WithValues("claim", cl.Name, "node", cl.Status.NodeName)
	node, err := c.Nodes.Get(cl.Status.NodeName)
	switch {
	case apierrors.IsNotFound(err):
		node = nil
	case err != nil:
		return
	case !handedOver(node, cl, running):
		return // the consolidation loop drains it first
	}
	if !c.terminateOwn(ctx, cl, running) {
		return
	}
	if node != nil {
		if err := deleteNode(ctx, c.Client, node.Name); err != nil {
			logger.Error(err, "Cannot delete the terminated claim's node; will retry")
			return
		}
	}
	if err := c.Claims.Delete(ctx, cl.Name); err != nil {
		logger.Error(err, "Cannot finish deleting claim; will retry")
		return
	}
	logger.Info("Terminated", "instance", cl.Status.InstanceID)
}

// terminateOwn terminates the claim's recorded instance if it still runs and is the claim's
// (InstanceOf); it says whether the instance is dealt with.
func (c *Controller) terminateOwn(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance) bool {
	in, ok := running[cl.Status.InstanceID]
	if !ok || !InstanceOf(cl, in) {
		return true
	}
	if err := c.Cloud.Terminate(ctx, in.ID); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot terminate; will retry", "claim", cl.Name, "instance", in.ID)
		return false
	}
	return true
}

// addFinalizer puts Tailor's termination finalizer on a claim that lacks it.
func (c *Controller) addFinalizer(ctx context.Context, cl *v1alpha1.Claim) {
	cl = cl.DeepCopy()
	cl.Finalizers = append(cl.Finalizers, v1alpha1.FinalizerTermination)
	if _, err := c.Claims.Update(ctx, cl); err != nil && !apierrors.IsConflict(err) {
		klog.FromContext(ctx).Error(err, "Cannot add the termination finalizer; will retry", "claim", cl.Name)
	}
}

// remove terminates a claim's instance and deletes the claim. running holds the cluster's live
// instances: an instance is terminated only if it is the claim's (InstanceOf).
func (c *Controller) remove(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance, why string) {
	logger := klog.FromContext(ctx)
	logger.Info("Removing claim", "claim", cl.Name, "instance", cl.Status.InstanceID, "reason", why)
	if !c.terminateOwn(ctx, cl, running) {
		return
	}
	if err := c.Claims.Delete(ctx, cl.Name); err != nil {
		logger.Error(err, "Cannot delete claim; will retry", "claim", cl.Name)
	}
}
