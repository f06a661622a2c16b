package provisioning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/util/taints"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// errNoLongerInFlight ends an attempt to add pods to a claim that came up or failed meanwhile.
var errNoLongerInFlight = errors.New("claim is no longer in flight")

// inFlight says whether the claim's instance is launched and its node not yet up: not launched
// yet, or registered but not initialized (Ready, startup taints gone). Until then the scheduler
// cannot place a pod there, so pods that arrive meanwhile are put on its room by the
// provisioner; they wait for the node and are tried again once it is up (Reservations.Follow).
func inFlight(c *v1alpha1.Claim) bool {
	if c.DeletionTimestamp != nil {
		return false
	}
	return c.Status.Phase == v1alpha1.ClaimLaunched || c.Status.Phase == v1alpha1.ClaimRegistered && c.Status.InitializedAt == nil
}

// nodeGoing says whether the claim's node is being deleted or drained. Its claim stays
// Registered, and uninitialized if the node went before it was up, until the drain ends; pods
// put on it would wait for a node that never takes them.
func (p *Provisioner) nodeGoing(c *v1alpha1.Claim) bool {
	if p.Nodes == nil || c.Status.NodeName == "" {
		return false
	}
	n, err := p.Nodes.Get(c.Status.NodeName)
	if err != nil {
		return false
	}
	return n.DeletionTimestamp != nil || taints.TaintKeyExists(n.Spec.Taints, v1alpha1.TaintDisrupting)
}

// nodeUp says whether the claim's node is up for pods: initialized as the claim records it, or
// as the scheduler's node cache shows it. The claim records it a moment after the node is up,
// and under a burst the claims cache lags further: a claim up in truth is left alone, as a
// write to it would conflict, and the pods go where the scheduler places them (handBack).
func (p *Provisioner) nodeUp(c *v1alpha1.Claim) bool {
	if c.Status.InitializedAt != nil {
		return true
	}
	if p.Nodes == nil || c.Status.NodeName == "" {
		return false
	}
	n, err := p.Nodes.Get(c.Status.NodeName)
	return err == nil && n.DeletionTimestamp == nil && lifecycle.Initialized(p.Args, n)
}

// fillInFlight puts pods onto claims whose instance is launched but whose node is not up yet
// (inFlight), where the room the plan left on them holds the pods, and returns the pods still without
// capacity. Without it, pods arriving a few at a time would each get a new node while a node
// launched a second earlier still has room. (A claim still launching is left alone: which of its
// instance types EC2 picks is not known yet.)
func (p *Provisioner) fillInFlight(ctx context.Context, pods []*planning.Pod, templates planning.TemplateIndex) []*planning.Pod {
	var fills []fill
	var back []*corev1.Pod
	for _, cached := range p.Claims.View() {
		if len(pods) == 0 {
			break
		}
		if !inFlight(cached) || cached.Spec.Replacement != nil || p.nodeGoing(cached) {
			continue // a replacement's room is for the pods of the nodes it replaces; a deleted claim's is going
		}
		if p.nodeUp(cached) {
			// Up, though the claim does not say so yet (a write to it would conflict): the
			// scheduler places what fits there, as on any node that is up.
			var handed []*planning.Pod
			for _, pod := range p.fitInFlight(ctx, cached, pods, templates) {
				if p.firstHandBack(pod.Pod.UID) {
					handed = append(handed, pod)
					back = append(back, pod.Pod)
				}
			}
			pods = without(pods, handed)
			continue
		}
		if accepted := p.fitInFlight(ctx, cached, pods, templates); len(accepted) > 0 {
			fills = append(fills, fill{cached: cached, pods: accepted})
			pods = without(pods, accepted)
		}
	}
	again := func(cur *v1alpha1.Claim, pods []*planning.Pod) ([]*planning.Pod, error) {
		if !inFlight(cur) {
			return nil, errNoLongerInFlight
		}
		return p.fitInFlight(ctx, cur, pods, templates), nil
	}
	why := func(c *v1alpha1.Claim) string {
		return fmt.Sprintf("planned onto in-flight capacity (%s in %s, node %s)", c.Status.InstanceType, c.Status.Zone, c.Status.NodeName)
	}
	p.giveBack(ctx, back, "they fit on a node that is up before its claim says so")
	return append(pods, p.record(ctx, fills, again, why)...)
}

// fitInFlight returns the candidates that fit onto a launched claim's node with every pod it
// already holds and the room it keeps for pods still to come.
func (p *Provisioner) fitInFlight(ctx context.Context, c *v1alpha1.Claim, candidates []*planning.Pod, templates planning.TemplateIndex) []*planning.Pod {
	t := claimTemplate(c, templates)
	if t == nil {
		return nil
	}
	// The room the claim keeps for its workloads' pods still to come is not free: the
	// scheduler's Filter refuses it to other pods once the node is up (Expectations), and a
	// pod put there now would find it taken and be planned again.
	others := append(p.placedOn(c), keptFor(c, "", p.podsByWorkload(c))...)
	return planning.FitOnto(ctx, t, c.Status.NodeName, others, candidates)
}

// placedOn are the claim's pods still waiting for it, as pods a node of its holds.
func (p *Provisioner) placedOn(c *v1alpha1.Claim) []*planning.Pod {
	var placed []*planning.Pod
	for _, pod := range p.reservations.claimPods(c) {
		placed = append(placed, planning.NewPod(pod, nil))
	}
	return placed
}

// recordOn adds pods to the claim's spec, so a restart rebuilds the same ledger, and returns it
// as updated.
func (p *Provisioner) recordOn(ctx context.Context, c *v1alpha1.Claim, pods []*planning.Pod) (*v1alpha1.Claim, error) {
	for _, pod := range pods {
		c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{Namespace: pod.Pod.Namespace, Name: pod.Pod.Name, UID: string(pod.Pod.UID)})
	}
	c.Spec.PodCount = len(c.Spec.Pods)
	return p.Claims.Update(ctx, c)
}

// claimTemplate is the template of the instance a claim launched.
func claimTemplate(c *v1alpha1.Claim, templates planning.TemplateIndex) *planning.Template {
	return templates.Get(c.Spec.Pool, c.Status.InstanceType, c.Status.Zone, cloud.CapacityType(c.Status.CapacityType))
}
