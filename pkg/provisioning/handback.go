package provisioning

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// handBack returns to the scheduler, once each, the batch's pods whose workload still has room
// kept for it on a node that is up now. They failed to schedule while the nodes planned for
// them booted and waited in the batch meanwhile; the scheduler now places them there (Tailor's
// Filter keeps that room from other pods, its Score sends the workload's pods to it). Planned
// anew, each would get a node of its own beside the room kept for it. A pod the scheduler fails
// again comes back in a later batch and is planned then. It returns the pods to plan.
func (p *Provisioner) handBack(ctx context.Context, pods []*planning.Pod) []*planning.Pod {
	if p.Rollouts == nil || p.Activate == nil {
		return pods
	}
	now := p.clock().Now()
	p.forgetHandBacks(now)
	room := map[types.UID]int{}
	var rest []*planning.Pod
	var back []*corev1.Pod
	var claims []*v1alpha1.Claim
	for _, pod := range pods {
		w, ok := p.Rollouts.Of(pod.Pod)
		if !ok || !p.firstHandBack(pod.Pod.UID) {
			rest = append(rest, pod)
			continue
		}
		if _, known := room[w.UID]; !known {
			if claims == nil {
				claims = p.Claims.View()
			}
			room[w.UID] = roomKeptOnUpNodes(w.UID, p.Rollouts.LivePods(w), claims, p.nodeUp, now)
		}
		if room[w.UID] <= 0 {
			rest = append(rest, pod)
			continue
		}
		room[w.UID]--
		back = append(back, pod.Pod)
	}
	p.giveBack(ctx, back, "room is kept for them on nodes that are up")
	return rest
}

// giveBack returns pods to the scheduler, once each (firstHandBack): they are no longer being
// planned, so a PostFilter that fails one again finds it free to batch.
func (p *Provisioner) giveBack(ctx context.Context, pods []*corev1.Pod, why string) {
	if len(pods) == 0 {
		return
	}
	now := p.clock().Now()
	p.mu.Lock()
	for _, pod := range pods {
		p.handedBack[pod.UID] = now
		delete(p.planning, pod.UID)
	}
	p.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Handed pods back to the scheduler", "pods", len(pods), "why", why)
	p.Activate(pods)
}

// forgetHandBacks drops the hand-backs older than expectedPlanFresh: such a pod may be handed
// back again.
func (p *Provisioner) forgetHandBacks(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for u, at := range p.handedBack {
		if now.Sub(at) > expectedPlanFresh {
			delete(p.handedBack, u)
		}
	}
}

// firstHandBack says whether the pod was not handed back within expectedPlanFresh.
func (p *Provisioner) firstHandBack(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, handed := p.handedBack[uid]
	return !handed
}

// roomKeptOnUpNodes counts the pods of workload w that the claims whose nodes are up (up says so:
// the claim records it, or the node cache shows it) still keep room for: planned there, less w's pods on the node (its live
// pods are pods).
func roomKeptOnUpNodes(w types.UID, pods []*corev1.Pod, claims []*v1alpha1.Claim, up func(*v1alpha1.Claim) bool, now time.Time) int {
	onNode := map[string]int{}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" {
			onNode[pod.Spec.NodeName]++
		}
	}
	n := 0
	for _, c := range claims {
		if c.DeletionTimestamp != nil || c.Status.NodeName == "" || !up(c) ||
			now.Sub(c.CreationTimestamp.Time) > expectationsStand {
			continue
		}
		for _, e := range c.Spec.ExpectedPods {
			if types.UID(e.UID) == w {
				n += max(e.Count-onNode[c.Status.NodeName], 0)
			}
		}
	}
	return n
}
