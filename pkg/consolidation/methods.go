package consolidation

import (
	"context"
	"maps"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// A method is one way of taking nodes away, as Karpenter's disruption methods are: it says which
// nodes are its to decide about, and decides about them. decide tries the methods in order
// (steps, in decide.go); each method is in its own file. The labels below are the methods'
// names on decisions, the disrupting taint and the metrics.
const (
	methodExpired = "expired"
	methodDrift   = "drift"
	// methodRebalance renews a node whose spot instance EC2 recommends rebalancing.
	methodRebalance = "rebalance"
	methodEmpty     = "empty"
	methodDelete    = "delete"
	methodMerge     = "merge"
	methodReplace   = "replace"
)

type method interface {
	// wants says whether the candidate is this method's to decide about (Karpenter's
	// ShouldDisrupt). The methods want disjoint nodes, but for delete, merge and replace, which
	// look at the same underutilized ones: so what a node is (empty, drifted...) decides which
	// method may take it, never which other nodes there are.
	wants(s *snapshot, c *candidate) bool
	// compute decides about the candidates it wanted, in the snapshot's order. It spends p's
	// budget on what it decides (unless, like an interruption, no budget holds it), and says
	// which nodes it kept and why.
	compute(p *pass, cs []*candidate) ([]decision, []skipped)
}

// candidate is an owned node as the methods see it: its pods, and those a voluntary disruption
// would evict (judged by the pod rules, so nothing on it blocks one).
type candidate struct {
	*ownedNode
	pods  []*corev1.Pod
	evict []*corev1.Pod
}

// pass is what one decide call's methods share: the snapshot, the budgets left, and the
// planner's questions, asked of the same cluster by every method so that pods' PreFilter state
// and the planner's template nodes are built once.
type pass struct {
	ctx    context.Context
	s      *snapshot
	fw     *profile.Framework
	budget map[string]int
	q      *questions
}

// newPass starts a pass over s with a copy of its budgets.
func newPass(ctx context.Context, s *snapshot, fw *profile.Framework) *pass {
	return &pass{ctx: ctx, s: s, fw: fw, budget: maps.Clone(s.budget)}
}

// questions returns the pass's questions, setting them up on the first call: a pass that asks
// nothing never touches the framework's snapshot.
func (p *pass) questions() *questions {
	if p.q == nil {
		p.q = newQuestions(p.ctx, p.s, p.fw)
	}
	return p.q
}

// allows says whether the budget lets the pool start disrupting one more node.
func (p *pass) allows(pool string) bool { return p.budget[pool] >= 1 }

// take spends the budget on d, if it allows every node of d.
func (p *pass) take(d decision) bool {
	if !fitsBudget(p.budget, d) {
		return false
	}
	takeAll(p.budget, d)
	return true
}

// The predicates the voluntary methods share.

// interrupted says whether EC2 is taking the node away.
func interrupted(o *ownedNode) bool { return interruption(o.node) != "" }

// idle says whether no pod arrived on or left the node for the pool's consolidateAfter.
func idle(s *snapshot, o *ownedNode) bool {
	return s.now.Sub(o.idleSince) >= o.pool.Disruption.ConsolidateAfter.Duration
}

// pastScaleUp says whether the pool's consolidateAfter has passed since the cluster last scaled
// up.
func pastScaleUp(s *snapshot, o *ownedNode) bool {
	return s.now.Sub(s.scaledUpAt) >= o.pool.Disruption.ConsolidateAfter.Duration
}

// launchDrifted says whether the pool's launch settings changed since the node launched. A claim
// without the fingerprint (launched before Tailor recorded it) has not drifted.
func launchDrifted(o *ownedNode) bool {
	launchedWith := o.claim.Annotations[v1alpha1.AnnotationPoolHash]
	return launchedWith != "" && launchedWith != o.pool.LaunchHash() || imageDrifted(o) != ""
}

// imageDrifted is the image the pool's AMI alias resolves to now, if the node launched with
// another ("" if not: the lifecycle records it on the claim).
func imageDrifted(o *ownedNode) string { return o.claim.Annotations[v1alpha1.AnnotationImageDrift] }

// expired says whether the node is older than its pool's expireAfter.
func expired(s *snapshot, o *ownedNode) bool {
	after := o.pool.Disruption.ExpireAfter.Duration
	return after > 0 && s.now.Sub(o.node.CreationTimestamp.Time) >= after
}

// due says whether the node is drifted, expired, or its spot instance one EC2 recommends
// rebalancing: it is renewed, whatever else holds for it.
func due(s *snapshot, o *ownedNode) bool {
	return launchDrifted(o) || expired(s, o) || rebalanceRecommendedAt(o.node) != ""
}

// underutilized says whether the node is one the delete, merge and replace methods look at: idle
// since a pod last came or went and since the last scale-up, with pods to move, in a pool
// consolidated when underutilized, and not up for renewal.
func underutilized(s *snapshot, c *candidate) bool {
	return !interrupted(c.ownedNode) && !due(s, c.ownedNode) && idle(s, c.ownedNode) && pastScaleUp(s, c.ownedNode) && len(c.evict) > 0 &&
		c.pool.Disruption.ConsolidationPolicy == config.WhenEmptyOrUnderutilized
}
