package planning

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/pkg/lowerbound"
)

// classSummary is what the lower bound needs of a class: the pods the plan placed and the
// templates the class may use.
type classSummary struct {
	pods       []*Pod
	compatible []int
}

// LowerBound is a cost no plan of the plan's pods can beat, from two LP relaxations in which
// every class may use only the templates its Filter verdict allows and every node offers its
// allocatable (less DaemonSets): pods split across nodes at will (lowerbound.Bound), and, for
// up to maxWholeBoundGroups shapes, whole pods in fractional numbers of nodes (the
// configuration LP, lowerbound.WholeBound); it is the larger. The gap to PricePerHour says how
// close to optimal the plan is. Pods the plan could not place are not
// counted. Constraints among pods (anti-affinity, spread) are not in the LP, so a plan they
// force apart may sit well above it.
func (p *Plan) LowerBound() (float64, error) {
	if len(p.classes) == 0 {
		return 0, nil
	}
	d := boundDims(p)
	var avail []vec
	for _, t := range p.templates {
		avail = append(avail, d.vec(t.Available, false))
	}
	shapes := boundShapes(p, d)
	var groups []lowerbound.Group
	for _, sh := range shapes {
		demand := make(vec, len(sh.req))
		for r, x := range sh.req {
			demand[r] = x * sh.count
		}
		groups = append(groups, lowerbound.Group{Demand: floats(demand, len(d.names)), Types: holding(sh.compatible, avail, sh.req)})
		if len(groups[len(groups)-1].Types) == 0 {
			// Only when repacking: the pods sit on nodes of the cluster that no template
			// matches in size. The looser bound is still a bound.
			groups[len(groups)-1].Types = sh.compatible
		}
	}
	types := make([]lowerbound.Type, len(p.templates))
	for i, t := range p.templates {
		types[i] = lowerbound.Type{Name: t.Key(), Price: t.Offering.PricePerHour, Capacity: floats(avail[i], len(d.names))}
	}
	split, err := lowerbound.Bound(types, groups)
	if err != nil || len(groups) > maxWholeBoundGroups {
		return split, err
	}
	// The same groups in whole pods: the configuration LP, certified (lowerbound.WholeBound).
	// Both are bounds, so the larger is. Should it fail, the split-pod bound stands alone.
	var whole []lowerbound.WholeGroup
	for _, sh := range shapes {
		types := holding(sh.compatible, avail, sh.req)
		if len(types) == 0 {
			return split, nil // a pod no template holds whole: only the split bound applies
		}
		whole = append(whole, lowerbound.WholeGroup{Size: floats(sh.req, len(d.names)), Count: int(sh.count), Types: types})
	}
	if wb, err := lowerbound.WholeBound(types, whole); err == nil {
		return max(split, wb), nil
	}
	return split, nil
}

// boundShape is one group of the bound's LPs: pods of one request whose classes accept the same
// templates.
type boundShape struct {
	req        vec
	count      int64
	compatible []int
}

// boundShapes groups the plan's pods by request and by the templates their class accepts. A real
// packing puts some share of a shape's pods on each type, and that share carries their cpu,
// memory and pod count together. Splitting further, resource by resource, would let the LP serve
// the cpu on compute types and the memory on memory types, which no packing can; that bound was
// valid but ~40% low on mixed workloads. Pods of one request in classes that accept the same
// templates are one group, whatever their class: in either LP such groups are interchangeable,
// so merging them leaves the optimum as it was, and a plan of many classes (a thousand
// Deployments) keeps few rows.
func boundShapes(p *Plan, d *dims) []*boundShape {
	// Each class's templates, named by a small number so that keys stay short.
	compat := make([]int, len(p.classes))
	ids := map[string]int{}
	reqs := make([][]vec, len(p.classes))
	for ci, c := range p.classes {
		key := fmt.Sprint(c.compatible)
		if _, ok := ids[key]; !ok {
			ids[key] = len(ids)
		}
		compat[ci] = ids[key]
		for _, pod := range c.pods {
			reqs[ci] = append(reqs[ci], d.vec(pod.Requests, true))
		}
	}
	groupKey := func(ci int, req vec) string { return fmt.Sprint(compat[ci], requestKey(req)) }
	distinct := func(round func(vec) vec) int {
		keys := map[string]bool{}
		for ci, rs := range reqs {
			for _, r := range rs {
				keys[groupKey(ci, round(r))] = true
			}
		}
		return len(keys)
	}
	// The LP has a dense row per group. Past maxBoundGroups, requests are rounded down onto a
	// geometric grid, coarser until few enough shapes are left: smaller pods can only make the
	// optimum cheaper, so the result is still a lower bound, looser by at most the grid's step.
	if distinct(func(r vec) vec { return r }) > maxBoundGroups {
		for step := 0.05; ; step *= 2 {
			round := func(r vec) vec { return roundDown(r, step) }
			if distinct(round) <= maxBoundGroups || step > 4 {
				for _, rs := range reqs {
					for i, r := range rs {
						rs[i] = round(r)
					}
				}
				break
			}
		}
	}
	var shapes []*boundShape
	byKey := map[string]*boundShape{}
	for ci, rs := range reqs {
		for _, req := range rs {
			key := groupKey(ci, req)
			if sh, ok := byKey[key]; ok {
				sh.count++
				continue
			}
			byKey[key] = &boundShape{req: req, count: 1, compatible: p.classes[ci].compatible}
			shapes = append(shapes, byKey[key])
		}
	}
	return shapes
}

// boundDims are the dimensions of the plan's templates and pods in a fixed order (pods, then
// the resource names sorted). Adding them as vectors are made would follow map order, which
// permutes the LP's rows from run to run and with them the solver's rounding: the same plan
// would get bounds that differ in the ninth digit.
func boundDims(p *Plan) *dims {
	names := map[corev1.ResourceName]bool{}
	for _, t := range p.templates {
		for name := range t.Available {
			names[name] = true
		}
	}
	for _, c := range p.classes {
		for _, pod := range c.pods {
			for name := range pod.Requests {
				names[name] = true
			}
		}
	}
	d := newDims()
	for _, name := range slices.Sorted(maps.Keys(names)) {
		d.add(name)
	}
	return d
}

// maxWholeBoundGroups bounds the groups for which LowerBound also solves the whole-pod
// configuration LP, whose exact pricing grows with the groups a node type may mix.
const maxWholeBoundGroups = 64

// maxBoundGroups bounds the groups of LowerBound's LP (see roundDown).
const maxBoundGroups = 200

// roundDown rounds every resource of a pod's request but the pod count down to a power of
// 1+step (in milli-units).
func roundDown(req vec, step float64) vec {
	out := make(vec, len(req))
	for i, v := range req {
		if i == podsDim || v <= 0 {
			out[i] = v
			continue
		}
		k := math.Floor(math.Log(float64(v)) / math.Log1p(step))
		out[i] = min(v, int64(math.Pow(1+step, k)))
	}
	return out
}

// holding keeps the templates whose available room holds one pod requesting req. A pod runs
// whole on one node, so the LP must not put a share of it on a type it does not fit: that
// would let a 48-cpu pod's demand fill the corners of 8-cpu nodes, a relaxation no packing can
// come near.
func holding(templates []int, avail []vec, req vec) []int {
	var out []int
	for _, ti := range templates {
		if fits(avail[ti], nil, req) {
			out = append(out, ti)
		}
	}
	return out
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
