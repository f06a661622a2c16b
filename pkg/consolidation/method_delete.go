package consolidation

import (
	"fmt"
	"sort"
)

// deleteMethod takes away one underutilized node whose pods all fit on the other nodes, the most
// expensive such node first: removing it saves the most and launches nothing. One per pass, so
// the next pass sees where the pods went before it moves more.
type deleteMethod struct{}

func (deleteMethod) wants(s *snapshot, c *candidate) bool { return underutilized(s, c) }

func (deleteMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	for _, c := range byPrice(cs) {
		if !p.allows(c.pool.Name) {
			continue
		}
		d := decision{node: c.ownedNode, method: methodDelete, evict: c.evict}
		if r := p.questions().repack(nil, []decision{d}); r != nil && len(r.Nodes) == 0 {
			d.why = fmt.Sprintf("its %d pods fit on the other nodes; saves $%.4f/h", len(d.evict), d.node.price)
			p.take(d)
			return []decision{d}, nil
		}
	}
	return nil, nil
}

// byPrice is cs, the most expensive node first (by name among equals): the
// order in which delete, merge and replace look at underutilized nodes.
func byPrice(cs []*candidate) []*candidate {
	out := append([]*candidate(nil), cs...)
	// Ties by name: the caches list nodes in no set order, and replace's rotation must walk
	// the same order from pass to pass to ask about every candidate in turn.
	sort.Slice(out, func(i, j int) bool {
		if out[i].price != out[j].price {
			return out[i].price > out[j].price
		}
		return out[i].node.Name < out[j].node.Name
	})
	return out
}
