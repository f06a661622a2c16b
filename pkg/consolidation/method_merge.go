package consolidation

import "fmt"

// maxMerge bounds how many nodes one merge considers at once.
const maxMerge = 16

// mergeMethod replaces several underutilized nodes by fewer new ones, cheaper together by the
// required margin (their pods may also move to room on the other nodes). It tries the most
// expensive nodes, the largest set first, halving it until a set pays and the budgets allow it,
// as Karpenter's multi-node consolidation does. Without templates there is nothing to merge into.
type mergeMethod struct{}

func (mergeMethod) wants(s *snapshot, c *candidate) bool { return underutilized(s, c) }

func (mergeMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	if len(p.s.templates) == 0 {
		return nil, nil
	}
	sorted := byPrice(cs)
	for k := min(len(sorted), maxMerge); k >= 2; k /= 2 {
		d, before, after, ok := p.questions().cheaper(sorted[:k], p.s.templates, p.s.minSavings)
		if !ok || len(d.replacements) >= k {
			continue // a merge must end with fewer nodes
		}
		d.method = methodMerge
		d.why = fmt.Sprintf("%d nodes ($%.4f/h) become %d new ($%.4f/h) plus room on the others; saves $%.4f/h", k, before, len(d.replacements), after, before-after)
		if p.take(d) {
			return []decision{d}, nil
		}
	}
	return nil, nil
}
