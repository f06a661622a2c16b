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
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// Methods, in the order they are tried: the cheapest decision first.
const (
	methodExpired = "expired"
	methodEmpty   = "empty"
	methodDelete  = "delete"
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

// decision is one node to take away, and why.
type decision struct {
	node   *ownedNode
	method string
	why    string
	// evict are the pods to evict; moves says where each is expected to go.
	evict []*corev1.Pod
}

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
}

// decide picks what to disrupt: every expired and every empty node the budgets allow, then at
// most one node whose pods all fit on the other nodes (the most expensive such node), so each
// pass makes one move whose effect the next pass sees. It never touches a node with a
// blocking pod, and it asks the profile's Filter plugins (through the planner) where pods go.
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
	var underutilized []decision
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
		idle := s.now.Sub(o.idleSince) >= o.pool.Disruption.ConsolidateAfter.Duration
		switch {
		case blocked != "" && (expired || idle):
			kept = append(kept, skipped{o, blocked})
		case expired:
			take(decision{node: o, method: methodExpired, why: fmt.Sprintf("older than the pool's expireAfter (%s)", o.pool.Disruption.ExpireAfter.Duration), evict: evictable})
		case !idle:
		case len(evictable) == 0:
			take(decision{node: o, method: methodEmpty, why: "no pods but DaemonSet pods", evict: nil})
		case o.pool.Disruption.ConsolidationPolicy == config.WhenEmptyOrUnderutilized:
			underutilized = append(underutilized, decision{node: o, method: methodDelete, evict: evictable})
		}
	}
	if len(underutilized) == 0 || len(out) > 0 {
		// Empty and expired nodes go first; the next pass looks again with them gone.
		return out, kept
	}
	// The most expensive node first: removing it saves the most.
	sort.SliceStable(underutilized, func(i, j int) bool { return underutilized[i].node.price > underutilized[j].node.price })
	fw.SetSnapshot(s.nodes, s.pods)
	cluster := planning.NewCluster(schedulable(s.nodes), s.pods)
	for _, d := range underutilized {
		if budget[d.node.pool.Name] < 1 {
			continue
		}
		moving := make([]*planning.Pod, 0, len(d.evict))
		ok := true
		for _, p := range d.evict {
			// Asked of an unbound copy: a bound pod fits only its own node.
			c := p.DeepCopy()
			c.Spec.NodeName = ""
			state, err := fw.PreFilter(ctx, c)
			if err != nil {
				ok = false
				break
			}
			moving = append(moving, planning.NewPod(c, &planning.FilterState{Plugins: fw, State: state, Pod: c}))
		}
		if !ok {
			continue
		}
		r := (&planning.Planner{}).Repack(ctx, cluster, []string{d.node.node.Name}, moving)
		if len(r.Unschedulable) > 0 || len(r.Moves) != len(moving) {
			continue
		}
		targets := map[string]bool{}
		for _, n := range r.Moves {
			targets[n] = true
		}
		d.why = fmt.Sprintf("its %d pods fit on %d other nodes; saves $%.4f/h", len(moving), len(targets), d.node.price)
		take(d)
		break
	}
	return out, kept
}

// schedulable are the nodes pods could move to: not cordoned, not being disrupted.
func schedulable(nodes []*corev1.Node) []*corev1.Node {
	out := make([]*corev1.Node, 0, len(nodes))
	for _, n := range nodes {
		if n.Spec.Unschedulable || disrupting(n) {
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
