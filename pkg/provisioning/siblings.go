package provisioning

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// SiblingsWaiting says whether other pods of pod's workload planned onto claims have yet to
// reach their nodes: one waits on a claim (its node starting, or up with the pod still queued),
// or a claim keeps room for pods the workload still creates. A workload spread over zones, or
// kept apart by pod anti-affinity, is planned over several claims, and a node's verdict on one
// of its pods depends on where the others run: while the nodes come up and the pods bind one by
// one, a zone ahead of the others refuses its planned pods (a skew of two) until the other
// zones' pods land. Such a refusal says nothing about the plan while the siblings wait: the pod
// keeps to its claim rather than be planned again (a node of its own each), and is tried again
// as they bind.
func (p *Provisioner) SiblingsWaiting(pod *corev1.Pod) bool {
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil {
		return false
	}
	for _, c := range p.Claims.View() {
		if c.DeletionTimestamp != nil || c.Status.Phase == v1alpha1.ClaimFailed || p.nodeGoing(c) {
			continue
		}
		if p.keepsRoomForCreating(c, owner.UID) || p.holdsWaiting(c, owner.UID, pod.UID) {
			return true
		}
	}
	return false
}

// keepsRoomForCreating says whether the claim keeps room for pods still to come of workload w,
// and w still creates pods.
func (p *Provisioner) keepsRoomForCreating(c *v1alpha1.Claim, w types.UID) bool {
	for _, e := range c.Spec.ExpectedPods {
		if types.UID(e.UID) == w {
			return creating(p.Rollouts, e)
		}
	}
	return false
}

// holdsWaiting says whether a pod of workload w other than self waits on the claim for a node:
// unbound, and the ledger holds it there.
func (p *Provisioner) holdsWaiting(c *v1alpha1.Claim, w, self types.UID) bool {
	// Most claims of a burst already past have no pod left waiting: skip their pod lists.
	if !p.Ledger.Waits(c.Name) {
		return false
	}
	for _, ref := range c.Spec.Pods {
		if types.UID(ref.UID) == self {
			continue
		}
		if r, ok := p.Ledger.Lookup(types.UID(ref.UID)); !ok || r.Claim != c.Name {
			continue
		}
		pod, err := p.Pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil || string(pod.UID) != ref.UID || pod.Spec.NodeName != "" {
			continue
		}
		if owner := metav1.GetControllerOfNoCopy(pod); owner != nil && owner.UID == w {
			return true
		}
	}
	return false
}
