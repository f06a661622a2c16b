package planning

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// PlanWhole plans pods that run all or none (a gang: Coscheduling binds none of them until all
// have a node) onto new nodes. With sameZone they are the cheapest nodes that place every pod
// within one zone, whose nodes then reach each other without crossing zones, or, when no zone
// holds them all (the pods' own constraints spread them), nodes over every zone that place them
// all. When some pod has no place it returns nil and why.
func (pl *Planner) PlanWhole(ctx context.Context, pods []*Pod, sameZone bool) (*Plan, string) {
	plan := func(p *Planner) *Plan { return p.Plan(ctx, pods) }
	var best *Plan
	for _, zone := range zonesOf(pl.Templates) {
		if !sameZone {
			break
		}
		inZone := slices.DeleteFunc(slices.Clone(pl.Templates), func(t *Template) bool { return t.Offering.Zone != zone })
		r := plan(&Planner{Templates: inZone, Closed: pl.Closed, MaxAlternatives: pl.MaxAlternatives})
		if len(r.Unschedulable) == 0 && (best == nil || r.PricePerHour() < best.PricePerHour()) {
			best = r
		}
	}
	if best != nil {
		return best, ""
	}
	r := plan(pl)
	if len(r.Unschedulable) > 0 {
		var why []string
		for _, u := range r.Unschedulable[:min(len(r.Unschedulable), 3)] {
			why = append(why, fmt.Sprintf("pod %s/%s: %s", u.Pod.Namespace, u.Pod.Name, u.Reason))
		}
		if n := len(r.Unschedulable); n > 3 {
			why = append(why, fmt.Sprintf("and %d more", n-3))
		}
		return nil, strings.Join(why, "; ")
	}
	return r, ""
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
