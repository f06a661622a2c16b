package planning

import (
	"context"
	"fmt"
	"slices"
)

// PlanWhole plans pods that run all or none (a gang: Coscheduling binds none of them until all
// have a node). It returns the cheapest plan that places every pod within one zone, whose nodes
// then reach each other without crossing zones, or, when no zone holds them all (their own
// constraints spread them), a plan over every zone that places them all. When some pod has no
// place it returns nil and why.
func (pl *Planner) PlanWhole(ctx context.Context, pods []*Pod) (*Plan, string) {
	var best *Plan
	for _, zone := range zonesOf(pl.Templates) {
		inZone := slices.DeleteFunc(slices.Clone(pl.Templates), func(t *Template) bool { return t.Offering.Zone != zone })
		plan := (&Planner{Templates: inZone, Closed: pl.Closed, MaxAlternatives: pl.MaxAlternatives}).Plan(ctx, pods)
		if len(plan.Unschedulable) == 0 && (best == nil || plan.PricePerHour() < best.PricePerHour()) {
			best = plan
		}
	}
	if best != nil {
		return best, ""
	}
	plan := pl.Plan(ctx, pods)
	if len(plan.Unschedulable) > 0 {
		u := plan.Unschedulable[0]
		return nil, fmt.Sprintf("pod %s/%s: %s", u.Pod.Namespace, u.Pod.Name, u.Reason)
	}
	return plan, ""
}

// zonesOf lists the templates' zones, sorted.
func zonesOf(templates []*Template) []string {
	var zones []string
	for _, t := range templates {
		if !slices.Contains(zones, t.Offering.Zone) {
			zones = append(zones, t.Offering.Zone)
		}
	}
	slices.Sort(zones)
	return zones
}
