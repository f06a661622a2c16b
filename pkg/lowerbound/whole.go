package lowerbound

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
)

// WholeGroup is Count pods of one shape (Size per dimension) that may use the listed types.
type WholeGroup struct {
	Size  []float64
	Count int
	Types []int
}

// Whole packs whole pods: the configuration LP of bin packing (Gilmore and Gomory), whose
// columns are node contents in whole pods (k_g pods of each group g on one node of a type), and
// whose solution buys a fractional number of nodes of each content. Rounding it down to whole
// nodes leaves a packing that is exact in every node, which the LP of Solve, splitting pods
// across nodes, is not: a type that holds 1.97 pods holds 1.97 there, and one here.
//
// The contents are found by column generation with a greedy knapsack, so the value is an upper
// estimate of the configuration LP's optimum, not a bound: Solution.Bound is the solution's
// cost. In Solution.Patterns, Share[g] is the content's k_g over Count, Nodes the nodes to buy.
func Whole(types []Type, groups []WholeGroup) (Solution, error) {
	sol, _, err := whole(types, groups, false)
	return sol, err
}

// whole runs Whole's column generation. With certify, once the greedy knapsack finds no content
// worth buying, contents are priced exactly (bestContent) for a few more rounds, and each of
// those rounds yields a certified lower bound (see WholeBound); the largest is returned.
func whole(types []Type, groups []WholeGroup, certify bool) (Solution, float64, error) {
	dims := -1
	if len(types) > 0 {
		dims = len(types[0].Capacity)
	}
	for i, t := range types {
		if len(t.Capacity) != dims || !finiteNonNeg(t.Price) {
			return Solution{}, 0, fmt.Errorf("lowerbound: type %d (%s): malformed capacity or price", i, t.Name)
		}
	}
	// Types with equal price and capacity (one type in several zones) are one to the LP when the
	// same groups may use them.
	type wtype struct {
		orig  int
		users []int // positions in live
		price float64
		cap   []float64
	}
	var live []int // indexes into groups with pods
	for g, gr := range groups {
		if len(gr.Size) != dims || gr.Count < 0 {
			return Solution{}, 0, fmt.Errorf("lowerbound: group %d: malformed size or count", g)
		}
		if gr.Count > 0 {
			live = append(live, g)
		}
	}
	if len(live) == 0 {
		return Solution{}, 0, nil
	}
	byKey := map[string]*wtype{}
	var wtypes []*wtype
	holds := func(t int, size []float64) int {
		k := math.Inf(1)
		for r, s := range size {
			if s > 0 {
				k = min(k, math.Floor(types[t].Capacity[r]/s*(1+1e-12)))
			}
		}
		if math.IsInf(k, 1) {
			return math.MaxInt32
		}
		return int(k)
	}
	users := make(map[int][]int, len(types))
	for u, g := range live {
		for _, t := range groups[g].Types {
			if t < 0 || t >= len(types) {
				return Solution{}, 0, fmt.Errorf("lowerbound: group %d: type index %d out of range [0, %d)", g, t, len(types))
			}
			if types[t].Price > 0 && holds(t, groups[g].Size) >= 1 && !slices.Contains(users[t], u) {
				users[t] = append(users[t], u)
			}
		}
	}
	for t := range types {
		if len(users[t]) == 0 {
			continue
		}
		key := fmt.Sprint(types[t].Price, types[t].Capacity, users[t])
		if byKey[key] != nil {
			continue
		}
		byKey[key] = &wtype{orig: t, users: users[t], price: types[t].Price, cap: types[t].Capacity}
		wtypes = append(wtypes, byKey[key])
	}

	ng := len(live)
	count := make([]float64, ng)
	for u, g := range live {
		count[u] = float64(groups[g].Count)
	}
	// Start: every group alone on the type cheapest per pod for it.
	type wcol struct {
		ty *wtype
		k  []int // pods per group (positions in live)
	}
	var cols []wcol
	var cost []float64
	upper := 0.0
	for u, g := range live {
		best, bestK, bestCost := (*wtype)(nil), 0, math.Inf(1)
		for _, ty := range wtypes {
			if !slices.Contains(ty.users, u) {
				continue
			}
			k := min(holds(ty.orig, groups[g].Size), groups[g].Count)
			if c := ty.price / float64(k); c < bestCost {
				best, bestK, bestCost = ty, k, c
			}
		}
		if best == nil {
			return Solution{}, 0, fmt.Errorf("lowerbound: infeasible: group %d fits none of its types", g)
		}
		k := make([]int, ng)
		k[u] = bestK
		cols = append(cols, wcol{best, k})
		upper += bestCost * count[u]
	}
	scale := upper / float64(ng)
	for _, col := range cols {
		cost = append(cost, col.ty.price/scale)
	}
	basis := make([]int, ng)
	for u := range basis {
		basis[u] = ng + u // the group columns come after the surplus columns
	}

	var x []float64
	var fills knapsackBuffers
	exact, exactRounds, certified := false, 0, 0.0
	for round := 0; ; round++ {
		n := ng + len(cols)
		A := mat.NewDense(ng, n, nil)
		c := make([]float64, n)
		for u := 0; u < ng; u++ {
			A.Set(u, u, -1) // surplus
		}
		for j, col := range cols {
			c[ng+j] = cost[j]
			for u, k := range col.k {
				if k > 0 {
					A.Set(u, ng+j, float64(k)/count[u])
				}
			}
		}
		b := make([]float64, ng)
		for u := range b {
			b[u] = 1 + perturbation(u, 1e-9)
		}
		_, xs, err := simplex(c, A, b, basis)
		if err != nil {
			if x == nil {
				return Solution{}, 0, fmt.Errorf("lowerbound: whole-pod master LP (%d groups, %d columns): %w", ng, len(cols), err)
			}
			cols = cols[:len(x)-ng] // the last master that solved, and its solution
			break
		}
		x = xs
		newBasis, u, err := duals(A, c, x)
		if err != nil || round == maxRounds {
			// Without duals (a degenerate master) no content can be priced; the solution is a
			// packing all the same.
			break
		}
		basis = newBasis
		added := 0
		value := make([]float64, ng) // per pod, in units of scale
		for g := range value {
			value[g] = max(u[g], 0) / count[g]
		}
		size := func(u int) []float64 { return groups[live[u]].Size }
		podCount := func(u int) int { return groups[live[u]].Count }
		if !exact {
			for _, ty := range wtypes {
				k, v := fills.knapsack(ty.cap, ty.users, value, size, podCount)
				if v > ty.price/scale*(1+priceTol) {
					cols = append(cols, wcol{ty, slices.Clone(k)})
					cost = append(cost, ty.price/scale)
					added++
				}
			}
			exact = added == 0 && certify
		}
		if exact {
			// Farley's bound: u is feasible for the configuration LP's dual once divided by the
			// most any content is worth per unit of its type's price (at least 1).
			sum, worst := 0.0, 1.0
			for g := range value {
				sum += value[g] * count[g]
			}
			for _, ty := range wtypes {
				k, v, ub := bestContent(ty.cap, ty.users, value, size, podCount)
				worst = max(worst, ub/(ty.price/scale))
				if v > ty.price/scale*(1+priceTol) {
					cols = append(cols, wcol{ty, k})
					cost = append(cost, ty.price/scale)
					added++
				}
			}
			certified = max(certified, sum/worst*scale)
			if exactRounds++; exactRounds == maxExactRounds {
				break
			}
		}
		if added == 0 {
			break
		}
	}
	sol := Solution{}
	for j, col := range cols {
		if xj := x[ng+j]; xj > 1e-9 {
			share := map[int]float64{}
			for u, k := range col.k {
				if k > 0 {
					share[live[u]] = float64(k) / count[u]
				}
			}
			sol.Patterns = append(sol.Patterns, Pattern{Type: col.ty.orig, Nodes: xj, Share: share})
			sol.Bound += xj * col.ty.price
		}
	}
	if len(sol.Patterns) == 0 {
		return Solution{}, 0, errors.New("lowerbound: whole-pod master LP bought nothing")
	}
	return sol, certified, nil
}

// knapsack fills one node of capacity cap with whole pods of the users (at most count(u) of
// each, each of size(u)) to maximise the sum of value[u] per pod, greedily: by value per unit of
// the pod's largest share of the node, and by value per unit of its share of each single
// dimension; each order started as it is and with each of its first few users taken first. It
// returns the pods per user (indexed like value; b's slice, until the next call) and their value.
func (b *knapsackBuffers) knapsack(cap []float64, users []int, value []float64, size func(int) []float64, count func(int) int) ([]int, float64) {
	items := b.items[:0]
	for _, u := range users {
		if value[u] > 0 {
			items = append(items, u)
		}
	}
	b.items = items
	// Called for every type in every round of the column generation: one set of buffers serves
	// every fill of every call.
	bestK, best := resized(&b.bestK, len(value)), 0.0
	clear(bestK)
	k, left := resized(&b.k, len(value)), resized(&b.left, len(cap))
	order, density := resized(&b.order, len(items)), resized(&b.density, len(value))
	take := func(u int) float64 {
		n := count(u) - k[u]
		for r, s := range size(u) {
			if s > 0 {
				n = min(n, int(math.Floor(left[r]/s*(1+1e-12))))
			}
		}
		if n <= 0 {
			return 0
		}
		k[u] += n
		for r, s := range size(u) {
			left[r] -= float64(n) * s
		}
		return float64(n) * value[u]
	}
	// fill takes the pods of order greedily, order[first] first (if first >= 0).
	fill := func(first int) {
		clear(k)
		copy(left, cap)
		total := 0.0
		if first >= 0 {
			total += take(order[first])
		}
		for _, u := range order {
			total += take(u)
		}
		if total > best {
			best = total
			copy(bestK, k)
		}
	}
	// share(u, r): the pod's share of the node in dimension r, or its largest share (r < 0).
	share := func(u, r int) float64 {
		out := 0.0
		for d, s := range size(u) {
			if s > 0 && (r < 0 || d == r) {
				out = max(out, s/cap[d])
			}
		}
		return out
	}
	for r := -1; r < len(cap); r++ {
		copy(order, items)
		for _, u := range order {
			if sh := share(u, r); sh > 0 {
				density[u] = value[u] / sh
			} else {
				density[u] = math.Inf(1)
			}
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(density[b], density[a]) })
		fill(-1)
		for i := 1; i < len(order) && i < 8; i++ {
			fill(i)
		}
	}
	return bestK, best
}

// knapsackBuffers are knapsack's working slices, kept from call to call: column generation
// fills a node of every type in every round, and a consolidation pass asks for hundreds of
// such packings.
type knapsackBuffers struct {
	items, bestK, k, order []int
	left, density          []float64
}

// resized is *buf with length n, reallocated only when it is too short; its contents are stale.
func resized[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}
