package consolidation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A quiet spell starts once fruitless passes with one fingerprint have asked about every
// candidate, holds while the fingerprint stays and until its end, and a change, or the end of
// a spell, starts the count again.
func TestQuietSpell(t *testing.T) {
	now := time.Now()
	until := now.Add(time.Minute)
	const candidates = 2*maxReplaceQuestions + 1 // three passes ask about every one
	type pass struct {
		fp  uint64
		at  time.Time
		ran bool // the pass decided (holds was false); a pass that ran found nothing
	}
	for _, tc := range []struct {
		name   string
		passes []pass
	}{
		{"three fruitless passes cover the candidates, then the spell holds", []pass{
			{1, now, true}, {1, now, true}, {1, now, true}, {1, now, false}, {1, now.Add(59 * time.Second), false}}},
		{"a change before the rotation is done starts the count again", []pass{
			{1, now, true}, {1, now, true}, {2, now, true}, {2, now, true}, {2, now, true}, {2, now, false}}},
		{"a change during the spell ends it", []pass{
			{1, now, true}, {1, now, true}, {1, now, true}, {3, now, true}, {3, now, true}}},
		{"the spell's end makes every candidate be asked about again", []pass{
			{1, now, true}, {1, now, true}, {1, now, true}, {1, until, true}, {1, until, true}, {1, until, true}, {1, until, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var q quiet
			for i, p := range tc.passes {
				if got := !q.holds(p.fp, p.at); got != p.ran {
					t.Fatalf("pass %d (fingerprint %d at +%s): ran %v, want %v", i, p.fp, p.at.Sub(now), got, p.ran)
				}
				if p.ran {
					q.fruitlessPass(p.fp, candidates, until.Add(p.at.Sub(now)))
				}
			}
		})
	}
}

func TestQuietSpellEndsWhenAPassFindsSomething(t *testing.T) {
	now := time.Now()
	var q quiet
	q.fruitlessPass(1, 1, now.Add(time.Minute))
	if !q.holds(1, now) {
		t.Fatal("one fruitless pass over one candidate: want a quiet spell")
	}
	q.reset()
	if q.holds(1, now) {
		t.Error("after a pass that found something, the spell still holds")
	}
}

// The fingerprint follows what can turn "nothing to do" into a decision, and not the pods that
// arrive: they only take room.
func TestFingerprint(t *testing.T) {
	w := newWorld(t)
	base := func() *snapshot {
		s := w.snapshot(1, nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.xlarge")), w.pod("p", "a", "1"))
		s.claims = []*v1alpha1.Claim{{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "10"}}}
		s.pdbs = []*policyv1.PodDisruptionBudget{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pdb", ResourceVersion: "5"}}}
		s.deletions = 7
		for _, n := range s.nodes {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		}
		return s
	}
	want := fingerprint(base())
	for _, tc := range []struct {
		name      string
		change    func(s *snapshot)
		deletions uint64
		same      bool
	}{
		{"nothing changed", func(*snapshot) {}, 7, true},
		{"a pod arrived", func(s *snapshot) { s.pods = append(s.pods, w.pod("q", "b", "1")) }, 7, true},
		{"the nodes listed in another order", func(s *snapshot) { s.nodes[0], s.nodes[1] = s.nodes[1], s.nodes[0] }, 7, true},
		{"a pod left", func(*snapshot) {}, 8, false},
		{"a node is cordoned", func(s *snapshot) { s.nodes[0].Spec.Unschedulable = true }, 7, false},
		{"a node is tainted", func(s *snapshot) {
			s.nodes[0].Spec.Taints = append(s.nodes[0].Spec.Taints, corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule})
		}, 7, false},
		{"a node is labelled", func(s *snapshot) { s.nodes[0].Labels["team"] = "blue" }, 7, false},
		{"a node's allocatable changed", func(s *snapshot) { s.nodes[0].Status.Allocatable = nil }, 7, false},
		{"a node's status heartbeat", func(s *snapshot) {
			s.nodes[0].ResourceVersion = "99"
			s.nodes[0].Status.Conditions[0].LastHeartbeatTime = metav1.NewTime(w.now)
		}, 7, true},
		{"a node is being deleted", func(s *snapshot) { s.nodes[1].DeletionTimestamp = &metav1.Time{Time: w.now} }, 7, false},
		{"a node is no longer Ready", func(s *snapshot) { s.nodes[1].Status.Conditions[0].Status = corev1.ConditionFalse }, 7, false},
		{"a node is interrupted", func(s *snapshot) {
			s.nodes[0].Annotations = map[string]string{v1alpha1.AnnotationInterrupted: InterruptionSpot}
		}, 7, false},
		{"a node lost its do-not-disrupt annotation", func(s *snapshot) {
			s.nodes[0].Annotations = map[string]string{v1alpha1.AnnotationDoNotDisrupt: "false"}
		}, 7, false},
		{"a node was added", func(s *snapshot) { s.nodes = append(s.nodes, w.node("c", "m6g.xlarge").node) }, 7, false},
		{"a claim changed", func(s *snapshot) { s.claims[0].ResourceVersion = "11" }, 7, false},
		{"a PodDisruptionBudget changed", func(s *snapshot) { s.pdbs[0].ResourceVersion = "6" }, 7, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(s)
			s.deletions = tc.deletions
			if got := fingerprint(s) == want; got != tc.same {
				t.Errorf("fingerprint unchanged: %v, want %v", got, tc.same)
			}
		})
	}
}

func TestQuietUntil(t *testing.T) {
	w := newWorld(t)
	for _, tc := range []struct {
		name    string
		pool    func(p *config.Pool)
		node    nodeOpt
		scaled  time.Duration // since the last scale-up (0: never)
		decided time.Duration // since a decision this process remembers (0: none)
		want    time.Duration
	}{
		{"idle long since, no timer: maxQuiet", nil, nil, 0, 0, maxQuiet},
		{"a pod came 10s ago: consolidateAfter (30s) from then", nil, func(w *world, o *ownedNode) { o.idleSince = w.now.Add(-10 * time.Second) }, 0, 0, 20 * time.Second},
		{"a scale-up 25s ago", nil, nil, 25 * time.Second, 0, 5 * time.Second},
		{"expiry in 10 minutes is later than maxQuiet", expiringIn(70 * time.Minute), nil, 0, 0, maxQuiet},
		{"expiry in 2 minutes", expiringIn(62 * time.Minute), nil, 0, 0, 2 * time.Minute},
		{"a remembered decision lapses", nil, nil, 0, 20 * time.Second, decidedMemory - 20*time.Second},
		{"a scheduled budget", func(p *config.Pool) {
			p.Disruption.Budgets = []config.Budget{{Nodes: "0", Schedule: "0 9 * * *", Duration: metav1.Duration{Duration: time.Hour}}}
		}, nil, 0, 0, scheduledBudgetQuiet},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pool := *w.pool
			if tc.pool != nil {
				tc.pool(&pool)
			}
			o := w.node("a", "m6g.xlarge")
			o.pool = &pool
			if tc.node != nil {
				tc.node(w, o)
			}
			s := w.snapshot(1, nodes(o))
			if tc.scaled > 0 {
				s.scaledUpAt = w.now.Add(-tc.scaled)
			}
			decided := map[string]time.Time{}
			if tc.decided > 0 {
				decided["x"] = w.now.Add(-tc.decided)
			}
			if got := quietUntil(s, s.owned, decided).Sub(w.now); got != tc.want {
				t.Errorf("quiet for %s, want %s", got, tc.want)
			}
		})
	}
}

// expiringIn sets the pool's expireAfter; the world's nodes are an hour old.
func expiringIn(d time.Duration) func(p *config.Pool) {
	return func(p *config.Pool) { p.Disruption.ExpireAfter = metav1.Duration{Duration: d} }
}
