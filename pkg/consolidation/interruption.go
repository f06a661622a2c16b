package consolidation

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// Interruptions: EC2 takes an instance away whatever Tailor does (pkg/interruption reads the
// warnings). The node is annotated with why and since when, and the loop does the rest with
// the paths it has: replacements first when the pods need new capacity (launchReplacements, the
// replacement of any consolidation), then the drain once they are up, through the Eviction API
// with PodDisruptionBudgets honoured (forcedDrainStep: never rolled back, no budget,
// do-not-disrupt pods evicted too, as the instance goes anyway), then the lifecycle's
// termination. An instance already stopping or terminating has nothing left to save: its node
// and claim are handed to the termination at once.

// methodInterruption is the disruption method of an interrupted node.
const methodInterruption = "interruption"

// Interruption kinds, the values of v1alpha1.AnnotationInterrupted.
const (
	InterruptionSpot      = "spot-interruption"
	InterruptionScheduled = "scheduled-change"
	// InterruptionCapacityBlock marks a node of a Capacity Block that ends soon, and
	// InterruptionCapacityBlockLate one handed over with less time left than its patience
	// needs (after a restart, or a block cut short): it drains at once.
	InterruptionCapacityBlock     = "capacity-block-ending"
	InterruptionCapacityBlockLate = "capacity-block-ending-now"
	// InterruptionStoppedPrefix + the instance state (stopping, stopped, shutting-down,
	// terminated) marks an instance that is already going.
	InterruptionStoppedPrefix = v1alpha1.InterruptedInstanceGoing
)

// spotPatience is how long an interrupted spot node waits for its replacements before it drains
// anyway: the warning comes two minutes before EC2 reclaims the instance, and the pods need the
// rest of that time to leave gracefully.
const spotPatience = 60 * time.Second

// interruption returns the node's interruption kind, or "".
func interruption(n *corev1.Node) string { return n.Annotations[v1alpha1.AnnotationInterrupted] }

// instanceGoing says whether the node's instance is already stopping or terminating.
func instanceGoing(n *corev1.Node) bool {
	return strings.HasPrefix(interruption(n), InterruptionStoppedPrefix)
}

// capacityBlockPatience is how long a node of an ending Capacity Block waits for its
// replacements before it drains anyway (lifecycle.CapacityBlockPatience, which hands it over).
const capacityBlockPatience = lifecycle.CapacityBlockPatience

// impatient says whether an interrupted node should drain now, replacements up or not.
func (c *Controller) impatient(n *corev1.Node) bool {
	var patience time.Duration
	switch interruption(n) {
	case InterruptionSpot:
		patience = spotPatience
	case InterruptionCapacityBlock:
		patience = capacityBlockPatience
	case InterruptionCapacityBlockLate:
		return true
	default:
		return false
	}
	at, err := time.Parse(time.RFC3339, n.Annotations[v1alpha1.AnnotationInterruptedAt])
	return err != nil || c.now().Sub(at) >= patience
}

// Interrupt tells the loop that EC2 is taking the claim's instance away, for the reason kind
// (an Interruption* value; InterruptionStoppedPrefix+state for an instance already going). It
// says whether anything new happens: false for a node already marked, so a repeated message
// does nothing. Before anything new happens, first is called: the caller marks the offering
// unavailable there, before the loop can plan replacements onto it. A claim whose node has not
// registered carries no pods: it is handed to the lifecycle's termination stage at once (its
// waiting pods are planned again). The caller has checked that the claim is Tailor's; the
// instance is terminated only if its own tags name the claim.
func (c *Controller) Interrupt(ctx context.Context, claimName, kind string, first func()) (bool, error) {
	logger := klog.FromContext(ctx).WithValues("claim", claimName, "interruption", kind)
	cl, err := c.Claims.Fetch(ctx, claimName)
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if cl.Status.Phase != v1alpha1.ClaimRegistered || cl.Status.NodeName == "" {
		if cl.DeletionTimestamp != nil {
			return false, nil // being removed already
		}
		first()
		if err := c.Claims.Terminate(ctx, cl.Name); err != nil {
			return false, err
		}
		removed.WithLabelValues(methodInterruption).Inc()
		logger.Info("Interrupted claim handed over for termination before its node registered", "instance", cl.Status.InstanceID)
		return true, nil
	}
	// A repeated message writes nothing: a stop or termination overrides a warning (nothing is
	// left to drain), nothing overrides a stop, and one warning is as good as another.
	cur, err := c.Client.CoreV1().Nodes().Get(ctx, cl.Status.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if prev := interruption(cur); prev == kind || instanceGoing(cur) || prev != "" && !strings.HasPrefix(kind, InterruptionStoppedPrefix) {
		return false, nil
	}
	first()
	n, err := c.updateNode(ctx, cl.Status.NodeName, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationInterrupted] = kind
		if _, ok := n.Annotations[v1alpha1.AnnotationInterruptedAt]; !ok {
			n.Annotations[v1alpha1.AnnotationInterruptedAt] = c.now().UTC().Format(time.RFC3339)
		}
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	logger.Info("Node interrupted", "node", n.Name, "instance", cl.Status.InstanceID)
	c.Recorder.Eventf(n, nil, corev1.EventTypeWarning, "Interrupted", "Interrupt", "EC2 is taking this node's instance away (%s): Tailor replaces and drains it", kind)
	c.Prompt()
	return true, nil
}

// RecommendRebalance tells the claim's node that EC2 recommends rebalancing its spot instance
// (elevated risk of interruption: the recommendation comes early, in bursts, often for instances
// never interrupted). With replace false, an event on the node is all. With replace true, first
// is called, the node is marked (AnnotationRebalanceRecommended) and the loop renews it as a
// drifted node: within its pool's budgets, never while the cluster scales up, never evicting a
// do-not-disrupt pod. It says whether anything new happened: false for a node not registered yet
// (nothing runs there to move), a node EC2 is already taking away, or one already marked.
func (c *Controller) RecommendRebalance(ctx context.Context, claimName string, replace bool, first func()) (bool, error) {
	cl, err := c.Claims.Fetch(ctx, claimName)
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if cl.Status.Phase != v1alpha1.ClaimRegistered || cl.Status.NodeName == "" || cl.DeletionTimestamp != nil {
		return false, nil
	}
	cur, err := c.Client.CoreV1().Nodes().Get(ctx, cl.Status.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	if interruption(cur) != "" || rebalanceRecommendedAt(cur) != "" {
		return false, nil
	}
	if !replace {
		c.Recorder.Eventf(cur, nil, corev1.EventTypeNormal, "RebalanceRecommended", "Advise",
			"EC2 recommends rebalancing this spot instance (elevated risk of interruption); it keeps running (rebalanceRecommendations: Advisory)")
		return true, nil
	}
	first()
	n, err := c.updateNode(ctx, cur.Name, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationRebalanceRecommended] = c.now().UTC().Format(time.RFC3339)
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	klog.FromContext(ctx).Info("Rebalance recommended; the node will be renewed", "claim", cl.Name, "node", n.Name, "instance", cl.Status.InstanceID)
	c.Recorder.Eventf(n, nil, corev1.EventTypeNormal, "RebalanceRecommended", "Renew",
		"EC2 recommends rebalancing this spot instance (elevated risk of interruption): Tailor renews it within pool %s's disruption budgets (rebalanceRecommendations: Replace)", cl.Spec.Pool)
	c.Prompt()
	return true, nil
}

// rebalanceRecommendedAt is when EC2 recommended rebalancing the node's instance, with
// rebalanceRecommendations: Replace ("" if it did not).
func rebalanceRecommendedAt(n *corev1.Node) string {
	return n.Annotations[v1alpha1.AnnotationRebalanceRecommended]
}

// interruptedDecision is the decision of an interrupted node: every pod but those that stay
// with the node (DaemonSet, mirror, finished) leaves, whatever would block a consolidation.
func interruptedDecision(o *ownedNode, pods []*corev1.Pod, now time.Time) decision {
	var evict []*corev1.Pod
	for _, p := range pods {
		if v, _ := judge(p, ruleInput{now: now}); v != skip {
			evict = append(evict, p)
		}
	}
	return decision{node: o, method: methodInterruption, why: "EC2 is taking it away: " + interruption(o.node), evict: evict}
}
