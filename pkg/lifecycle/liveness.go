package lifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// The liveness stage: instances and claims that lost each other. A Registered claim whose
// instance is gone is removed once its node is gone or going; an instance Tailor tagged that no
// claim owns, and that never joined the cluster, is terminated.

// instanceGone removes a Registered claim whose instance is gone (terminated by hand, or by a
// drain that crashed before cleaning up), once its node is gone or going.
func (c *Controller) instanceGone(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance) {
	n, err := c.Nodes.Get(cl.Status.NodeName)
	if apierrors.IsNotFound(err) || err == nil && n.DeletionTimestamp != nil {
		if err == nil {
			c.releaseDeletingNode(ctx, n, cl, running)
		}
		c.remove(ctx, cl, running, "its instance and node are gone")
	}
}

// collectOrphans terminates the cluster's tagged instances no claim owns, older than the orphan
// grace, that never joined the cluster.
func (c *Controller) collectOrphans(ctx context.Context, live []cloud.Instance, nodeOf map[string]*corev1.Node, now time.Time) {
	logger := klog.FromContext(ctx)
	for _, in := range live {
		name := in.Tags[v1alpha1.TagClaim]
		if name == "" || now.Sub(in.LaunchTime) < c.OrphanGrace {
			continue // not launched by Tailor, or too young to judge
		}
		// Claims are named after their pods, so a later claim for the same pods may carry the
		// name of one whose launch left an instance behind (CreateFleet acted, its answer an
		// error): the claim owns the instance only if it recorded no other (InstanceOf).
		if cl, ok := c.Claims.Get(name); ok && InstanceOf(cl, in) {
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
		if cl, err := c.Claims.Fetch(ctx, name); err == nil && InstanceOf(cl, in) || err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		logger.Info("Terminating orphaned instance", "instance", in.ID, "claim", name)
		if err := c.Cloud.Terminate(ctx, in.ID); err != nil {
			logger.Error(err, "Cannot terminate orphan", "instance", in.ID)
		}
	}
}
