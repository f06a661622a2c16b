package consolidation

import "fmt"

// emptyMethod takes away idle nodes with nothing to evict (DaemonSet, mirror and finished pods
// stay with the node), every one the budgets allow: it needs no planning and moves no pod, so
// it is the cheapest decision there is. A drifted or expired node is the renew method's even
// when empty, so its decision says why it really goes.
type emptyMethod struct{}

func (emptyMethod) wants(s *snapshot, c *candidate) bool {
	return !interrupted(c.ownedNode) && !due(s, c.ownedNode) && idle(s, c.ownedNode) && len(c.evict) == 0
}

func (emptyMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	var out []decision
	var kept []skipped
	for _, c := range cs {
		d := decision{node: c.ownedNode, method: methodEmpty, why: "no pods but DaemonSet pods"}
		if !p.take(d) {
			kept = append(kept, skipped{c.ownedNode, fmt.Sprintf("pool %s's disruption budget is used up", c.pool.Name)})
			continue
		}
		out = append(out, d)
	}
	return out, kept
}
