package consolidation

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/kubernetes/pkg/util/taints"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// ownedNode is a node Tailor launched: its claim is Registered on it.
type ownedNode struct {
	node  *corev1.Node
	claim *v1alpha1.Claim
	pool  *config.Pool
	price float64
	// idleSince is when a pod last arrived on or left the node (or it registered).
	idleSince time.Time
}

// decision is a node to take away, and why. A merge or replacement takes several (others) and
// first launches the replacements, cheaper together than what they replace.
type decision struct {
	node   *ownedNode
	others []*ownedNode
	method string
	why    string
	// evict are the pods to evict.
	evict        []*corev1.Pod
	replacements []*planning.PlannedNode
}

// nodes are all the nodes the decision takes away.
func (d *decision) nodes() []*ownedNode { return append([]*ownedNode{d.node}, d.others...) }

// skipped is a node considered and kept, and why (for an event).
type skipped struct {
	node *ownedNode
	why  string
}

// snapshot is what one decision pass looks at.
type snapshot struct {
	now time.Time
	// gangs: the profile runs Coscheduling, and a PodGroup's pods are a gang (Controller.Gangs).
	gangs bool
	nodes []*corev1.Node
	pods  []*corev1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
	// claims are every claim, as the pass listed them; deletions counts the pods that had left
	// a node before the pass listed the pods (see quiet).
	claims    []*v1alpha1.Claim
	deletions uint64
	owned     []*ownedNode
	// budget is how many more nodes each pool may start disrupting now.
	budget map[string]int
	// templates are what replacements may be launched as (none: no replacements).
	templates []*planning.Template
	// minSavings is the fraction of the replaced nodes' price a replacement must save.
	minSavings float64
	// rotation picks where in the candidates this pass's replacement questions start.
	rotation int
	// excluded are nodes pods may not be planned onto: being replaced or replacements.
	excluded map[string]bool
	// arriving are unbound pods on their way to a node: Tailor's pending pods, and the pods of
	// nodes being drained. They are placed before any question is asked, so no decision takes
	// the room they need.
	arriving []*corev1.Pod
	// scaleUp says why the cluster is still scaling up ("" if it is not): then only empty nodes
	// no arriving pod could use, and interrupted nodes, are decided about.
	scaleUp string
	// creating says that workloads are still creating pods: the pods to come may need even an
	// empty node, so only interrupted nodes are decided about.
	creating bool
	// scaledUpAt is when the cluster was last seen scaling up. A node's pods are moved only once
	// its pool's consolidateAfter has passed since then, as since a pod last came or went on the
	// node: a burst's last wave lands on the nodes its first waves filled, and a node that was
	// idle through the burst is not idle room the burst left over.
	scaledUpAt time.Time
	// podInfos gives each pod object one PodInfo across the passes (nil: each question makes
	// its own).
	podInfos *planning.PodInfos
}

// steps are the methods in the order decide tries them, the cheapest decision first. A pass
// ends with the first step that decides something, so that each pass makes the cheapest move
// there is and the next pass sees its effect. Empty and interrupted nodes are one step: an
// interrupted node never waits for empty ones to go, nor they for it. Drift and expiry take every
// node the budgets allow; delete, merge and replace one move between them. While the cluster
// scales up, only the first step runs: every other is a voluntary move of pods; while workloads
// are still creating pods, only interrupted nodes are decided about.
var steps = [][]method{
	{emptyMethod{}, interruptionMethod{}},
	{renewMethod{}},
	{deleteMethod{}},
	{mergeMethod{}},
	{replaceMethod{}},
}

// decide picks what to disrupt: the candidates each method wants, step by step, within the
// pools' budgets (a copy of the snapshot's, which the methods spend). It never touches a node
// with a blocking pod unless EC2 takes it, and it asks the profile's Filter plugins (through
// the planner) where pods would go.
func decide(ctx context.Context, s *snapshot, fw *profile.Framework) ([]decision, []skipped) {
	cs, kept := candidates(s)
	p := newPass(ctx, s, fw)
	run := steps
	switch {
	case s.creating:
		run = [][]method{{interruptionMethod{}}}
	case s.scaleUp != "":
		run = steps[:1]
	}
	if len(s.arriving) > 0 && anyWanted(run, s, cs) {
		cs = withoutLandings(cs, p.questions())
	}
	var out []decision
	for _, step := range run {
		for _, m := range step {
			mine := wanted(m, s, cs)
			if len(mine) == 0 {
				continue
			}
			ds, sk := m.compute(p, mine)
			out = append(out, ds...)
			kept = append(kept, sk...)
		}
		if len(out) > 0 {
			break
		}
	}
	return out, kept
}

// anyWanted says whether a method of steps wants one of cs.
func anyWanted(steps [][]method, s *snapshot, cs []*candidate) bool {
	for _, step := range steps {
		for _, m := range step {
			if len(wanted(m, s, cs)) > 0 {
				return true
			}
		}
	}
	return false
}

// withoutLandings are cs but the empty nodes pods on their way could land on and the other nodes
// they would land on: their room is needed now. An interrupted node stays, as EC2 takes it
// whatever it would hold.
func withoutLandings(cs []*candidate, q *questions) []*candidate {
	out := cs[:0:0]
	for _, c := range cs {
		switch {
		case interrupted(c.ownedNode):
		case len(c.evict) == 0:
			// Once the pods are placed, a node they landed on may have no room for another.
			if q.placed && q.landing[c.node.Name] || q.couldLand(c.node.Name) {
				continue
			}
		case q.landed(c.node.Name):
			continue
		}
		out = append(out, c)
	}
	return out
}

// wanted are the candidates m wants, in their order.
func wanted(m method, s *snapshot, cs []*candidate) []*candidate {
	var out []*candidate
	for _, c := range cs {
		if m.wants(s, c) {
			out = append(out, c)
		}
	}
	return out
}

// candidates are the owned nodes the methods may decide about, in the snapshot's order, and the
// nodes kept from all of them: annotated do-not-disrupt, or with a pod that blocks disruption.
// An interrupted node is a candidate whatever it carries. What blocks is said only of a node due
// for a look (drifted, expired or idle), not of every busy node.
func candidates(s *snapshot) ([]*candidate, []skipped) {
	podsOn := map[string][]*corev1.Pod{}
	for _, p := range s.pods {
		if p.Spec.NodeName != "" {
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		}
	}
	var cs []*candidate
	var kept []skipped
	for _, o := range s.owned {
		c := &candidate{ownedNode: o, pods: podsOn[o.node.Name]}
		if interrupted(o) {
			// EC2 takes it whatever Tailor decides: no budget, annotation or pod keeps it.
			cs = append(cs, c)
			continue
		}
		if o.node.Annotations[v1alpha1.AnnotationDoNotDisrupt] == "true" {
			kept = append(kept, skipped{o, "node is annotated " + v1alpha1.AnnotationDoNotDisrupt})
			continue
		}
		blocked := ""
		for _, p := range c.pods {
			switch v, why := judge(p, ruleInput{pdbs: s.pdbs, now: s.now, gangs: s.gangs}); v {
			case evict:
				c.evict = append(c.evict, p)
			case block:
				if blocked == "" {
					blocked = why
				}
			}
		}
		switch {
		case blocked == "":
			cs = append(cs, c)
		case due(s, o) || idle(s, o):
			kept = append(kept, skipped{o, blocked})
		}
	}
	return cs, kept
}

func fitsBudget(budget map[string]int, d decision) bool {
	need := map[string]int{}
	for _, n := range d.nodes() {
		need[n.pool.Name]++
	}
	for pool, n := range need {
		if budget[pool] < n {
			return false
		}
	}
	return true
}

func takeAll(budget map[string]int, d decision) {
	for _, n := range d.nodes() {
		budget[n.pool.Name]--
	}
}

// schedulable says whether pods could move to n: Ready, not cordoned, not being disrupted or
// replaced.
func schedulable(n *corev1.Node, excluded map[string]bool) bool {
	return !n.Spec.Unschedulable && !disrupting(n) && !excluded[n.Name] && lifecycle.Ready(n)
}

func disrupting(n *corev1.Node) bool {
	return taints.TaintKeyExists(n.Spec.Taints, v1alpha1.TaintDisrupting)
}
