package consolidation

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// Methods, in the order they are tried: the cheapest decision first.
const (
	methodExpired = "expired"
	methodDrift   = "drift"
	methodEmpty   = "empty"
	methodDelete  = "delete"
	methodMerge   = "merge"
	methodReplace = "replace"
)

// maxMerge bounds how many nodes one merge considers at once; maxReplaceQuestions how many
// single-node replacements one pass asks about (each plans new capacity, the costliest
// question). Passes rotate through the candidates, so every node is asked about in turn.
const (
	maxMerge            = 16
	maxReplaceQuestions = 8
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
	now   time.Time
	nodes []*corev1.Node
	pods  []*corev1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
	owned []*ownedNode
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
}

// decide picks what to disrupt, the cheapest decision first: every empty node the budgets
// allow; if there is none, every drifted or expired node the budgets allow (with replacements
// when their pods need new capacity); if there is none, one delete, merge or replacement, so each
// pass makes one move whose effect the next pass sees. It never touches a node with a blocking
// pod, and it asks the profile's Filter plugins (through the planner) where pods would go.
func decide(ctx context.Context, s *snapshot, fw *profile.Framework) ([]decision, []skipped) {
	podsOn := map[string][]*corev1.Pod{}
	for _, p := range s.pods {
		if p.Spec.NodeName != "" {
			podsOn[p.Spec.NodeName] = append(podsOn[p.Spec.NodeName], p)
		}
	}
	budget := map[string]int{}
	for k, v := range s.budget {
		budget[k] = v
	}
	var out []decision
	var kept []skipped
	var underutilized, renew, interrupted []decision
	take := func(d decision) bool {
		if budget[d.node.pool.Name] < 1 {
			kept = append(kept, skipped{d.node, fmt.Sprintf("pool %s's disruption budget is used up", d.node.pool.Name)})
			return false
		}
		budget[d.node.pool.Name]--
		out = append(out, d)
		return true
	}
	for _, o := range s.owned {
		if interruption(o.node) != "" {
			// EC2 takes it whatever Tailor decides: no budget, annotation or pod keeps it.
			interrupted = append(interrupted, interruptedDecision(o, podsOn[o.node.Name]))
			continue
		}
		if o.node.Annotations[v1alpha1.AnnotationDoNotDisrupt] == "true" {
			kept = append(kept, skipped{o, "node is annotated " + v1alpha1.AnnotationDoNotDisrupt})
			continue
		}
		var evictable []*corev1.Pod
		blocked := ""
		for _, p := range podsOn[o.node.Name] {
			switch v, why := judge(p, s.pdbs); v {
			case evict:
				evictable = append(evictable, p)
			case block:
				if blocked == "" {
					blocked = why
				}
			}
		}
		expired := o.pool.Disruption.ExpireAfter.Duration > 0 && s.now.Sub(o.node.CreationTimestamp.Time) >= o.pool.Disruption.ExpireAfter.Duration
		launchedWith := o.claim.Annotations[v1alpha1.AnnotationPoolHash]
		drifted := launchedWith != "" && launchedWith != o.pool.LaunchHash()
		idle := s.now.Sub(o.idleSince) >= o.pool.Disruption.ConsolidateAfter.Duration
		switch {
		case blocked != "" && (expired || drifted || idle):
			kept = append(kept, skipped{o, blocked})
		case drifted:
			renew = append(renew, decision{node: o, method: methodDrift, why: fmt.Sprintf("pool %s's launch settings changed since it launched", o.pool.Name), evict: evictable})
		case expired:
			renew = append(renew, decision{node: o, method: methodExpired, why: fmt.Sprintf("older than the pool's expireAfter (%s)", o.pool.Disruption.ExpireAfter.Duration), evict: evictable})
		case !idle:
		case len(evictable) == 0:
			take(decision{node: o, method: methodEmpty, why: "no pods but DaemonSet pods", evict: nil})
		case o.pool.Disruption.ConsolidationPolicy == config.WhenEmptyOrUnderutilized:
			underutilized = append(underutilized, decision{node: o, method: methodDelete, evict: evictable})
		}
	}
	if len(interrupted) > 0 {
		// Interrupted nodes first, alone in their pass: replacements when their pods need new
		// capacity, else a plain drain. The next pass looks again with them gone.
		q := newQuestions(ctx, s, fw)
		for _, d := range interrupted {
			if r := q.repack(s.templates, []decision{d}); r != nil && len(r.Nodes) > 0 {
				d.replacements = r.Nodes
			}
			out = append(out, d)
			q.gone = append(q.gone, d.node.node.Name)
		}
		return out, kept
	}
	if len(underutilized) == 0 && len(renew) == 0 || len(out) > 0 {
		// Empty nodes go first; the next pass looks again with them gone.
		return out, kept
	}
	q := newQuestions(ctx, s, fw)
	// Drifted and expired nodes are renewed whatever it costs: replacements first when their
	// pods need new capacity, else (their pods fit elsewhere, or nothing can be planned for
	// them now) a plain drain, after which the pods are provisioned as usual.
	for _, d := range renew {
		if budget[d.node.pool.Name] < 1 {
			kept = append(kept, skipped{d.node, fmt.Sprintf("%s, but pool %s's disruption budget is used up", d.why, d.node.pool.Name)})
			continue
		}
		if r := q.repack(s.templates, []decision{d}); r != nil && len(r.Nodes) > 0 {
			d.replacements = r.Nodes
		}
		take(d)
		// Later questions see it gone: two drifted nodes must not each count on the other.
		q.gone = append(q.gone, d.node.node.Name)
	}
	if len(out) > 0 {
		return out, kept
	}
	// The most expensive node first: removing it saves the most.
	sort.SliceStable(underutilized, func(i, j int) bool { return underutilized[i].node.price > underutilized[j].node.price })
	// Delete: one node whose pods all fit on the others.
	for _, d := range underutilized {
		if budget[d.node.pool.Name] < 1 {
			continue
		}
		if r := q.repack(nil, []decision{d}); r != nil && len(r.Nodes) == 0 {
			d.why = fmt.Sprintf("its %d pods fit on the other nodes; saves $%.4f/h", len(d.evict), d.node.price)
			take(d)
			return out, kept
		}
	}
	// Merge: several nodes into fewer or cheaper ones; the largest set that pays, found by
	// halving as Karpenter's multi-node consolidation does.
	for k := min(len(underutilized), maxMerge); k >= 2 && len(s.templates) > 0; k /= 2 {
		set := underutilized[:k]
		if d, ok := q.replace(set, s, methodMerge); ok && fitsBudget(budget, d) {
			takeAll(budget, d)
			return append(out, d), kept
		}
	}
	// Replace: one node by a cheaper one.
	for i := 0; i < len(underutilized) && i < maxReplaceQuestions; i++ {
		d := underutilized[(s.rotation+i)%len(underutilized)]
		if d, ok := q.replace([]decision{d}, s, methodReplace); ok && fitsBudget(budget, d) {
			takeAll(budget, d)
			return append(out, d), kept
		}
	}
	return out, kept
}

// questions asks the planner where pods would go, with each pod's PreFilter state computed once
// per pass.
type questions struct {
	ctx     context.Context
	fw      *profile.Framework
	cluster *planning.Cluster
	states  map[*corev1.Pod]*planning.Pod
	// planner is shared by the questions that may launch, so template nodes are built once.
	planner *planning.Planner
	// gone are nodes already decided away in this pass.
	gone []string
}

// newQuestions sets the framework's snapshot to s and returns the pass's questions.
func newQuestions(ctx context.Context, s *snapshot, fw *profile.Framework) *questions {
	fw.SetSnapshot(s.nodes, s.pods)
	return &questions{ctx: ctx, fw: fw, cluster: planning.NewCluster(schedulable(s.nodes, s.excluded), s.pods), states: map[*corev1.Pod]*planning.Pod{},
		planner: &planning.Planner{Templates: s.templates}}
}

// repack asks where the pods of the decisions' nodes would go if those nodes went away, onto the
// other nodes and new nodes of templates. It returns nil if some pod would have nowhere to go.
func (q *questions) repack(templates []*planning.Template, ds []decision) *planning.Repacked {
	removed := append([]string(nil), q.gone...)
	var moving []*planning.Pod
	for _, d := range ds {
		removed = append(removed, d.node.node.Name)
		for _, p := range d.evict {
			mp, ok := q.states[p]
			if !ok {
				// Asked of an unbound copy: a bound pod fits only its own node.
				c := p.DeepCopy()
				c.Spec.NodeName = ""
				state, err := q.fw.PreFilter(q.ctx, c)
				if err != nil {
					return nil
				}
				mp = planning.NewPod(c, &planning.FilterState{Plugins: q.fw, State: state, Pod: c})
				q.states[p] = mp
			}
			moving = append(moving, mp)
		}
	}
	planner := &planning.Planner{}
	if len(templates) > 0 {
		planner = q.planner
	}
	r := planner.Repack(q.ctx, q.cluster, removed, moving)
	if len(r.Unschedulable) > 0 {
		return nil
	}
	return r
}

// replace asks whether the nodes of set can go, their pods moving to the other nodes and to new
// nodes cheaper together by the required margin.
func (q *questions) replace(set []decision, s *snapshot, method string) (decision, bool) {
	r := q.repack(s.templates, set)
	if r == nil {
		return decision{}, false
	}
	var before float64
	var evict []*corev1.Pod
	var others []*ownedNode
	for i, d := range set {
		before += d.node.price
		evict = append(evict, d.evict...)
		if i > 0 {
			others = append(others, d.node)
		}
	}
	after := r.PricePerHour()
	switch {
	case after > before*(1-s.minSavings):
		return decision{}, false // no churn for pennies
	case method == methodMerge && len(r.Nodes) >= len(set), method == methodReplace && len(r.Nodes) == 0:
		return decision{}, false
	}
	why := fmt.Sprintf("%d nodes ($%.4f/h) become %d new ($%.4f/h) plus room on the others; saves $%.4f/h", len(set), before, len(r.Nodes), after, before-after)
	if method == methodReplace {
		why = fmt.Sprintf("%d cheaper node(s) (%s, $%.4f/h) hold its %d pods for $%.4f/h less", len(r.Nodes), r.Nodes[0].Template.Type.Name, after, len(evict), before-after)
	}
	return decision{node: set[0].node, others: others, method: method, why: why, evict: evict, replacements: r.Nodes}, true
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

// schedulable are the nodes pods could move to: Ready, not cordoned, not being disrupted or
// replaced.
func schedulable(nodes []*corev1.Node, excluded map[string]bool) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Spec.Unschedulable || disrupting(n) || excluded[n.Name] || !lifecycle.Ready(n) {
			continue
		}
		out = append(out, n)
	}
	return out
}

func disrupting(n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.TaintDisrupting {
			return true
		}
	}
	return false
}
