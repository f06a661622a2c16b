package consolidation

import (
	"fmt"
	"strings"

	"github.com/tailor-eks/tailor/apis/config"
)

// renewMethod replaces drifted nodes (their pool's launch settings changed since they launched),
// expired ones (older than the pool's expireAfter) and those whose spot instance EC2 recommends
// rebalancing (with rebalanceRecommendations: Replace), every one the budgets allow, whatever it
// costs. Drift and expiry are one method, not two: they share the budget in the snapshot's
// order, so which of them a tight budget lets go does not depend on which kind it is. A node
// both drifted and expired is drift. Replacements come first when the pods need new capacity;
// else (their pods fit elsewhere, or nothing can be planned for them now) a plain drain, after
// which the pods are provisioned as usual.
type renewMethod struct{}

func (renewMethod) wants(s *snapshot, c *candidate) bool {
	return !interrupted(c.ownedNode) && due(s, c.ownedNode)
}

func (renewMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	var out []decision
	var kept []skipped
	for _, c := range cs {
		d := decision{node: c.ownedNode, method: methodExpired, why: fmt.Sprintf("older than the pool's expireAfter (%s)", c.pool.Disruption.ExpireAfter.Duration), evict: c.evict}
		switch {
		case launchDrifted(c.ownedNode) && imageDrifted(c.ownedNode) != "":
			d.method, d.why = methodDrift, fmt.Sprintf("pool %s's image (%s) now resolves to %s, not the image it launched with", c.pool.Name, imageOf(c.pool), imageDrifted(c.ownedNode))
		case launchDrifted(c.ownedNode):
			d.method, d.why = methodDrift, fmt.Sprintf("pool %s's launch settings changed since it launched", c.pool.Name)
		case rebalanceRecommendedAt(c.node) != "":
			d.method, d.why = methodRebalance, "EC2 recommends rebalancing its spot instance"
		}
		// Asked before planning: the planner's question is the costly part.
		if !p.allows(c.pool.Name) {
			kept = append(kept, skipped{c.ownedNode, fmt.Sprintf("%s, but pool %s's disruption budget is used up", d.why, c.pool.Name)})
			continue
		}
		p.questions().replaceIfNeeded(p.s.templates, &d)
		p.take(d)
		out = append(out, d)
	}
	return out, kept
}

// imageOf names a pool's image for messages: its alias or ID, or its selector.
func imageOf(pool *config.Pool) string {
	if pool.AMI != "" {
		return pool.AMI
	}
	if len(pool.AMISelector.IDs) > 0 {
		return "amiSelector ids " + strings.Join(pool.AMISelector.IDs, ",")
	}
	return fmt.Sprintf("amiSelector tags %v", pool.AMISelector.Tags)
}
