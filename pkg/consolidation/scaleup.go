package consolidation

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// rolloutStall is how long a workload may go without creating a pod and still count as a
// scale-up under way (a controller that stopped: a quota without a condition, a webhook that
// refuses its pods).
const rolloutStall = 2 * time.Minute

// recentPending is how young a pending pod must be to say the cluster is still scaling up: it
// may be waiting in the scheduler's queue for its next try, on its way to a claim, or planned
// again after a node refused it, and the room there is now may be what it needs. An older pending
// pod that no claim waits for is one no launch can serve (too big for every type, say), and must
// not hold consolidation back for good.
const recentPending = 2 * time.Minute

// scaleUp says why the cluster is still scaling up ("" if it is not). While it is, no voluntary
// disruption starts (interruptions and deletions go on): the room consolidation would take is the
// room the pods on their way need, and a decision that leans on a node still starting leans on
// capacity that is not there yet. Karpenter's disruption waits in the same way for nodes not yet
// initialized. Every replica sees claims, pods and workloads; provisioning says whether this
// process is planning a batch. waiting are the profile's pods still pending or bound but not yet
// running: a pod starting on its node (pulling its image, on EKS) is the scale-up's as much as
// one pending, and evicting it would undo it.
func scaleUp(claims []*v1alpha1.Claim, waiting []*corev1.Pod, owing []rollout.Workload, provisioning bool, now time.Time) string {
	if provisioning {
		return "a batch of pending pods is being planned"
	}
	if len(owing) > 0 {
		return fmt.Sprintf("%s (and %d more workloads are creating pods)", owing[0], len(owing)-1)
	}
	for _, cl := range claims {
		if starting(cl) {
			return fmt.Sprintf("claim %s is still starting (%s)", cl.Name, startingPhase(cl))
		}
	}
	pending, starting := 0, 0
	for _, p := range waiting {
		switch {
		case now.Sub(p.CreationTimestamp.Time) >= recentPending:
		case p.Spec.NodeName == "":
			pending++
		default:
			starting++
		}
	}
	if pending > 0 {
		return fmt.Sprintf("%d pods created in the last %s are pending", pending, recentPending)
	}
	if starting > 0 {
		return fmt.Sprintf("%d pods created in the last %s are starting on their nodes", starting, recentPending)
	}
	return ""
}

// lastScaleUp is the later of seen (when a pass last saw a scale-up) and the last time a claim
// launched for pending pods (not a replacement) had its node initialized.
func lastScaleUp(claims []*v1alpha1.Claim, seen time.Time) time.Time {
	last := seen
	for _, cl := range claims {
		if cl.Spec.Replacement != nil || cl.Status.InitializedAt == nil {
			continue
		}
		if t := cl.Status.InitializedAt.Time; t.After(last) {
			last = t
		}
	}
	return last
}

// starting says whether a claim adds capacity that is not usable yet: launched for pending pods
// (not as a consolidation's replacement, whose own drain waits for it), neither failed nor
// going, and its node not yet Registered and initialized.
func starting(cl *v1alpha1.Claim) bool {
	if cl.DeletionTimestamp != nil || cl.Spec.Replacement != nil {
		return false
	}
	switch cl.Status.Phase {
	case v1alpha1.ClaimFailed:
		return false
	case v1alpha1.ClaimRegistered:
		return cl.Status.InitializedAt == nil
	}
	return true
}

func startingPhase(cl *v1alpha1.Claim) string {
	switch cl.Status.Phase {
	case v1alpha1.ClaimRegistered:
		return "node registered, not yet initialized"
	case "":
		return string(v1alpha1.ClaimPending)
	}
	return string(cl.Status.Phase)
}
