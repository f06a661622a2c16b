package consolidation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// methodDeleted is the disruption method of a node whose claim or Node someone deleted.
const methodDeleted = "deleted"

// deletionStep moves along the drain of a node whose claim or Node is being deleted (both carry
// Tailor's termination finalizer). It is the drain of any disruption (mark, evict through the
// Eviction API, finish), but the decision is the user's: it is never rolled back and no budget
// holds it; PodDisruptionBudgets are honoured by the Eviction API and pods annotated
// do-not-disrupt are waited for, as Karpenter does. An instance already gone has nothing to drain.
func (c *Controller) deletionStep(ctx context.Context, o *ownedNode, pods []*corev1.Pod) {
	c.forcedDrainStep(ctx, o, pods, decision{node: o, method: methodDeleted, why: "its claim or node was deleted"}, true)
}

// forcedDrainStep moves along a drain nobody may call off: a deletion, or an interruption (EC2
// takes the instance whatever Tailor does). It marks the node if it is not yet, evicts through
// the Eviction API (PodDisruptionBudgets are honoured; a refusal is asked again next pass) and
// finishes once only pods that stay are left, or at once if the instance is already gone. With
// waitDoNotDisrupt, pods annotated do-not-disrupt are waited for instead of evicted.
func (c *Controller) forcedDrainStep(ctx context.Context, o *ownedNode, pods []*corev1.Pod, d decision, waitDoNotDisrupt bool) {
	logger := klog.FromContext(ctx).WithValues("node", o.node.Name, "claim", o.claim.Name, "method", d.method)
	up, err := c.instanceUp(ctx, o.claim)
	if err != nil {
		logger.Error(err, "Cannot describe the instance of a node being drained; will retry")
		return
	}
	if !up {
		c.finish(ctx, o, false)
		return
	}
	if !disrupting(o.node) {
		if err := c.mark(ctx, d); err != nil {
			logger.Error(err, "Cannot mark node for draining; will retry")
			return
		}
		logger.Info("Draining node", "reason", d.why, "pods", len(pods))
	}
	var toEvict []*corev1.Pod
	waiting := 0
	for _, p := range pods {
		if v, _ := judge(p, ruleInput{now: c.now(), gangs: c.Gangs}); v == skip {
			continue
		}
		if v, why := doNotDisrupt(p, ruleInput{}); waitDoNotDisrupt && v == block {
			waiting++
			c.eventOnce(o.node, "DeletionWaiting", "Tailor waits to delete this node: "+why)
			continue
		}
		toEvict = append(toEvict, p)
	}
	if len(toEvict) == 0 && waiting == 0 {
		c.finish(ctx, o, true)
		return
	}
	c.evictAll(ctx, o, toEvict)
}

// instanceUp says whether the claim's instance still runs (its own tags name the claim).
func (c *Controller) instanceUp(ctx context.Context, cl *v1alpha1.Claim) (bool, error) {
	if cl.Status.InstanceID == "" {
		return false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, cloudTimeout)
	defer cancel()
	ins, err := c.Cloud.Instances(cctx, map[string]string{v1alpha1.TagClaim: cl.Name})
	if err != nil {
		return false, err
	}
	for _, in := range ins {
		if in.ID == cl.Status.InstanceID && in.State != cloud.StateTerminated && in.State != cloud.StateShuttingDown {
			return true, nil
		}
	}
	return false, nil
}
