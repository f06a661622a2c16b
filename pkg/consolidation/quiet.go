package consolidation

import (
	"context"
	"hash"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// A settled cluster is not simulated again and again to the same answer. Once passes have found
// nothing to do over every candidate (the replace method asks about a few per pass, in turn),
// the passes that follow skip deciding, the simulation over every node and pod that is most of
// a pass's CPU and memory, until something changes that could give a decision (its
// fingerprint) or time alone could (quietUntil). Karpenter keeps the same "consolidated"
// state. Drains, interruptions and the bookkeeping of each pass go on as before.

// maxQuiet bounds a quiet spell: prices and offerings change without an event, so a settled
// cluster is looked at again over a full rotation at least this often.
const maxQuiet = 5 * time.Minute

// scheduledBudgetQuiet bounds a quiet spell while a pool's budget follows a schedule: a
// window that opens may allow a move the last pass was refused.
const scheduledBudgetQuiet = time.Minute

// quiet is what the fruitless passes since the last change saw.
type quiet struct {
	fingerprint uint64
	// fruitless counts the passes in a row that found nothing with this fingerprint.
	fruitless int
	// until, once set, is when the quiet spell ends.
	until time.Time
}

// holds says whether a pass with fingerprint fp at now may skip deciding.
func (q *quiet) holds(fp uint64, now time.Time) bool {
	return !q.until.IsZero() && fp == q.fingerprint && now.Before(q.until)
}

// fruitlessPass notes a pass that found nothing over candidates with fingerprint fp; the spell
// starts once such passes have asked about every candidate, and lasts until until.
func (q *quiet) fruitlessPass(fp uint64, candidates int, until time.Time) {
	if fp != q.fingerprint || !q.until.IsZero() {
		// Changed, or a spell ended: every candidate is asked about again before the next.
		*q = quiet{fingerprint: fp}
	}
	q.fruitless++
	if q.fruitless*maxReplaceQuestions >= candidates {
		q.until = until
	}
}

// reset forgets the fruitless passes: this one found something, or could not look at all.
func (q *quiet) reset() { *q = quiet{} }

// fingerprint sums what a fruitless pass's answer rests on beyond the pods that arrived since
// (a pod arriving only takes room): how many pods had left when it listed them (s.deletions),
// each node's room and who may use it (labels, taints, cordon, allocatable, readiness,
// deletion, Tailor's marks), each claim's and each PodDisruptionBudget's version. A sum of
// per-object hashes, so the caches' order does not matter. A Node's status heartbeats change its
// resourceVersion and a Node has no generation, so its fields are hashed, not its version.
func fingerprint(s *snapshot) uint64 {
	sum := s.deletions
	for _, n := range s.nodes {
		sum += nodeHash(n)
	}
	for _, c := range s.claims {
		sum += hashOf("claim", c.Name, c.ResourceVersion)
	}
	for _, p := range s.pdbs {
		sum += hashOf("pdb", p.Namespace, p.Name, p.ResourceVersion)
	}
	return sum
}

// nodeHash hashes what of a node a decision reads.
func nodeHash(n *corev1.Node) uint64 {
	h := fnv.New64a()
	write(h, n.Name, strconv.FormatBool(n.Spec.Unschedulable), strconv.FormatBool(n.DeletionTimestamp != nil),
		strconv.FormatBool(lifecycle.Ready(n)), interruption(n), n.Annotations[v1alpha1.AnnotationDoNotDisrupt])
	for _, k := range slices.Sorted(maps.Keys(n.Labels)) {
		write(h, k, n.Labels[k])
	}
	for _, t := range n.Spec.Taints {
		write(h, t.Key, t.Value, string(t.Effect))
	}
	for _, r := range slices.Sorted(maps.Keys(n.Status.Allocatable)) {
		q := n.Status.Allocatable[r]
		write(h, string(r), q.String())
	}
	return h.Sum64()
}

// hashOf hashes parts, each ended by a zero byte so that ("ab", "c") and ("a", "bc") differ.
func hashOf(parts ...string) uint64 {
	h := fnv.New64a()
	write(h, parts...)
	return h.Sum64()
}

func write(h hash.Hash64, parts ...string) {
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
}

// quietUntil is the first moment time alone could give a decision the pass did not find: a
// candidate's consolidateAfter passing since a pod last came or went on it or since the last
// scale-up, a node reaching its pool's expireAfter, a decision this process remembers lapsing
// (decided); never later than maxQuiet from now, or scheduledBudgetQuiet while a pool's budget
// follows a schedule.
func quietUntil(s *snapshot, candidates []*ownedNode, decided map[string]time.Time) time.Time {
	until := s.now.Add(maxQuiet)
	earlier := func(t time.Time) {
		if t.After(s.now) && t.Before(until) {
			until = t
		}
	}
	for _, o := range candidates {
		for _, b := range o.pool.Disruption.Budgets {
			if b.Schedule != "" {
				earlier(s.now.Add(scheduledBudgetQuiet))
			}
		}
		if after := o.pool.Disruption.ConsolidateAfter.Duration; after > 0 {
			earlier(o.idleSince.Add(after))
			earlier(s.scaledUpAt.Add(after))
		}
		if after := o.pool.Disruption.ExpireAfter.Duration; after > 0 {
			earlier(o.node.CreationTimestamp.Add(after))
		}
	}
	for _, t := range decided {
		earlier(t.Add(decidedMemory))
	}
	return until
}

// noteQuiet counts a pass that found nothing (fruitless) towards a quiet spell, or ends the count.
// A kept node (a budget used up, a blocking pod or PodDisruptionBudget) is something found: the
// pass may be refused less next time, for reasons the fingerprint does not follow.
func (c *Controller) noteQuiet(ctx context.Context, s *snapshot, fruitless bool, fp uint64) {
	if !fruitless {
		c.quiet.reset()
		return
	}
	c.mu.Lock()
	until := quietUntil(s, s.owned, c.decided)
	c.mu.Unlock()
	was := c.quiet.until
	c.quiet.fruitlessPass(fp, len(s.owned), until)
	if was.IsZero() && !c.quiet.until.IsZero() {
		klog.FromContext(ctx).V(2).Info("Nothing to consolidate: not deciding again until the cluster changes", "until", c.quiet.until, "candidates", len(s.owned))
	}
}
