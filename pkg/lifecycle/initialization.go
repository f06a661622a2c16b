package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// The initialization stage: a Registered claim's node becomes Ready without startup taints, and
// the claim records when; consolidation never counts on a node before that.

// recordInitialized records on the claim that its node is initialized, if it is: Ready without
// startup taints. It says whether it is.
func (c *Controller) recordInitialized(ctx context.Context, cl *v1alpha1.Claim, n *corev1.Node, now time.Time) bool {
	if !Initialized(c.Args, n) {
		return false
	}
	// The provisioner may have put pods on the claim since the informer saw it (its node was
	// not up yet): a conflict reads the claim afresh, so the pods waiting on it are tried on
	// the node now, not at the next pass.
	at := metav1.NewTime(now)
	written := false
	err := c.Claims.UpdateFrom(ctx, cl, func(cur *v1alpha1.Claim) error {
		if cur.Status.InitializedAt != nil || cur.DeletionTimestamp != nil || cur.Status.NodeName != n.Name {
			return nil // recorded already, or no longer this node's claim to record
		}
		cur.Status.InitializedAt = &at
		_, err := c.Claims.UpdateStatus(ctx, cur)
		written = err == nil
		return err
	})
	logger := klog.FromContext(ctx)
	switch {
	case err != nil:
		logger.Error(err, "Cannot record the node initialized; will retry", "claim", cl.Name)
	case written:
		logger.Info("Initialized", "node", n.Name, "claim", cl.Name)
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
		c.remove(ctx, cl, running, fmt.Sprintf("its node did not become Ready without startup taints within %s", c.Args.RegistrationTimeout.Duration))
	}
}

// Initialized says whether the node is up for pods: Ready, and no taint of a node coming up left
// (those of a node in service, such as a cordon, aside). The claim records the first time it is.
func Initialized(args *config.TailorArgs, n *corev1.Node) bool {
	return Ready(n) && !Starting(args, withoutOperationalTaints(n))
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
