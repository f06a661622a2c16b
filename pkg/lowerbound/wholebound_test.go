package lowerbound

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// TestBestContentIsExact checks bestContent against enumeration of every content on random
// small nodes: it finds the best content's worth, the content fits, and its upper bound is
// never below the best.
func TestBestContentIsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for iter := 0; iter < 500; iter++ {
		cap := []float64{float64(1 + rng.Intn(16)), float64(1 + rng.Intn(64)), float64(3 + rng.Intn(20))}
		n := 1 + rng.Intn(4)
		sizes := make([][]float64, n)
		counts := make([]int, n)
		value := make([]float64, n)
		users := make([]int, n)
		for u := range sizes {
			sizes[u] = []float64{0.25 * float64(1+rng.Intn(24)), 0.5 * float64(1+rng.Intn(40)), 1}
			counts[u] = 1 + rng.Intn(6)
			value[u] = rng.Float64()
			if rng.Intn(6) == 0 {
				value[u] = 0 // worthless pods are never taken
			}
			users[u] = u
		}
		size := func(u int) []float64 { return sizes[u] }
		count := func(u int) int { return counts[u] }
		k, worth, ub := bestContent(cap, users, value, size, count)

		// Enumerate every content.
		brute := 0.0
		var walk func(u int, left []float64, w float64)
		walk = func(u int, left []float64, w float64) {
			if u == n {
				brute = max(brute, w)
				return
			}
			for c := 0; c <= counts[u]; c++ {
				next := make([]float64, len(left))
				ok := true
				for r := range left {
					next[r] = left[r] - float64(c)*sizes[u][r]
					ok = ok && next[r] >= -1e-9
				}
				if !ok {
					break
				}
				walk(u+1, next, w+float64(c)*value[u])
			}
		}
		walk(0, cap, 0)

		desc := fmt.Sprintf("iter %d: cap %v sizes %v counts %v value %v", iter, cap, sizes, counts, value)
		if math.Abs(worth-brute) > 1e-9 {
			t.Fatalf("%s: best content worth %v, enumeration %v", desc, worth, brute)
		}
		if ub < brute {
			t.Fatalf("%s: upper bound %v below the best %v", desc, ub, brute)
		}
		used := make([]float64, len(cap))
		sum := 0.0
		for u, c := range k {
			if c < 0 || c > counts[u] {
				t.Fatalf("%s: %d pods of user %d", desc, c, u)
			}
			sum += float64(c) * value[u]
			for r := range used {
				used[r] += float64(c) * sizes[u][r]
			}
		}
		for r := range used {
			if used[r] > cap[r]*(1+1e-9) {
				t.Fatalf("%s: content %v overfills dimension %d: %v > %v", desc, k, r, used[r], cap[r])
			}
		}
		if math.Abs(sum-worth) > 1e-9 {
			t.Fatalf("%s: content %v is worth %v, reported %v", desc, k, sum, worth)
		}
	}
}

// TestWholeBoundBetweenBoundAndOptimum checks, on random tiny instances, that WholeBound is
// never below the split-pod LP (Bound) and never above the cheapest whole-pod packing, found by
// exhaustive search; and that it is strictly above Bound somewhere, or it would be pointless.
func TestWholeBoundBetweenBoundAndOptimum(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	above := 0
	for iter := 0; iter < 200; iter++ {
		var types []Type
		for i := 0; i < 1+rng.Intn(3); i++ {
			cpu := float64(int(2) << rng.Intn(3))
			types = append(types, Type{Price: cpu * (0.03 + 0.02*rng.Float64()), Capacity: []float64{cpu, cpu * float64(1+rng.Intn(4)), float64(4 + rng.Intn(8))}})
		}
		var groups []WholeGroup
		var split []Group
		for g := 0; g < 1+rng.Intn(3); g++ {
			size := []float64{0.5 * float64(1+rng.Intn(8)), float64(1 + rng.Intn(8)), 1}
			var allowed []int
			for ti, ty := range types {
				if ty.Capacity[0] >= size[0] && ty.Capacity[1] >= size[1] {
					allowed = append(allowed, ti)
				}
			}
			if len(allowed) == 0 {
				continue
			}
			n := 1 + rng.Intn(4)
			groups = append(groups, WholeGroup{Size: size, Count: n, Types: allowed})
			split = append(split, Group{Demand: []float64{size[0] * float64(n), size[1] * float64(n), float64(n)}, Types: allowed})
		}
		if len(groups) == 0 {
			continue
		}
		wb, err := WholeBound(types, groups)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		sb, err := Bound(types, split)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		opt := cheapestPacking(types, groups)
		if wb > opt*(1+1e-9) {
			t.Fatalf("iter %d: whole-pod bound %v above the optimum %v (types %v, groups %v)", iter, wb, opt, types, groups)
		}
		if wb < sb*(1-1e-6) {
			t.Fatalf("iter %d: whole-pod bound %v below the split-pod bound %v (types %v, groups %v)", iter, wb, sb, types, groups)
		}
		if wb > sb*(1+1e-6) {
			above++
		}
	}
	if above == 0 {
		t.Fatal("the whole-pod bound never beat the split-pod bound")
	}
}

// cheapestPacking is the cheapest packing of the groups' whole pods into nodes, by memoised
// search over the pods left: the first pod left opens a node of some type, filled with any
// content that includes it.
func cheapestPacking(types []Type, groups []WholeGroup) float64 {
	memo := map[string]float64{}
	var solve func(left []int) float64
	solve = func(left []int) float64 {
		first := -1
		for g, n := range left {
			if n > 0 {
				first = g
				break
			}
		}
		if first < 0 {
			return 0
		}
		key := fmt.Sprint(left)
		if v, ok := memo[key]; ok {
			return v
		}
		best := math.Inf(1)
		for ti, ty := range types {
			allowed := func(g int) bool {
				for _, t := range groups[g].Types {
					if t == ti {
						return true
					}
				}
				return false
			}
			if !allowed(first) {
				continue
			}
			k := make([]int, len(left))
			var fill func(g int, room []float64)
			fill = func(g int, room []float64) {
				if g == len(left) {
					if k[first] == 0 {
						return
					}
					rest := make([]int, len(left))
					for i := range rest {
						rest[i] = left[i] - k[i]
					}
					best = min(best, ty.Price+solve(rest))
					return
				}
				most := left[g]
				if !allowed(g) {
					most = 0
				}
				for c := 0; c <= most; c++ {
					next := make([]float64, len(room))
					ok := true
					for r := range room {
						next[r] = room[r] - float64(c)*groups[g].Size[r]
						ok = ok && next[r] >= -1e-9
					}
					if !ok {
						break
					}
					k[g] = c
					fill(g+1, next)
				}
				k[g] = 0
			}
			fill(0, ty.Capacity)
		}
		memo[key] = best
		return best
	}
	start := make([]int, len(groups))
	for g, gr := range groups {
		start[g] = gr.Count
	}
	return solve(start)
}
