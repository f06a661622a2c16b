package lowerbound

import (
	"math"
	"slices"
	"sort"
)

// maxExactRounds bounds the rounds of column generation priced exactly in WholeBound; each
// round gives a valid bound, later ones a tighter one.
const maxExactRounds = 8

// contentBudget bounds the branch-and-bound nodes bestContent visits for one type; past it the
// answer is an upper bound on the best content's worth, not the worth of one found.
const contentBudget = 4000

// WholeBound is a lower bound on the cost of packing the groups' whole pods: the configuration
// LP of Whole, certified. Column generation is run as in Whole; then each node type is priced
// exactly (bestContent), and Farley's bound turns the master's duals into a bound whatever the
// state of convergence: with u the duals and kappa the most any one node's content is worth
// under u per unit of its type's price, u/max(1, kappa) is feasible for the LP's dual, so
// sum(u)/max(1, kappa) bounds every packing. Because no pod is split across nodes, it is at
// least the LP of Bound on big pods (a type that fits 1.9 of a pod holds one here) and
// usually well above it on mixed workloads. It is 0 when no exact round was reached (the
// master failed numerically first); take the larger of it and Bound.
func WholeBound(types []Type, groups []WholeGroup) (float64, error) {
	_, bound, err := whole(types, groups, true)
	return bound, err
}

// bestContent is the exact knapsack of Whole's pricing, by depth-first branch and bound: the
// whole pods of the users (at most count(u) of each, each of size(u)) that fit one node of
// capacity cap and are worth the most (value per pod). It returns the best content found, its
// worth, and an upper bound on the worth of any content: equal to the worth when the search
// finished within contentBudget nodes. The bound of a branch is the least, over dimensions, of
// the fractional knapsack on that dimension alone.
func bestContent(cap []float64, users []int, value []float64, size func(int) []float64, count func(int) int) ([]int, float64, float64) {
	var items []int
	for _, u := range users {
		if value[u] > 0 && count(u) > 0 {
			items = append(items, u)
		}
	}
	bestK, best := make([]int, len(value)), 0.0
	if len(items) == 0 {
		return bestK, 0, 0
	}
	// Branch on the pods densest in value per share of the node first: the greedy order.
	share := func(u int) float64 {
		out := 0.0
		for r, s := range size(u) {
			if s > 0 {
				out = max(out, s/cap[r])
			}
		}
		return out
	}
	density := func(u int) float64 {
		if sh := share(u); sh > 0 {
			return value[u] / sh
		}
		return math.Inf(1)
	}
	sort.SliceStable(items, func(i, j int) bool { return density(items[i]) > density(items[j]) })
	// byDim[r] lists the items' positions by value per unit of dimension r, densest first.
	byDim := make([][]int, len(cap))
	for r := range cap {
		order := make([]int, len(items))
		for i := range order {
			order[i] = i
		}
		perUnit := func(i int) float64 {
			if s := size(items[i])[r]; s > 0 {
				return value[items[i]] / s
			}
			return math.Inf(1)
		}
		sort.SliceStable(order, func(a, b int) bool { return perUnit(order[a]) > perUnit(order[b]) })
		byDim[r] = order
	}
	// relaxed is the fractional bound on what the items from position i on add in room left.
	relaxed := func(i int, left []float64) float64 {
		bound := math.Inf(1)
		for r, order := range byDim {
			room, worth := left[r], 0.0
			for _, j := range order {
				if j < i {
					continue
				}
				u := items[j]
				s, n := size(u)[r], float64(count(u))
				if s > 0 {
					if room <= 0 {
						break
					}
					n = min(n, room/s)
					room -= n * s
				}
				worth += n * value[u]
			}
			bound = min(bound, worth)
		}
		return bound
	}
	k := make([]int, len(value))
	left := slices.Clone(cap)
	nodes, open := 0, 0.0
	var search func(i int, worth float64)
	search = func(i int, worth float64) {
		nodes++
		if worth > best {
			best = worth
			copy(bestK, k)
		}
		if i == len(items) {
			return
		}
		ub := worth + relaxed(i, left)
		if ub <= best*(1+1e-12) {
			return
		}
		if nodes > contentBudget {
			open = max(open, ub)
			return
		}
		u := items[i]
		most := count(u)
		for r, s := range size(u) {
			if s > 0 {
				most = min(most, int(math.Floor(left[r]/s*(1+1e-12))))
			}
		}
		for n := max(most, 0); n >= 0; n-- {
			k[u] = n
			for r, s := range size(u) {
				left[r] -= float64(n) * s
			}
			search(i+1, worth+float64(n)*value[u])
			for r, s := range size(u) {
				left[r] += float64(n) * s
			}
		}
		k[u] = 0
	}
	search(0, 0)
	// The relaxation is exact arithmetic on the same numbers as the search, which admits a pod
	// a part in 1e12 over the room; the margin keeps the bound above what the search can find.
	return bestK, best, max(best, open) * (1 + 1e-9)
}
