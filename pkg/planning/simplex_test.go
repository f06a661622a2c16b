package planning

import (
	"context"
	"math"
	"math/rand"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

func TestSimplex(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	// Beale's example: from the slack basis, Dantzig's rule with ties to the first column
	// cycles through six degenerate bases for ever. Its optimum is -5/4.
	bealeC := []float64{0, 0, 0, -0.75, 20, -0.5, 6}
	bealeA := [][]float64{
		{1, 0, 0, 0.25, -8, -1, 9},
		{0, 1, 0, 0.5, -12, -0.5, 3},
		{0, 0, 1, 0, 0, 1, 0},
	}
	bealeB := []float64{0, 0, 1}
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		c        []float64
		a        [][]float64
		b        []float64
		basis    []int
		maxIter  int
		want     float64
		wantFail bool
	}{
		{name: "Beale's cycling example ends at its optimum", ctx: context.Background(), c: bealeC, a: bealeA, b: bealeB, basis: []int{0, 1, 2}, maxIter: 100, want: -1.25},
		{name: "a cover of two resources by two shapes", ctx: context.Background(),
			// 4 cpu/8 GiB at 1 and 2 cpu/16 GiB at 1.2 for 10 cpu and 40 GiB, from 5 of the second
			// (which over-covers memory: its slack is basic).
			c: []float64{1, 1.2, 0, 0}, a: [][]float64{{4, 2, -1, 0}, {8, 16, 0, -1}}, b: []float64{10, 40}, basis: []int{1, 3}, maxIter: 100,
			// x1 = 5/3, x2 = 5/3: 4·5/3 + 2·5/3 = 10 cpu, 8·5/3 + 16·5/3 = 40 GiB.
			want: 5.0/3 + 1.2*5/3},
		{name: "pivots run out", ctx: context.Background(), c: bealeC, a: bealeA, b: bealeB, basis: []int{0, 1, 2}, maxIter: 1, wantFail: true},
		{name: "the context ends", ctx: cancelled, c: bealeC, a: bealeA, b: bealeB, basis: []int{0, 1, 2}, maxIter: 100, wantFail: true},
		{name: "an infeasible starting basis", ctx: context.Background(), c: []float64{1, 0}, a: [][]float64{{1, -1}}, b: []float64{1}, basis: []int{1}, maxIter: 100, wantFail: true},
		{name: "an unbounded objective", ctx: context.Background(), c: []float64{-1, 0}, a: [][]float64{{1, -1}}, b: []float64{1}, basis: []int{0}, maxIter: 100, wantFail: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := simplex(tc.ctx, tc.c, tc.a, tc.b, tc.basis, tc.maxIter)
			if tc.wantFail {
				if err == nil {
					t.Fatalf("got x = %v, want an error", x)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := dot(tc.c, x); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("objective %v (x = %v), want %v", got, x, tc.want)
			}
			checkFeasible(t, tc.a, tc.b, x)
		})
	}
}

// The mix LP's simplex finds the optimum gonum's finds, on random covering LPs of the mix's
// shape: a row per resource, a column per instance shape, a slack per row.
func TestSolveMixMatchesGonum(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for trial := 0; trial < 200; trial++ {
		rows, n := 2+rng.Intn(3), 1+rng.Intn(60)
		a := make([][]float64, rows)
		dense := mat.NewDense(rows, n+rows, nil)
		b := make([]float64, rows)
		c := make([]float64, n+rows)
		for j := 0; j < n; j++ {
			c[j] = 0.05 + rng.Float64()*5
		}
		for i := range a {
			a[i] = make([]float64, n+rows)
			for j := 0; j < n; j++ {
				a[i][j] = rng.Float64() * 0.3
				if i > 0 && rng.Intn(10) == 0 {
					a[i][j] = 0 // a shape without the resource (gonum refuses a column of zeros)
				}
			}
			a[i][n+i] = -1
			b[i] = 1
			for j, v := range a[i] {
				dense.Set(i, j, v)
			}
		}
		x, err := solveMix(context.Background(), c, a, b, n)
		want, _, wantErr := lp.Simplex(c, dense, b, 1e-10, nil)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("trial %d: error %v, gonum's %v", trial, err, wantErr)
		}
		if err != nil {
			continue
		}
		if got := dot(c, x); math.Abs(got-want) > 1e-7*math.Max(1, math.Abs(want)) {
			t.Errorf("trial %d (%d rows, %d shapes): objective %v, gonum's %v", trial, rows, n, got, want)
		}
		checkFeasible(t, a, b, x)
	}
}

func checkFeasible(t *testing.T, a [][]float64, b, x []float64) {
	t.Helper()
	for i, row := range a {
		if got := dot(row, x); math.Abs(got-b[i]) > 1e-7 {
			t.Errorf("row %d: a·x = %v, want %v (x = %v)", i, got, b[i], x)
		}
	}
	for j, v := range x {
		if v < 0 {
			t.Errorf("x[%d] = %v < 0", j, v)
		}
	}
}

func dot(u, v []float64) float64 {
	var s float64
	for i := range u {
		s += u[i] * v[i]
	}
	return s
}
