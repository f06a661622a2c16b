package planning

import (
	"math"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/pkg/lowerbound"
)

const (
	// maxShapesPerClass bounds the LP groups one class brings; a class with more distinct pod
	// shapes is left to fill.
	maxShapesPerClass = 8
	// maxPackGroups bounds the groups of the packing LP (its master LP has a dense row per
	// group); past it, the largest classes are packed by the LP and the others by fill alone.
	maxPackGroups = 64
)

// packGroup is the pods of one LP group: pods of one class and one shape.
type packGroup struct {
	class   *class
	members []*member // not yet placed, largest first
	count   int       // pods when the LP was built: its shares are of these
	size    float64   // the largest pod's size
}

// packByLP places the pods of the classes without inter-pod terms or spread, biggest first,
// each on the open node it fits most tightly, or else on a new node of the type the LP
// relaxation's cheapest fractional packing gives most of its group. That LP is the one
// LowerBound measures the plan against (one group per class and pod shape, on the templates its
// Filter verdict allows that hold its pods), so the plan buys the mix of types the bound
// prices: types whose shapes complement each other, which the cheapest type per pod cannot
// give. Biggest first and tightest fit turn the fractional packing into whole pods: big pods
// open the nodes, smaller ones fill the room they leave before anything new is bought, and
// finish shrinks every node to the cheapest type that holds what it got. If the LP fails,
// fillClass places the pods alone, as it does those of the other classes.
func (ps *planState) packByLP(classes []*class) bool {
	groups := ps.packGroups(classes)
	if len(groups) == 0 {
		return false
	}
	if !ps.noWhole && ps.packWhole(groups) {
		if groups = ps.packGroups(classes); len(groups) == 0 {
			return true
		}
	}
	n := len(ps.dims.names)
	var lpGroups []lowerbound.Group
	kept := groups[:0]
	for _, grp := range groups {
		var demand, largest vec
		for _, m := range grp.members {
			demand = demand.add(m.req)
			largest = largest.max(m.req)
		}
		types := holding(grp.class.compatible, ps.avail, largest)
		if len(types) == 0 {
			continue // a pod no template holds: fill places what it can and explains the rest
		}
		lpGroups = append(lpGroups, lowerbound.Group{Demand: floats(demand, n), Types: types})
		kept = append(kept, grp)
	}
	groups = kept
	if len(groups) == 0 {
		return false
	}
	sol, err := lowerbound.Solve(ps.lpTypes(), lpGroups)
	if err != nil {
		klog.FromContext(ps.ctx).Info("Packing LP failed; packing by cheapest type per pod", "groups", len(groups), "err", err)
		return false
	}
	// quota[g][ti]: pods of group g the LP puts on nodes of template ti; bought[ti]: the nodes
	// of ti it buys.
	quota := make([]map[int]float64, len(groups))
	for g := range quota {
		quota[g] = map[int]float64{}
	}
	bought := map[int]float64{}
	for _, pat := range sol.Patterns {
		bought[pat.Type] += pat.Nodes
		for g, share := range pat.Share {
			quota[g][pat.Type] += pat.Nodes * share * float64(groups[g].count)
		}
	}
	type item struct {
		m *member
		g int
	}
	var items []item
	for g, grp := range groups {
		for _, m := range grp.members {
			items = append(items, item{m, g})
		}
	}
	sort.SliceStable(items, func(i, j int) bool { return size(items[i].m.pod.Requests) > size(items[j].m.pod.Requests) })
	orders := map[*class][]int{}
	for _, it := range items {
		c := groups[it.g].class
		n := ps.tightest(c, it.m)
		if n == nil {
			n = ps.openTemplate(c, it.m, mostQuota(quota[it.g], bought))
		}
		if n == nil {
			// The LP bought less than half a node of each of the types it gave this pod's group
			// (a whole node of a type it takes a sliver of can cost many times the sliver):
			// cheapest per pod.
			if orders[c] == nil {
				orders[c] = ps.openOrder(c)
			}
			n = ps.open(c, it.m, orders[c])
		}
		if n == nil {
			continue // fill finds it another node, or explains why none
		}
		ps.place(c, n, it.m)
		if n.template >= 0 {
			quota[it.g][n.template]--
		}
	}
	return true
}

// packWhole opens the nodes of the whole-pod configuration LP (lowerbound.Whole): node contents
// in whole pods, each bought a fractional number of times, rounded to the nearest whole node.
// Each node gets its content's pods, every one judged by its Filter plugins; what rounding or a
// refusal leaves over, packByLP places after. It reports whether the LP gave a packing.
func (ps *planState) packWhole(groups []*packGroup) bool {
	n := len(ps.dims.names)
	wg := make([]lowerbound.WholeGroup, len(groups))
	for g, grp := range groups {
		wg[g] = lowerbound.WholeGroup{Size: floats(grp.members[0].req, n), Count: len(grp.members), Types: holding(grp.class.compatible, ps.avail, grp.members[0].req)}
	}
	sol, err := lowerbound.Whole(ps.lpTypes(), wg)
	if err != nil {
		klog.FromContext(ps.ctx).Info("Whole-pod packing LP failed", "groups", len(groups), "err", err)
		return false
	}
	patterns := sol.Patterns
	sort.SliceStable(patterns, func(i, j int) bool {
		return ps.pl.Templates[patterns[i].Type].Offering.PricePerHour > ps.pl.Templates[patterns[j].Type].Offering.PricePerHour
	})
	for _, pat := range patterns {
		nodes := int(math.Floor(pat.Nodes + 1e-6))
		if pat.Nodes-float64(nodes) >= 0.5 {
			nodes++
		}
		gs := make([]int, 0, len(pat.Share))
		for g := range pat.Share {
			gs = append(gs, g)
		}
		sort.Slice(gs, func(i, j int) bool { return groups[gs[i]].size > groups[gs[j]].size })
		for k := 0; k < nodes; k++ {
			var node *openNode
			for _, g := range gs {
				grp := groups[g]
				want := int(math.Round(pat.Share[g] * float64(grp.count)))
				for placed := 0; placed < want; {
					m := grp.next()
					if m == nil {
						break
					}
					if node == nil {
						if node = ps.openTemplate(grp.class, m, pat.Type); node == nil {
							break
						}
					}
					if !fits(node.capacity, node.used, m.req) || !node.accepts(grp.class) {
						break
					}
					if ps.begin(grp.class); ps.filter(grp.class, node.info) != "" {
						break
					}
					ps.place(grp.class, node, m)
					placed++
				}
			}
		}
	}
	return true
}

// lpTypes are the templates as the LPs see them: price and available room.
func (ps *planState) lpTypes() []lowerbound.Type {
	n := len(ps.dims.names)
	types := make([]lowerbound.Type, len(ps.pl.Templates))
	for ti, t := range ps.pl.Templates {
		types[ti] = lowerbound.Type{Name: t.Key(), Price: t.Offering.PricePerHour, Capacity: floats(ps.avail[ti], n)}
	}
	return types
}

// next is the group's next pod without a node, nil when none is left.
func (g *packGroup) next() *member {
	for len(g.members) > 0 && g.members[0].placed {
		g.members = g.members[1:]
	}
	if len(g.members) == 0 {
		return nil
	}
	return g.members[0]
}

// tightFitTries bounds how many nodes that the pod fits by size the Filter plugins are asked
// about before a new node is opened.
const tightFitTries = 8

// tightest is the open node the pod leaves the least room on (free cpu and memory, each as a
// share of the node's) among those whose Filter verdict accepts it; nil if none does.
func (ps *planState) tightest(c *class, m *member) *openNode {
	type cand struct {
		n    *openNode
		room float64
	}
	var cands []cand
	for _, n := range ps.nodes {
		if !n.accepts(c) || !fits(n.capacity, n.used, m.req) {
			continue
		}
		room := 0.0
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			room += free(ps.dimOf(n.capacity, r), ps.dimOf(n.used, r)+ps.dimOf(m.req, r))
		}
		cands = append(cands, cand{n, room})
	}
	sort.SliceStable(cands, func(i, j int) bool { return cands[i].room < cands[j].room })
	ps.begin(c)
	for i := 0; i < len(cands) && i < tightFitTries; i++ {
		if ps.filter(c, cands[i].n.info) == "" {
			return cands[i].n
		}
	}
	return nil
}

// mostQuota is the template with the most of a group's quota left (the lowest index on a tie,
// which is the cheapest: templates are sorted by price) of which the LP bought at least half a
// node, or -1 without any.
func mostQuota(q, bought map[int]float64) int {
	best, most := -1, math.Inf(-1)
	for ti, v := range q {
		if bought[ti] < 0.5 || v <= 0 {
			continue
		}
		if v > most || v == most && ti < best {
			best, most = ti, v
		}
	}
	return best
}

// packGroups splits the unplaced pods of the classes the LP packs into its groups.
func (ps *planState) packGroups(classes []*class) []*packGroup {
	var eligible []*class
	for _, c := range classes {
		if len(c.compatible) > 0 && !c.interPod && len(c.spreadKeys) == 0 && c.unplaced() > 0 {
			eligible = append(eligible, c)
		}
	}
	if len(eligible) > maxPackGroups {
		// The largest classes by cpu and memory matter most to the cost.
		sort.SliceStable(eligible, func(i, j int) bool { return eligible[i].weight() > eligible[j].weight() })
		eligible = eligible[:maxPackGroups]
	}
	perClass := max(1, min(maxShapesPerClass, maxPackGroups/max(1, len(eligible))))
	var groups []*packGroup
	for _, c := range eligible {
		byKey := map[string]*packGroup{}
		var shapes []*packGroup
		for _, m := range c.members {
			if m.placed {
				continue
			}
			k := requestKey(m.req)
			g, ok := byKey[k]
			if !ok {
				g = &packGroup{class: c}
				byKey[k] = g
				shapes = append(shapes, g)
			}
			g.members = append(g.members, m)
		}
		if len(shapes) > perClass {
			// Pods of many sizes (every replica its own requests): the LP's shares of a few
			// shape groups are no guide for them, measured 10% dearer than fill with the mix
			// LP on the benchmark's random sizes. fill places them.
			continue
		}
		c.lpPacked = true
		for _, g := range shapes {
			g.count, g.size = len(g.members), size(g.members[0].pod.Requests)
		}
		groups = append(groups, shapes...)
	}
	return groups
}

// weight is the summed size of the class's pods.
func (c *class) weight() float64 {
	var w float64
	for _, m := range c.members {
		w += size(m.pod.Requests)
	}
	return w
}

// unplaced counts the class's pods without a node yet.
func (c *class) unplaced() int {
	n := 0
	for _, m := range c.members {
		if !m.placed {
			n++
		}
	}
	return n
}
