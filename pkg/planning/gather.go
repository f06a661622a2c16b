package planning

import (
	"math"
	"sort"

	"k8s.io/apimachinery/pkg/labels"
)

// gather moves every pod of several nodes onto one node of their zone, retyped to the cheapest
// type that holds them all, when that costs less than the nodes apart. merge takes nodes two at
// a time and only when the pair costs no more as one, so it stops where every pair is dearer
// together though five are cheaper (five r6a.large, each half full, make one r7gd.2xlarge for
// less than the five). For each node as the receiver it tries the others in two orders, nodes
// with the same classes first and cheapest first, and keeps the prefix that saves the most.
// Only nodes whose pods may all move give them away (see movable), each pod judged by its
// Filter plugins on the receiving node; if one is refused, every pod goes back. It returns how
// many pods moved.
func (ps *planState) gather(nodes []*openNode, hostSelectors []labels.Selector, states []*class) int {
	price := func(ti int) float64 { return ps.pl.Templates[ti].Offering.PricePerHour }
	cost := func(n *openNode) float64 { return price(ps.shrink(n)) }
	movable := func(n *openNode) bool {
		for _, m := range n.members {
			if !m.movable(hostSelectors) {
				return false
			}
		}
		return true
	}
	moved := 0
	for _, dst := range nodes {
		if len(dst.members) == 0 {
			continue
		}
		var others []*openNode
		for _, n := range nodes {
			if n != dst && len(n.members) > 0 && ps.zone(n) == ps.zone(dst) && movable(n) {
				others = append(others, n)
			}
		}
		if len(others) < 2 {
			continue // one other node is merge's case
		}
		byPrice := append([]*openNode(nil), others...)
		sort.SliceStable(byPrice, func(i, j int) bool { return cost(byPrice[i]) < cost(byPrice[j]) })
		alike := append([]*openNode(nil), byPrice...)
		sort.SliceStable(alike, func(i, j int) bool { return sameClasses(alike[i], dst) && !sameClasses(alike[j], dst) })

		var best []*openNode
		bestType, bestSaving := -1, 1e-9
		for _, order := range [][]*openNode{alike, byPrice} {
			used := append(vec(nil), dst.used...)
			classes := map[*class]bool{}
			for c := range dst.classes {
				classes[c] = true
			}
			apart := cost(dst)
			for j, n := range order {
				used = used.add(n.used)
				for c := range n.classes {
					classes[c] = true
				}
				apart += cost(n)
				h := ps.holdersOf(ps.pl.Templates[dst.template], used, classes, 1, math.Inf(1))
				if len(h) == 0 {
					break // no type holds this many: a longer prefix holds more
				}
				if saving := apart - price(h[0]); saving > bestSaving && j > 0 {
					best, bestType, bestSaving = order[:j+1:j+1], h[0], saving
				}
			}
		}
		if best == nil {
			continue
		}
		type moveRec struct {
			m   *member
			src *openNode
		}
		var done []moveRec
		refused := false
		for _, src := range best {
			for _, m := range append([]*member(nil), src.members...) {
				if !ps.mayMove(m, src, dst) {
					refused = true
					break
				}
				ps.move(m, src, dst, states)
				done = append(done, moveRec{m, src})
			}
			if refused {
				break
			}
		}
		if refused {
			for i := len(done) - 1; i >= 0; i-- {
				ps.move(done[i].m, dst, done[i].src, states)
			}
			continue
		}
		// As in merge: dst keeps its NodeInfo; what it holds is checked against its new type.
		dst.capacity = ps.avail[bestType]
		dst.template = bestType
		moved += len(done)
	}
	return moved
}

// sameClasses says whether two nodes hold pods of the same classes.
func sameClasses(a, b *openNode) bool {
	if len(a.classes) != len(b.classes) {
		return false
	}
	for c := range a.classes {
		if !b.classes[c] {
			return false
		}
	}
	return true
}
