package planning

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// repackBudget bounds repack's work on one set of nodes: how many (content, remainder) pairs
// its dynamic programme compares at most (at the bound, about 20 ms). repackBudgetTried is
// the bound for each of the plans Plan tries, before the one kept is repacked with the full
// budget.
const (
	repackBudget      = 6_000_000
	repackBudgetTried = 500_000
)

// repack packs the pods of a few nodes again, exactly: the cheapest way to put those pods on
// nodes of any number, each of the cheapest type that holds what it gets (see holdersOf).
// merge, gather and transfer each move pods between two nodes or onto one; an exchange among
// three (a node giving one pod away and taking four, so that a second can shrink and a third
// grow), or one big node split into several cheaper ones, is none of them, and a plan that
// missed it can cost more with more types allowed than with fewer.
//
// The pods of the nodes are counted by class and request, and a dynamic programme over those
// counts finds the cheapest split of every sub-multiset; its size is the product of the
// counts, which repackBudget bounds, so it takes nodes cheapest first while that holds, and
// once more emptiest first. Only nodes whose pods may all move take part (see movable). Nodes
// stay in their pool, zone and capacity type, except that pods no constraint of the batch
// counts (no spread, no inter-pod term, selected by none) may change zones: each class accepts
// the types it goes to by its own Filter verdicts (tierSet). Each pod that moves is judged by its
// Filter plugins on its new node, and if one is refused every pod goes back. It returns how many
// pods moved.
func (ps *planState) repack(nodes []*openNode, hostSelectors []labels.Selector, states []*class) int {
	counted := ps.selectors(states, func(c *class) bool { return c.interPod || len(c.spreadKeys) > 0 })
	type scope struct {
		offeringGroup
		anyZone bool
	}
	groups := map[scope][]*openNode{}
	var keys []scope
	for _, n := range nodes {
		if len(n.members) == 0 {
			continue
		}
		all, free := true, true
		for _, m := range n.members {
			all = all && m.movable(hostSelectors)
			free = free && !m.class.interPod && len(m.class.spreadKeys) == 0 && !selected(m, counted)
		}
		if !all {
			continue
		}
		t := ps.pl.Templates[n.template]
		k := scope{groupOf(t), free}
		if free {
			k.zone = ""
		}
		if groups[k] == nil {
			keys = append(keys, k)
		}
		groups[k] = append(groups[k], n)
	}
	price := func(n *openNode) float64 { return ps.pl.Templates[ps.shrink(n)].Offering.PricePerHour }
	waste := func(n *openNode) float64 {
		limit := ps.avail[ps.shrink(n)]
		fill := 0.0
		for _, d := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			fill = max(fill, 1-free(ps.dimOf(limit, d), ps.dimOf(n.used, d)))
		}
		return price(n) * (1 - fill)
	}
	moved := 0
	for _, k := range keys {
		// The templates standing for the offering groups the nodes may go to.
		var reps []*Template
		ps.sameOffering(ps.pl.Templates[groups[k][0].template]) // fills byOffering
		for g, tis := range ps.byOffering {
			if g == k.offeringGroup || k.anyZone && g.pool == k.pool && g.capacityType == k.capacityType {
				reps = append(reps, ps.pl.Templates[tis[0]])
			}
		}
		sort.Slice(reps, func(i, j int) bool { return reps[i].Offering.Zone < reps[j].Offering.Zone })
		cheapest := append([]*openNode(nil), groups[k]...)
		sort.SliceStable(cheapest, func(i, j int) bool { return price(cheapest[i]) < price(cheapest[j]) })
		n, all := ps.repackNodes(cheapest, reps, states)
		moved += n
		if all {
			continue // the emptiest first would take the same nodes
		}
		var emptiest []*openNode
		for _, n := range groups[k] {
			if len(n.members) > 0 {
				emptiest = append(emptiest, n)
			}
		}
		sort.SliceStable(emptiest, func(i, j int) bool { return waste(emptiest[i]) > waste(emptiest[j]) })
		n, _ = ps.repackNodes(emptiest, reps, states)
		moved += n
	}
	return moved
}

// repackKind is the pods of one class with one request among the nodes repack looks at.
type repackKind struct {
	class *class
	req   vec
	count int
}

// repackNodes repacks the longest prefix of nodes that repackBudget allows onto templates of
// the offering groups reps stand for. It returns the pods it moved and whether it took every
// node.
func (ps *planState) repackNodes(nodes []*openNode, reps []*Template, states []*class) (int, bool) {
	price := func(ti int) float64 { return ps.pl.Templates[ti].Offering.PricePerHour }
	budget := ps.repackBudget
	if budget == 0 {
		budget = repackBudget
	}
	var kinds []*repackKind
	var chosen []*openNode
	for _, n := range nodes {
		trial := make([]*repackKind, len(kinds))
		for i, k := range kinds {
			c := *k
			trial[i] = &c
		}
		for _, m := range n.members {
			trial = countKind(trial, m)
		}
		if repackWork(trial) > budget {
			break
		}
		kinds, chosen = trial, append(chosen, n)
	}
	all := len(chosen) == len(nodes)
	if len(chosen) == 0 {
		return 0, all
	}
	before := 0.0
	for _, n := range chosen {
		before += price(ps.shrink(n))
	}

	// Index every sub-multiset of the pods in mixed radix, and price it as one node: the
	// cheapest holder in any of the groups.
	radix := make([]int, len(kinds))
	nstates := 1
	for i, k := range kinds {
		radix[i] = nstates
		nstates *= k.count + 1
	}
	pricer := newRepackPricer(ps, reps, kinds)
	cost := make([]float64, nstates)
	where := make([]int, nstates)
	counts := make([]int, len(kinds))
	var used vec
	for s := 1; s < nstates; s++ {
		decode(s, kinds, counts)
		used = used[:0]
		var mask uint64
		for i, k := range kinds {
			if counts[i] > 0 {
				used = used.addTimes(k.req, int64(counts[i]))
				mask |= pricer.bit(k.class)
			}
		}
		cost[s], where[s] = pricer.price(used, mask)
	}

	// best[s]: the cheapest packing of s on any number of nodes; first[s] the content of one
	// of its nodes. Every content of a packing is a smaller index than s, so one pass in index
	// order sees each remainder solved.
	full := nstates - 1
	best := make([]float64, nstates)
	first := make([]int, nstates)
	sub := make([]int, len(kinds))
	clear(counts)
	for s := 1; s < nstates; s++ {
		next(counts, kinds) // counts is s's
		best[s], first[s] = splitBest(s, counts, sub, radix, cost, best)
	}
	if !(best[full] < before-1e-9) {
		return 0, all
	}
	var contents []repackContent
	for s := full; s > 0; s -= first[s] {
		c := make([]int, len(kinds))
		decode(first[s], kinds, c)
		contents = append(contents, repackContent{counts: c, template: where[first[s]]})
	}
	return ps.applyRepack(chosen, kinds, contents, states), all
}

// repackContent is one node of a repack: how many pods of each kind, on which template.
type repackContent struct {
	counts   []int
	template int
}

// applyRepack gives each content to a node of chosen in the content's offering group, the one
// that already holds most of it, or to a new node there, moves the pods accordingly, and
// retypes the nodes; it undoes every move if a pod is refused.
func (ps *planState) applyRepack(chosen []*openNode, kinds []*repackKind, contents []repackContent, states []*class) int {
	kindOf := func(m *member) int { return kindIndex(kinds, m) }
	have := make([][]int, len(chosen))
	for i, n := range chosen {
		have[i] = make([]int, len(kinds))
		for _, m := range n.members {
			have[i][kindOf(m)]++
		}
	}
	want, extra := ps.assignContents(chosen, have, contents)
	for _, c := range extra {
		n := ps.openFor(kinds, c)
		if n == nil {
			return 0
		}
		chosen = append(chosen, n)
		have = append(have, make([]int, len(kinds)))
		want = append(want, c.counts)
	}
	for _, c := range states {
		ps.sync(c) // the new nodes' daemons
	}
	target := func(i, j int) int {
		if want[i] == nil {
			return 0
		}
		return want[i][j]
	}
	type moveRec struct {
		m        *member
		src, dst *openNode
	}
	var done []moveRec
	undo := func() int {
		for i := len(done) - 1; i >= 0; i-- {
			ps.move(done[i].m, done[i].dst, done[i].src, states)
		}
		return 0
	}
	for j := range kinds {
		var surplus []moveRec
		for i, n := range chosen {
			extra := have[i][j] - target(i, j)
			for _, m := range n.members {
				if extra <= 0 {
					break
				}
				if kindOf(m) == j {
					surplus = append(surplus, moveRec{m: m, src: n})
					extra--
				}
			}
		}
		for i, n := range chosen {
			for need := target(i, j) - have[i][j]; need > 0; need-- {
				r := surplus[0]
				surplus = surplus[1:]
				if !n.accepts(r.m.class) || !ps.mayMove(r.m, r.src, n) {
					return undo()
				}
				ps.move(r.m, r.src, n, states)
				r.dst = n
				done = append(done, r)
			}
		}
	}
	for _, n := range chosen {
		if len(n.members) == 0 {
			continue
		}
		h := ps.holders(n, 1)
		if len(h) == 0 {
			return undo() // cannot happen: the programme priced this content
		}
		// As in merge: the node keeps its NodeInfo; what it holds is checked against its type.
		n.capacity = ps.avail[h[0]]
		n.template = h[0]
	}
	return len(done)
}

// kindIndex is the index of m's kind in kinds (its class and requests); -1 if none.
func kindIndex(kinds []*repackKind, m *member) int {
	for i, k := range kinds {
		if k.class == m.class && equalVec(k.req, m.req) {
			return i
		}
	}
	return -1
}

// assignContents gives each content of the repacked plan to the chosen node of its offering
// group that already holds most of it (have: each node's pods by kind), so that the fewest pods
// move. want is each node's content by kind (nil: the node is emptied); extra are the contents
// no node of their group is left for, which need new nodes.
func (ps *planState) assignContents(chosen []*openNode, have [][]int, contents []repackContent) (want [][]int, extra []repackContent) {
	groupOf := func(ti int) offeringGroup {
		t := ps.pl.Templates[ti]
		return groupOf(t)
	}
	want = make([][]int, len(chosen))
	taken := make([]bool, len(chosen))
	for _, c := range contents {
		bi, bo := -1, -1
		for i, n := range chosen {
			if taken[i] || groupOf(n.template) != groupOf(c.template) {
				continue
			}
			o := 0
			for j := range c.counts {
				o += min(c.counts[j], have[i][j])
			}
			if o > bo {
				bi, bo = i, o
			}
		}
		if bi < 0 {
			extra = append(extra, c)
			continue
		}
		taken[bi], want[bi] = true, c.counts
	}
	return want, extra
}

// openFor opens a node for a content in its template's pool, zone and capacity type: on the
// cheapest template there holding the content that its first kind's class may open and whose
// Filter verdict accepts that class. The other classes' verdicts come as their pods move in; a
// node left empty by a refusal is never launched (finish skips nodes without pods).
func (ps *planState) openFor(kinds []*repackKind, c repackContent) *openNode {
	used, classes := contentOf(kinds, c.counts)
	var lead *class
	for i, k := range kinds {
		if c.counts[i] > 0 {
			lead = k.class
			break
		}
	}
	if lead == nil {
		return nil
	}
	for _, ti := range ps.holdersOf(ps.pl.Templates[c.template], used, classes, math.MaxInt, math.Inf(1)) {
		if n := ps.openTemplate(lead, lead.members[0], ti); n != nil {
			return n
		}
	}
	return nil
}

// contentOf is what a node holding counts of each kind uses, and its classes.
func contentOf(kinds []*repackKind, counts []int) (vec, map[*class]bool) {
	var used vec
	classes := map[*class]bool{}
	for i, k := range kinds {
		for j := 0; j < counts[i]; j++ {
			used = used.add(k.req)
		}
		if counts[i] > 0 {
			classes[k.class] = true
		}
	}
	return used, classes
}

// selected says whether any of the selectors selects m's pod.
func selected(m *member, selectors []labels.Selector) bool {
	set := labels.Set(m.pod.Pod.Labels)
	for _, sel := range selectors {
		if sel.Matches(set) {
			return true
		}
	}
	return false
}

// countKind adds m to the kinds, as a new kind or one more of its own.
func countKind(kinds []*repackKind, m *member) []*repackKind {
	for _, k := range kinds {
		if k.class == m.class && equalVec(k.req, m.req) {
			k.count++
			return kinds
		}
	}
	return append(kinds, &repackKind{class: m.class, req: m.req, count: 1})
}

// repackWork is how many (content, remainder) pairs one round of the programme compares: the
// sub-multisets of every sub-multiset, Π (n+1)(n+2)/2.
func repackWork(kinds []*repackKind) float64 {
	w := 1.0
	for _, k := range kinds {
		w *= float64(k.count+1) * float64(k.count+2) / 2
	}
	return w
}

// decode writes the counts index s stands for into counts, and returns it.
func decode(s int, kinds []*repackKind, counts []int) []int {
	for i, k := range kinds {
		counts[i] = s % (k.count + 1)
		s /= k.count + 1
	}
	return counts
}

// splitBest is the cheapest way to pack s (whose counts are given) as one node plus the
// cheapest packing of the rest, and that node's content: s alone, or a content c holding at
// least one pod of the first kind s has (the node holding that pod: each split is met once).
// The contents run through the counts of the later kinds, an odometer, and within each through
// the counts of that first kind, the tight loop. Whatever holds a content holds less of it, so
// once a count makes a content's cost infinite every larger count does too: the loop stops,
// and the odometer carries to the next kind at once (the kinds below being at their least).
func splitBest(s int, counts, sub, radix []int, cost, best []float64) (float64, int) {
	b, f := cost[s], s
	lead := 0
	for counts[lead] == 0 {
		lead++
	}
	clear(sub)
	step := radix[lead]
	for base := 0; base >= 0; {
		c := base + step
		for x := 1; x <= counts[lead] && !math.IsInf(cost[c], 1); x++ {
			if c != s {
				if v := cost[c] + best[s-c]; v < b-1e-12 {
					b, f = v, c
				}
			}
			c += step
		}
		// The next content of the later kinds that holds with one pod of the first.
		i := lead + 1
		for ; i < len(sub); i++ {
			if sub[i] < counts[i] {
				sub[i]++
				base += radix[i]
				if !math.IsInf(cost[base+step], 1) {
					break
				}
			}
			base -= sub[i] * radix[i]
			sub[i] = 0
		}
		if i == len(sub) {
			base = -1
		}
	}
	return b, f
}

// next steps counts, an odometer over the kinds' counts, to the next index.
func next(counts []int, kinds []*repackKind) {
	for i, k := range kinds {
		if counts[i] < k.count {
			counts[i]++
			return
		}
		counts[i] = 0
	}
}

func equalVec(a, b vec) bool {
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y int64
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return false
		}
	}
	return true
}
