// Package lowerbound computes a lower bound on the hourly cost of running a set
// of pods on cloud instance types: the optimum of the LP relaxation of bin
// packing, where pods may be split fractionally over types and node counts are
// fractional. No real packing can be cheaper, so the bound tells how far a
// concrete plan is from the best conceivable one.
//
// The LP is solved with gonum's simplex (gonum.org/v1/gonum/optimize/convex/lp),
// which works on dense matrices and re-factorises the basis on every pivot, so
// its cost grows with the cube of the number of constraints. Bound therefore
// first shrinks the problem with reductions that provably leave the optimum
// unchanged (see bound), and then solves it by column generation, where every
// LP has one row per group or one row per resource dimension (see
// problem.solve), so that catalogs of hundreds of types solve in milliseconds.
package lowerbound

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// Type is one launchable instance type (price $/h, capacity per resource
// dimension, same order in every Type and Group).
type Type struct {
	Name     string
	Price    float64
	Capacity []float64
}

// Group is a set of pods that may use only the listed types (indexes into the
// types slice). Demand is the sum of the group's pod requests per dimension
// (include a "pods" dimension: 1 per pod, so pod-count limits count).
type Group struct {
	Demand []float64
	Types  []int
}

// Bound returns min sum_t Price_t * x_t subject to: the groups' demand is split
// fractionally over their allowed types (z_{g,t} >= 0, sum_t z_{g,t} = 1 for
// every group g), and for every type t and dimension r:
// sum_g z_{g,t} * Demand_{g,r} <= Capacity_{t,r} * x_t, x_t >= 0 (x_t is a
// fractional node count).
//
// It returns an error, never a panic, for malformed input (negative or
// non-finite numbers, dimension mismatch, a group without types or with an
// out-of-range type index) and for infeasible input (a group needing a
// dimension that none of its types has). Groups with zero demand in every
// dimension are ignored.
//
// The value is certified: it is the objective of a dual solution checked to
// be feasible, so solver round-off can only make it slightly lower (relative
// error around 1e-8), never higher than the LP optimum. If the solver fails
// numerically an error is returned instead: a simplex's last iterate is an
// upper estimate, not a lower bound, so it is never returned as one.
func Bound(types []Type, groups []Group) (float64, error) {
	return bound(types, groups, options{})
}

// Solve is Bound that also returns a fractional packing attaining the bound (see Solution), for
// callers that round it into a real packing.
func Solve(types []Type, groups []Group) (Solution, error) {
	return solveLP(types, groups, options{})
}

// options are test hooks.
type options struct {
	// noPrune disables reductions 2 to 5 of bound, so tests can check that
	// they do not change the optimum.
	noPrune bool
}

// grp is a group with non-zero demand, after validation.
type grp struct {
	demand []float64 // per dimension
	orig   int       // index in the caller's groups
}

// typ is an instance type some group may use.
type typ struct {
	orig  int // index in the caller's types (the first, when identical types were merged)
	price float64
	cap   []float64
	users []int  // indexes into problem.groups, ascending
	set   bitset // users as a set
	dead  bool

	// Filled by classify.
	rows []int     // dimensions whose capacity constraint is not implied by another
	sep  bool      // cost is linear in the load: no sharing effects between groups
	a    []float64 // a[u*len(rows)+i]: nodes of this type users[u] alone needs in dimension rows[i]

	// Set by bestPattern: at group values refU, no pattern was worth more
	// than refV.
	refU []float64
	refV float64
}

type problem struct {
	dims   int
	groups []grp
	types  []typ
}

// bound is Bound with test options.
func bound(types []Type, groups []Group, opt options) (float64, error) {
	sol, err := solveLP(types, groups, opt)
	return sol.Bound, err
}

// solveLP is Solve with test options. The reductions, each exact (the optimum
// is unchanged):
//
//  1. Types no group may use are dropped, and a group's pairing with a type
//     that lacks capacity in a dimension the group needs is dropped (the LP
//     forces that z to 0 anyway). A group that fits on a zero-price type
//     costs nothing and is dropped.
//  2. Types with identical price, capacity and set of users are merged (the
//     same type offered in several zones to the same groups). Identical types
//     with different user sets are not merged: that would let groups share
//     nodes they cannot share and lower the bound; the subset case is covered
//     by 3.
//  3. A type t is dropped if another live type t' is usable by every group that
//     uses t and is at least as good per dollar in every dimension any of those
//     groups needs (Capacity'_r/Price' >= Capacity_r/Price). Since node counts
//     are fractional, replacing x_t nodes of t by k*x_t nodes of t', with
//     k = max_r Capacity_r/Capacity'_r, holds the same load at no higher cost.
//     This includes the plain "cheaper and at least as big" dominance.
//  4. Per type, a dimension's capacity row is dropped when another dimension is
//     at least as tight for every group using the type (the row is implied).
//  5. A type left with one row, or with one user, costs a fixed price per unit
//     of each group's demand (no sharing effects), so for each group only the
//     cheapest such type matters: one fixed column per group, never priced.
//
// Each remaining type costs one small pricing LP per column generation round.
func solveLP(types []Type, groups []Group, opt options) (Solution, error) {
	p, err := newProblem(types, groups)
	if err != nil {
		return Solution{}, err
	}
	if len(p.groups) == 0 {
		return Solution{}, nil
	}
	if !opt.noPrune {
		p.mergeIdentical()
		p.dropDominated()
	}
	p.classify(!opt.noPrune)
	return p.solve()
}

// newProblem validates the input and builds the internal form: groups with
// demand, and the types they may use.
func newProblem(types []Type, groups []Group) (*problem, error) {
	dims := -1
	dimsFrom := ""
	if len(types) > 0 {
		dims, dimsFrom = len(types[0].Capacity), "type 0"
	} else if len(groups) > 0 {
		dims, dimsFrom = len(groups[0].Demand), "group 0"
	}
	for i, t := range types {
		if len(t.Capacity) != dims {
			return nil, fmt.Errorf("lowerbound: type %d (%s): capacity has %d dimensions, want %d as %s", i, t.Name, len(t.Capacity), dims, dimsFrom)
		}
		if !finiteNonNeg(t.Price) {
			return nil, fmt.Errorf("lowerbound: type %d (%s): price %v is not a finite non-negative number", i, t.Name, t.Price)
		}
		for r, v := range t.Capacity {
			if !finiteNonNeg(v) {
				return nil, fmt.Errorf("lowerbound: type %d (%s): capacity %v in dimension %d is not a finite non-negative number", i, t.Name, v, r)
			}
		}
	}
	for g, gr := range groups {
		if len(gr.Demand) != dims {
			return nil, fmt.Errorf("lowerbound: group %d: demand has %d dimensions, want %d as %s", g, len(gr.Demand), dims, dimsFrom)
		}
		for r, v := range gr.Demand {
			if !finiteNonNeg(v) {
				return nil, fmt.Errorf("lowerbound: group %d: demand %v in dimension %d is not a finite non-negative number", g, v, r)
			}
		}
		if len(gr.Types) == 0 {
			return nil, fmt.Errorf("lowerbound: group %d: no allowed types", g)
		}
		for _, t := range gr.Types {
			if t < 0 || t >= len(types) {
				return nil, fmt.Errorf("lowerbound: group %d: type index %d out of range [0, %d)", g, t, len(types))
			}
		}
	}

	p := &problem{dims: dims}
	internal := make(map[int]int) // caller's type index -> index in p.types
	for g, gr := range groups {
		if !slices.ContainsFunc(gr.Demand, func(v float64) bool { return v > 0 }) {
			continue // nothing to place
		}
		// A type without capacity in a dimension the group needs can hold none
		// of it: the capacity row forces that z to 0.
		for r, d := range gr.Demand {
			if d > 0 && !slices.ContainsFunc(gr.Types, func(t int) bool { return types[t].Capacity[r] > 0 }) {
				return nil, fmt.Errorf("lowerbound: infeasible: group %d needs %v in dimension %d but none of its %d allowed types has capacity in that dimension", g, d, r, len(gr.Types))
			}
		}
		fitting := slices.DeleteFunc(slices.Clone(gr.Types), func(t int) bool { return !fits(gr.Demand, types[t].Capacity) })
		if len(fitting) == 0 {
			return nil, fmt.Errorf("lowerbound: infeasible: group %d: each of its %d allowed types lacks capacity in some dimension the group needs", g, len(gr.Types))
		}
		// A group that fits on a free type costs nothing, and leaving it out
		// only removes load from other types. (This also keeps every price
		// the solver sees positive.)
		if slices.ContainsFunc(fitting, func(t int) bool { return types[t].Price == 0 }) {
			continue
		}
		gi := len(p.groups)
		var opts []int // internal indexes, to skip duplicates in gr.Types
		for _, t := range fitting {
			it, ok := internal[t]
			if !ok {
				it = len(p.types)
				internal[t] = it
				p.types = append(p.types, typ{orig: t, price: types[t].Price, cap: types[t].Capacity})
			}
			if !slices.Contains(opts, it) { // tolerate duplicate indexes
				opts = append(opts, it)
				p.types[it].users = append(p.types[it].users, gi)
			}
		}
		p.groups = append(p.groups, grp{demand: gr.Demand, orig: g})
	}
	for i := range p.types {
		p.types[i].set = newBitset(len(p.groups), p.types[i].users)
	}
	return p, nil
}

func finiteNonNeg(v float64) bool { return v >= 0 && !math.IsInf(v, 1) } // NaN fails v >= 0

// fits reports whether a type has capacity in every dimension the demand needs.
func fits(demand, capacity []float64) bool {
	for r, d := range demand {
		if d > 0 && capacity[r] <= 0 {
			return false
		}
	}
	return true
}

// kill removes type t from the problem.
func (p *problem) kill(t int) { p.types[t].dead = true }

// mergeIdentical keeps one of each set of types with equal price, capacity
// and users (reduction 2).
func (p *problem) mergeIdentical() {
	seen := make(map[string]bool)
	key := make([]byte, 0, 64)
	for t := range p.types {
		ty := &p.types[t]
		key = key[:0]
		key = appendFloat(key, ty.price)
		for _, c := range ty.cap {
			key = appendFloat(key, c)
		}
		for _, w := range ty.set {
			key = appendUint(key, w)
		}
		if seen[string(key)] {
			p.kill(t)
			continue
		}
		seen[string(key)] = true
	}
}

func appendFloat(b []byte, f float64) []byte {
	if f == 0 {
		f = 0 // -0 == 0
	}
	return appendUint(b, math.Float64bits(f))
}

func appendUint(b []byte, u uint64) []byte {
	for i := 0; i < 8; i++ {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}

// dropDominated applies reduction 3. Dominance is checked against live types
// only and is transitive, so of several mutually dominating types one survives.
func (p *problem) dropDominated() {
	// relevant[t]: dimensions some user of t has demand in.
	relevant := make([][]int, len(p.types))
	for t := range p.types {
		ty := &p.types[t]
		if ty.dead {
			continue
		}
		for r := 0; r < p.dims; r++ {
			for _, g := range ty.users {
				if p.groups[g].demand[r] > 0 {
					relevant[t] = append(relevant[t], r)
					break
				}
			}
		}
	}
	for t := range p.types {
		ty := &p.types[t]
		if ty.dead {
			continue
		}
		for u := range p.types {
			if u == t || p.types[u].dead || !ty.set.subsetOf(p.types[u].set) {
				continue
			}
			if perDollarAtLeast(&p.types[u], ty, relevant[t]) {
				p.kill(t)
				break
			}
		}
	}
}

// perDollarAtLeast reports whether type u gives at least as much of every
// listed dimension per dollar as type t.
func perDollarAtLeast(u, t *typ, dims []int) bool {
	for _, r := range dims {
		// t.cap[r] > 0 for relevant dimensions. Cross-multiplied to allow zero
		// prices; u.cap[r] > 0 is needed separately when t is free.
		if u.cap[r] <= 0 || u.cap[r]*t.price < t.cap[r]*u.price {
			return false
		}
	}
	return true
}

// classify computes each live type's capacity rows (reduction 4 when prune)
// and whether it is separable (reduction 5 when prune).
func (p *problem) classify(prune bool) {
	for t := range p.types {
		ty := &p.types[t]
		if ty.dead {
			continue
		}
		var rows []int
		for r := 0; r < p.dims; r++ {
			for _, g := range ty.users {
				if p.groups[g].demand[r] > 0 {
					rows = append(rows, r)
					break
				}
			}
		}
		// need(g, r): nodes of this type group g alone needs in dimension r.
		need := func(g, r int) float64 { return p.groups[g].demand[r] / ty.cap[r] }
		if prune {
			// Drop row r if a kept row r2 is at least as tight for every user.
			kept := rows[:0:0]
			for i, r := range rows {
				implied := false
				for j, r2 := range rows {
					if j == i || (j < i && !slices.Contains(kept, r2)) {
						continue // r2 already dropped: whatever implied it implies r too
					}
					all := true
					for _, g := range ty.users {
						if need(g, r) > need(g, r2) {
							all = false
							break
						}
					}
					if all {
						implied = true
						break
					}
				}
				if !implied {
					kept = append(kept, r)
				}
			}
			rows = kept
			ty.sep = len(rows) == 1 || len(ty.users) == 1
		}
		ty.rows = rows
		ty.a = make([]float64, len(ty.users)*len(rows))
		for u, g := range ty.users {
			for i, r := range rows {
				ty.a[u*len(rows)+i] = need(g, r)
			}
		}
	}
}

// alone returns what users[u] costs on the type with no other group there:
// price times the largest per-row need.
func (ty *typ) alone(u int) float64 {
	k := len(ty.rows)
	return ty.price * slices.Max(ty.a[u*k:(u+1)*k])
}

// Tolerances, relative to the normalised costs (see solve).
const (
	simplexTol = 1e-10 // lp.Simplex stops when no reduced cost is below -simplexTol
	priceTol   = 1e-9  // a pattern must beat its price by this factor to be added
	dualTol    = 1e-8  // recovered duals may violate a master column by this much
	maxRounds  = 200   // column generation rounds before giving up
)

// column is a master LP column: lambda units of a pattern that covers cover[g]
// of group g per unit, at cost per unit. A unit is nodes nodes of type ty (nil
// for the surplus columns).
type column struct {
	cost  float64
	cover []float64
	ty    *typ
	nodes float64
}

// solve computes the optimum of the reduced LP by Dantzig-Wolfe column
// generation, and returns it as the value of a dual solution it has checked
// to be feasible, which makes it a lower bound even where the solver rounds.
//
// The LP of Bound's doc, written directly, has one row per (type, dimension);
// gonum's dense simplex re-factorises the basis on every pivot, and even the
// pruned LP of a 500-type catalog takes seconds. Instead:
//
//   - The master LP has one row per group: min sum_p cost_p lambda_p subject to
//     sum_p cover_{p,g} lambda_p >= 1 for every group g. A column is either a
//     group's cheapest separable option, or a pattern: one node of a type t
//     holding the fraction z_g of every group g with sum_g z_g a_{g,t,r} <= 1 in
//     every row r of t. Any fractional packing is a non-negative combination of
//     patterns (x_t nodes of t carrying loads z are x_t copies of the pattern
//     z/x_t), so with all patterns the master equals the LP; ">= 1" instead of
//     "= 1" changes nothing, as dropping load from a pattern keeps it valid.
//   - Its duals u_g (what covering group g is worth) are read off the optimal
//     basis. Pricing asks each type for its best pattern, a tiny LP with one
//     row per kept dimension: maximise u.z subject to A_t z <= 1. A pattern
//     worth more than the type's price is a column that improves the master.
//   - When no type offers one, u is feasible for the dual of the full LP
//     (u_g <= separable cost, u.z <= Price_t for every pattern), so sum_g u_g
//     is a lower bound by weak duality, and it equals the master's optimum,
//     an upper bound: it is the optimum. To absorb rounding, the returned
//     value is sum_g u_g/(1+eta), where eta is the largest relative violation
//     of those constraints found (upper bounds from the pricing LPs plus
//     their tolerance); u/(1+eta) is feasible, as the constraints are
//     homogeneous in u.
func (p *problem) solve() (Solution, error) {
	ng := len(p.groups)
	sepCost := make([]float64, ng)
	sepType := make([]*typ, ng)
	for g := range sepCost {
		sepCost[g] = math.Inf(1)
	}
	var multi []*typ
	for t := range p.types {
		ty := &p.types[t]
		if ty.dead {
			continue
		}
		if ty.sep {
			for u, g := range ty.users {
				if c := ty.alone(u); c < sepCost[g] {
					sepCost[g], sepType[g] = c, ty
				}
			}
			continue
		}
		multi = append(multi, ty)
	}

	// Start: every group alone on its cheapest option. Its cost is an upper
	// bound, and with a single group or no sharing it is the answer.
	best := slices.Clone(sepCost)
	bestType := slices.Clone(sepType)
	for _, ty := range multi {
		for u, g := range ty.users {
			if c := ty.alone(u); c < best[g] {
				best[g], bestType[g] = c, ty
			}
		}
	}
	upper := 0.0
	for _, c := range best {
		upper += c
	}
	if math.IsInf(upper, 1) {
		// Every group keeps at least one type: newProblem checks that one
		// fits, and a type is only dropped for one that serves all its users.
		return Solution{}, errors.New("lowerbound: internal error: a group lost all its types")
	}
	if len(multi) == 0 || ng == 1 {
		return p.alone(best, bestType), nil
	}

	// Normalise costs so that a group's dual is about 1 and absolute solver
	// tolerances act as relative ones. Prices are positive here (groups that
	// may use a free type were dropped), so upper > 0.
	scale := upper / float64(ng)

	// Columns 0..ng-1 are the surplus variables of the ">= 1" rows.
	var cols []column
	for g := 0; g < ng; g++ {
		cover := make([]float64, ng)
		cover[g] = -1
		cols = append(cols, column{cover: cover})
	}
	sepCol := make([]int, ng)
	for g := range sepCost {
		sepCol[g] = -1
		if !math.IsInf(sepCost[g], 1) {
			cover := make([]float64, ng)
			cover[g] = 1
			sepCol[g] = len(cols)
			cols = append(cols, column{cost: sepCost[g] / scale, cover: cover, ty: sepType[g], nodes: sepCost[g] / sepType[g].price})
		}
	}
	initial := make([]int, ng)
	for g := range initial {
		if bestType[g] == sepType[g] {
			initial[g] = sepCol[g]
			continue
		}
		// The group alone on its best non-separable type: a pattern with
		// z_g = 1/(nodes needed), scaled to cover the whole group.
		cover := make([]float64, ng)
		cover[g] = 1
		initial[g] = len(cols)
		cols = append(cols, column{cost: best[g] / scale, cover: cover, ty: bestType[g], nodes: best[g] / bestType[g].price})
	}

	// Perturbing the right-hand side (>= 1+delta_g) makes the master
	// non-degenerate, so its optimal basis is exactly the set of non-zero
	// variables and the duals can be read off it. The duals are then
	// evaluated against the true right-hand side, 1: the perturbation can
	// only make the result lower by a relative delta, never invalid. If the
	// master fails anyway (duals unreadable, or a numerical failure in
	// lp.Simplex), a larger perturbation is tried.
	var lastErr error
	for _, amp := range []float64{1e-9, 1e-7, 1e-5} {
		b := make([]float64, ng)
		for g := range b {
			b[g] = 1 + perturbation(g, amp)
		}
		v, x, all, err := p.generate(multi, sepCost, scale, cols, slices.Clone(initial), b)
		if err == nil {
			if v >= upper {
				return p.alone(best, bestType), nil // rounding: nothing beats every group alone
			}
			return p.packing(v, x, all), nil
		}
		lastErr = err
	}
	return Solution{}, lastErr
}

// perturbation returns distinct values in [amp, 2*amp) for i = 0, 1, ...
func perturbation(i int, amp float64) float64 {
	return amp * (1 + math.Mod(float64(i+1)*0.6180339887498949, 1))
}

var errDuals = errors.New("cannot read duals off the master LP's solution")

// generate runs column generation from the given columns and feasible basis,
// and returns the certified bound in $/h, and the last master LP's solution
// over the columns.
func (p *problem) generate(multi []*typ, sepCost []float64, scale float64, cols []column, basis []int, b []float64) (float64, []float64, []column, error) {
	ng := len(b)
	prevF := math.Inf(1)
	// Every round's duals, scaled down by their violation, bound the optimum (see below): if
	// the rounds run out, the best of them is still a certified bound, only a looser one.
	bestBound, bestX, bestCols := 0.0, []float64(nil), []column(nil)
	for round := 0; round < maxRounds; round++ {
		A := mat.NewDense(ng, len(cols), nil)
		c := make([]float64, len(cols))
		for j, col := range cols {
			c[j] = col.cost
			for g, v := range col.cover {
				if v != 0 {
					A.Set(g, j, v)
				}
			}
		}
		f, x, err := simplex(c, A, b, basis)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("lowerbound: master LP (%d groups, %d columns): %w", ng, len(cols), err)
		}
		var u []float64
		basis, u, err = duals(A, c, x)
		if err != nil {
			return 0, nil, nil, fmt.Errorf("lowerbound: master LP (%d groups, %d columns): %w", ng, len(cols), err)
		}
		if d := dot(u, b); math.Abs(d-f) > dualTol*(1+math.Abs(f)) {
			return 0, nil, nil, fmt.Errorf("lowerbound: master LP: %w: dual value %v, primal value %v", errDuals, d, f)
		}

		// Pricing. eta is the largest relative amount by which u violates a
		// constraint of the full dual; u/(1+eta) is feasible.
		eta := 0.0
		for g, sc := range sepCost {
			if !math.IsInf(sc, 1) {
				eta = max(eta, u[g]/(sc/scale)-1)
			}
		}
		added := 0
		for _, ty := range multi {
			price := ty.price / scale
			ub, v, z, err := bestPattern(ty, u, price)
			if err != nil {
				return 0, nil, nil, fmt.Errorf("lowerbound: pricing LP: %w", err)
			}
			eta = max(eta, ub/price-1)
			if z == nil {
				continue
			}
			// z is one node's worth; the column is scaled so its largest
			// cover is 1, which keeps the master well conditioned. Its
			// reduced cost is then (price-v)/zmax; the master ignores
			// reduced costs above -simplexTol, so a pattern must beat that
			// clearly, or it would be found again every round.
			zmax := slices.Max(z)
			if v-price <= max(priceTol*price, 10*simplexTol*zmax) {
				continue
			}
			cover := make([]float64, ng)
			for u, g := range ty.users {
				if z[u] > zmax*1e-12 {
					cover[g] = z[u] / zmax
				}
			}
			cols = append(cols, column{cost: price / zmax, cover: cover, ty: ty, nodes: 1 / zmax})
			added++
		}
		// The master is non-degenerate (perturbed), so an improving column
		// lowers its optimum. If it did not, only rounding is left.
		stalled := f >= prevF-dualTol*math.Abs(prevF)
		prevF = f
		sum := 0.0
		for _, v := range u {
			sum += v
		}
		bound := sum / (1 + eta) * scale
		if added == 0 || stalled && eta < 1e-8 {
			return bound, x, cols[:len(x)], nil
		}
		if bound > bestBound || bestX == nil {
			bestBound, bestX, bestCols = bound, x, cols[:len(x)]
		}
	}
	if bestX == nil {
		return 0, nil, nil, fmt.Errorf("lowerbound: column generation did not converge in %d rounds", maxRounds)
	}
	return bestBound, bestX, bestCols, nil
}

func dot(u, b []float64) float64 {
	s := 0.0
	for i := range u {
		s += u[i] * b[i]
	}
	return s
}

// duals recovers the optimal basis of a master solution (its non-zero
// variables, completed with surplus columns if some basic variable happens to
// be zero) and the duals u = B^-T c_B, with rounding noise below 0 set to 0
// (pricing re-checks every dual constraint anyway). It checks that no column
// has a reduced cost below -dualTol, i.e. that u is optimal.
func duals(A *mat.Dense, c, x []float64) ([]int, []float64, error) {
	m, n := A.Dims()
	var basis []int
	for j, v := range x {
		if v != 0 {
			basis = append(basis, j)
		}
	}
	if len(basis) > m {
		return nil, nil, fmt.Errorf("%w: %d non-zero variables for %d rows", errDuals, len(basis), m)
	}
	// Complete with surplus columns (0..m-1) that keep the columns independent.
	for j := 0; j < m && len(basis) < m; j++ {
		if slices.Contains(basis, j) {
			continue
		}
		cand := mat.NewDense(m, len(basis)+1, nil)
		for k, bj := range append(slices.Clone(basis), j) {
			for i := 0; i < m; i++ {
				cand.Set(i, k, A.At(i, bj))
			}
		}
		if mat.Cond(cand, 1) < 1e12 {
			basis = append(basis, j)
		}
	}
	if len(basis) < m {
		return nil, nil, fmt.Errorf("%w: could not complete the basis", errDuals)
	}
	B := mat.NewDense(m, m, nil)
	cb := make([]float64, m)
	for k, j := range basis {
		cb[k] = c[j]
		for i := 0; i < m; i++ {
			B.Set(i, k, A.At(i, j))
		}
	}
	var uv mat.VecDense
	if err := uv.SolveVec(B.T(), mat.NewVecDense(m, cb)); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errDuals, err)
	}
	u := make([]float64, m)
	for i := range u {
		u[i] = max(uv.AtVec(i), 0)
		if uv.AtVec(i) < -dualTol {
			return nil, nil, fmt.Errorf("%w: negative dual %v for group row %d", errDuals, uv.AtVec(i), i)
		}
	}
	for j := 0; j < n; j++ {
		r := c[j]
		for i := 0; i < m; i++ {
			r -= u[i] * A.At(i, j)
		}
		if r < -dualTol*(1+math.Abs(c[j])) {
			return nil, nil, fmt.Errorf("%w: column %d has reduced cost %v", errDuals, j, r)
		}
	}
	return basis, u, nil
}

// bestPattern returns an upper bound ub on max u.z subject to z >= 0 and
// sum_g z_g a_{g,r} <= 1 for every row r of the type (z indexed like
// ty.users). When ub may exceed price it also returns a maximising z and its
// value v (up to the solver's tolerance); otherwise z is nil.
//
// The LP is skipped when a cheap bound shows v <= price. The value is
// monotone and subadditive in u (z >= 0), so besides the one-row bound,
// v(u) <= v(refU) + v(max(u-refU, 0)) bounds it from the last solved LP;
// once the master's values settle, most types need no LP.
func bestPattern(ty *typ, u []float64, price float64) (ub, v float64, z []float64, err error) {
	k := len(ty.rows)
	limit := price * (1 + priceTol)
	ub = rowBound(ty, u, nil)
	if ty.refU != nil && ub > limit {
		ub = min(ub, ty.refV+rowBound(ty, u, ty.refU))
	}
	if ub <= limit {
		return ub, 0, nil, nil
	}

	// Only groups with positive value are worth carrying.
	var users []int // positions in ty.users
	for i, g := range ty.users {
		if u[g] > 0 {
			users = append(users, i)
		}
	}
	// The LP in standard form: variables y_j = z_i*s_j (s_j: the user's
	// largest per-row need, so every column's largest entry is 1), then one
	// slack per row; the slacks are a feasible starting basis (z = 0).
	// The right-hand side is 1+delta_r rather than 1: ties between rows
	// (a group exactly as tight in two dimensions) would make the LP
	// degenerate, and lp.Simplex has no iteration limit and can cycle on
	// degenerate LPs. Loosening the rows only raises the maximum, so the
	// result stays an upper bound.
	nu := len(users)
	A := mat.NewDense(k, nu+k, nil)
	c := make([]float64, nu+k)
	b := make([]float64, k)
	s := make([]float64, nu)
	for j, i := range users {
		row := ty.a[i*k : (i+1)*k]
		s[j] = slices.Max(row) // > 0: every user needs some kept row
		for r, a := range row {
			A.Set(r, j, a/s[j])
		}
		c[j] = -u[ty.users[i]] / s[j] / price // in units of the price, so tolerances are relative
	}
	basis := make([]int, k)
	for r := 0; r < k; r++ {
		A.Set(r, nu+r, 1)
		b[r] = 1 + perturbation(r, 1e-9)
		basis[r] = nu + r
	}
	f, y, err := simplex(c, A, b, basis)
	if err != nil {
		return 0, 0, nil, err
	}
	// lp.Simplex stops when no reduced cost is below -simplexTol; as every
	// y_j <= 1+delta, the true maximum exceeds -f by at most about
	// simplexTol*nu (in units of the price).
	ub = (-f + 2*simplexTol*float64(nu)) * price
	ty.refU, ty.refV = slices.Clone(u), ub

	// The pattern, scaled to fit the unperturbed rows exactly, and its value.
	z = make([]float64, len(ty.users))
	for j, i := range users {
		z[i] = max(y[j], 0) / s[j]
	}
	load := 1.0
	for r := 0; r < k; r++ {
		l := 0.0
		for i := range ty.users {
			l += ty.a[i*k+r] * z[i]
		}
		load = max(load, l)
	}
	for i, g := range ty.users {
		z[i] /= load
		v += u[g] * z[i]
	}
	return ub, v, z, nil
}

// rowBound bounds max u.z (see bestPattern) for u' = u, or u' = max(u-ref, 0)
// if ref is not nil, by one row: in a row r that every group with u'_g > 0
// loads, u'.z <= max_g u'_g/a_{g,r} * sum_g a_{g,r} z_g <= max_g u'_g/a_{g,r}.
func rowBound(ty *typ, u, ref []float64) float64 {
	k := len(ty.rows)
	ub := math.Inf(1)
	for r := 0; r < k; r++ {
		rowMax := 0.0
		for i, g := range ty.users {
			v := u[g]
			if ref != nil {
				v -= ref[g]
			}
			if v <= 0 {
				continue
			}
			a := ty.a[i*k+r]
			if a <= 0 {
				rowMax = math.Inf(1)
				break
			}
			rowMax = max(rowMax, v/a)
		}
		ub = min(ub, rowMax)
	}
	return ub
}

// simplex calls lp.Simplex, turning its panics (which it documents for
// malformed input or an infeasible initial basis) into errors.
func simplex(c []float64, A *mat.Dense, b []float64, basic []int) (f float64, x []float64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	f, x, err = lp.Simplex(c, A, b, simplexTol, basic)
	switch {
	case errors.Is(err, lp.ErrInfeasible), errors.Is(err, lp.ErrUnbounded):
		// Neither can happen with a feasible start and non-negative costs
		// over a bounded region.
		err = fmt.Errorf("unexpected result (numerical trouble?): %w", err)
	}
	return f, x, err
}

// bitset is a set of small non-negative integers.
type bitset []uint64

func newBitset(n int, members []int) bitset {
	s := make(bitset, (n+63)/64)
	for _, m := range members {
		s[m/64] |= 1 << (m % 64)
	}
	return s
}

func (s bitset) subsetOf(o bitset) bool {
	for i, w := range s {
		if w&^o[i] != 0 {
			return false
		}
	}
	return true
}
