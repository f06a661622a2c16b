package planning

import (
	"github.com/tailor-eks/tailor/pkg/lowerbound"
)

// classSummary is what the lower bound needs of a class: the pods the plan placed and the
// templates the class may use.
type classSummary struct {
	pods       []*Pod
	compatible []int
}

// LowerBound is the cost of the plan's pods if they could be split across nodes at will: the
// LP relaxation in which every class may use only the templates its Filter verdict allows and
// every node offers its allocatable (less DaemonSets). No plan can be cheaper; the gap to
// PricePerHour says how close to optimal this one is. Pods the plan could not place are not
// counted. Constraints among pods (anti-affinity, spread) are not in the LP, so a plan they
// force apart may sit well above it.
func (p *Plan) LowerBound() (float64, error) {
	if len(p.classes) == 0 {
		return 0, nil
	}
	d := newDims()
	var avail []vec
	for _, t := range p.templates {
		avail = append(avail, d.vec(t.Available, false))
	}
	// Each class's demand is split into one group per resource, so the LP may serve a class's
	// cpu and its memory on different types, as pods of different shapes in one class are. A
	// class as one group would make every type take its cpu and memory in the class's overall
	// ratio, which no real packing has to do, and the bound would not be a bound.
	var groups []lowerbound.Group
	for _, c := range p.classes {
		var demand vec
		for _, pod := range c.pods {
			demand = demand.add(d.vec(pod.Requests, true))
		}
		for r := range d.names {
			if r >= len(demand) || demand[r] == 0 {
				continue
			}
			one := make(vec, len(d.names))
			one[r] = demand[r]
			groups = append(groups, lowerbound.Group{Demand: floats(one, len(d.names)), Types: c.compatible})
		}
	}
	types := make([]lowerbound.Type, len(p.templates))
	for i, t := range p.templates {
		types[i] = lowerbound.Type{Name: t.Key(), Price: t.Offering.PricePerHour, Capacity: floats(avail[i], len(d.names))}
	}
	return lowerbound.Bound(types, groups)
}

// floats converts a vector to n dimensions in whole units (cores, bytes, pods).
func floats(v vec, n int) []float64 {
	out := make([]float64, n)
	for i := 0; i < n && i < len(v); i++ {
		out[i] = float64(v[i]) / 1000
	}
	return out
}
