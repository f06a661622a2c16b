package provisioning

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// expectationsStand bounds how long after its claim was made a node keeps room for pods still
// to come, whatever their workloads do: a rollout of thousands of pods reaches the scheduler over
// a few minutes.
const expectationsStand = 10 * time.Minute

// waitingFor is how long an answer of Expectations.Waiting is reused: it lists the workload's pods.
const waitingFor = 2 * time.Second

// Expectations are the claims that keep room for pods their workloads have not placed yet
// (ExpectedPods), as the scheduler's Filter and Score read them: the room planned for a
// workload's pods still to come is not free for other pods (Reserved), and a pod of such a
// workload prefers a node that still has room planned for it (Preference). Without this, the
// scheduler's own scoring (least allocated first) would put the first pods to come on the
// emptiest nodes, whatever they were planned for, and the pods planned there would find their
// room taken and get nodes of their own. The claims informer is its only writer.
type Expectations struct {
	// Clock reads the time; default the real one.
	Clock clock.PassiveClock
	// Waiting, if set, says whether a workload still has pods to place (to create, or created
	// and not yet on a node): the room kept for it stands only while it does.
	Waiting func(v1alpha1.ExpectedPods) bool
	// DaemonSetExists, if set, says whether a DaemonSet is still there: the room a node keeps
	// for its pod stands only while it is.
	DaemonSetExists func(v1alpha1.DaemonPod) bool

	mu      sync.RWMutex
	byClaim map[string]claimExpectations
	answers map[string]waitingAnswer
}

type claimExpectations struct {
	made     time.Time
	expected []v1alpha1.ExpectedPods
	daemons  []v1alpha1.DaemonPod
}

type waitingAnswer struct {
	waiting bool
	at      time.Time
}

// outstanding is a workload's pods still to come on one node: how many, and what each requests.
// A DaemonSet's pod (daemon) is the node's own: no other node is planned for it.
type outstanding struct {
	workload types.UID
	pods     int
	requests corev1.ResourceList
	daemon   bool
}

// Follow records the claim's expectations as it is now.
func (e *Expectations) Follow(c *v1alpha1.Claim) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(c.Spec.ExpectedPods)+len(c.Spec.Daemons) == 0 || c.DeletionTimestamp != nil || c.Status.Phase == v1alpha1.ClaimFailed {
		e.drop(c.Name)
		return
	}
	if e.byClaim == nil {
		e.byClaim = map[string]claimExpectations{}
	}
	e.byClaim[c.Name] = claimExpectations{made: c.CreationTimestamp.Time, expected: c.Spec.ExpectedPods, daemons: c.Spec.Daemons}
}

// Forget drops a deleted claim.
func (e *Expectations) Forget(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.drop(name)
}

// drop forgets a claim, and the workloads' answers once no claim is left; e.mu is held.
func (e *Expectations) drop(name string) {
	delete(e.byClaim, name)
	if len(e.byClaim) == 0 {
		e.answers = nil
	}
}

// Any says whether some claim keeps room for pods still to come: if none does, there is
// nothing to filter or score.
func (e *Expectations) Any() bool {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.byClaim) > 0
}

// outstandingOn lists the workloads whose pods still to come have room on the node of claim
// (none: ""), and the DaemonSets whose pod is not there yet; onNode counts a workload's pods on
// the node.
func (e *Expectations) outstandingOn(claim string, onNode func(types.UID) int) []outstanding {
	e.mu.RLock()
	ce, ok := e.byClaim[claim]
	e.mu.RUnlock()
	if !ok || e.now().Sub(ce.made) > expectationsStand {
		return nil
	}
	var out []outstanding
	for _, x := range ce.expected {
		w := types.UID(x.UID)
		if n := x.Count - onNode(w); n > 0 && e.waiting(x) {
			out = append(out, outstanding{workload: w, pods: n, requests: x.Requests})
		}
	}
	for _, d := range ce.daemons {
		ds := types.UID(d.UID)
		if onNode(ds) == 0 && (e.DaemonSetExists == nil || e.DaemonSetExists(d)) {
			out = append(out, outstanding{workload: ds, pods: 1, requests: d.Requests, daemon: true})
		}
	}
	return out
}

// Reserved is the room on the node of claim kept for pods still to come of workloads other than
// w: each resource their requests times how many of them are still to come.
func (e *Expectations) Reserved(claim string, w types.UID, onNode func(types.UID) int) corev1.ResourceList {
	var out corev1.ResourceList
	for _, o := range e.outstandingOn(claim, onNode) {
		if o.workload == w {
			continue
		}
		if out == nil {
			out = corev1.ResourceList{}
		}
		for name, q := range o.requests {
			sum := out[name]
			for range o.pods {
				sum.Add(q)
			}
			out[name] = sum
		}
		pods := out[corev1.ResourcePods]
		pods.Add(*resource.NewQuantity(int64(o.pods), resource.DecimalSI))
		out[corev1.ResourcePods] = pods
	}
	return out
}

// Preference is how the node of claim suits a pod of workload w (none: ""), out of maxScore:
// all of it if the node still has room planned for w's pods, none if its room is planned for
// other workloads' pods only, half otherwise. The room kept for DaemonSet pods plans the node
// for nobody else.
func (e *Expectations) Preference(claim string, w types.UID, onNode func(types.UID) int, maxScore int64) int64 {
	others := false
	for _, o := range e.outstandingOn(claim, onNode) {
		switch {
		case o.daemon:
		case w != "" && o.workload == w:
			return maxScore
		default:
			others = true
		}
	}
	if others {
		return 0
	}
	return maxScore / 2
}

// waiting is Waiting's answer for x, reused for a little while.
func (e *Expectations) waiting(x v1alpha1.ExpectedPods) bool {
	if e.Waiting == nil {
		return true
	}
	now := e.now()
	e.mu.RLock()
	a, ok := e.answers[x.UID]
	e.mu.RUnlock()
	if ok && now.Sub(a.at) < waitingFor {
		return a.waiting
	}
	a = waitingAnswer{waiting: e.Waiting(x), at: now}
	e.mu.Lock()
	if e.answers == nil {
		e.answers = map[string]waitingAnswer{}
	}
	e.answers[x.UID] = a
	e.mu.Unlock()
	return a.waiting
}

func (e *Expectations) now() time.Time {
	if e.Clock == nil {
		return time.Now()
	}
	return e.Clock.Now()
}

// Refusal says why pod does not fit the node ni once the room kept there for other workloads'
// pods still to come, and for DaemonSet pods not there yet, is taken out ("" if it fits, or if no
// room is kept there). A DaemonSet's pod belongs to the node, whose plan counted it: it is never
// refused.
func (e *Expectations) Refusal(pod *corev1.Pod, ni fwk.NodeInfo) string {
	claim, w, onNode, ok := e.about(pod, ni)
	if !ok {
		return ""
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && ref.Kind == "DaemonSet" {
		return ""
	}
	reserved := e.Reserved(claim, w, onNode)
	if len(reserved) == 0 {
		return ""
	}
	req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	alloc, used := ni.GetAllocatable(), ni.GetRequested()
	switch {
	case alloc.GetMilliCPU()-used.GetMilliCPU()-reserved.Cpu().MilliValue() < req.Cpu().MilliValue():
		return "the node's free cpu is kept for pods still to come it was launched for"
	case alloc.GetMemory()-used.GetMemory()-reserved.Memory().Value() < req.Memory().Value():
		return "the node's free memory is kept for pods still to come it was launched for"
	case int64(alloc.GetAllowedPodNumber()-len(ni.GetPods()))-reserved.Pods().Value() < 1:
		return "the node's free pod slots are kept for pods still to come it was launched for"
	}
	return ""
}

// Score is Preference for pod on the node ni.
func (e *Expectations) Score(pod *corev1.Pod, ni fwk.NodeInfo, maxScore int64) int64 {
	claim, w, onNode, ok := e.about(pod, ni)
	if !ok {
		return maxScore / 2
	}
	return e.Preference(claim, w, onNode, maxScore)
}

// about returns the claim of the node ni, the workload of pod and how to count a workload's
// pods on the node; ok is false if the node is no claim's or no claim keeps room.
func (e *Expectations) about(pod *corev1.Pod, ni fwk.NodeInfo) (claim string, w types.UID, onNode func(types.UID) int, ok bool) {
	node := ni.Node()
	if node == nil || !e.Any() {
		return "", "", nil, false
	}
	if claim = node.Labels[v1alpha1.LabelClaim]; claim == "" {
		return "", "", nil, false
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		w = ref.UID
	}
	// Counted once, when first asked: Filter and Score ask per expected workload, on every
	// node, for every pod.
	var counts map[types.UID]int
	onNode = func(x types.UID) int {
		if counts == nil {
			counts = map[types.UID]int{}
			for _, p := range ni.GetPods() {
				if ref := metav1.GetControllerOfNoCopy(p.GetPod()); ref != nil {
					counts[ref.UID]++
				}
			}
		}
		return counts[x]
	}
	return claim, w, onNode, true
}
