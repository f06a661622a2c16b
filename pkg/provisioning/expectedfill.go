package provisioning

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// fillExpected puts pods onto the claims that planned room for them before they existed (a
// rollout planned whole, expected.go) and whose nodes are not up yet: each pod takes
// the place of one of its workload's pods still to come, if its Filter plugins accept the node
// (with the claim's other pods, and the room kept for other workloads, on it). It returns the
// pods still without capacity. On EKS a node takes a minute to join, so most of a rollout's pods
// arrive while the nodes planned for them boot; planned anew, each would get a second node.
func (p *Provisioner) fillExpected(ctx context.Context, pods []*planning.Pod, templates planning.TemplateIndex) []*planning.Pod {
	if p.Rollouts == nil || len(pods) == 0 {
		return pods
	}
	byWorkload, rest := p.byWorkload(pods)
	var fills []fill
	for _, cached := range p.Claims.View() {
		if len(byWorkload) == 0 {
			break
		}
		if !keepsRoomFor(cached, byWorkload) || p.nodeGoing(cached) || p.nodeUp(cached) {
			continue
		}
		taken := p.fitExpected(ctx, cached, byWorkload, templates)
		if len(taken) == 0 {
			continue
		}
		fills = append(fills, fill{cached: cached, pods: taken})
		for w, ps := range byWorkload {
			if left := without(ps, taken); len(left) > 0 {
				byWorkload[w] = left
			} else {
				delete(byWorkload, w)
			}
		}
	}
	for _, ps := range byWorkload {
		rest = append(rest, ps...)
	}
	again := func(cur *v1alpha1.Claim, pods []*planning.Pod) ([]*planning.Pod, error) {
		mine, _ := p.byWorkload(pods)
		if !keepsRoomFor(cur, mine) {
			return nil, errNoLongerInFlight
		}
		return p.fitExpected(ctx, cur, mine, templates), nil
	}
	why := func(*v1alpha1.Claim) string { return "planned with its workload before it existed" }
	return append(rest, p.record(ctx, fills, again, why)...)
}

// byWorkload groups the pods of a rollout by their workload, and returns the others apart.
func (p *Provisioner) byWorkload(pods []*planning.Pod) (map[types.UID][]*planning.Pod, []*planning.Pod) {
	byWorkload := map[types.UID][]*planning.Pod{}
	var rest []*planning.Pod
	for _, pod := range pods {
		if w, ok := p.Rollouts.Of(pod.Pod); ok {
			byWorkload[w.UID] = append(byWorkload[w.UID], pod)
		} else {
			rest = append(rest, pod)
		}
	}
	return byWorkload, rest
}

// keepsRoomFor says whether the claim, its node not up yet (launching, or inFlight), planned
// room for pods still to come of a workload in byWorkload.
func keepsRoomFor(c *v1alpha1.Claim, byWorkload map[types.UID][]*planning.Pod) bool {
	launching := c.Status.Phase == "" || c.Status.Phase == v1alpha1.ClaimPending
	if c.DeletionTimestamp != nil || !launching && !inFlight(c) {
		return false
	}
	for _, e := range c.Spec.ExpectedPods {
		if len(byWorkload[types.UID(e.UID)]) > 0 {
			return true
		}
	}
	return false
}

// fitExpected picks, workload by workload, the pods of byWorkload that fit the claim's node in the
// place of its pods still to come: at most as many as are still to come, each accepted by its
// Filter plugins with the claim's pods, those accepted before, and the room kept for the other
// workloads' pods still to come (as pods of their requests) on the node.
func (p *Provisioner) fitExpected(ctx context.Context, c *v1alpha1.Claim, byWorkload map[types.UID][]*planning.Pod, templates planning.TemplateIndex) []*planning.Pod {
	t := expectedTemplate(c, templates)
	if t == nil {
		return nil
	}
	mine := p.podsByWorkload(c)
	placed := p.placedOn(c)
	nodeName := c.Status.NodeName
	if nodeName == "" {
		nodeName = c.Name // not launched yet: a name of its own all the same
	}
	var taken []*planning.Pod
	for _, e := range c.Spec.ExpectedPods {
		w := types.UID(e.UID)
		toCome := e.Count - mine[w]
		if toCome <= 0 || len(byWorkload[w]) == 0 {
			continue
		}
		others := append(slices.Clip(placed), keptFor(c, w, mine)...)
		accepted := planning.FitOntoPlanned(ctx, t, nodeName, others, byWorkload[w][:min(toCome, len(byWorkload[w]))])
		placed = append(placed, accepted...)
		taken = append(taken, accepted...)
	}
	return taken
}

// keptFor stands for the room the claim keeps for other workloads' pods still to come than w
// (every workload's, for w ""): pods of their requests, one per pod still to come.
func keptFor(c *v1alpha1.Claim, w types.UID, mine map[types.UID]int) []*planning.Pod {
	var out []*planning.Pod
	for _, e := range c.Spec.ExpectedPods {
		if types.UID(e.UID) == w {
			continue
		}
		for i := range e.Count - mine[types.UID(e.UID)] {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: e.Namespace, Name: fmt.Sprintf("%s-kept-%d", e.Name, i),
				UID: types.UID(fmt.Sprintf("%s%s/kept/%d", expectedUIDPrefix, e.UID, i))},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "kept", Resources: corev1.ResourceRequirements{Requests: e.Requests}}}}}
			out = append(out, planning.NewPod(pod, nil))
		}
	}
	return out
}

// expectedTemplate is the template of the claim's instance, or, before its launch, of the
// cheapest type it may launch as (every type it offers EC2 holds what was planned onto it).
func expectedTemplate(c *v1alpha1.Claim, templates planning.TemplateIndex) *planning.Template {
	if c.Status.InstanceType != "" {
		return claimTemplate(c, templates)
	}
	if len(c.Spec.InstanceTypes) == 0 {
		return nil
	}
	return templates.Get(c.Spec.Pool, c.Spec.InstanceTypes[0], c.Spec.Zone, cloud.CapacityType(c.Spec.CapacityType))
}

// podsByWorkload counts the claim's pods per controller.
func (p *Provisioner) podsByWorkload(c *v1alpha1.Claim) map[types.UID]int {
	out := map[types.UID]int{}
	for _, ref := range c.Spec.Pods {
		pod, err := p.Pods.Pods(ref.Namespace).Get(ref.Name)
		if err != nil || string(pod.UID) != ref.UID {
			continue
		}
		if owner := metav1.GetControllerOf(pod); owner != nil {
			out[owner.UID]++
		}
	}
	return out
}

// announce puts pods just recorded on claim c into the ledger, tells them, and has the scheduler
// try them again: their next PostFilter waits for the claim or nominates them to its node.
func (p *Provisioner) announce(c *v1alpha1.Claim, pods []*planning.Pod, why string) {
	if len(pods) == 0 {
		return
	}
	uids := make([]types.UID, 0, len(pods))
	activate := make([]*corev1.Pod, 0, len(pods))
	for _, pod := range pods {
		uids = append(uids, pod.Pod.UID)
		activate = append(activate, pod.Pod)
		p.Recorder.Eventf(pod.Pod, nil, corev1.EventTypeNormal, "Nominated", "Provisioning", "claim %s: %s", c.Name, why)
	}
	p.Ledger.Add(c.Name, c.Status.NodeName, uids)
	p.Activate(activate)
}
