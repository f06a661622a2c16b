package provisioning

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// A controller creates a rollout's pods at its own pace (kube-controller-manager's client allows
// about 20 a second), so a batch of one second sees a twentieth of a 400-replica scale-up: planned
// wave by wave, the rollout gets a node or two per wave, each sized to that wave, and the fleet it
// ends with is far from what one plan of all its pods gives. The pods a batch's workloads will
// still create are therefore planned with the batch, as copies of a pod of theirs already here
// (same spec, labels and PreFilter state, so the same Filter verdicts): the claims record them as
// ExpectedPods, the room is kept for them (Tailor's Filter) and the scheduler prefers those nodes
// for them as they come (Score), and consolidation leaves the nodes alone while the workloads
// still create pods. (Planning the pods of a zone spread as they come instead gave the burst of
// issue 20 many small nodes: each wave spread over every zone.)

// expectedPlanFresh is how long a workload's planned rollout stands: within it, the pods it
// still creates were planned already; past it (a rollout that stalled, or whose claims failed),
// its pods are planned as they come.
const expectedPlanFresh = 2 * time.Minute

// expectedUIDPrefix marks the UIDs of pods planned before their controller created them.
const expectedUIDPrefix = "expected:"

// isExpected says whether a planned pod is one its controller has not created yet.
func isExpected(p *planning.Pod) bool { return strings.HasPrefix(string(p.Pod.UID), expectedUIDPrefix) }

// rolloutPlans remembers, per workload, how many pods the plans so far provided for.
type rolloutPlans struct {
	mu      sync.Mutex
	planned map[types.UID]rolloutPlan
}

type rolloutPlan struct {
	// target is how many pods the workload wanted when its rollout was last planned.
	target int
	at     time.Time
}

// covered returns how many of w's pods earlier plans provided for, forgetting stale plans.
func (r *rolloutPlans) covered(w types.UID, now time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	for uid, p := range r.planned {
		if now.Sub(p.at) > expectedPlanFresh {
			delete(r.planned, uid)
		}
	}
	return r.planned[w].target
}

func (r *rolloutPlans) record(w types.UID, target int, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.planned == nil {
		r.planned = map[types.UID]rolloutPlan{}
	}
	r.planned[w] = rolloutPlan{target: target, at: now}
}

// expected returns the pods the workloads of pods will still create and no earlier plan
// provided for, and the workload of every pod (the batch's and those returned) that has one.
func (p *Provisioner) expected(pods []*planning.Pod) ([]*planning.Pod, map[types.UID]rollout.Workload) {
	shares := map[types.UID]rollout.Workload{}
	if p.Rollouts == nil {
		return nil, shares
	}
	now := p.clock().Now()
	siblings := map[types.UID]*planning.Pod{}
	var order []rollout.Workload
	for _, pod := range pods {
		w, ok := p.Rollouts.Of(pod.Pod)
		if !ok || pod.Filter == nil {
			continue
		}
		shares[pod.Pod.UID] = w
		if _, seen := siblings[w.UID]; !seen {
			siblings[w.UID] = pod
			order = append(order, w)
		}
	}
	// A workload that has created no pod yet is planned from a pod as it will create it:
	// kube-controller-manager syncs five ReplicaSets at a time, so in a burst of many
	// Deployments the last ones start creating pods only once the first are done, a minute
	// later, and their pods, planned then, found the nodes planned without them full.
	if p.Upcoming != nil {
		for _, pod := range p.Upcoming() {
			if p.GangMember(pod.Pod) {
				continue // a gang is planned once its pods exist, whole (gangs.go)
			}
			w, ok := p.Rollouts.Of(pod.Pod)
			if _, seen := siblings[w.UID]; !ok || seen || pod.Filter == nil {
				continue
			}
			siblings[w.UID] = pod
			order = append(order, w)
		}
	}
	var out []*planning.Pod
	for _, w := range order {
		missing := w.Wants - max(p.providedFor(w, shares), p.rollouts.covered(w.UID, now))
		if missing <= 0 {
			continue
		}
		for i := range missing {
			e := expectedPod(siblings[w.UID], w, w.Wants, i)
			shares[e.Pod.UID] = w
			out = append(out, e)
		}
		p.rollouts.record(w.UID, w.Wants, now)
	}
	return out, shares
}

// covered says whether every pod's workload is still creating pods: their pods still to come
// are planned with the batch (see expected), so it need not wait for them. Each workload is
// looked at once: a batch may hold hundreds of its pods. While a Deployment of the profile has
// no ReplicaSet for its spec yet, the batch waits (up to its longest): that Deployment's pods
// to come are planned with the others only once the ReplicaSet is there.
func (p *Provisioner) covered(pods []*planning.Pod) bool {
	if p.Rollouts == nil || p.Rollouts.Unsynced() {
		return false
	}
	seen := map[types.UID]bool{}
	for _, pod := range pods {
		w, ok := p.Rollouts.Of(pod.Pod)
		if !ok || pod.Filter == nil {
			return false
		}
		if seen[w.UID] {
			continue
		}
		if w.Wants <= p.Rollouts.Live(w) {
			return false
		}
		seen[w.UID] = true
	}
	return true
}

// providedFor counts w's live pods that need no plan from this batch: those with a node, those
// the ledger holds on a claim, and the batch's own. The rest were created after the batch was
// taken (during a burst, a second's worth): they come in the next batch, and are planned now
// among the pods still to come, so that batch finds room kept for them rather than planning
// nodes of its own.
func (p *Provisioner) providedFor(w rollout.Workload, batch map[types.UID]rollout.Workload) int {
	n := 0
	for _, pod := range p.Rollouts.LivePods(w) {
		_, inBatch := batch[pod.UID]
		if inBatch || pod.Spec.NodeName != "" || p.onClaim(pod.UID) {
			n++
		}
	}
	return n
}

func (p *Provisioner) onClaim(pod types.UID) bool {
	if p.Ledger == nil {
		return false
	}
	_, ok := p.Ledger.Lookup(pod)
	return ok
}

// expectedPod is the i-th pod w will still create towards target, as a copy of sibling: its spec,
// labels and PreFilter state.
func expectedPod(sibling *planning.Pod, w rollout.Workload, target, i int) *planning.Pod {
	s := sibling.Pod
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: fmt.Sprintf("%s-expected-%d-%d", w.Name, target, i),
			UID:    types.UID(fmt.Sprintf("%s%s/%d/%d", expectedUIDPrefix, w.UID, target, i)),
			Labels: s.Labels, Annotations: s.Annotations, OwnerReferences: s.OwnerReferences},
		Spec: *s.Spec.DeepCopy(),
	}
	pod.Spec.NodeName = ""
	return planning.NewPod(pod, &planning.FilterState{Plugins: sibling.Filter.Plugins, State: sibling.Filter.State.Clone(), Pod: pod})
}

// expectedOn lists, per workload with expected pods on a planned node, how many of its pods the
// node holds (those already here included).
func expectedOn(n *planning.PlannedNode, shares map[types.UID]rollout.Workload) []v1alpha1.ExpectedPods {
	count, requests := map[types.UID]int{}, map[types.UID]corev1.ResourceList{}
	var order []rollout.Workload
	for _, p := range n.Pods {
		w, ok := shares[p.Pod.UID]
		if !ok {
			continue
		}
		if count[w.UID] == 0 {
			order = append(order, w)
		}
		count[w.UID]++
		if isExpected(p) {
			requests[w.UID] = p.Requests
		}
	}
	var out []v1alpha1.ExpectedPods
	for _, w := range order {
		if r, ok := requests[w.UID]; ok {
			out = append(out, v1alpha1.ExpectedPods{Kind: w.Kind, Namespace: w.Namespace, Name: w.Name, UID: string(w.UID), Count: count[w.UID], Requests: r})
		}
	}
	return out
}

// stillExpected says whether a workload the claim expects pods of still wants more pods than
// it has: the node is still wanted though no pod waits for it yet.
func (l *Reservations) stillExpected(c *v1alpha1.Claim) bool {
	for _, e := range c.Spec.ExpectedPods {
		if creating(l.Rollouts, e) {
			return true
		}
	}
	return false
}

// creating says whether the workload a claim expects pods of still wants more pods than it has.
func creating(rollouts *rollout.Lister, e v1alpha1.ExpectedPods) bool {
	if rollouts == nil {
		return false
	}
	w, ok := rollouts.Get(e.Kind, e.Namespace, e.Name, types.UID(e.UID))
	return ok && w.Wants > rollouts.Live(w)
}
