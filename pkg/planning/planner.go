package planning

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/podtopologyspread"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Plan is the planner's answer for one batch.
type Plan struct {
	Nodes         []*PlannedNode
	Unschedulable []Unschedulable
	// Diverted are the planned pods a closed pool (Planner.Closed) would have taken, with its
	// reasons: they went to the next pool by weight.
	Diverted []Diverted

	// For LowerBound.
	templates []*Template
	classes   []classSummary
	// moved counts compact's moves, for tests; lpPacked says whether packByLP placed pods.
	moved    int
	lpPacked bool
	// state is the plan state that made the plan, until Plan.repacked.
	state *planState
	// unfinished counts the last entries of Unschedulable: the pods of nodes finish could not
	// make (a pool's minValues unmet).
	unfinished int
}

// Diverted is a pod planned past a closed pool, and why that pool was closed.
type Diverted struct {
	Pod     *corev1.Pod
	Reasons []string
}

// PricePerHour is the plan's total.
func (p *Plan) PricePerHour() float64 {
	var sum float64
	for _, n := range p.Nodes {
		sum += n.Template.Offering.PricePerHour
	}
	return sum
}

// Unschedulable is a pod no template can serve, and why.
type Unschedulable struct {
	Pod    *corev1.Pod
	Reason string
}

// PlannedNode is one node to launch and the pods it is for.
type PlannedNode struct {
	// Name is the planned node's placeholder name, unique within the plan.
	Name string
	// Template is the cheapest template that holds Pods; Alternatives starts with it and lists
	// the other types of the same pool, zone and capacity type that hold them, cheapest first,
	// so the launch can fall back when EC2 lacks capacity for the first.
	Template     *Template
	Alternatives []*Template
	Pods         []*Pod
	Requests     corev1.ResourceList
}

// Planner packs batches onto templates. A Planner may be reused for several questions about the
// same templates (consolidation asks many per pass); it is not safe for concurrent use.
type Planner struct {
	Templates []*Template
	// MaxAlternatives bounds how many types a planned node offers the launch (default 10).
	MaxAlternatives int
	// Closed are the pools that may launch nothing now, and why (at a limit): their templates
	// leave a class before its pool tier is chosen, so its pods go to the next pool by weight.
	Closed map[string]string

	// infos caches the template nodes the Filter plugins see; they never change.
	infos []*framework.NodeInfo
	// verdicts caches the classes' verdicts on the templates between the Repacks of one
	// Cluster (verdictsOf): each pod's PreFilter state, which the verdict reads, is computed on
	// its snapshot.
	verdicts   map[uint64]*verdict
	verdictsOf *Cluster
	// noCompact turns compact off, for tests that compare.
	noCompact bool
	// minima caches what Templates' pools' minValues make of them (see minValuesIndex) for
	// the Templates slice minimaFor (its first element's address) of length minimaLen.
	minima    *minValuesIndex
	minimaFor **Template
	minimaLen int
}

// sweepLimit bounds how many nodes that refused a class are asked again before a new node is
// opened for it. Refusals by topology spread can turn into acceptances as other domains fill;
// asking every refusing node again for every pod would make hostname anti-affinity quadratic.
const sweepLimit = 16

// Plan packs pods onto new nodes. Classes of pods are placed one after the other: each pod goes
// to the first planned node with room whose Filter verdict (the class's state, which has seen
// every pod placed so far) accepts it, else onto a new node of the class's cheapest-per-pod
// template that accepts it. Each node is finally shrunk to the cheapest type that holds its pods.
func (pl *Planner) Plan(ctx context.Context, pods []*Pod) *Plan {
	// The class verdicts on the templates are the same for every way of planning these pods.
	cache := &batchCache{verdicts: map[uint64]*verdict{}, frontiers: map[frontierKey][]int{}}
	plan := pl.plan(ctx, pods, cache)
	if plan.unfinished > 0 {
		// Nodes of a pool with minValues were not made: classes whose own constraints each
		// leave enough values may leave too few together. Plan again with one class a node
		// there, and keep what places more pods.
		ps := pl.newPlanState(ctx, nil).with(cache)
		ps.isolate = true
		if alone := ps.run(pods).repacked(); len(alone.Unschedulable) < len(plan.Unschedulable) {
			plan = alone
		}
	}
	return plan
}

// plan is Plan's cheapest plan, before isolate.
func (pl *Planner) plan(ctx context.Context, pods []*Pod, cache *batchCache) *Plan {
	plan := pl.newPlanState(ctx, nil).with(cache).run(pods)
	if len(pods) > portfolioPods {
		return plan.repacked()
	}
	for _, variant := range []func(*planState){
		func(ps *planState) { ps.noLP = true },
		func(ps *planState) { ps.noWhole = true },
	} {
		ps := pl.newPlanState(ctx, nil).with(cache)
		variant(ps)
		plan = cheaper(plan, ps.run(pods))
	}
	// A plan settles on types that look cheap per pod and may keep others from a better
	// arrangement: plan again without the types it used, a few times.
	excluded := map[string]bool{}
	for round := 0; round < excludeRounds; round++ {
		for _, n := range plan.Nodes {
			excluded[n.Template.Type.Name] = true
		}
		ps := pl.newPlanState(ctx, nil).with(cache)
		ps.excluded = excluded
		plan = cheaper(plan, ps.run(pods))
	}
	return plan.repacked()
}

// repacked runs repack once more on the plan kept, with the full budget (each plan tried had a
// smaller one: repack is the dearest move, and a cheap repack of every plan tried still steers
// which plan is kept), and finishes its nodes again.
func (p *Plan) repacked() *Plan {
	ps := p.state
	p.state = nil // the plan state is not needed past here
	if ps == nil || ps.pl.noCompact {
		return p
	}
	ps.repackBudget = repackBudget
	nodes, states, hostSelectors := ps.newNodes()
	if len(nodes) == 0 || len(nodes) > mergeNodes {
		return p
	}
	moved := ps.repack(nodes, hostSelectors, states)
	if moved == 0 {
		return p
	}
	p.moved += moved
	ps.finishAll(p)
	return p
}

// verdict is what the Filter plugins said of a class on every template: the templates that
// accept it, and why the others refused.
type verdict struct {
	accepted []int
	reasons  map[string]int
}

// batchCache is what the plans of one batch share: each class's verdicts on the templates, and
// repack's frontiers, which follow from the verdicts (tierSet) and the templates alone.
type batchCache struct {
	verdicts  map[uint64]*verdict
	frontiers map[frontierKey][]int
}

// with shares a cache between the plans of one batch.
func (ps *planState) with(cache *batchCache) *planState {
	ps.verdicts, ps.frontiers = cache.verdicts, cache.frontiers
	ps.repackBudget = repackBudgetTried // see Plan.repacked
	return ps
}

// excludeRounds bounds how often Plan plans again without the types its best plan used.
const excludeRounds = 2

// cheaper is the cheaper of two plans of the same pods: a, unless b costs less and leaves no
// pod unschedulable that a places. The plan returned keeps a's lower bound (the first plan's,
// over every template the classes accept: b may have had types excluded), which then counts
// only pods both place.
func cheaper(a, b *Plan) *Plan {
	if b.PricePerHour() >= a.PricePerHour()-1e-9 {
		return a
	}
	left := make(map[*corev1.Pod]bool, len(a.Unschedulable))
	for _, u := range a.Unschedulable {
		left[u.Pod] = true
	}
	for _, u := range b.Unschedulable {
		if !left[u.Pod] {
			return a
		}
	}
	b.classes = a.classes
	return b
}

// portfolioPods bounds the batches that are planned several ways, keeping the cheapest plan:
// with the LPs, without the whole-pod one, without either (cheapest type per pod, counting
// whole pods), and without the types the best plan used. No one way wins every batch (rounding
// an LP's packing to whole pods sometimes loses to the cheapest type per pod), and small
// batches plan in milliseconds.
const portfolioPods = 2000

func (ps *planState) run(pods []*Pod) *Plan {
	plan := &Plan{templates: ps.pl.Templates, state: ps}
	classes := ps.classify(pods)
	used := map[int]bool{}
	for _, c := range classes {
		for _, ti := range c.compatible {
			used[ti] = true
		}
	}
	for ti := range ps.pl.Templates {
		if used[ti] {
			ps.batchTemplates = append(ps.batchTemplates, ti)
		}
	}
	if ps.cluster != nil {
		// Room on the nodes that run costs nothing: use it before the LP buys new nodes.
		for _, c := range classes {
			if len(c.compatible) > 0 && !c.interPod && len(c.spreadKeys) == 0 {
				ps.fillClass(c, false)
			}
		}
	}
	if !ps.noLP {
		plan.lpPacked = ps.packByLP(classes)
	}
	var rest []*class
	for _, c := range classes {
		if !c.lpPacked {
			rest = append(rest, c)
		}
	}
	if !ps.noLP {
		ps.mix = ps.newMix(rest)
	}
	for _, c := range classes {
		if len(c.closedBy) > 0 && len(c.compatible) > 0 {
			for _, m := range c.members {
				plan.Diverted = append(plan.Diverted, Diverted{Pod: m.pod.Pod, Reasons: c.closedBy})
			}
		}
		if len(c.compatible) == 0 && ps.cluster == nil {
			reason := ps.pl.explain(c.rep().Requests, c.reasons)
			if why := append(slices.Clone(c.closedBy), c.minValuesBy...); len(why) > 0 {
				// Pools that would take the pods are closed, or cannot meet their minValues
				// for them; the others refuse them.
				reason = strings.Join(why, "; ")
			}
			for _, m := range c.members {
				plan.Unschedulable = append(plan.Unschedulable, Unschedulable{Pod: m.pod.Pod, Reason: reason})
			}
			continue
		}
		var unschedulable []Unschedulable
		if c.interPod || len(c.spreadKeys) > 0 {
			unschedulable = ps.placeClass(c)
		} else {
			unschedulable = ps.fillClass(c, true)
		}
		plan.Unschedulable = append(plan.Unschedulable, unschedulable...)
		plan.classes = append(plan.classes, c.summary(unschedulable))
	}
	if !ps.pl.noCompact {
		plan.moved = ps.compact()
	}
	ps.finishAll(plan)
	return plan
}

type planState struct {
	ctx  context.Context
	pl   *Planner
	dims *dims
	// avail is the room packing may fill on each template; hold is the room the template has.
	// They differ only for pools with minValues (see capMinValues), which set minima.
	avail, hold []vec
	minima      *minValuesIndex
	infos       []*framework.NodeInfo
	nodes       []*openNode
	// log is every pod placed so far (daemons included), in order; classes catch up on it.
	log []placement
	mix *mix
	// batchTemplates are the templates some class of the batch may use, in template order.
	batchTemplates []int
	// cluster, when repacking, holds the nodes that run; removed are those being taken away,
	// whose pods every class's state forgets.
	cluster *Cluster
	removed []*clusterNode
	// noLP leaves both LPs out (packByLP and the mix): pods go to the cheapest type per pod.
	// noWhole leaves packWhole out of packByLP. excluded types are not planned onto.
	noLP, noWhole bool
	excluded      map[string]bool
	// isolate gives each node of a pool with minValues pods of one class (see Plan).
	isolate bool
	// verdicts, if set, caches the classes' verdicts between plans of the same pods.
	verdicts map[uint64]*verdict
	// byOffering groups the templates for sameOffering.
	byOffering map[offeringGroup][]int
	// frontiers caches repack's frontiers (see repackPricer); set by with, or made by repack.
	// repackBudget bounds repack's work (see repackBudget); 0 means repackBudget.
	frontiers    map[frontierKey][]int
	repackBudget float64
}

type openNode struct {
	name string
	// alone takes pods of one class only (planState.isolate).
	alone bool
	// template is the template a new node was opened with; -1 for a node of the cluster.
	template int
	capacity vec
	info     *framework.NodeInfo
	used     vec
	// pods and members are the same pods, in the same order: the plan's, and the planner's.
	pods    []*Pod
	members []*member
	classes map[*class]bool
}

// accepts says whether the class may use the node at all: any node of the cluster (the Filter
// plugins decide), or a new node of one of its templates.
func (n *openNode) accepts(c *class) bool {
	return n.template < 0 || c.compatibleSet[n.template] && (!n.alone || len(n.classes) == 0 || n.classes[c])
}

type placement struct {
	pod  fwk.PodInfo
	node *openNode
}

func (pl *Planner) newPlanState(ctx context.Context, cl *Cluster) *planState {
	d := newDims()
	if cl != nil {
		d = cl.dims
	}
	if len(pl.infos) != len(pl.Templates) {
		pl.infos = make([]*framework.NodeInfo, len(pl.Templates))
	}
	ps := &planState{ctx: context.WithoutCancel(ctx), pl: pl, dims: d, infos: pl.infos, cluster: cl}
	ps.avail = make([]vec, len(pl.Templates))
	for i, t := range pl.Templates {
		ps.avail[i] = ps.dims.vec(t.Available, false)
	}
	ps.capMinValues()
	return ps
}

// templateInfo is the NodeInfo of an empty node of template ti (allocatable inflated, daemons on).
func (ps *planState) templateInfo(ti int) *framework.NodeInfo {
	if ps.infos[ti] == nil {
		t := ps.pl.Templates[ti]
		ps.infos[ti] = filterInfo(t.Node, t.Daemons...)
	}
	return ps.infos[ti]
}

// classify groups the pods into classes, finds each class's compatible templates, and orders
// the classes for placement.
func (ps *planState) classify(pods []*Pod) []*class {
	byKey := map[uint64]*class{}
	var classes []*class
	for _, p := range pods {
		k := p.classKey()
		c, ok := byKey[k]
		if !ok {
			c = &class{key: k, interPod: hasInterPodTerms(p.Pod), spreadKeys: hardSpreadKeys(p.Pod)}
			byKey[k] = c
			classes = append(classes, c)
		}
		c.members = append(c.members, &member{pod: p, req: ps.dims.vec(p.Requests, true), class: c})
	}
	for _, c := range classes {
		sort.SliceStable(c.members, func(i, j int) bool { return size(c.members[i].pod.Requests) > size(c.members[j].pod.Requests) })
		c.minReq = append(vec(nil), c.members[0].req...)
		for _, m := range c.members[1:] {
			for i := range c.minReq {
				if i >= len(m.req) || m.req[i] < c.minReq[i] {
					c.minReq[i] = 0
					if i < len(m.req) {
						c.minReq[i] = m.req[i]
					}
				}
			}
		}
		v := ps.verdicts[c.key]
		if v == nil {
			v = &verdict{reasons: map[string]int{}}
			rep := c.rep()
			for ti := range ps.pl.Templates {
				if r := rep.Filter.Filter(ps.ctx, ps.templateInfo(ti)); r != "" && !skewOnly(c, r) {
					v.reasons[r]++
					continue
				}
				v.accepted = append(v.accepted, ti)
			}
			if ps.verdicts != nil {
				ps.verdicts[c.key] = v
			}
		}
		c.reasons = v.reasons
		accepted := ps.meetMinValues(c, ps.inOpenPools(c, v.accepted))
		// The pool tier comes from every template the class accepts in an open pool; excluded
		// types leave it (and leave the class no template if they were all it had), never move
		// it to a lower-weight pool.
		c.compatible = ps.topTier(c, accepted)
		c.tierSet = make(map[int]bool, len(c.compatible))
		for _, ti := range c.compatible {
			c.tierSet[ti] = true
		}
		c.compatibleSet = c.tierSet
		if len(ps.excluded) > 0 {
			c.compatible = slices.DeleteFunc(slices.Clone(c.compatible), func(ti int) bool { return ps.excluded[ps.pl.Templates[ti].Type.Name] })
			c.compatibleSet = make(map[int]bool, len(c.compatible))
			for _, ti := range c.compatible {
				c.compatibleSet[ti] = true
			}
		}
	}
	// Classes without inter-pod terms or spread first, then spread classes (so the nodes the
	// others open are there to count), then classes with inter-pod terms (see class.interPod);
	// within each, big pods first: they decide node sizes, small ones fill the gaps.
	rank := func(c *class) int {
		switch {
		case c.interPod:
			return 2
		case len(c.spreadKeys) > 0:
			return 1
		}
		return 0
	}
	sort.SliceStable(classes, func(i, j int) bool {
		if ri, rj := rank(classes[i]), rank(classes[j]); ri != rj {
			return ri < rj
		}
		return size(classes[i].rep().Requests) > size(classes[j].rep().Requests)
	})
	return classes
}

// inOpenPools keeps the accepted templates whose pool is not closed. A class left with none says why:
// each closed pool's reason counts as the refusal of its templates.
func (ps *planState) inOpenPools(c *class, accepted []int) []int {
	if len(ps.pl.Closed) == 0 {
		return accepted
	}
	out := make([]int, 0, len(accepted))
	var shut map[string]int
	for _, ti := range accepted {
		why, closed := ps.pl.Closed[ps.pl.Templates[ti].Pool.Name]
		if !closed {
			out = append(out, ti)
			continue
		}
		if shut == nil {
			shut = map[string]int{}
		}
		shut[why]++
	}
	c.closedBy = slices.Sorted(maps.Keys(shut))
	if len(out) == 0 && len(shut) > 0 {
		c.reasons = maps.Clone(c.reasons)
		maps.Copy(c.reasons, shut)
	}
	return out
}

// skewOnly says whether a template refused a spread class only for the skew its zone (or other
// domain) would have now. That verdict changes as the plan places the class's pods (each
// placement is judged again, with the pods placed so far): in a cluster whose domains are
// uneven, a class accepted only by the emptiest domain's templates could place a pod or two
// there and no more, though the next pods may go to the other domains once it catches up.
func skewOnly(c *class, reason string) bool {
	return len(c.spreadKeys) > 0 && reason == podtopologyspread.ErrReasonConstraintsNotMatch
}

// topTier keeps, of the templates the class's Filter verdict accepts, those of the highest-weight
// pool that has one big enough for the class's largest pod (or, failing that, for its smallest):
// a higher weight wins even when pricier, but never by leaving pods without a node that a lower
// pool could give them.
func (ps *planState) topTier(c *class, accepted []int) []int {
	maxReq := make(vec, len(ps.dims.names))
	for _, m := range c.members {
		for i, r := range m.req {
			if r > maxReq[i] {
				maxReq[i] = r
			}
		}
	}
	for _, need := range []vec{maxReq, c.minReq} {
		best, found := int32(math.MinInt32), false
		for _, ti := range accepted {
			if w := ps.pl.Templates[ti].Pool.Weight; fits(ps.avail[ti], nil, need) && (!found || w > best) {
				best, found = w, true
			}
		}
		if found {
			var tier []int
			for _, ti := range accepted {
				if ps.pl.Templates[ti].Pool.Weight == best {
					tier = append(tier, ti)
				}
			}
			return tier
		}
	}
	// No template holds even the smallest pod: keep the highest tier, whose sizes explain why.
	best := int32(math.MinInt32)
	for _, ti := range accepted {
		if w := ps.pl.Templates[ti].Pool.Weight; w > best {
			best = w
		}
	}
	var tier []int
	for _, ti := range accepted {
		if ps.pl.Templates[ti].Pool.Weight == best {
			tier = append(tier, ti)
		}
	}
	return tier
}

// placeClass places every pod of c and returns those it could not.
func (ps *planState) placeClass(c *class) []Unschedulable {
	ps.begin(c)
	ps.chooseDomains(c)
	order := ps.openOrder(c)
	var cands, refused []*openNode
	for _, n := range ps.nodes {
		if n.accepts(c) && fits(n.capacity, n.used, c.minReq) {
			cands = append(cands, n)
		}
	}
	var out []Unschedulable
	for _, m := range c.members {
		var target *openNode
		for i := 0; i < len(cands) && target == nil; i++ {
			n := cands[i]
			if !fits(n.capacity, n.used, m.req) {
				if !fits(n.capacity, n.used, c.minReq) {
					cands = append(cands[:i], cands[i+1:]...)
					i--
				}
				continue
			}
			if ps.filter(c, n.info) != "" {
				cands = append(cands[:i], cands[i+1:]...)
				i--
				refused = append(refused, n)
				continue
			}
			target = n
		}
		for j, tries := len(refused)-1, 0; target == nil && j >= 0 && tries < sweepLimit; j-- {
			n := refused[j]
			if !fits(n.capacity, n.used, m.req) {
				continue
			}
			tries++
			if ps.filter(c, n.info) == "" {
				target = n
				refused = append(refused[:j], refused[j+1:]...)
				cands = append(cands, n)
			}
		}
		if target == nil {
			if target = ps.open(c, m, order); target != nil {
				cands = append(cands, target)
			}
		}
		if target == nil {
			out = append(out, Unschedulable{Pod: m.pod.Pod, Reason: ps.whyNot(c, m)})
			continue
		}
		ps.place(c, target, m)
	}
	return out
}

func (c *class) summary(unschedulable []Unschedulable) classSummary {
	left := make(map[*corev1.Pod]bool, len(unschedulable))
	for _, u := range unschedulable {
		left[u.Pod] = true
	}
	s := classSummary{compatible: c.compatible}
	for _, m := range c.members {
		if !left[m.pod.Pod] {
			s.pods = append(s.pods, m.pod)
		}
	}
	return s
}

// begin forks the class's state from its first pod's, once, and lets it see the plan so far.
func (ps *planState) begin(c *class) {
	if c.state == nil {
		c.state = c.rep().Filter.Fork()
	}
	ps.sync(c)
}

// sync lets the class's state see every placement it has not seen yet (and, the first time,
// forget the pods of the nodes being removed).
func (ps *planState) sync(c *class) {
	if !c.forgotRemoved {
		c.forgotRemoved = true
		for _, rn := range ps.removed {
			for _, pi := range rn.info.Pods {
				c.state.RemovePod(ps.ctx, pi, rn.info)
			}
		}
	}
	for ; c.synced < len(ps.log); c.synced++ {
		p := ps.log[c.synced]
		c.state.AddPod(ps.ctx, p.pod, p.node.info)
	}
}

// chooseDomains picks, for each hard topology spread key of the class, one template per value
// of the key, pool and architecture among the templates some class of the batch may use: the
// nodes this plan may launch. A zone where no node runs yet is a domain the pods may spread to
// (the scheduler only knows domains that have nodes; refresh makes the class's state know these),
// and a zone only another class's pool reaches still counts against the skew once that class's
// nodes are there. Whether a node counts for the class is the spread plugin's own call (its node
// inclusion policies).
func (ps *planState) chooseDomains(c *class) {
	if len(c.spreadKeys) == 0 {
		return
	}
	seen := map[string]bool{}
	for _, key := range c.spreadKeys {
		for _, ti := range ps.batchTemplates {
			t := ps.pl.Templates[ti]
			v, ok := t.Node.Labels[key]
			id := key + "=" + v + "/" + t.Pool.Name + "/" + t.Type.Arch
			if !ok || seen[id] {
				continue
			}
			seen[id] = true
			c.domains = append(c.domains, ti)
		}
	}
	c.refreshedAt = -1
}

// refresh passes one pod of the class through each domain's template node and out again (the
// PreFilter extensions' AddPod then RemovePod). It leaves every count as it was, but it makes
// topology spread know each domain, and it restores the spread plugin's record of the two
// emptiest domains, which it keeps exactly only for preemption's one-node edits: after pods
// have been added across many domains, a domain it no longer tracks may be the emptiest.
func (ps *planState) refresh(c *class) {
	if len(c.domains) == 0 || c.refreshedAt == len(ps.log) {
		return
	}
	c.refreshedAt = len(ps.log)
	pi, err := framework.NewPodInfo(c.rep().Pod)
	if err != nil {
		return
	}
	for _, ti := range c.domains {
		info := ps.templateInfo(ti)
		c.state.AddPod(ps.ctx, pi, info)
		c.state.RemovePod(ps.ctx, pi, info)
	}
}

func (ps *planState) filter(c *class, info *framework.NodeInfo) string {
	ps.refresh(c)
	return c.state.Filter(ps.ctx, info)
}

// openOrder sorts the class's templates by price per pod of the class's average size they
// hold (counting at most the class's pods), cheapest first.
func (ps *planState) openOrder(c *class) []int {
	avg := make(vec, len(ps.dims.names))
	for _, m := range c.members {
		avg = avg.add(m.req)
	}
	n := int64(len(c.members))
	for i := range avg {
		avg[i] = (avg[i] + n - 1) / n
	}
	cost := make(map[int]float64, len(c.compatible))
	for _, ti := range c.compatible {
		k := fitCount(ps.avail[ti], avg)
		if k > len(c.members) {
			k = len(c.members)
		}
		if k < 1 {
			k = 1
		}
		cost[ti] = ps.pl.Templates[ti].Offering.PricePerHour / float64(k)
	}
	order := append([]int(nil), c.compatible...)
	sort.SliceStable(order, func(i, j int) bool { return cost[order[i]] < cost[order[j]] })
	return order
}

// open starts a node for m on the first template in order that holds it and whose Filter
// verdict accepts it.
func (ps *planState) open(c *class, m *member, order []int) *openNode {
	if !c.lpPacked && !c.interPod && len(c.spreadKeys) == 0 {
		order = ps.mix.prefer(ps, order, c.ratio(ps))
	}
	for _, ti := range order {
		if n := ps.openTemplate(c, m, ti); n != nil {
			return n
		}
	}
	return nil
}

// openTemplate starts a node of template ti for m if it holds m and its Filter verdict accepts
// m's class, else returns nil.
func (ps *planState) openTemplate(c *class, m *member, ti int) *openNode {
	if ti < 0 || !c.compatibleSet[ti] || !fits(ps.avail[ti], nil, m.req) {
		return nil
	}
	ps.begin(c)
	if ps.filter(c, ps.templateInfo(ti)) != "" {
		return nil
	}
	t := ps.pl.Templates[ti]
	name := fmt.Sprintf("planned-%d", len(ps.nodes))
	n := &openNode{name: name, template: ti, capacity: ps.avail[ti], classes: map[*class]bool{}, alone: ps.isolate && constrained(t)}
	n.info = filterInfo(nodeNamed(t, name), t.Daemons...)
	for _, d := range n.info.Pods {
		ps.log = append(ps.log, placement{pod: d, node: n})
	}
	ps.sync(c)
	ps.nodes = append(ps.nodes, n)
	ps.mix.spend(t)
	return n
}

func (ps *planState) place(c *class, n *openNode, m *member) {
	pi, err := m.pod.podInfo()
	if err != nil {
		return
	}
	n.info.AddPodInfo(pi)
	m.placed, m.info = true, pi
	n.used = n.used.add(m.req)
	n.add(m)
	ps.log = append(ps.log, placement{pod: pi, node: n})
	ps.sync(c)
}

// whyNot explains a pod of a class that has compatible templates but got no node.
func (ps *planState) whyNot(c *class, m *member) string {
	for _, ti := range c.compatible {
		if fits(ps.avail[ti], nil, m.req) {
			return "conflicts with other pods of the same batch on every node Tailor could plan"
		}
	}
	if why := ps.minValuesWhyNot(c, m); why != "" {
		return why
	}
	reasons := map[string]int{}
	for _, ti := range c.compatible {
		reasons[ps.dims.missing(ps.avail[ti], nil, m.req)]++
	}
	return ps.pl.explain(m.pod.Requests, reasons)
}

// finishAll finishes the plan state's new nodes with pods as the plan's nodes; the pods of a
// node finish cannot make are unschedulable, saying why, in place of those of an earlier call.
func (ps *planState) finishAll(plan *Plan) {
	plan.Unschedulable = plan.Unschedulable[:len(plan.Unschedulable)-plan.unfinished]
	plan.Nodes, plan.unfinished = plan.Nodes[:0], 0
	unmade := map[*corev1.Pod]bool{}
	for _, n := range ps.nodes {
		if n.template < 0 || len(n.pods) == 0 {
			continue
		}
		pn, why := ps.finish(n)
		if pn != nil {
			plan.Nodes = append(plan.Nodes, pn)
			continue
		}
		klog.FromContext(ps.ctx).V(2).Info("Planned node not made", "node", n.name, "template", ps.pl.Templates[n.template].Key(), "pods", len(n.pods), "reason", why)
		for _, p := range n.pods {
			plan.Unschedulable = append(plan.Unschedulable, Unschedulable{Pod: p.Pod, Reason: why})
			unmade[p.Pod] = true
		}
		plan.unfinished += len(n.pods)
	}
	if len(unmade) == 0 {
		return
	}
	// The lower bound counts only the pods the plan places.
	for i := range plan.classes {
		plan.classes[i].pods = slices.DeleteFunc(slices.Clone(plan.classes[i].pods), func(p *Pod) bool { return unmade[p.Pod] })
	}
}

// finish shrinks a planned node to the cheapest template of its pool, zone and capacity type that
// every one of its classes accepts and whose allocatable holds the node's pods. A node of a pool
// with minValues offers enough types to meet them, or is not made (nil, and why).
func (ps *planState) finish(n *openNode) (*PlannedNode, string) {
	max := ps.pl.MaxAlternatives
	if max <= 0 {
		max = 10
	}
	var tis []int
	if t := ps.pl.Templates[n.template]; constrained(t) {
		reqs := minValuesOf(t.Pool)
		var why string
		if tis, why = ps.diverseAlternatives(n, reqs, max); why != "" {
			return nil, why
		}
	} else {
		tis = ps.holders(n, max)
	}
	var alts []*Template
	for _, ti := range tis {
		alts = append(alts, ps.pl.Templates[ti])
	}
	if len(alts) == 0 {
		alts = []*Template{ps.pl.Templates[n.template]}
	}

	var requests corev1.ResourceList
	for _, p := range n.pods {
		requests = addResources(requests, p.Requests)
	}
	return &PlannedNode{Name: n.name, Template: alts[0], Alternatives: alts, Pods: n.pods, Requests: requests}, ""
}

// holders lists, cheapest first and at most max of them, the templates a planned node may shrink
// to: of its pool, zone and capacity type, accepted by every one of its classes, holding its
// pods, and launchable together with the first (one image: the architecture may change from the
// type the node was opened with, as every class accepts the new one).
func (ps *planState) holders(n *openNode, max int) []int {
	return ps.holdersOf(ps.pl.Templates[n.template], n.used, n.classes, max, math.Inf(1))
}

// holdersOf is holders for pods using used of the classes, on a node opened as template opened,
// among the templates cheaper than below.
func (ps *planState) holdersOf(opened *Template, used vec, classes map[*class]bool, max int, below float64) []int {
	if ps.isolate && len(classes) > 1 && constrained(opened) {
		return nil
	}
	var first *Template
	var out []int
	for _, ti := range ps.sameOffering(opened) { // sorted by price
		t := ps.pl.Templates[ti]
		if len(out) == max || t.Offering.PricePerHour >= below {
			break
		}
		if first != nil && !launchableTogether(t, first) || !fits(ps.avail[ti], nil, used) {
			continue
		}
		ok := true
		for c := range classes {
			if !c.tierSet[ti] {
				ok = false
				break
			}
		}
		if ok {
			if first == nil {
				first = t
			}
			out = append(out, ti)
		}
	}
	return out
}

// offeringGroup is what templates a node may change between share: pool, zone, capacity type,
// and the capacity reservation of a reserved one (each holds one type).
type offeringGroup struct {
	pool         *config.Pool
	zone         string
	capacityType cloud.CapacityType
	reservation  string
}

func groupOf(t *Template) offeringGroup {
	g := offeringGroup{t.Pool, t.Offering.Zone, t.Offering.CapacityType, ""}
	if r := t.Offering.Reservation; r != nil {
		g.reservation = r.ID
	}
	return g
}

// sameOffering lists, in template order (by price), the templates of t's pool, zone and
// capacity type.
func (ps *planState) sameOffering(t *Template) []int {
	if ps.byOffering == nil {
		ps.byOffering = map[offeringGroup][]int{}
		for ti, o := range ps.pl.Templates {
			k := groupOf(o)
			ps.byOffering[k] = append(ps.byOffering[k], ti)
		}
	}
	return ps.byOffering[groupOf(t)]
}

// shrink is the template finish will give a planned node: the cheapest of holders, or the one
// it was opened with.
func (ps *planState) shrink(n *openNode) int {
	if h := ps.holders(n, 1); len(h) > 0 {
		return h[0]
	}
	return n.template
}

// launchableTogether says whether two templates can be alternatives of one launch: same pool,
// zone and capacity type, and one image for both (same architecture, same GPU-ness).
func launchableTogether(a, b *Template) bool {
	return groupOf(a) == groupOf(b) &&
		a.Type.Arch == b.Type.Arch && (a.Type.GPUCount > 0) == (b.Type.GPUCount > 0)
}

// explain says why no template accepted a pod requesting req: first a request beyond the
// largest allowed type, else the most common verdicts.
func (pl *Planner) explain(req corev1.ResourceList, reasons map[string]int) string {
	if len(pl.Templates) == 0 {
		return "no pool has a launchable instance type (check the pools' requirements, zones and subnets)"
	}
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := req[corev1.ResourceName(name)]
		if q.IsZero() {
			continue
		}
		var largest resource.Quantity
		largestType := ""
		for _, t := range pl.Templates {
			if a, ok := t.Available[corev1.ResourceName(name)]; ok && a.Cmp(largest) > 0 {
				largest, largestType = a.DeepCopy(), t.Type.Name
			}
		}
		if q.Cmp(largest) > 0 {
			if largestType == "" {
				return fmt.Sprintf("requests %s %s; no allowed instance type offers %s", q.String(), name, name)
			}
			return fmt.Sprintf("requests %s %s; the largest allowed instance type (%s) has %s allocatable (after DaemonSets)", q.String(), name, largestType, largest.String())
		}
	}
	type rc struct {
		reason string
		n      int
	}
	var rcs []rc
	for r, n := range reasons {
		rcs = append(rcs, rc{r, n})
	}
	sort.Slice(rcs, func(i, j int) bool {
		return rcs[i].n > rcs[j].n || rcs[i].n == rcs[j].n && rcs[i].reason < rcs[j].reason
	})
	var parts []string
	for i, r := range rcs {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", r.reason, r.n))
	}
	return fmt.Sprintf("no allowed instance type passes the scheduler's filters (of %d candidates): %s", len(pl.Templates), strings.Join(parts, "; "))
}

// FitOnto places as many of the candidate pods as fit on an in-flight node of template t (named
// nodeName, already planned to hold placed), each confirmed by its Filter plugins with the
// daemons and every pod placed so far on the node. It returns the accepted pods, so capacity
// already being launched is used before anything new is.
func FitOnto(ctx context.Context, t *Template, nodeName string, placed []*Pod, candidates []*Pod) []*Pod {
	return fitOnto(ctx, t, nodeName, placed, candidates, false)
}

// FitOntoPlanned is FitOnto for pods taking room a plan kept for their workload's pods on the
// node: a refusal by the workload's hard topology spread alone is no refusal. The plan spread
// the workload's pods still to come over the nodes it launched in every domain, and a pod in
// the place of one of them keeps that spread; only the domains' counts now, with the other
// domains' nodes still booting and their pods not yet counted, say otherwise. (kube-scheduler
// still checks the spread when it binds the pod, on the nodes that are up by then.)
func FitOntoPlanned(ctx context.Context, t *Template, nodeName string, placed []*Pod, candidates []*Pod) []*Pod {
	return fitOnto(ctx, t, nodeName, placed, candidates, true)
}

// spreadRefusalOnly says whether a Filter refusal of p is its hard topology spread's and no other
// plugin's: the filter stops at the first refusal, and of the plugins after PodTopologySpread
// only InterPodAffinity could still refuse a pod the plan put on the node's template, so a pod
// with inter-pod terms gets no such allowance.
func spreadRefusalOnly(p *Pod, reason string) bool {
	return reason == podtopologyspread.ErrReasonConstraintsNotMatch && len(hardSpreadKeys(p.Pod)) > 0 && !hasInterPodTerms(p.Pod)
}

func fitOnto(ctx context.Context, t *Template, nodeName string, placed []*Pod, candidates []*Pod, planned bool) []*Pod {
	d := newDims()
	avail := d.vec(t.Available, false)
	info := filterInfo(nodeNamed(t, nodeName), t.Daemons...)
	var used vec
	for _, p := range placed {
		used = used.add(d.vec(p.Requests, true))
		info.AddPod(p.Pod)
	}
	var accepted []*Pod
	for _, p := range candidates {
		req := d.vec(p.Requests, true)
		if !fits(avail, used, req) {
			continue
		}
		state := p.Filter.Fork()
		for _, pi := range info.Pods {
			state.AddPod(ctx, pi, info)
		}
		if r := state.Filter(ctx, info); r != "" && !(planned && spreadRefusalOnly(p, r)) {
			klog.FromContext(ctx).V(4).Info("In-flight node refuses pod", "pod", klog.KObj(p.Pod), "node", nodeName, "reason", r)
			continue
		}
		info.AddPod(p.Pod)
		used = used.add(req)
		accepted = append(accepted, p)
	}
	return accepted
}
