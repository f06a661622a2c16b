package lowerbound

// Solution is the LP's optimum: its value, a certified lower bound, and a fractional packing
// that attains it up to the solver's tolerance.
type Solution struct {
	Bound float64
	// Patterns is the packing: together they hold every group's demand (groups that fit on a
	// free type, or have none, aside). Its cost, the sum of Nodes times price, is Bound up to
	// rounding (the solver works on slightly perturbed right-hand sides, so it may exceed Bound
	// by a relative 1e-5 at most).
	Patterns []Pattern
}

// Pattern is Nodes nodes (fractional) of the caller's type Type, each holding the fraction
// Share[g] of the demand of the caller's group g. Each node's load fits the type's capacity in
// every dimension.
type Pattern struct {
	Type  int
	Nodes float64
	Share map[int]float64
}

// alone is the solution that puts every group on its cheapest type by itself (best[g] on
// types[g]): the optimum when no two groups can share a node profitably.
func (p *problem) alone(best []float64, types []*typ) Solution {
	var sol Solution
	for g, ty := range types {
		nodes := best[g] / ty.price
		sol.Bound += best[g]
		sol.Patterns = append(sol.Patterns, Pattern{Type: ty.orig, Nodes: nodes, Share: map[int]float64{p.groups[g].orig: 1 / nodes}})
	}
	return sol
}

// packing turns the master LP's solution x over cols into patterns, in the caller's indexes.
func (p *problem) packing(bound float64, x []float64, cols []column) Solution {
	sol := Solution{Bound: bound}
	for j, col := range cols {
		if col.ty == nil || x[j] <= 0 {
			continue
		}
		share := make(map[int]float64)
		for g, c := range col.cover {
			if c > 0 {
				share[p.groups[g].orig] = c / col.nodes
			}
		}
		sol.Patterns = append(sol.Patterns, Pattern{Type: col.ty.orig, Nodes: x[j] * col.nodes, Share: share})
	}
	return sol
}
