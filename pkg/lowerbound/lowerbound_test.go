package lowerbound

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Dimensions in the tests: cpu, memory GiB (and pods where a third value is given).

func TestBound(t *testing.T) {
	tests := []struct {
		name   string
		types  []Type
		groups []Group
		want   float64
	}{
		{
			name:   "one group, cpu-bound on one type",
			types:  []Type{{Name: "a", Price: 0.10, Capacity: []float64{2, 8}}},
			groups: []Group{{Demand: []float64{4, 8}, Types: []int{0}}},
			want:   0.20, // 2 nodes for cpu, 1 for memory
		},
		{
			name: "cheaper per cpu wins",
			types: []Type{
				{Name: "small", Price: 0.10, Capacity: []float64{2, 4}},  // $0.05/cpu
				{Name: "large", Price: 0.16, Capacity: []float64{4, 16}}, // $0.04/cpu
			},
			groups: []Group{{Demand: []float64{8, 8}, Types: []int{0, 1}}},
			want:   0.32, // 2 large; 4 small would be 0.40
		},
		{
			name: "disjoint groups add up",
			types: []Type{
				{Name: "a", Price: 0.10, Capacity: []float64{2, 8}},
				{Name: "b", Price: 0.16, Capacity: []float64{4, 16}},
			},
			groups: []Group{
				{Demand: []float64{4, 8}, Types: []int{0}},  // 2 a = 0.20
				{Demand: []float64{2, 32}, Types: []int{1}}, // 2 b (memory) = 0.32
			},
			want: 0.52,
		},
		{
			name: "one group restricted to the expensive type, the other takes the cheap one",
			types: []Type{
				{Name: "cheap", Price: 0.16, Capacity: []float64{4, 16}},
				{Name: "dear", Price: 0.40, Capacity: []float64{4, 16}},
			},
			groups: []Group{
				{Demand: []float64{4, 4}, Types: []int{1}},    // 1 dear, its cpu full
				{Demand: []float64{8, 8}, Types: []int{0, 1}}, // 2 cheap
			},
			want: 0.72,
		},
		{
			name: "memory-only group fills the spare memory of a node the other group must pay for",
			types: []Type{
				{Name: "cheap", Price: 0.16, Capacity: []float64{4, 16}},
				{Name: "dear", Price: 0.40, Capacity: []float64{4, 16}},
			},
			groups: []Group{
				{Demand: []float64{4, 1}, Types: []int{1}},     // 1 dear, 15 GiB spare
				{Demand: []float64{0, 15}, Types: []int{0, 1}}, // fits in the spare memory for free
			},
			want: 0.40, // alone on cheap it would add 15/16*0.16
		},
		{
			name:   "pods dimension binds",
			types:  []Type{{Name: "a", Price: 0.20, Capacity: []float64{4, 16, 10}}},
			groups: []Group{{Demand: []float64{100 * 0.01, 100 * 0.016, 100}, Types: []int{0}}},
			want:   2.00, // 10 nodes for 100 pods; cpu alone would need 0.25
		},
		{
			name: "duplicate, dominated and scaled types, and a type only one group may use",
			types: []Type{
				{Name: "a", Price: 0.10, Capacity: []float64{2, 4}},
				{Name: "a-other-zone", Price: 0.10, Capacity: []float64{2, 4}},
				{Name: "a-times-2", Price: 0.20, Capacity: []float64{4, 8}},
				{Name: "a-but-dearer", Price: 0.12, Capacity: []float64{2, 4}},
				{Name: "big-memory", Price: 0.50, Capacity: []float64{8, 64}},
				{Name: "a-dearer-g0-only", Price: 0.15, Capacity: []float64{2, 4}},
			},
			groups: []Group{
				{Demand: []float64{6, 12}, Types: []int{0, 1, 2, 3, 4, 5}},
				{Demand: []float64{1, 40}, Types: []int{3, 4}},
			},
			// Group 1 takes 0.625 big-memory nodes (memory-bound), leaving
			// cpu spare; moving a fraction f of group 0 there costs
			// 0.6125 - 0.20625 f until cpu binds at f = 8/9:
			// 0.5*(0.625+0.1875*8/9) + 0.30/9 = 103/240.
			want: 103.0 / 240,
		},
		{
			name: "identical types with different user sets are not merged",
			types: []Type{
				{Name: "a-zone-1", Price: 0.10, Capacity: []float64{2, 4}},
				{Name: "a-zone-2", Price: 0.10, Capacity: []float64{2, 4}},
			},
			groups: []Group{
				{Demand: []float64{4, 0}, Types: []int{0}}, // 2 nodes
				{Demand: []float64{0, 8}, Types: []int{1}}, // 2 nodes; sharing would need 2 in total
			},
			want: 0.40,
		},
		{
			name:  "zero-demand group is skipped, type lacking a needed dimension is ignored",
			types: []Type{{Name: "no-mem", Price: 0.01, Capacity: []float64{8, 0}}, {Name: "a", Price: 0.10, Capacity: []float64{2, 8}}},
			groups: []Group{
				{Demand: []float64{0, 0}, Types: []int{0}},
				{Demand: []float64{2, 2}, Types: []int{0, 1}},
			},
			want: 0.10,
		},
		{
			name:   "no groups",
			types:  []Type{{Name: "a", Price: 0.10, Capacity: []float64{2, 8}}},
			groups: nil,
			want:   0,
		},
		{
			name: "free type",
			types: []Type{
				{Name: "free", Price: 0, Capacity: []float64{1, 1}},
				{Name: "a", Price: 0.10, Capacity: []float64{2, 8}},
			},
			groups: []Group{{Demand: []float64{5, 5}, Types: []int{0, 1}}},
			want:   0,
		},
		{
			name: "a group that fits on a free type costs nothing",
			types: []Type{
				{Name: "free", Price: 0, Capacity: []float64{1, 1}},
				{Name: "a", Price: 0.10, Capacity: []float64{2, 8}},
				{Name: "b", Price: 0.30, Capacity: []float64{4, 4}},
			},
			groups: []Group{
				{Demand: []float64{5, 5}, Types: []int{0, 1}},
				{Demand: []float64{4, 2}, Types: []int{1, 2}}, // 2 a
				{Demand: []float64{1, 16}, Types: []int{1}},   // 2 a for memory; shares with the group above
			},
			// The last two share "a": cpu 5/2, memory 18/8 -> 2.5 nodes.
			want: 0.25,
		},
		{
			name: "three groups share two complementary types",
			types: []Type{
				{Name: "cpu", Price: 1, Capacity: []float64{4, 4}},
				{Name: "mem", Price: 1, Capacity: []float64{1, 16}},
			},
			groups: []Group{
				{Demand: []float64{4, 0}, Types: []int{0}},    // 1 cpu node, 4 GiB spare
				{Demand: []float64{0, 16}, Types: []int{1}},   // 1 mem node, 1 cpu spare
				{Demand: []float64{1, 4}, Types: []int{0, 1}}, // split y on cpu, 1-y on mem
			},
			// cpu nodes max((4+y)/4, 4y/4) = 1 + y/4; mem nodes
			// max(1-y, (16+4(1-y))/16) = 1.25 - y/4: 2.25 for any y.
			want: 2.25,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Bound(tc.types, tc.groups)
			if err != nil {
				t.Fatal(err)
			}
			if !near(got, tc.want) {
				t.Errorf("Bound = %.12g, want %.12g", got, tc.want)
			}
			unpruned, err := bound(tc.types, tc.groups, options{noPrune: true})
			if err != nil {
				t.Fatal(err)
			}
			if !near(unpruned, tc.want) {
				t.Errorf("unpruned bound = %.12g, want %.12g", unpruned, tc.want)
			}
			if len(tc.groups) > 0 {
				ref, err := reference(tc.types, tc.groups)
				if err != nil {
					t.Fatalf("reference: %v", err)
				}
				if !near(ref, tc.want) {
					t.Errorf("reference LP = %.12g, want %.12g", ref, tc.want)
				}
			}
		})
	}
}

func TestBoundErrors(t *testing.T) {
	ok := Type{Name: "ok", Price: 0.1, Capacity: []float64{2, 8}}
	tests := []struct {
		name   string
		types  []Type
		groups []Group
		want   []string // substrings of the error
	}{
		{
			name:   "group without types",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}, {Demand: []float64{1, 1}}},
			want:   []string{"group 1", "no allowed types"},
		},
		{
			name:   "type index out of range",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0, 1}}},
			want:   []string{"group 0", "type index 1 out of range"},
		},
		{
			name:   "negative type index",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{-1}}},
			want:   []string{"group 0", "type index -1"},
		},
		{
			name:   "type dimension mismatch",
			types:  []Type{ok, {Name: "short", Price: 1, Capacity: []float64{1}}},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}},
			want:   []string{"type 1", "1 dimensions, want 2"},
		},
		{
			name:   "group dimension mismatch",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}, {Demand: []float64{1, 1, 1}, Types: []int{0}}},
			want:   []string{"group 1", "3 dimensions, want 2"},
		},
		{
			name:   "type with an extra dimension",
			types:  []Type{ok, {Name: "cpu-only", Price: 1, Capacity: []float64{4, 0, 0}}},
			groups: nil,
			want:   []string{"type 1", "3 dimensions"},
		},
		{
			name:   "no type has the needed dimension",
			types:  []Type{{Name: "cpu-only", Price: 1, Capacity: []float64{4, 0}}, ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{1}}, {Demand: []float64{1, 2}, Types: []int{0}}},
			want:   []string{"infeasible", "group 1", "dimension 1"},
		},
		{
			name: "every dimension offered, but by different types",
			types: []Type{
				{Name: "cpu-only", Price: 1, Capacity: []float64{4, 0}},
				{Name: "mem-only", Price: 1, Capacity: []float64{0, 4}},
			},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0, 1}}},
			want:   []string{"infeasible", "group 0"},
		},
		{
			name:   "negative price",
			types:  []Type{ok, {Name: "neg", Price: -1, Capacity: []float64{1, 1}}},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}},
			want:   []string{"type 1", "price -1"},
		},
		{
			name:   "negative capacity",
			types:  []Type{ok, {Name: "neg", Price: 1, Capacity: []float64{1, -1}}},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}},
			want:   []string{"type 1", "dimension 1"},
		},
		{
			name:   "negative demand",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}, {Demand: []float64{-2, 1}, Types: []int{0}}},
			want:   []string{"group 1", "demand -2 in dimension 0"},
		},
		{
			name:   "NaN demand",
			types:  []Type{ok},
			groups: []Group{{Demand: []float64{math.NaN(), 1}, Types: []int{0}}},
			want:   []string{"group 0", "dimension 0"},
		},
		{
			name:   "infinite capacity",
			types:  []Type{{Name: "inf", Price: 1, Capacity: []float64{math.Inf(1), 1}}},
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}},
			want:   []string{"type 0", "dimension 0"},
		},
		{
			name:   "no types at all",
			types:  nil,
			groups: []Group{{Demand: []float64{1, 1}, Types: []int{0}}},
			want:   []string{"group 0", "out of range"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Bound(tc.types, tc.groups)
			if err == nil {
				t.Fatalf("Bound = %v, want an error", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

// TestPruningIsExact compares the pruned LP with the unpruned one and with the
// LP written out directly (reference) on random small instances full of
// duplicate, scaled and dominated types and of identical groups. The seed is
// fixed: gonum's Phase I, which reference relies on, can fail or cycle forever
// on degenerate instances (about 1 in 2000 of these random ones).
func TestPruningIsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	solved := 0
	for iter := 0; iter < 500; iter++ {
		types, groups := randomSmall(rng)
		got, err := Bound(types, groups)
		unpruned, err2 := bound(types, groups, options{noPrune: true})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("iter %d: pruned error %v, unpruned error %v", iter, err, err2)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "infeasible") {
				t.Fatalf("iter %d: %v", iter, err)
			}
			continue
		}
		solved++
		if !near(got, unpruned) {
			t.Errorf("iter %d: pruned %.12g, unpruned %.12g\ntypes %+v\ngroups %+v", iter, got, unpruned, types, groups)
		}
		ref, err := reference(types, groups)
		if err != nil {
			t.Errorf("iter %d: reference LP: %v", iter, err)
			continue
		}
		if !near(got, ref) || got > ref*(1+1e-12) {
			t.Errorf("iter %d: Bound %.12g, reference %.12g\ntypes %+v\ngroups %+v", iter, got, ref, types, groups)
		}
	}
	if solved < 300 {
		t.Errorf("only %d feasible instances", solved)
	}
}

func randomSmall(rng *rand.Rand) ([]Type, []Group) {
	const dims = 3
	nt := 1 + rng.Intn(12)
	types := make([]Type, 0, nt)
	for i := 0; i < nt; i++ {
		switch {
		case i > 0 && rng.Intn(4) == 0: // same type, another zone
			types = append(types, types[rng.Intn(i)])
		case i > 0 && rng.Intn(4) == 0: // k times a previous type, maybe a bit dearer
			o := types[rng.Intn(i)]
			k := float64(1 + rng.Intn(3))
			c := make([]float64, dims)
			for r := range c {
				c[r] = k * o.Capacity[r]
			}
			types = append(types, Type{Name: fmt.Sprint(i), Price: k * o.Price * (1 + 0.2*float64(rng.Intn(2))), Capacity: c})
		default:
			c := make([]float64, dims)
			for r := range c {
				c[r] = float64(1 + rng.Intn(8))
				if rng.Intn(10) == 0 {
					c[r] = 0
				}
			}
			types = append(types, Type{Name: fmt.Sprint(i), Price: float64(1+rng.Intn(20)) / 10, Capacity: c})
		}
	}
	ng := 1 + rng.Intn(7)
	groups := make([]Group, ng)
	for g := range groups {
		if g > 0 && rng.Intn(5) == 0 { // identical groups make degenerate LPs
			groups[g] = groups[rng.Intn(g)]
			continue
		}
		d := make([]float64, dims)
		for r := range d {
			if rng.Intn(4) != 0 {
				d[r] = float64(rng.Intn(20)) / 2
			}
		}
		var allowed []int
		for i := range types {
			if rng.Intn(3) != 0 {
				allowed = append(allowed, i)
			}
		}
		if len(allowed) == 0 {
			allowed = []int{rng.Intn(nt)}
		}
		groups[g] = Group{Demand: d, Types: allowed}
	}
	return types, groups
}

// reference solves the LP exactly as Bound's doc states it, with no
// reduction, in standard form with gonum's own Phase I: variables x_t, then
// z_{g,t} for every allowed pair, then a slack per (type, dimension); rows
// sum_t z_{g,t} = 1, then sum_g Demand_{g,r} z_{g,t} - Capacity_{t,r} x_t +
// s_{t,r} = 0.
func reference(types []Type, groups []Group) (float64, error) {
	dims := len(types[0].Capacity)
	nt := len(types)
	type pair struct{ g, t int }
	var pairs []pair
	for g, gr := range groups {
		for _, t := range gr.Types {
			pairs = append(pairs, pair{g, t})
		}
	}
	m := len(groups) + nt*dims
	n := nt + len(pairs) + nt*dims
	A := mat.NewDense(m, n, nil)
	b := make([]float64, m)
	c := make([]float64, n)
	for t, ty := range types {
		c[t] = ty.Price
		for r := 0; r < dims; r++ {
			A.Set(len(groups)+t*dims+r, t, -ty.Capacity[r])
			A.Set(len(groups)+t*dims+r, nt+len(pairs)+t*dims+r, 1)
		}
		if !slices.ContainsFunc(ty.Capacity, func(v float64) bool { return v > 0 }) {
			c[t] = 1 // x_t is an all-zero column, which lp.Simplex rejects
			A.Set(len(groups)+t*dims, t, 1)
		}
	}
	for i, p := range pairs {
		A.Set(p.g, nt+i, 1)
		for r := 0; r < dims; r++ {
			A.Set(len(groups)+p.t*dims+r, nt+i, groups[p.g].Demand[r])
		}
	}
	for g := range groups {
		b[g] = 1
	}
	f, _, err := lp.Simplex(c, A, b, 1e-10, nil)
	return f, err
}

func near(a, b float64) bool {
	return math.Abs(a-b) <= 1e-7*(1+math.Abs(b))
}

// benchInstance is a catalog of about 500 types (30 shapes of 2..192 vCPU and
// 2, 4 or 8 GiB per vCPU, 29..737 pods, about $0.04/vCPU-hour with noise,
// many offered in several zones) and ng groups, each allowed a random 60% of
// the types.
func benchInstance(seed int64, ng int) ([]Type, []Group) {
	rng := rand.New(rand.NewSource(seed))
	cpus := []float64{2, 4, 8, 16, 32, 48, 64, 96, 128, 192}
	ratios := []float64{2, 4, 8}
	var types []Type
	for len(types) < 500 {
		if len(types) > 0 && rng.Intn(5) == 0 { // same type in another zone
			types = append(types, types[rng.Intn(len(types))])
			continue
		}
		cpu := cpus[rng.Intn(len(cpus))]
		ratio := ratios[rng.Intn(len(ratios))]
		pods := math.Min(737, 29+math.Floor(cpu*(1+6*rng.Float64())))
		price := 0.04 * cpu * (0.7 + 0.075*ratio) * (0.85 + 0.3*rng.Float64())
		types = append(types, Type{
			Name:     fmt.Sprintf("t%d", len(types)),
			Price:    math.Round(price*1e4) / 1e4,
			Capacity: []float64{cpu, cpu * ratio, pods},
		})
	}
	groups := make([]Group, ng)
	for g := range groups {
		n := 5 + rng.Intn(400) // pods
		cpuPerPod := 0.05 + 2*rng.Float64()
		memPerCPU := 0.5 + 12*rng.Float64()
		var allowed []int
		for t := range types {
			if rng.Float64() < 0.6 {
				allowed = append(allowed, t)
			}
		}
		groups[g] = Group{
			Demand: []float64{float64(n) * cpuPerPod, float64(n) * cpuPerPod * memPerCPU, float64(n)},
			Types:  allowed,
		}
	}
	return types, groups
}

// TestBenchInstance checks the benchmark's instances against the unpruned
// LP, and a cut-down one against the reference LP.
func TestBenchInstance(t *testing.T) {
	for _, ng := range []int{5, 10} {
		types, groups := benchInstance(42, ng)
		got, err := Bound(types, groups)
		if err != nil {
			t.Fatal(err)
		}
		unpruned, err := bound(types, groups, options{noPrune: true})
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, unpruned) {
			t.Errorf("%d groups: pruned %.12g, unpruned %.12g", ng, got, unpruned)
		}
	}

	types, groups := benchInstance(7, 4)
	types = types[:40]
	for g := range groups {
		groups[g].Types = slices.DeleteFunc(groups[g].Types, func(t int) bool { return t >= len(types) })
	}
	got, err := Bound(types, groups)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := reference(types, groups)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	if !near(got, ref) {
		t.Errorf("Bound %.12g, reference %.12g", got, ref)
	}
}

func BenchmarkBound(b *testing.B) {
	for _, ng := range []int{5, 10} {
		types, groups := benchInstance(42, ng)
		b.Run(fmt.Sprintf("types=%d/groups=%d", len(types), ng), func(b *testing.B) {
			var v float64
			for i := 0; i < b.N; i++ {
				var err error
				v, err = Bound(types, groups)
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(v, "$/h")
		})
	}
}
