package dryrun

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/workload"
)

// gang is a PodGroup's pods left to plan.
type gang struct {
	key  string // namespace/name
	pods []*planning.Pod
}

// splitGangs takes the pods of gangs (Coscheduling PodGroups, whose pods bind all or none) out
// of pods. A gang whose PodGroup is not in the manifests, or that has fewer pods than its
// minMember, is refused: each of its pods is unschedulable, with why, those placed on given
// nodes included (taken out of existing).
func splitGangs(pods []*planning.Pod, w *workload.Workload, existing map[string][]*corev1.Pod) (solo []*planning.Pod, gangs []*gang, refused []planning.Unschedulable) {
	byKey := map[string]*gang{}
	for _, p := range pods {
		name := p.Pod.Labels[schedv1alpha1.PodGroupLabel]
		if name == "" {
			solo = append(solo, p)
			continue
		}
		key := p.Pod.Namespace + "/" + name
		if byKey[key] == nil {
			byKey[key] = &gang{key: key}
			gangs = append(gangs, byKey[key])
		}
		byKey[key].pods = append(byKey[key].pods, p)
	}
	return solo, slices.DeleteFunc(gangs, func(g *gang) bool {
		why := gangShort(g.key, w)
		if why == "" {
			return false
		}
		refused = append(refused, refuseGang(g, why, existing)...)
		return true
	}), refused
}

// gangShort says why the gang cannot run whatever the plan, or "".
func gangShort(key string, w *workload.Workload) string {
	i := slices.IndexFunc(w.PodGroups, func(pg *schedv1alpha1.PodGroup) bool { return pg.Namespace+"/"+pg.Name == key })
	if i < 0 {
		return fmt.Sprintf("its PodGroup %s is not in the manifests: Coscheduling binds none of its pods", key)
	}
	members := 0
	for _, p := range w.Pods {
		if p.Namespace+"/"+p.Labels[schedv1alpha1.PodGroupLabel] == key {
			members++
		}
	}
	if minMember := int(w.PodGroups[i].Spec.MinMember); members < minMember {
		return fmt.Sprintf("gang %s has %d of its minMember %d pods", key, members, minMember)
	}
	return ""
}

// refuseGang lists the gang's pods unschedulable, those placed on given nodes included (they
// would wait at Permit for the rest): they are taken out of existing.
func refuseGang(g *gang, why string, existing map[string][]*corev1.Pod) []planning.Unschedulable {
	var out []planning.Unschedulable
	for _, p := range g.pods {
		out = append(out, planning.Unschedulable{Pod: p.Pod, Reason: why})
	}
	for node, pods := range existing {
		existing[node] = slices.DeleteFunc(pods, func(p *corev1.Pod) bool {
			if p.Namespace+"/"+p.Labels[schedv1alpha1.PodGroupLabel] != g.key {
				return false
			}
			out = append(out, planning.Unschedulable{Pod: p, Reason: why})
			return true
		})
		if len(existing[node]) == 0 {
			delete(existing, node)
		}
	}
	return out
}

// planGangs plans each gang whole (in one zone with sameZone), adding its nodes to plan, and returns the sum of their plans'
// lower bounds; a gang that cannot be placed whole is refused.
func planGangs(ctx context.Context, planner *planning.Planner, sameZone bool, gangs []*gang, plan *planning.Plan, existing map[string][]*corev1.Pod) (float64, error) {
	var bound float64
	for _, g := range gangs {
		gp, why := planner.PlanWhole(ctx, g.pods, sameZone)
		if gp == nil {
			plan.Unschedulable = append(plan.Unschedulable, refuseGang(g, fmt.Sprintf("gang %s cannot be placed whole, so none of it is: %s", g.key, why), existing)...)
			continue
		}
		b, err := gp.LowerBound()
		if err != nil {
			return 0, fmt.Errorf("gang %s: %w", g.key, err)
		}
		bound += b
		plan.Nodes = append(plan.Nodes, gp.Nodes...)
	}
	return bound, nil
}
