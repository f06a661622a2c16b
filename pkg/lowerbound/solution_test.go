package lowerbound

import (
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestSolutionIsAPacking checks, on the random instances of TestPruningIsExact and the
// benchmark's, that Solve's patterns are a fractional packing of every group's demand onto
// types it may use, each node within its type's capacity, costing the bound.
func TestSolutionIsAPacking(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	type instance struct {
		types  []Type
		groups []Group
	}
	var instances []instance
	for i := 0; i < 500; i++ {
		types, groups := randomSmall(rng)
		instances = append(instances, instance{types, groups})
	}
	for _, ng := range []int{5, 10} {
		types, groups := benchInstance(42, ng)
		instances = append(instances, instance{types, groups})
	}
	checked := 0
	for i, in := range instances {
		sol, err := Solve(in.types, in.groups)
		if err != nil {
			if !strings.Contains(err.Error(), "infeasible") {
				t.Fatalf("instance %d: %v", i, err)
			}
			continue
		}
		checked++
		if msg := checkPacking(in.types, in.groups, sol); msg != "" {
			t.Errorf("instance %d: %s\ntypes %+v\ngroups %+v\nsolution %+v", i, msg, in.types, in.groups, sol)
		}
	}
	if checked < 300 {
		t.Errorf("only %d feasible instances", checked)
	}
}

// checkPacking says what is wrong with sol as a packing of groups onto types ("" if nothing).
func checkPacking(types []Type, groups []Group, sol Solution) string {
	const tol = 1e-6
	covered := make([]float64, len(groups))
	cost := 0.0
	for _, pat := range sol.Patterns {
		if pat.Type < 0 || pat.Type >= len(types) {
			return "pattern type out of range"
		}
		ty := types[pat.Type]
		if pat.Nodes <= 0 || math.IsNaN(pat.Nodes) {
			return "pattern with no nodes"
		}
		cost += pat.Nodes * ty.Price
		load := make([]float64, len(ty.Capacity))
		for g, share := range pat.Share {
			if !slices.Contains(groups[g].Types, pat.Type) {
				return "a group on a type it may not use"
			}
			covered[g] += pat.Nodes * share
			for r, d := range groups[g].Demand {
				load[r] += share * d
			}
		}
		for r, l := range load {
			if l > ty.Capacity[r]*(1+tol)+1e-12 {
				return "a node over capacity"
			}
		}
	}
	for g, gr := range groups {
		free := slices.ContainsFunc(gr.Types, func(t int) bool { return types[t].Price == 0 && fits(gr.Demand, types[t].Capacity) })
		empty := !slices.ContainsFunc(gr.Demand, func(v float64) bool { return v > 0 })
		if !free && !empty && covered[g] < 1-tol {
			return "a group not covered"
		}
	}
	if cost < sol.Bound*(1-1e-9) || cost > sol.Bound*(1+1e-4)+1e-12 {
		return "cost differs from the bound"
	}
	return ""
}
