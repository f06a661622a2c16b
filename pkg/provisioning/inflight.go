package provisioning

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// fillInFlight puts pods onto claims that are launching or launched but not yet registered, where
// the room the plan left on them holds the pods, and returns the pods still without capacity.
// Without it, pods arriving a few at a time would each get a new node while a node planned a
// second earlier still has room.
func (p *Provisioner) fillInFlight(ctx context.Context, pods []*planning.Pod, templates []*planning.Template) []*planning.Pod {
	logger := klog.FromContext(ctx)
	for _, c := range p.Claims.List() {
		if len(pods) == 0 {
			break
		}
		if c.Status.Phase != v1alpha1.ClaimLaunched && c.Status.Phase != v1alpha1.ClaimPending && c.Status.Phase != "" {
			continue
		}
		t := claimTemplate(c, templates)
		if t == nil {
			continue
		}
		var placed []*planning.Pod
		for _, pod := range p.launcher.claimPods(c) {
			if r, ok := p.Ledger.Lookup(pod.UID); ok && r.Claim == c.Name {
				placed = append(placed, planning.NewPod(pod, nil))
			}
		}
		nodeName := c.Status.NodeName
		if nodeName == "" {
			nodeName = "claim-" + c.Name // a stand-in until the instance has its name
		}
		accepted := planning.FitOnto(ctx, t, nodeName, placed, pods)
		if len(accepted) == 0 {
			continue
		}
		if err := p.addToClaim(ctx, c.Name, accepted); err != nil {
			logger.V(2).Info("Cannot add pods to in-flight claim; planning them anew", "claim", c.Name, "err", err)
			continue
		}
		uids := make([]types.UID, 0, len(accepted))
		taken := map[types.UID]bool{}
		var activate []*corev1.Pod
		for _, a := range accepted {
			uids = append(uids, a.Pod.UID)
			taken[a.Pod.UID] = true
			activate = append(activate, a.Pod)
			p.Recorder.Eventf(a.Pod, nil, corev1.EventTypeNormal, "Nominated", "Provisioning",
				"claim %s: planned onto in-flight capacity (%s in %s, node %s)", c.Name, t.Type.Name, t.Offering.Zone, c.Status.NodeName)
		}
		p.Ledger.Add(c.Name, c.Status.NodeName, uids)
		logger.V(2).Info("Placed pods on in-flight claim", "claim", c.Name, "pods", len(accepted))
		rest := pods[:0:0]
		for _, pod := range pods {
			if !taken[pod.Pod.UID] {
				rest = append(rest, pod)
			}
		}
		pods = rest
		p.Activate(activate)
	}
	return pods
}

// claimTemplate is the template of the instance a claim launched (or will most likely launch).
func claimTemplate(c *v1alpha1.Claim, templates []*planning.Template) *planning.Template {
	typ, zone := c.Status.InstanceType, c.Status.Zone
	if typ == "" {
		if len(c.Spec.InstanceTypes) == 0 {
			return nil
		}
		// Not launched yet: it may become any of its types; plan with the smallest promise.
		typ, zone = c.Spec.InstanceTypes[0], c.Spec.Zone
	}
	for _, t := range templates {
		if t.Type.Name == typ && t.Offering.Zone == zone && string(t.Offering.CapacityType) == c.Spec.CapacityType && t.Pool.Name == c.Spec.Pool {
			return t
		}
	}
	return nil
}

// addToClaim records more pods on a claim's spec, so a restart rebuilds the same ledger.
func (p *Provisioner) addToClaim(ctx context.Context, name string, pods []*planning.Pod) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := p.Claims.Fetch(ctx, name)
		if err != nil {
			return err
		}
		if cur.Status.Phase == v1alpha1.ClaimFailed || cur.Status.Phase == v1alpha1.ClaimRegistered {
			return fmt.Errorf("claim %s is %s now", name, cur.Status.Phase)
		}
		for _, pod := range pods {
			cur.Spec.Pods = append(cur.Spec.Pods, v1alpha1.PodRef{Namespace: pod.Pod.Namespace, Name: pod.Pod.Name, UID: string(pod.Pod.UID)})
		}
		cur.Spec.PodCount = len(cur.Spec.Pods)
		_, err = p.Claims.Update(ctx, cur)
		return err
	})
}
