package planning

import (
	"fmt"

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
	// One group per class and pod shape (identical requests): a real packing puts some share of
	// a shape's pods on each type, and that share carries their cpu, memory and pod count
	// together. Splitting a class further, resource by resource, would let the LP serve the cpu
	// on compute types and the memory on memory types, which no packing can; that bound was
	// valid but ~40% low on mixed workloads. Pods of different shapes in one class stay apart.
	type shape struct {
		req   vec
		count int64
	}
	var classShapes [][]*shape
	for _, c := range p.classes {
		var shapes []*shape
		byKey := map[string]*shape{}
		for _, pod := range c.pods {
			req := d.vec(pod.Requests, true)
			key := requestKey(req)
			if sh, ok := byKey[key]; ok {
				sh.count++
				continue
			}
			byKey[key] = &shape{req: req, count: 1}
			shapes = append(shapes, byKey[key])
		}
		classShapes = append(classShapes, shapes)
	}
	var groups []lowerbound.Group
	for i, c := range p.classes {
		for _, sh := range classShapes[i] {
			demand := make(vec, len(sh.req))
			for r, x := range sh.req {
				demand[r] = x * sh.count
			}
			groups = append(groups, lowerbound.Group{Demand: floats(demand, len(d.names)), Types: c.compatible})
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

// requestKey names a request vector, trailing zeros dropped (vectors made before a dimension
// was added are shorter).
func requestKey(v vec) string {
	for len(v) > 0 && v[len(v)-1] == 0 {
		v = v[:len(v)-1]
	}
	return fmt.Sprint([]int64(v))
}
