package planning

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// repackPricer prices node contents for repack: the cheapest template, in any of the offering
// groups its representatives stand for, that every class of the content accepts and whose
// allocatable holds it. That is holdersOf's first answer, found faster: repack asks it once
// for every sub-multiset of the pods, and a catalog of every type has hundreds of templates a
// group, most of which a cheaper one holds at least as much as. Per group and set of classes
// it keeps only the frontier: the templates no cheaper accepted one dominates in every
// dimension. A dominated template is never the first that fits, so the answer is the same.
// Frontiers are kept on the plan state for its other repacks (see frontierKey).
type repackPricer struct {
	ps      *planState
	reps    []*Template
	classes []*class // bit i of a mask is classes[i]
	// frontiers[mask][g]: the frontier of reps[g]'s group for the classes of mask.
	frontiers map[uint64][][]int
}

// frontierKey names a frontier: an offering group and a set of classes (their keys, sorted).
type frontierKey struct {
	group   offeringGroup
	classes string
}

func newRepackPricer(ps *planState, reps []*Template, kinds []*repackKind) *repackPricer {
	p := &repackPricer{ps: ps, reps: reps, frontiers: map[uint64][][]int{}}
	for _, k := range kinds {
		if p.bit(k.class) == 0 {
			p.classes = append(p.classes, k.class)
		}
	}
	return p
}

// bit is c's bit in a mask, or 0 for a class the pricer does not know.
func (p *repackPricer) bit(c *class) uint64 {
	for i, o := range p.classes {
		if o == c {
			return 1 << i
		}
	}
	return 0
}

// price is the cheapest template holding used for the classes of mask, and its price; -1 and
// +Inf when none does.
func (p *repackPricer) price(used vec, mask uint64) (float64, int) {
	fr, ok := p.frontiers[mask]
	if !ok {
		fr = p.frontier(mask)
		p.frontiers[mask] = fr
	}
	best, where := math.Inf(1), -1
	for _, group := range fr {
		for _, ti := range group {
			t := p.ps.pl.Templates[ti]
			if t.Offering.PricePerHour >= best {
				break
			}
			if fits(p.ps.avail[ti], nil, used) {
				best, where = t.Offering.PricePerHour, ti
				break
			}
		}
	}
	return best, where
}

func (p *repackPricer) frontier(mask uint64) [][]int {
	var keys []uint64
	for i, c := range p.classes {
		if mask&(1<<i) != 0 {
			keys = append(keys, c.key)
		}
	}
	slices.Sort(keys)
	name := fmt.Sprint(keys)
	if p.ps.frontiers == nil {
		p.ps.frontiers = map[frontierKey][]int{}
	}
	out := make([][]int, len(p.reps))
	for g, rep := range p.reps {
		if p.ps.isolate && bits.OnesCount64(mask) > 1 && constrained(rep) {
			continue // no template: one class a node there (see planState.isolate)
		}
		key := frontierKey{groupOf(rep), name}
		if kept, ok := p.ps.frontiers[key]; ok {
			out[g] = kept
			continue
		}
		var kept []int
	next:
		for _, ti := range p.ps.sameOffering(rep) { // by price
			for i, c := range p.classes {
				if mask&(1<<i) != 0 && !c.tierSet[ti] {
					continue next
				}
			}
			for _, k := range kept {
				if fits(p.ps.avail[k], nil, p.ps.avail[ti]) {
					continue next // k is no dearer and holds whatever ti holds
				}
			}
			kept = append(kept, ti)
		}
		p.ps.frontiers[key] = kept
		out[g] = kept
	}
	return out
}
