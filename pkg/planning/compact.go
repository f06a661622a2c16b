package planning

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"
)

// compact moves pods into room that planned nodes leave unused, from the emptiest nodes first,
// so that nodes shrink or go. A node's room is what the type it will shrink to (see finish) has
// beyond its pods: paid for, and unused. Classes placed late (inter-pod terms, spread) often
// force nodes of their own, one pod of a hostname anti-affinity class each, and those nodes'
// room is where the earlier classes' pods can go instead of nodes of their own.
//
// Only pods whose class's constraints are zone-wide move, only pods no finer-grained constraint
// selects, and only between new nodes of one zone, so no count a constraint reads changes; the
// moving pod's Filter plugins judge its new node. A move never raises the cost: the receiving
// node stays within the type it shrinks to, the giving one can only shrink. It returns how many
// pods moved.
func (ps *planState) compact() (moved int) {
	nodes, states, hostSelectors := ps.newNodes()
	if len(nodes) < 2 {
		if len(nodes) == 1 {
			moved += ps.repack(nodes, hostSelectors, states) // one node may split into cheaper ones
		}
		return moved
	}
	// limit: the allocatable of the type each node shrinks to; moves stay within one zone.
	limit := make([]vec, len(nodes))
	byZone := map[string][]int{}
	for i, n := range nodes {
		limit[i] = ps.avail[ps.shrink(n)]
		z := ps.zone(n)
		byZone[z] = append(byZone[z], i)
	}
	fill := make([]float64, len(nodes))
	sources := make([]int, len(nodes))
	for i, n := range nodes {
		sources[i] = i
		fill[i] = 2 - free(ps.dimOf(limit[i], corev1.ResourceCPU), ps.dimOf(n.used, corev1.ResourceCPU)) -
			free(ps.dimOf(limit[i], corev1.ResourceMemory), ps.dimOf(n.used, corev1.ResourceMemory))
	}
	sort.SliceStable(sources, func(i, j int) bool { return fill[sources[i]] < fill[sources[j]] })
	for _, si := range sources {
		src := nodes[si]
		var members []*member
		for _, m := range src.members {
			if m.movable(hostSelectors) {
				members = append(members, m)
			}
		}
		sort.SliceStable(members, func(i, j int) bool { return size(members[i].pod.Requests) > size(members[j].pod.Requests) })
		for _, m := range members {
			for _, di := range byZone[ps.zone(src)] {
				dst := nodes[di]
				if di == si || len(dst.members) == 0 || !fits(limit[di], dst.used, m.req) || !dst.accepts(m.class) ||
					!ps.mayMove(m, src, dst) {
					continue
				}
				ps.move(m, src, dst, states)
				moved++
				break
			}
		}
		limit[si] = ps.avail[ps.shrink(src)]
	}
	if len(nodes) <= mergeNodes {
		moved += ps.merge(nodes, hostSelectors, states)
	}
	if len(nodes) <= transferNodes {
		moved += ps.gather(nodes, hostSelectors, states)
		moved += ps.transfer(nodes, hostSelectors, states)
	}
	if len(nodes) <= mergeNodes {
		moved += ps.repack(nodes, hostSelectors, states)
	}
	return moved
}

// newNodes lists the plan's new nodes that hold pods, the classes of their pods (each synced
// with the plan so far), and those classes' selectors below the zone (see hostSelectors).
func (ps *planState) newNodes() ([]*openNode, []*class, []labels.Selector) {
	var nodes []*openNode
	for _, n := range ps.nodes {
		if n.template >= 0 && len(n.members) > 0 {
			nodes = append(nodes, n)
		}
	}
	var states []*class
	seen := map[*class]bool{}
	for _, n := range nodes {
		for _, m := range n.members {
			if !seen[m.class] {
				seen[m.class] = true
				states = append(states, m.class)
				ps.sync(m.class)
			}
		}
	}
	return nodes, states, ps.hostSelectors(states)
}

// mergeNodes bounds the plans merge looks at: it asks about every pair of nodes, each question
// a search of the templates. Small plans are where a node more or less counts most.
const mergeNodes = 64

// merge moves every pod of a node onto another node of its zone when one type holds both nodes'
// pods for no more than the two cost apart (two half-full nodes of different families make one),
// cheapest nodes first. Only nodes whose pods may all move give their pods away (see movable),
// each pod judged by its own Filter plugins on the receiving node; if one is refused, the
// others go back. It returns how many pods moved.
func (ps *planState) merge(nodes []*openNode, hostSelectors []labels.Selector, states []*class) int {
	price := func(ti int) float64 { return ps.pl.Templates[ti].Offering.PricePerHour }
	order := append([]*openNode(nil), nodes...)
	sort.SliceStable(order, func(i, j int) bool { return price(ps.shrink(order[i])) < price(ps.shrink(order[j])) })
	moved := 0
	for _, src := range order {
		if len(src.members) == 0 {
			continue
		}
		all := true
		for _, m := range src.members {
			all = all && m.movable(hostSelectors)
		}
		if !all {
			continue
		}
		apart := price(ps.shrink(src))
		for _, dst := range nodes {
			if dst == src || len(dst.members) == 0 || ps.zone(dst) != ps.zone(src) {
				continue
			}
			used := append(vec(nil), dst.used...).add(src.used)
			classes := map[*class]bool{}
			for c := range dst.classes {
				classes[c] = true
			}
			for c := range src.classes {
				classes[c] = true
			}
			// At no more than the two cost apart: one node instead of two at the same price
			// has room for the next merge (two c6g.xlarge holding a 2-cpu pod each make a
			// c6g.2xlarge with room for a third).
			h := ps.holdersOf(ps.pl.Templates[dst.template], used, classes, 1, apart+price(ps.shrink(dst))+1e-9)
			if len(h) == 0 {
				continue
			}
			// dst keeps its NodeInfo (the type it was opened with, whose allocatable the
			// plugins see inflated); what it holds is checked against h[0] above.
			members := append([]*member(nil), src.members...)
			var done []*member
			for _, m := range members {
				if !ps.mayMove(m, src, dst) { // h[0] is one every class accepts (holdersOf)
					break
				}
				ps.move(m, src, dst, states)
				done = append(done, m)
			}
			if len(done) < len(members) {
				for _, m := range done {
					ps.move(m, dst, src, states)
				}
				continue
			}
			dst.capacity = ps.avail[h[0]]
			dst.template = h[0]
			moved += len(done)
			break
		}
	}
	return moved
}

func (ps *planState) zone(n *openNode) string { return ps.pl.Templates[n.template].Offering.Zone }

// mayMove asks m's class's Filter plugins whether m may leave src for dst (the class's state
// forgets m on src for the question). Pods of other classes on dst need no question: their
// inter-pod constraints do not select m (see movable), and what else they share with m (host
// ports, volumes) m's own plugins check.
func (ps *planState) mayMove(m *member, src, dst *openNode) bool {
	c := m.class
	c.state.RemovePod(ps.ctx, m.info, src.info)
	verdict := ps.filter(c, dst.info)
	c.state.AddPod(ps.ctx, m.info, src.info)
	return verdict == ""
}

// move takes m from src to dst, in the nodes and in every class's state.
func (ps *planState) move(m *member, src, dst *openNode, states []*class) {
	logger := klog.FromContext(ps.ctx)
	if err := src.info.RemovePod(logger, m.pod.Pod); err != nil {
		logger.Error(err, "Cannot move a planned pod", "node", src.name, "pod", klog.KObj(m.pod.Pod))
	}
	for _, c := range states {
		c.state.RemovePod(ps.ctx, m.info, src.info)
	}
	src.used = src.used.sub(m.req)
	src.remove(m)
	dst.info.AddPodInfo(m.info)
	dst.used = dst.used.add(m.req)
	dst.add(m)
	for _, c := range states {
		c.state.AddPod(ps.ctx, m.info, dst.info)
	}
}

// add records m on n.
func (n *openNode) add(m *member) {
	n.members = append(n.members, m)
	n.pods = append(n.pods, m.pod)
	n.classes[m.class] = true
}

// remove forgets m on n.
func (n *openNode) remove(m *member) {
	for i, o := range n.members {
		if o == m {
			n.members = append(n.members[:i], n.members[i+1:]...)
			n.pods = append(n.pods[:i], n.pods[i+1:]...)
			break
		}
	}
	for _, o := range n.members {
		if o.class == m.class {
			return
		}
	}
	delete(n.classes, m.class)
}
