package planning

import (
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
)

// transferNodes bounds the plans transfer looks at: it asks about every pair of nodes and
// every count of every class's pods, each question a search of the templates.
const transferNodes = 16

// transferPods bounds how many pods of one class transfer moves at once.
const transferPods = 16

// transfer moves some pods of one class from a node to another of its zone when the two,
// each retyped to the cheapest type that holds what it is left with (see holdersOf), then cost
// less than before: the receiving node may grow, which compact and merge never let it, as
// when two 16-cpu pods leaving a 96-cpu node for a 64-cpu one let the first shrink to 64 cpu
// and the second grow to 96 for less than the two cost. Moving one pod at a time would not
// find that: the first move alone costs more. Only movable pods move (see movable), each
// judged by its Filter plugins on the receiving node; if one is refused, the others go back.
// It returns how many pods moved.
func (ps *planState) transfer(nodes []*openNode, hostSelectors []labels.Selector, states []*class) int {
	price := func(ti int) float64 { return ps.pl.Templates[ti].Offering.PricePerHour }
	// cheapest is the price and template of the cheapest type holding used for the classes,
	// of the node's pool, zone and capacity type; ok is false when none does.
	cheapest := func(n *openNode, used vec, classes map[*class]bool) (float64, int, bool) {
		h := ps.holdersOf(ps.pl.Templates[n.template], used, classes, 1, math.Inf(1))
		if len(h) == 0 {
			return 0, -1, false
		}
		return price(h[0]), h[0], true
	}
	moved := 0
	for improved := true; improved; {
		improved = false
		for _, src := range nodes {
			for _, dst := range nodes {
				if src == dst || len(src.members) == 0 || len(dst.members) == 0 || ps.zone(src) != ps.zone(dst) {
					continue
				}
				if n := ps.transferOne(src, dst, hostSelectors, states, cheapest); n > 0 {
					moved += n
					improved = true
				}
			}
		}
	}
	return moved
}

// transferOne makes the best transfer of k pods of one class from src to dst (see transfer),
// if one lowers the pair's cost, and returns the pods it moved.
func (ps *planState) transferOne(src, dst *openNode, hostSelectors []labels.Selector, states []*class,
	cheapest func(*openNode, vec, map[*class]bool) (float64, int, bool)) int {
	before := 0.0
	for _, n := range []*openNode{src, dst} {
		p, _, ok := cheapest(n, n.used, n.classes)
		if !ok {
			return 0 // a node no template of its own holds: leave it as planned
		}
		before += p
	}
	byClass := map[*class][]*member{}
	var order []*class
	for _, m := range src.members {
		if !m.movable(hostSelectors) || !dst.accepts(m.class) {
			continue
		}
		if byClass[m.class] == nil {
			order = append(order, m.class)
		}
		byClass[m.class] = append(byClass[m.class], m)
	}
	type option struct {
		members []*member
		dstType int
		cost    float64
	}
	best := option{cost: before - 1e-9}
	for _, c := range order {
		ms := byClass[c]
		sort.SliceStable(ms, func(i, j int) bool { return size(ms[i].pod.Requests) > size(ms[j].pod.Requests) })
		srcUsed := append(vec(nil), src.used...)
		dstUsed := append(vec(nil), dst.used...)
		dstClasses := map[*class]bool{c: true}
		for k := range dst.classes {
			dstClasses[k] = true
		}
		for k := 1; k <= len(ms) && k <= transferPods; k++ {
			srcUsed = srcUsed.sub(ms[k-1].req)
			dstUsed = dstUsed.add(ms[k-1].req)
			cost, dstType, ok := cheapest(dst, dstUsed, dstClasses)
			if !ok {
				break // dst holds no more of them
			}
			if k < len(src.members) {
				srcClasses := src.classes
				if k == countOf(src, c) {
					srcClasses = without(src.classes, c)
				}
				p, _, ok := cheapest(src, srcUsed, srcClasses)
				if !ok {
					continue
				}
				cost += p
			}
			if cost < best.cost {
				best = option{members: ms[:k:k], dstType: dstType, cost: cost}
			}
		}
	}
	if best.members == nil {
		return 0
	}
	var done []*member
	for _, m := range best.members {
		if !ps.mayMove(m, src, dst) {
			break
		}
		ps.move(m, src, dst, states)
		done = append(done, m)
	}
	if len(done) < len(best.members) {
		for _, m := range done {
			ps.move(m, dst, src, states)
		}
		return 0
	}
	// As in merge: dst keeps its NodeInfo; what it holds is checked against its new type.
	dst.capacity = ps.avail[best.dstType]
	dst.template = best.dstType
	return len(done)
}

// countOf is how many of n's pods are of class c.
func countOf(n *openNode, c *class) int {
	k := 0
	for _, m := range n.members {
		if m.class == c {
			k++
		}
	}
	return k
}

// without is classes less c, as a new set.
func without(classes map[*class]bool, c *class) map[*class]bool {
	out := make(map[*class]bool, len(classes))
	for k := range classes {
		if k != c {
			out[k] = true
		}
	}
	return out
}
