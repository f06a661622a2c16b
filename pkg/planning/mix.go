package planning

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// mix is the cheapest fractional packing of a set of classes: how many nodes of each instance
// shape (pool, type, capacity type) the LP relaxation would buy. Packing pod by pod onto the
// cheapest type per pod buys one family; the LP mixes families whose shapes complement each
// other (compute-heavy nodes for cpu-heavy pods, memory-heavy nodes for the rest). Opening
// nodes in the LP's proportions, and filling each with the pods that fit its room best, gets
// the real plan close to it.
type mix struct {
	budget map[string]float64
}

func shapeKey(t *Template) string {
	return t.Pool.Name + "/" + t.Type.Name + "/" + string(t.Offering.CapacityType)
}

// newMix solves, for the pods of classes that share the compatible templates, min Σ price·x
// subject to Σ capacity·x ≥ demand in every resource. It returns nil when the LP fails: the
// planner then opens the cheapest type per pod, as without it.
func (ps *planState) newMix(classes []*class) *mix {
	m := &mix{budget: map[string]float64{}}
	bySet := map[string][]*class{}
	var keys []string
	for _, c := range classes {
		if len(c.compatible) == 0 || c.interPod || len(c.spreadKeys) > 0 {
			continue
		}
		k := fmt.Sprint(c.compatible)
		if _, ok := bySet[k]; !ok {
			keys = append(keys, k)
		}
		bySet[k] = append(bySet[k], c)
	}
	sort.Strings(keys)
	for _, k := range keys {
		cs := bySet[k]
		var demand vec
		for _, c := range cs {
			for _, mem := range c.members {
				demand = demand.add(mem.req)
			}
		}
		var dims []int
		for r, d := range demand {
			if d > 0 {
				dims = append(dims, r)
			}
		}
		// One column per shape: the cheapest offering of each type.
		cheapest := map[string]int{}
		var shapes []string
		for _, ti := range cs[0].compatible {
			key := shapeKey(ps.pl.Templates[ti])
			if cur, ok := cheapest[key]; !ok {
				shapes = append(shapes, key)
				cheapest[key] = ti
			} else if ps.pl.Templates[ti].Offering.PricePerHour < ps.pl.Templates[cur].Offering.PricePerHour {
				cheapest[key] = ti
			}
		}
		var cols []int
		for _, key := range largestOfScaled(ps, shapes, cheapest) {
			ti := cheapest[key]
			useful := false
			for _, r := range dims {
				if r < len(ps.avail[ti]) && ps.avail[ti][r] > 0 {
					useful = true
				}
			}
			if useful {
				cols = append(cols, ti)
			}
		}
		rows, n := len(dims), len(cols)
		if rows == 0 || n == 0 {
			continue
		}
		// Standard form: Σ_t (capacity_t,r / demand_r)·x_t − s_r = 1, every row scaled by its
		// demand so bytes and cores are of one size.
		a := make([][]float64, rows)
		b := make([]float64, rows)
		c := make([]float64, n+rows)
		for j, ti := range cols {
			c[j] = ps.pl.Templates[ti].Offering.PricePerHour
		}
		for i, r := range dims {
			a[i] = make([]float64, n+rows)
			for j, ti := range cols {
				if r < len(ps.avail[ti]) {
					a[i][j] = float64(ps.avail[ti][r]) / float64(demand[r])
				}
			}
			a[i][n+i] = -1
			b[i] = 1
		}
		x, err := solveMix(ps.ctx, c, a, b, n)
		if err != nil {
			klog.FromContext(ps.ctx).V(2).Info("No instance mix; packing by cheapest type per pod", "types", n, "err", err)
			continue
		}
		for j, ti := range cols {
			if x[j] > 1e-9 {
				m.budget[shapeKey(ps.pl.Templates[ti])] += x[j]
			}
		}
	}
	return m
}

// prefer reorders a class's templates: shapes with LP budget left (half a node or more) first, the one whose memory
// per cpu is nearest the class's own (ratio) before the others, then the rest in their given
// order. A class of cpu-heavy pods opens the compute nodes the LP bought, one of memory-heavy
// pods the memory nodes.
func (m *mix) prefer(ps *planState, order []int, ratio float64) []int {
	if m == nil || len(m.budget) == 0 {
		return order
	}
	out := make([]int, 0, len(order))
	var rest []int
	for _, ti := range order {
		// Half a node or more left in the budget rounds up to one more node of the shape.
		if m.budget[shapeKey(ps.pl.Templates[ti])] >= 0.5 {
			out = append(out, ti)
		} else {
			rest = append(rest, ti)
		}
	}
	distance := func(ti int) float64 {
		cpu, mem := ps.dimOf(ps.avail[ti], corev1.ResourceCPU), ps.dimOf(ps.avail[ti], corev1.ResourceMemory)
		if cpu <= 0 || mem <= 0 || ratio <= 0 {
			return 0
		}
		return math.Abs(math.Log(float64(mem) / float64(cpu) / ratio))
	}
	sort.SliceStable(out, func(i, j int) bool {
		di, dj := distance(out[i]), distance(out[j])
		if di != dj {
			return di < dj
		}
		return m.budget[shapeKey(ps.pl.Templates[out[i]])] > m.budget[shapeKey(ps.pl.Templates[out[j]])]
	})
	return append(out, rest...)
}

// spend takes one node of t's shape off the budget.
func (m *mix) spend(t *Template) {
	if m != nil {
		m.budget[shapeKey(t)]--
	}
}

func (m *mix) String() string {
	var parts []string
	for k, v := range m.budget {
		parts = append(parts, fmt.Sprintf("%s=%.2f", k, v))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// mixMaxPivots bounds the mix LP: it only steers packing, so a plan never waits long for it.
// The LP has a row per resource, and its simplex takes a few dozen pivots; each costs a few
// microseconds.
const mixMaxPivots = 10_000

// solveMix solves the mix LP of n shapes (a's first n columns; the rest are the rows' slacks)
// from a feasible basis: one column, the type that alone covers the demand with the fewest
// nodes, plus the slack of every row it over-covers. So the simplex's first phase, which finds
// a feasible basis and is the slow part, never runs.
func solveMix(ctx context.Context, c []float64, a [][]float64, b []float64, n int) ([]float64, error) {
	rows := len(a)
	// The column that covers every row with the fewest nodes; its binding row leaves the basis'
	// slack, the other rows keep theirs (positive: over-covered).
	bestCol, bestRow, bestNodes := -1, -1, math.Inf(1)
	for j := 0; j < n; j++ {
		row, nodes := -1, 0.0
		for i := 0; i < rows; i++ {
			v := a[i][j]
			if v <= 0 {
				row = -2
				break
			}
			if k := b[i] / v; k > nodes {
				row, nodes = i, k
			}
		}
		if row >= 0 && nodes < bestNodes {
			bestCol, bestRow, bestNodes = j, row, nodes
		}
	}
	if bestCol < 0 {
		return nil, fmt.Errorf("no type offers every resource the pods request")
	}
	basis := []int{bestCol}
	for i := 0; i < rows; i++ {
		if i != bestRow {
			basis = append(basis, n+i)
		}
	}
	return simplex(ctx, c, a, b, basis, mixMaxPivots)
}

// largestOfScaled drops every shape that is a smaller copy of another at the same price per
// unit (c6g.large beside c6g.xlarge): the LP cannot tell them apart, and the larger one packs
// the same pods onto fewer nodes (each node is shrunk to fit its pods at the end anyway).
func largestOfScaled(ps *planState, shapes []string, cheapest map[string]int) []string {
	order := append([]string(nil), shapes...)
	sort.SliceStable(order, func(i, j int) bool {
		return ps.pl.Templates[cheapest[order[i]]].Offering.PricePerHour > ps.pl.Templates[cheapest[order[j]]].Offering.PricePerHour
	})
	var kept []string
	for _, key := range order {
		small := ps.pl.Templates[cheapest[key]]
		scaled := false
		for _, k := range kept {
			if isScaledCopy(ps, cheapest[key], cheapest[k]) && small.Type.Arch == ps.pl.Templates[cheapest[k]].Type.Arch {
				scaled = true
				break
			}
		}
		if !scaled {
			kept = append(kept, key)
		}
	}
	return kept
}

// isScaledCopy says whether template a is template b scaled down: the same price per unit of
// every resource.
func isScaledCopy(ps *planState, a, b int) bool {
	pa, pb := ps.pl.Templates[a].Offering.PricePerHour, ps.pl.Templates[b].Offering.PricePerHour
	if pa <= 0 || pb <= 0 {
		return false
	}
	va, vb := ps.avail[a], ps.avail[b]
	for i := 0; i < len(va) || i < len(vb); i++ {
		var x, y float64
		if i < len(va) {
			x = float64(va[i]) / pa
		}
		if i < len(vb) {
			y = float64(vb[i]) / pb
		}
		if i == podsDim {
			continue // max pods is not proportional to size; the larger still holds more
		}
		if math.Abs(x-y) > 0.02*math.Max(x, y) {
			return false
		}
	}
	return true
}
