package lowerbound

import (
	"math"
	"math/rand"
	"slices"
	"testing"
)

// TestWholeIsAWholePodPacking checks, on random instances, that Whole's patterns are node
// contents in whole pods that fit their type, that together they buy enough nodes for every
// pod, that Bound is their cost, and that it is never below Solve's bound: the configuration LP
// is at least as strong as the LP that splits pods, and Whole's value is at least its optimum.
func TestWholeIsAWholePodPacking(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	for iter := 0; iter < 300; iter++ {
		var types []Type
		for i := 0; i < 1+rng.Intn(8); i++ {
			cpu := float64(int(2) << rng.Intn(5))
			types = append(types, Type{Price: cpu * (0.03 + 0.02*rng.Float64()), Capacity: []float64{cpu * 0.97, cpu * float64(1+rng.Intn(8)) * 0.9, float64(10 + rng.Intn(100))}})
		}
		var groups []WholeGroup
		var split []Group
		for g := 0; g < 1+rng.Intn(5); g++ {
			size := []float64{0.25 * float64(1+rng.Intn(16)), 0.5 * float64(1+rng.Intn(32)), 1}
			var allowed []int
			for ti, ty := range types {
				if rng.Intn(4) != 0 && ty.Capacity[0] >= size[0] && ty.Capacity[1] >= size[1] {
					allowed = append(allowed, ti)
				}
			}
			if len(allowed) == 0 {
				continue
			}
			n := 1 + rng.Intn(30)
			groups = append(groups, WholeGroup{Size: size, Count: n, Types: allowed})
			split = append(split, Group{Demand: []float64{size[0] * float64(n), size[1] * float64(n), float64(n)}, Types: allowed})
		}
		if len(groups) == 0 {
			continue
		}
		sol, err := Whole(types, groups)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		bought := make([]float64, len(groups))
		cost := 0.0
		for _, pat := range sol.Patterns {
			ty := types[pat.Type]
			cost += pat.Nodes * ty.Price
			load := make([]float64, 3)
			for g, share := range pat.Share {
				k := share * float64(groups[g].Count)
				if math.Abs(k-math.Round(k)) > 1e-9 || !slices.Contains(groups[g].Types, pat.Type) {
					t.Fatalf("iter %d: content of %v pods of group %d on type %d", iter, k, g, pat.Type)
				}
				bought[g] += pat.Nodes * k
				for r := range load {
					load[r] += k * groups[g].Size[r]
				}
			}
			for r, l := range load {
				if l > ty.Capacity[r]*(1+1e-9) {
					t.Fatalf("iter %d: a content over capacity in dimension %d: %v > %v", iter, r, l, ty.Capacity[r])
				}
			}
		}
		for g, b := range bought {
			if b < float64(groups[g].Count)*(1-1e-6) {
				t.Fatalf("iter %d: group %d: %v of %d pods bought", iter, g, b, groups[g].Count)
			}
		}
		if math.Abs(cost-sol.Bound) > 1e-9*(1+cost) {
			t.Fatalf("iter %d: cost %v, Bound %v", iter, cost, sol.Bound)
		}
		lp, err := Bound(types, split)
		if err != nil {
			t.Fatalf("iter %d: Bound: %v", iter, err)
		}
		if sol.Bound < lp*(1-1e-6) {
			t.Errorf("iter %d: whole-pod LP $%v below the split LP's bound $%v", iter, sol.Bound, lp)
		}
	}
}
