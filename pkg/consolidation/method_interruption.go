package consolidation

// interruptionMethod decides about nodes EC2 is taking away (interruption.go has the rest of
// their story). Nothing keeps such a node: no budget, do-not-disrupt annotation, blocking pod or
// recent activity. Each gets replacements when its pods fit nowhere else, else a plain drain.
type interruptionMethod struct{}

func (interruptionMethod) wants(_ *snapshot, c *candidate) bool { return interrupted(c.ownedNode) }

func (interruptionMethod) compute(p *pass, cs []*candidate) ([]decision, []skipped) {
	out := make([]decision, 0, len(cs))
	for _, c := range cs {
		d := interruptedDecision(c.ownedNode, c.pods, p.s.now)
		p.questions().replaceIfNeeded(p.s.templates, &d)
		out = append(out, d)
	}
	return out, nil
}
