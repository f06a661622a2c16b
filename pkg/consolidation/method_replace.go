package consolidation

import "fmt"

// maxReplaceQuestions bounds how many single-node replacements one pass asks about: each plans
// new capacity, the costliest question. Passes rotate through the candidates (the snapshot's
// rotation), so every node is asked about in turn.
const maxReplaceQuestions = 8

// replaceMethod replaces one underutilized node by cheaper new capacity, by the required margin:
// the last resort, when no node can simply go and no set merges. A node whose pods fit elsewhere
// is the delete method's, not a replacement with nothing new.
type replaceMethod struct{}

func (replaceMethod) wants(s *snapshot, c *candidate) bool { return underutilized(s, c) }

func (replaceMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	sorted := byPrice(cs)
	for i := 0; i < len(sorted) && i < maxReplaceQuestions; i++ {
		c := sorted[(p.s.rotation+i)%len(sorted)]
		d, before, after, ok := p.questions().cheaper([]*candidate{c}, p.s.templates, p.s.minSavings)
		if !ok || len(d.replacements) == 0 {
			continue
		}
		d.method = methodReplace
		d.why = fmt.Sprintf("%d cheaper node(s) (%s, $%.4f/h) hold its %d pods for $%.4f/h less", len(d.replacements), d.replacements[0].Template.Type.Name, after, len(d.evict), before-after)
		if p.take(d) {
			return []decision{d}, nil
		}
	}
	return nil, nil
}
