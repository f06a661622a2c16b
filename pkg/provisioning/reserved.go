package provisioning

import (
	"context"
	"slices"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/pkg/planning"
)

// withinReservations keeps a plan within its capacity reservations' free instances (each
// reserved template's Offering.Reservation.Available, claims in flight already taken off): a
// reservation's planned nodes past that count, the fewest-pod ones, have their pods planned again
// without it, on their pools' other capacity types or other reservations. Each round takes at
// least one reservation out, so the rounds end.
func withinReservations(ctx context.Context, planner *planning.Planner, plan *planning.Plan) *planning.Plan {
	templates := planner.Templates
	full := map[string]bool{}
	for {
		kept, excess := splitExcess(plan.Nodes, full)
		if len(excess) == 0 {
			return plan
		}
		var pods []*planning.Pod
		for _, n := range excess {
			pods = append(pods, n.Pods...)
		}
		templates = withoutReservations(templates, full)
		klog.FromContext(ctx).V(2).Info("Planned past capacity reservations' free instances; planning those pods again without them",
			"nodes", len(excess), "pods", len(pods))
		again := (&planning.Planner{Templates: templates, Closed: planner.Closed, MaxAlternatives: planner.MaxAlternatives}).Plan(ctx, pods)
		plan.Nodes = append(kept, again.Nodes...)
		plan.Unschedulable = append(plan.Unschedulable, again.Unschedulable...)
		plan.Diverted = append(plan.Diverted, again.Diverted...)
	}
}

// splitExcess keeps, of each reservation's planned nodes, as many as it has instances free (those
// with the most pods) and returns the rest, marking their reservations full.
func splitExcess(nodes []*planning.PlannedNode, full map[string]bool) (kept, excess []*planning.PlannedNode) {
	byPods := slices.Clone(nodes)
	slices.SortStableFunc(byPods, func(a, b *planning.PlannedNode) int { return len(b.Pods) - len(a.Pods) })
	used := map[string]int64{}
	over := map[*planning.PlannedNode]bool{}
	for _, n := range byPods {
		r := n.Template.Offering.Reservation
		if r == nil {
			continue
		}
		if used[r.ID] >= r.Available {
			over[n] = true
			full[r.ID] = true
			continue
		}
		used[r.ID]++
	}
	for _, n := range nodes {
		if over[n] {
			excess = append(excess, n)
		} else {
			kept = append(kept, n)
		}
	}
	return kept, excess
}

// overbooked are the reservations the nodes plan past their free instances.
func overbooked(nodes []*planning.PlannedNode) map[string]bool {
	full := map[string]bool{}
	splitExcess(nodes, full)
	return full
}

// withoutReservations are the templates but those of the reservations.
func withoutReservations(templates []*planning.Template, reservations map[string]bool) []*planning.Template {
	return slices.DeleteFunc(slices.Clone(templates), func(t *planning.Template) bool {
		return t.Offering.Reservation != nil && reservations[t.Offering.Reservation.ID]
	})
}
