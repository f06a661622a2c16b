package planning

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
)

// A pool requirement's minValues asks every claim of the pool to offer EC2 instance types that
// span at least that many distinct values of the requirement's key (spot diversity: a spot
// claim flexible across three families rides out one family's capacity running dry). A claim is
// one pool, zone and capacity type, launched from one image, so the types it may offer are those
// of one partition (below) that hold its pods and that every class on it accepts.
//
// The planner keeps the minimum in three places:
//   - classify: a class gives up the partitions whose types, of those it accepts that hold its
//     smallest pod, cannot span the minimum. Another zone, capacity type or architecture of the
//     pool may still serve it, or, failing all, the next pool by weight (as Karpenter moves on to
//     the next NodePool); a class left with none is unschedulable for that reason.
//   - packing: a template of such a pool offers the packer only the room that a few of its
//     partition's types with the missing values also have (capMinValues). A node is never
//     packed beyond what types of enough values hold: many memory-hungry pods packed onto the
//     largest type of the one family that has it would otherwise leave a node no other family
//     can take.
//   - finish: a node's alternatives are its cheapest holders, extended with the next holders
//     that add a missing value, up to maxOfferedTypes (diverseAlternatives). A node whose holders
//     cannot span the minimum is not made: its pods are unschedulable, saying why. That happens
//     mostly to classes whose own constraints each leave enough values but together too few:
//     Plan then plans again with one class a node in such pools (planState.isolate).

// maxOfferedTypes bounds the types a claim offers EC2, extended for a minimum: CreateFleet
// caps a fleet's overrides (Karpenter sends at most 60 types too). Validation keeps minValues
// within it.
const maxOfferedTypes = 60

// maxListedValues bounds the values a reason lists: it goes into pods' events.
const maxListedValues = 10

// hasMinValues says whether a requirement of the pool has a minimum.
func hasMinValues(pool *config.Pool) bool {
	return slices.ContainsFunc(pool.Requirements, func(r config.Requirement) bool { return r.MinValues > 0 })
}

// constrained says whether a template's pool's minima apply to it: a reserved offering is one
// type in one reservation, paid for already, and never meant to be diverse.
func constrained(t *Template) bool { return t.Offering.Reservation == nil && hasMinValues(t.Pool) }

// minValuesOf are the pool's requirements with a minimum.
func minValuesOf(pool *config.Pool) []config.Requirement {
	var out []config.Requirement
	for _, r := range pool.Requirements {
		if r.MinValues > 0 {
			out = append(out, r)
		}
	}
	return out
}

// partitionKey is what the types of one claim share: pool, zone and capacity type
// (offeringGroup) and one image (architecture, GPU-ness; see launchableTogether).
type partitionKey struct {
	offeringGroup
	arch string
	gpu  bool
}

func partitionOf(t *Template) partitionKey {
	return partitionKey{groupOf(t), t.Type.Arch, t.Type.GPUCount > 0}
}

// partitions splits templates by partition, each in the order given, the partitions in the
// order of their first template (cheapest first, for templates in price order).
func (ps *planState) partitions(tis []int) [][]int {
	key := func(ti int) any { return partitionOf(ps.pl.Templates[ti]) }
	if mv := ps.minima; mv != nil {
		// Indexed already (templates of pools with minima; the others are -1 alike).
		key = func(ti int) any {
			if p := mv.part[ti]; p >= 0 {
				return p
			}
			return partitionOf(ps.pl.Templates[ti])
		}
	}
	index := map[any]int{}
	var out [][]int
	for _, ti := range tis {
		k := key(ti)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], ti)
	}
	return out
}

// valueSets are the distinct values of each minValues requirement's key among some templates.
type valueSets []map[string]bool

func (ps *planState) valuesOf(reqs []config.Requirement, tis []int) valueSets {
	sets := make(valueSets, len(reqs))
	for i := range sets {
		sets[i] = map[string]bool{}
	}
	for _, ti := range tis {
		sets.add(reqs, ps.pl.Templates[ti])
	}
	return sets
}

// add counts t's values; it says whether one was new.
func (s valueSets) add(reqs []config.Requirement, t *Template) bool {
	added := false
	for i, r := range reqs {
		if v, ok := t.Node.Labels[r.Key]; ok && !s[i][v] {
			s[i][v] = true
			added = true
		}
	}
	return added
}

// unmet is the first requirement whose minimum the sets miss, or -1.
func (s valueSets) unmet(reqs []config.Requirement) int {
	for i, r := range reqs {
		if len(s[i]) < int(r.MinValues) {
			return i
		}
	}
	return -1
}

// adds says whether t has a value of an unmet requirement that the sets lack.
func (s valueSets) adds(reqs []config.Requirement, t *Template) bool {
	for i, r := range reqs {
		if len(s[i]) >= int(r.MinValues) {
			continue
		}
		if v, ok := t.Node.Labels[r.Key]; ok && !s[i][v] {
			return true
		}
	}
	return false
}

// shortOfMinima says why the best of the partitions (the types that hold some pods) cannot serve them:
// the pool, the first requirement they fall short of, and the values the partition that comes
// closest has.
func shortOfMinima(pool *config.Pool, reqs []config.Requirement, best valueSets) string {
	i := best.unmet(reqs)
	if i < 0 {
		return fmt.Sprintf("pool %s needs its instance types to span %s, and no %d of the types that hold these pods do",
			pool.Name, minimaOf(reqs), maxOfferedTypes)
	}
	r := reqs[i]
	values := slices.Sorted(maps.Keys(best[i]))
	listed := strings.Join(values[:min(len(values), maxListedValues)], ", ")
	if n := len(values) - maxListedValues; n > 0 {
		listed += fmt.Sprintf(" and %d more", n)
	}
	have := fmt.Sprintf("%d", len(values))
	if len(values) > 0 {
		have += " (" + listed + ")"
	}
	return fmt.Sprintf("pool %s needs %d values of %s among the types it offers EC2; the types that hold these pods have %s",
		pool.Name, r.MinValues, r.Key, have)
}

// minimaOf words the pool's minima: "3 values of a, 2 values of b".
func minimaOf(reqs []config.Requirement) string {
	parts := make([]string, len(reqs))
	for i, r := range reqs {
		parts[i] = fmt.Sprintf("%d values of %s", r.MinValues, r.Key)
	}
	return strings.Join(parts, ", ")
}

// closest is, of the partitions, the value sets of the one that comes closest to the minima:
// the most values of the first requirement any falls short of.
func (ps *planState) closest(reqs []config.Requirement, parts [][]int) valueSets {
	var best valueSets
	for _, p := range parts {
		s := ps.valuesOf(reqs, p)
		if best == nil || better(reqs, s, best) {
			best = s
		}
	}
	if best == nil {
		best = ps.valuesOf(reqs, nil)
	}
	return best
}

// better says whether a comes closer to the minima than b: it meets more of them in order, or
// has more values of the first one both miss.
func better(reqs []config.Requirement, a, b valueSets) bool {
	ia, ib := a.unmet(reqs), b.unmet(reqs)
	switch {
	case ia < 0 || ib < 0:
		return ia < 0 && ib >= 0
	case ia != ib:
		return ia > ib
	}
	return len(a[ia]) > len(b[ib])
}

// diverseAlternatives are a node's alternatives in a pool with minima: in the first partition
// (cheapest first) of the templates that hold its pods and every class on it accepts that can
// meet them, the cheapest max, then the next that add a value some minimum lacks. It returns
// why not when no partition can meet them within maxOfferedTypes.
func (ps *planState) diverseAlternatives(n *openNode, reqs []config.Requirement, max int) ([]int, string) {
	t := ps.pl.Templates[n.template]
	holds := func(ti int) bool { return fits(ps.hold[ti], nil, n.used) && acceptedByAll(n.classes, ti) }
	// Mostly the cheapest max holders, as without minima, meet them.
	var first []int
	for _, ti := range ps.sameOffering(t) { // sorted by price
		if len(first) == max {
			break
		}
		if (len(first) == 0 || ps.minima.part[ti] == ps.minima.part[first[0]]) && holds(ti) {
			first = append(first, ti)
		}
	}
	if len(first) > 0 && ps.valuesOf(reqs, first).unmet(reqs) < 0 {
		return first, ""
	}
	parts := ps.partitions(slices.DeleteFunc(slices.Clone(ps.sameOffering(t)), func(ti int) bool { return !holds(ti) }))
	for _, p := range parts {
		// The cheapest max first; should their values leave too few slots for the rest, the
		// values alone, cheapest first.
		for _, first := range []int{max, 1} {
			if alts := ps.extend(p, first, reqs); alts != nil {
				if len(alts) > max {
					klog.FromContext(ps.ctx).V(4).Info("Alternatives extended for the pool's minValues", "node", n.name,
						"pool", t.Pool.Name, "types", len(alts), "maxAlternatives", max)
				}
				return alts, ""
			}
		}
	}
	return nil, shortOfMinima(t.Pool, reqs, ps.closest(reqs, parts))
}

// extend takes the first of p (in order), then the next of p that add a value an unmet minimum
// lacks, until every minimum is met (the alternatives) or maxOfferedTypes are taken (nil).
func (ps *planState) extend(p []int, first int, reqs []config.Requirement) []int {
	first = min(first, len(p), maxOfferedTypes)
	alts := slices.Clone(p[:first])
	sets := ps.valuesOf(reqs, alts)
	for _, ti := range p[first:] {
		if sets.unmet(reqs) < 0 || len(alts) == maxOfferedTypes {
			break
		}
		if t := ps.pl.Templates[ti]; sets.adds(reqs, t) {
			sets.add(reqs, t)
			alts = append(alts, ti)
		}
	}
	if sets.unmet(reqs) >= 0 {
		return nil
	}
	return alts
}

func acceptedByAll(classes map[*class]bool, ti int) bool {
	for c := range classes {
		if !c.tierSet[ti] {
			return false
		}
	}
	return true
}

// meetMinValues keeps of the templates a class accepts those whose partition can meet their
// pool's minima for it: the partition's templates the class accepts that hold its smallest pod
// span them. The class remembers why it gave the others up (one reason per pool, from the
// partition that came closest), for when it is left without a node.
func (ps *planState) meetMinValues(c *class, accepted []int) []int {
	mv := ps.minima
	if mv == nil {
		return accepted
	}
	// Each partition's values among the templates that hold the class's smallest pod, until
	// they meet the minima (met): a class accepts thousands of templates.
	sets := make([]valueSets, len(mv.reqs))
	met := make([]bool, len(mv.reqs))
	for _, ti := range accepted {
		if p := mv.part[ti]; p >= 0 && !met[p] && fits(ps.hold[ti], nil, c.minReq) {
			if sets[p] == nil {
				sets[p] = ps.valuesOf(mv.reqs[p], nil)
			}
			sets[p].add(mv.reqs[p], ps.pl.Templates[ti])
			met[p] = sets[p].unmet(mv.reqs[p]) < 0
		}
	}
	c.minValuesBy, c.minValuesHeld = nil, nil
	var out []int
	closest := map[*config.Pool]valueSets{}
	var pools []*config.Pool
	for _, ti := range accepted {
		p := mv.part[ti]
		switch {
		case p < 0 || met[p]:
			out = append(out, ti)
		case sets[p] != nil && fits(ps.hold[ti], nil, c.minReq):
			// Short of the minima (a partition none of whose templates holds the pod is
			// not: its sizes explain it).
			c.minValuesHeld = append(c.minValuesHeld, ti)
			pool := ps.pl.Templates[ti].Pool
			if best, ok := closest[pool]; !ok || better(mv.reqs[p], sets[p], best) {
				if !ok {
					pools = append(pools, pool)
				}
				closest[pool] = sets[p]
			}
		}
	}
	for _, pool := range pools {
		c.minValuesBy = append(c.minValuesBy, shortOfMinima(pool, minValuesOf(pool), closest[pool]))
	}
	return out
}

// minValuesWhyNot says why a pod of class c got no node when its pools' minValues are the
// reason: it fits a template only beyond the room packing may fill there (capMinValues), or
// only templates the class gave up for the minima (meetMinValues) hold it. "" otherwise. The
// caller has found no template of the class whose packing room holds the pod.
func (ps *planState) minValuesWhyNot(c *class, m *member) string {
	var capped []int
	for _, ti := range c.compatible {
		if fits(ps.hold[ti], nil, m.req) {
			capped = append(capped, ti)
		}
	}
	if len(capped) > 0 {
		pool := ps.pl.Templates[capped[0]].Pool
		capped = slices.DeleteFunc(capped, func(ti int) bool { return ps.pl.Templates[ti].Pool != pool })
		reqs := minValuesOf(pool)
		if best := ps.closest(reqs, ps.partitions(capped)); best.unmet(reqs) >= 0 {
			return shortOfMinima(pool, reqs, best)
		}
		return fmt.Sprintf("pool %s fills a node only as far as types spanning %s hold it, and no such node holds this pod", pool.Name, minimaOf(reqs))
	}
	for _, ti := range c.minValuesHeld {
		if fits(ps.hold[ti], nil, m.req) {
			return strings.Join(c.minValuesBy, "; ")
		}
	}
	return ""
}

// minValuesIndex is what the pools' minValues make of the templates, once per Planner.
type minValuesIndex struct {
	// part is each template's partition (-1 outside pools with minima), reqs each
	// partition's pool's requirements with a minimum.
	part []int
	reqs [][]config.Requirement
	// peers are, for each template of a pool with minima, templates of its partition that with
	// it span the minima, chosen to keep as much of its room as they can (see peersOf); nil
	// when the partition lacks the values.
	peers [][]int
}

// capMinValues lowers the room packing sees on every template of a pool with minima to what
// the template's peers also have, and keeps the templates' true room in hold.
func (ps *planState) capMinValues() {
	ps.hold = ps.avail
	if ps.minima = ps.pl.minValuesIndex(ps); ps.minima == nil {
		return
	}
	ps.hold = slices.Clone(ps.avail)
	for ti, tp := range ps.minima.peers {
		for _, tj := range tp {
			ps.avail[ti] = minVec(ps.avail[ti], ps.hold[tj])
		}
	}
}

// minValuesIndex indexes the templates of pools with minima (nil when no pool has any), from
// the room of the first plan state that asks.
func (pl *Planner) minValuesIndex(ps *planState) *minValuesIndex {
	if len(pl.Templates) > 0 && pl.minimaFor == &pl.Templates[0] && pl.minimaLen == len(pl.Templates) {
		return pl.minima
	}
	pl.minima, pl.minimaFor, pl.minimaLen = nil, nil, len(pl.Templates)
	if len(pl.Templates) > 0 {
		pl.minimaFor = &pl.Templates[0]
	}
	var withMinima []int
	for ti, t := range pl.Templates {
		if constrained(t) {
			withMinima = append(withMinima, ti)
		}
	}
	if len(withMinima) == 0 {
		return nil
	}
	mv := &minValuesIndex{part: make([]int, len(pl.Templates)), peers: make([][]int, len(pl.Templates))}
	for ti := range mv.part {
		mv.part[ti] = -1
	}
	for i, p := range ps.partitions(withMinima) {
		reqs := minValuesOf(pl.Templates[p[0]].Pool)
		mv.reqs = append(mv.reqs, reqs)
		cands := ps.peerCandidates(p, reqs)
		for _, ti := range p {
			mv.part[ti] = i
			mv.peers[ti] = ps.peersOf(ti, reqs, cands)
		}
	}
	pl.minima = mv
	return mv
}

// peerCandidate is a template that may bring a value of a requirement's key to a peer set.
type peerCandidate struct {
	ti    int
	value string
}

// peerCandidates lists, for each requirement with a minimum, in template order, the templates
// of the partition whose room no other of the same value has all of: the only ones worth
// taking as a peer for their value.
func (ps *planState) peerCandidates(p []int, reqs []config.Requirement) [][]peerCandidate {
	out := make([][]peerCandidate, len(reqs))
	for i, r := range reqs {
		byValue := map[string][]int{}
		for _, ti := range p {
			if v, ok := ps.pl.Templates[ti].Node.Labels[r.Key]; ok {
				byValue[v] = append(byValue[v], ti)
			}
		}
		for _, ti := range p {
			v, ok := ps.pl.Templates[ti].Node.Labels[r.Key]
			if !ok {
				continue
			}
			dominated := slices.ContainsFunc(byValue[v], func(tj int) bool {
				return tj != ti && covers(ps.avail[tj], ps.avail[ti]) && (!covers(ps.avail[ti], ps.avail[tj]) || tj < ti)
			})
			if !dominated {
				out[i] = append(out[i], peerCandidate{ti, v})
			}
		}
	}
	return out
}

// peersOf picks, greedily, templates of ti's partition whose values meet the minima with ti's,
// each time the one whose room takes least off what they hold in common (of equals, the
// cheapest); nil when the partition lacks the values (then no class keeps ti: see
// meetMinValues).
func (ps *planState) peersOf(ti int, reqs []config.Requirement, cands [][]peerCandidate) []int {
	room := ps.avail[ti]
	sets := ps.valuesOf(reqs, []int{ti})
	var peers []int
	for sets.unmet(reqs) >= 0 {
		best, bestScore := -1, [2]float64{}
	search:
		for i, r := range reqs {
			if len(sets[i]) >= int(r.MinValues) {
				continue
			}
			for _, c := range cands[i] {
				if sets[i][c.value] {
					continue
				}
				s := keeps(room, ps.avail[c.ti])
				if best < 0 || s[0] > bestScore[0] || s[0] == bestScore[0] && (s[1] > bestScore[1] || s[1] == bestScore[1] && c.ti < best) {
					best, bestScore = c.ti, s
				}
				if s[0] == 1 {
					break search // keeps all of it: none does better
				}
			}
		}
		if best < 0 {
			return nil
		}
		peers = append(peers, best)
		room = minVec(room, ps.avail[best])
		sets.add(reqs, ps.pl.Templates[best])
	}
	return peers
}

// keeps scores how much of room a peer with room other keeps: the smallest share of any
// dimension kept, then the shares' sum.
func keeps(room, other vec) [2]float64 {
	least, sum := 1.0, 0.0
	for d, x := range room {
		if x <= 0 {
			continue
		}
		var y int64
		if d < len(other) {
			y = other[d]
		}
		share := float64(min(x, y)) / float64(x)
		least = min(least, share)
		sum += share
	}
	return [2]float64{least, sum}
}

// minVec is the smaller of a and b in every dimension, as a new vector (missing entries are
// zero).
func minVec(a, b vec) vec {
	out := make(vec, max(len(a), len(b)))
	for i := range out {
		var x, y int64
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		out[i] = min(x, y)
	}
	return out
}

// covers says whether a has at least b's room in every dimension.
func covers(a, b vec) bool { return fits(a, nil, b) }
