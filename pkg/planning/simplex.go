package planning

import (
	"context"
	"errors"
	"fmt"
	"math"
)

// simplexTol is the tolerance of the simplex below: a reduced cost above -simplexTol is not an
// improvement, and a column entry below it is no pivot.
const simplexTol = 1e-10

// errSimplexUnbounded says the objective decreases without bound.
var errSimplexUnbounded = errors.New("simplex: the objective is unbounded")

// simplex minimises c·x subject to a·x = b and x ≥ 0, starting from basis, a feasible basis
// (one column per row whose solution is non-negative). It is the primal simplex on a dense
// tableau, which is all the mix LP needs (a row per resource, a column per instance shape), and
// unlike gonum's lp.Simplex it cannot run away: it takes Dantzig's steepest reduced cost, turns
// to Bland's rule, which cannot cycle, once steps stop improving the objective, stops after
// maxIter pivots, and returns when ctx ends. x has one entry per column of a.
func simplex(ctx context.Context, c []float64, a [][]float64, b []float64, basis []int, maxIter int) ([]float64, error) {
	m, n := len(a), len(c)
	if len(b) != m || len(basis) != m {
		return nil, fmt.Errorf("simplex: %d rows, %d right-hand sides, %d basic columns", m, len(b), len(basis))
	}
	// The tableau: row i is a's row i with b[i] as its last entry.
	t := make([][]float64, m)
	for i := range a {
		if len(a[i]) != n {
			return nil, fmt.Errorf("simplex: row %d has %d columns, the objective %d", i, len(a[i]), n)
		}
		t[i] = append(append(make([]float64, 0, n+1), a[i]...), b[i])
	}
	// Express the tableau in the starting basis: pivot each basic column into a row of its own,
	// the row with its largest entry among those not yet taken.
	rowOf := make([]int, m) // rowOf[i] is the basic column of row i
	taken := make([]bool, m)
	for _, j := range basis {
		best := -1
		for i := range t {
			if !taken[i] && (best < 0 || math.Abs(t[i][j]) > math.Abs(t[best][j])) {
				best = i
			}
		}
		if best < 0 || math.Abs(t[best][j]) < simplexTol {
			return nil, fmt.Errorf("simplex: the starting basis is singular")
		}
		pivot(t, best, j)
		taken[best], rowOf[best] = true, j
	}
	for i := range t {
		if t[i][n] < -simplexTol {
			return nil, fmt.Errorf("simplex: the starting basis is infeasible")
		}
	}
	reduced := make([]float64, n)
	bland := false
	for iter := 0; ; iter++ {
		if iter == maxIter {
			return nil, fmt.Errorf("simplex: no optimum within %d pivots", maxIter)
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// Reduced costs: c_j − Σ_i c_basic(i)·t[i][j].
		copy(reduced, c)
		for i, bj := range rowOf {
			if cb := c[bj]; cb != 0 {
				for j := 0; j < n; j++ {
					reduced[j] -= cb * t[i][j]
				}
			}
		}
		enter := -1
		for j := 0; j < n; j++ {
			if reduced[j] < -simplexTol && (enter < 0 || !bland && reduced[j] < reduced[enter]) {
				enter = j
				if bland {
					break // Bland's rule: the first improving column
				}
			}
		}
		if enter < 0 {
			break // optimal
		}
		// The ratio test; ties go to the row whose basic column comes first (Bland's rule).
		leave := -1
		var ratio float64
		for i := range t {
			if v := t[i][enter]; v > simplexTol {
				r := t[i][n] / v
				if leave < 0 || r < ratio-simplexTol || r < ratio+simplexTol && rowOf[i] < rowOf[leave] {
					leave, ratio = i, r
				}
			}
		}
		if leave < 0 {
			return nil, errSimplexUnbounded
		}
		// A step that does not move (a degenerate vertex) is where Dantzig's rule can cycle.
		bland = bland || ratio <= simplexTol
		pivot(t, leave, enter)
		rowOf[leave] = enter
	}
	x := make([]float64, n)
	for i, j := range rowOf {
		x[j] = max(t[i][n], 0)
	}
	return x, nil
}

// pivot makes column j of the tableau the unit vector of row r.
func pivot(t [][]float64, r, j int) {
	p := t[r][j]
	for k := range t[r] {
		t[r][k] /= p
	}
	for i := range t {
		if i == r {
			continue
		}
		if f := t[i][j]; f != 0 {
			for k := range t[i] {
				t[i][k] -= f * t[r][k]
			}
		}
	}
}
