package provisioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// Gangs: Coscheduling binds the pods of a PodGroup (the label scheduling.x-k8s.io/pod-group) only
// once minMember of them have a node (its Permit). Nodes launched for part of a gang sit idle until
// Permit gives up, so provisioning plans a gang whole: once minMember of its pods exist and enough
// of them wait, in a plan of its own (one zone unless its pods' constraints spread it), and records
// its claims together (spec.gang) for the lifecycle to launch together or not at all. A gang that
// cannot be whole gets no claim, and an event on its PodGroup and its pods says why.

// Why a gang waits (the reason label of tailor_provisioning_gangs_waiting).
const (
	GangIncomplete   = "incomplete"
	GangNoPodGroup   = "no_podgroup"
	GangPoolLimit    = "pool_limit"
	GangUnplannable  = "unplannable"
	GangNotRecorded  = "not_recorded"
	gangBackoffStart = 30 * time.Second
	gangBackoffMax   = 5 * time.Minute
)

// gang is a PodGroup's pods in a batch.
type gang struct {
	key   string // namespace/name
	group *schedv1alpha1.PodGroup
	pods  []*planning.Pod
}

// gangOf is the name of the pod's PodGroup, "" for a pod of none.
func gangOf(pod *corev1.Pod) string { return pod.Labels[schedv1alpha1.PodGroupLabel] }

// gangState is what provisioning remembers of gangs between batches.
type gangState struct {
	mu sync.Mutex
	// held are gang pods waiting for siblings that have not failed to schedule yet: they join
	// the next batch, or go back to the batcher when a sibling is reserved a node.
	held map[types.UID]*planning.Pod
	// reserved are gang pods the scheduler reserved a node for, with the state of that cycle: they
	// wait at Coscheduling's Permit for the rest, and are planned with them (see gangReady).
	reserved map[types.UID]*planning.Pod
	// untried are gang pods for which the scheduler tried no node (Coscheduling's PreFilter
	// turned them away while their gang was short of pods).
	untried map[types.UID]bool
	// waiting says why each gang that got no claim waits (tailor_provisioning_gangs_waiting).
	waiting map[string]string
	backoff *flowcontrol.Backoff
}

func (g *gangState) init() {
	if g.held == nil {
		g.held, g.waiting, g.reserved, g.untried = map[types.UID]*planning.Pod{}, map[string]string{}, map[types.UID]*planning.Pod{}, map[types.UID]bool{}
		g.backoff = flowcontrol.NewBackOffWithJitter(gangBackoffStart, gangBackoffMax, 0.2)
	}
}

// hold keeps pods for the next batch.
func (g *gangState) hold(pods []*planning.Pod) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	for _, p := range pods {
		g.held[p.Pod.UID] = p
	}
}

// withHeld adds the held pods to a batch; a pod in both is the batch's, the newer attempt.
func (g *gangState) withHeld(batch []*planning.Pod) []*planning.Pod {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.held) == 0 {
		return batch
	}
	for _, p := range batch {
		delete(g.held, p.Pod.UID)
	}
	for _, p := range g.held {
		batch = append(batch, p)
	}
	g.held = map[types.UID]*planning.Pod{}
	return batch
}

// forget drops a deleted pod.
func (g *gangState) forget(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.held, uid)
	delete(g.reserved, uid)
	delete(g.untried, uid)
}

// markUntried notes that no node was tried for a gang's pod.
func (g *gangState) markUntried(pod *corev1.Pod) {
	if gangOf(pod) == "" {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.untried[pod.UID] = true
}

// takeUntried returns whether no node was tried for the pod, and forgets it.
func (g *gangState) takeUntried(uid types.UID) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	untried := g.untried[uid]
	delete(g.untried, uid)
	return untried
}

// reservedPod is the gang pod the scheduler reserved a node for, or nil.
func (g *gangState) reservedPod(uid types.UID) *planning.Pod {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reserved[uid]
}

// GangMember says whether provisioning plans the pod as a gang's.
func (p *Provisioner) GangMember(pod *corev1.Pod) bool {
	return p.PodGroups != nil && gangOf(pod) != ""
}

// GangMemberReserved notes that the scheduler reserved a node for a gang's pod, which now waits at
// Permit for its siblings, and sends the siblings held for it back to the batcher: with it they
// may make the gang's minMember. pod carries the state of the cycle that reserved it.
func (p *Provisioner) GangMemberReserved(pod *planning.Pod) {
	g := &p.gangs
	g.mu.Lock()
	g.init()
	g.reserved[pod.Pod.UID] = pod
	var siblings []*planning.Pod
	for uid, h := range g.held {
		if h.Pod.Namespace == pod.Pod.Namespace && gangOf(h.Pod) == gangOf(pod.Pod) {
			siblings = append(siblings, h)
			delete(g.held, uid)
		}
	}
	g.mu.Unlock()
	for _, s := range siblings {
		p.batcher.Add(s)
	}
}

// GangMemberUnreserved notes that a gang's pod lost its node (Permit gave up, or binding failed),
// or no longer needs its reservation noted (it is bound).
func (p *Provisioner) GangMemberUnreserved(pod *corev1.Pod) {
	g := &p.gangs
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.reserved, pod.UID)
}

// wait records why a gang waits and returns how long until its pods are planned again.
func (g *gangState) wait(key, reason string, now time.Time) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.waiting[key] = reason
	if !g.backoff.IsInBackOffSinceUpdate(key, now) {
		g.backoff.Next(key, now)
	}
	return g.backoff.Get(key)
}

// provisioned forgets why a gang waited: it has its claims.
func (g *gangState) provisioned(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	delete(g.waiting, key)
	g.backoff.Reset(key)
}

// GangsWaiting counts the gangs that got no claim, by why. A gang none of whose pods waits any
// more (all bound, or gone) is forgotten.
func (p *Provisioner) GangsWaiting() map[string]int {
	g := &p.gangs
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]int{GangIncomplete: 0, GangNoPodGroup: 0, GangPoolLimit: 0, GangUnplannable: 0, GangNotRecorded: 0}
	for key, reason := range g.waiting {
		ns, name, _ := strings.Cut(key, "/")
		members, err := p.Pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{schedv1alpha1.PodGroupLabel: name}))
		if err == nil && !slices.ContainsFunc(members, func(m *corev1.Pod) bool { return m.Spec.NodeName == "" && m.DeletionTimestamp == nil }) {
			delete(g.waiting, key)
			continue
		}
		out[reason]++
	}
	return out
}

// splitGangs takes the pods of gangs out of the batch and returns the gangs ready to plan: their
// PodGroup exists, at least minMember of its pods exist, and those that wait in the batch and
// those already placed (bound, or on a claim) make minMember. A gang short of pods that exist is
// explained and left to Coscheduling, which retries its pods as siblings are created; one whose
// siblings exist but have not failed to schedule yet is held for the batch they come in.
func (p *Provisioner) splitGangs(ctx context.Context, pods []*planning.Pod) (solo []*planning.Pod, gangs []*gang) {
	if p.PodGroups == nil {
		return pods, nil
	}
	byGang := map[string]*gang{}
	for _, pod := range pods {
		name := gangOf(pod.Pod)
		if name == "" {
			solo = append(solo, pod)
			continue
		}
		key := pod.Pod.Namespace + "/" + name
		if byGang[key] == nil {
			byGang[key] = &gang{key: key}
			gangs = append(gangs, byGang[key])
		}
		byGang[key].pods = append(byGang[key].pods, pod)
	}
	return solo, slices.DeleteFunc(gangs, func(g *gang) bool { return !p.gangReady(ctx, g) })
}

// gangReady says whether the gang can be planned now; if not, it has explained or held it.
func (p *Provisioner) gangReady(ctx context.Context, g *gang) bool {
	ns, name, _ := strings.Cut(g.key, "/")
	if p.PodGroupsSynced != nil && !p.PodGroupsSynced() {
		klog.FromContext(ctx).Info("PodGroups not listed yet (is the PodGroup CRD installed?); gang held", "podGroup", g.key)
		p.gangs.hold(g.pods)
		return false
	}
	pg, err := p.PodGroups.PodGroups(ns).Get(name)
	if err != nil {
		p.gangWaits(ctx, g, GangNoPodGroup, fmt.Sprintf("PodGroup %s does not exist (%v): Coscheduling binds none of its pods, so Tailor launches nothing for them", g.key, err), false)
		return false
	}
	g.group = pg
	members, err := p.Pods.Pods(ns).List(labels.SelectorFromSet(labels.Set{schedv1alpha1.PodGroupLabel: name}))
	if err != nil {
		return false
	}
	minMember := int(pg.Spec.MinMember)
	if len(members) < minMember {
		p.gangWaits(ctx, g, GangIncomplete, fmt.Sprintf("gang %s has %d of its minMember %d pods; Tailor launches its nodes once all exist", g.key, len(members), minMember), false)
		return false
	}
	if p.triedFirst(ctx, g) {
		return false
	}
	inBatch := map[types.UID]bool{}
	for _, pod := range g.pods {
		inBatch[pod.Pod.UID] = true
	}
	placed := 0
	var atPermit []*planning.Pod
	for _, m := range members {
		switch {
		case inBatch[m.UID]:
		case m.Spec.NodeName != "" || p.onLiveClaim(m.UID):
			placed++
		case p.gangs.reservedPod(m.UID) != nil:
			atPermit = append(atPermit, p.gangs.reservedPod(m.UID))
		}
	}
	if placed+len(g.pods)+len(atPermit) < minMember {
		klog.FromContext(ctx).V(4).Info("Gang held for its siblings", "podGroup", g.key, "inBatch", len(g.pods), "atPermit", len(atPermit), "placed", placed, "minMember", minMember)
		p.gangs.hold(g.pods)
		return false
	}
	// A member waiting at Permit on a node that is up is planned with the rest: left there, it
	// would be turned away each time a sibling fails to schedule while the gang's nodes boot,
	// and try again at once (Coscheduling activates siblings), hundreds of times a second. Once
	// on a claim, it keeps to its own node (GangRefusal).
	g.pods = append(g.pods, atPermit...)
	return true
}

// triedFirst hands back to the scheduler, once, the pods of a gang now whole that no node was tried
// for (Coscheduling's PreFilter turned them away while the gang was short of pods), and holds the
// others: those that fit the free room of nodes that are up take it and wait at Permit (they count
// as placed, see GangMemberReserved), and Tailor plans the rest. It says whether it handed any back.
func (p *Provisioner) triedFirst(ctx context.Context, g *gang) bool {
	var back []*corev1.Pod
	for _, pod := range g.pods {
		if p.gangs.takeUntried(pod.Pod.UID) && p.firstHandBack(pod.Pod.UID) {
			back = append(back, pod.Pod)
		}
	}
	if len(back) == 0 {
		return false
	}
	var hold []*planning.Pod
	for _, pod := range g.pods {
		if !slices.Contains(back, pod.Pod) {
			hold = append(hold, pod)
		}
	}
	p.gangs.hold(hold)
	p.giveBack(ctx, back, "their gang has its minMember pods: the scheduler tries the nodes that are up first")
	return true
}

// GangRefusal says why a gang's pod planned onto a claim may not go to the named node ("" if it
// may): a gang's pods keep to the nodes launched for them together. Landing in free room
// elsewhere while their own nodes boot, a member would wait at Permit, its siblings fail, and
// Coscheduling turn it away again, over and over; and its own node would stay empty.
func (p *Provisioner) GangRefusal(pod *corev1.Pod, node string) string {
	if p.PodGroups == nil || gangOf(pod) == "" {
		return ""
	}
	r, ok := p.Ledger.Lookup(pod.UID)
	switch {
	case !ok || r.NodeName == node:
		return ""
	case r.NodeName == "":
		return fmt.Sprintf("planned with its gang onto claim %s, not launched yet", r.Claim)
	}
	return fmt.Sprintf("planned with its gang onto node %s (claim %s)", r.NodeName, r.Claim)
}

// onLiveClaim says whether the pod waits on a claim that is neither failed nor going: its gang's
// members on a failed launch are planned again with it, not counted as placed.
func (p *Provisioner) onLiveClaim(uid types.UID) bool {
	r, ok := p.Ledger.Lookup(uid)
	if !ok {
		return false
	}
	c, ok := p.Claims.Get(r.Claim)
	return !ok || c.DeletionTimestamp == nil && c.Status.Phase != v1alpha1.ClaimFailed
}

// gangWaits tells the gang's PodGroup and pods why it gets no node, counts it, and (retry) has
// its pods planned again after the gang's backoff.
func (p *Provisioner) gangWaits(ctx context.Context, g *gang, reason, msg string, retry bool) {
	klog.FromContext(ctx).V(2).Info("Gang gets no capacity", "podGroup", g.key, "reason", reason, "message", msg)
	delay := p.gangs.wait(g.key, reason, p.clock().Now())
	if g.group != nil {
		ref := &corev1.ObjectReference{APIVersion: schedv1alpha1.SchemeGroupVersion.String(), Kind: "PodGroup",
			Namespace: g.group.Namespace, Name: g.group.Name, UID: g.group.UID}
		p.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, "GangNotProvisioned", "Provisioning", "%s", msg)
	}
	pods := make([]*corev1.Pod, 0, len(g.pods))
	for _, pod := range g.pods {
		p.Recorder.Eventf(pod.Pod, nil, corev1.EventTypeWarning, "GangNotProvisioned", "Provisioning", "%s", msg)
		pods = append(pods, pod.Pod)
	}
	if retry {
		p.clock().AfterFunc(delay, func() { p.Activate(pods) })
	}
}

// provisionGang plans a ready gang on its own and records its claims together, or says why not.
func (p *Provisioner) provisionGang(ctx context.Context, g *gang, templates []*planning.Template) {
	closed := p.closedPools(ctx, templates)
	plan, why := (&planning.Planner{Templates: templates, Closed: closed}).PlanWhole(ctx, g.pods, p.Args.GangZonePolicy != config.GangAnyZone)
	if plan == nil {
		p.gangWaits(ctx, g, GangUnplannable, fmt.Sprintf("Tailor cannot launch capacity for the whole gang %s, so it launches none: %s", g.key, why), true)
		return
	}
	if err := p.reservations.RecordGang(ctx, g.key, plan.Nodes); err != nil {
		var limit *LimitError
		reason := GangNotRecorded
		if errors.As(err, &limit) {
			reason = GangPoolLimit
		}
		p.gangWaits(ctx, g, reason, fmt.Sprintf("no launch for gang %s (%d nodes): %v", g.key, len(plan.Nodes), err), true)
		return
	}
	p.gangs.provisioned(g.key)
	klog.FromContext(ctx).V(2).Info("Planned gang", "podGroup", g.key, "pods", len(g.pods), "nodes", len(plan.Nodes),
		"zone", plan.Nodes[0].Template.Offering.Zone, "pricePerHour", fmt.Sprintf("%.4f", plan.PricePerHour()))
}
