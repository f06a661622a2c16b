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
	// zone is the zone of the members already placed, when they share one: the rest join them.
	zone string
}

// gangOf is the name of the pod's PodGroup, "" for a pod of none.
func gangOf(pod *corev1.Pod) string { return pod.Labels[schedv1alpha1.PodGroupLabel] }

// gangState is what provisioning remembers of gangs between batches.
type gangState struct {
	mu sync.Mutex
	// held are gang pods waiting for siblings that have not failed to schedule yet: they join
	// the next batch, or go back to the batcher when a sibling is reserved a node.
	held map[types.UID]*planning.Pod
	// reserved are gang pods the scheduler reserved a node for, with the state of that cycle,
	// until they are bound: they waited at Coscheduling's Permit for the rest (maybe turned away
	// since, when a sibling failed), and are planned with them (see gangReady).
	reserved map[types.UID]*planning.Pod
	// untried are gang pods for which the scheduler tried no node (Coscheduling's PreFilter
	// turned them away while their gang was short of pods).
	untried map[types.UID]bool
	// nudged says when each held gang's member waiting in the scheduler's queue was last
	// tried again (nudge).
	nudged map[types.UID]time.Time
	// nodes are the nodes of gangs' claims, by node name: their claim and PodGroup.
	nodes map[string]gangNode
	// waiting says why each gang that got no claim waits (tailor_provisioning_gangs_waiting).
	waiting map[string]string
	backoff *flowcontrol.Backoff
}

func (g *gangState) init() {
	if g.held == nil {
		g.held, g.waiting, g.reserved, g.untried = map[types.UID]*planning.Pod{}, map[string]string{}, map[types.UID]*planning.Pod{}, map[types.UID]bool{}
		g.nudged, g.nodes = map[types.UID]time.Time{}, map[string]gangNode{}
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

// GangMemberBound forgets the cycle state kept for a gang's pod: it is bound.
func (p *Provisioner) GangMemberBound(pod *corev1.Pod) {
	g := &p.gangs
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.reserved, pod.UID)
}

// wait records why a gang waits and, with backOff (its pods are tried again), returns how long
// until they are: the gang's backoff, from 30 s doubling to 5 min.
func (g *gangState) wait(key, reason string, now time.Time, backOff bool) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	g.waiting[key] = reason
	if !backOff {
		return 0
	}
	g.backoff.GC()
	if !g.backoff.IsInBackOffSinceUpdate(key, now) {
		g.backoff.Next(key, now)
	}
	return g.backoff.Get(key)
}

// inBackoff says whether the gang waits out a backoff after its last attempt failed.
func (g *gangState) inBackoff(key string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.backoff != nil && g.backoff.IsInBackOffSinceUpdate(key, now)
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
			g.backoff.Reset(key)
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
	if p.gangs.inBackoff(g.key, p.clock().Now()) {
		p.gangs.hold(g.pods) // gangWaits has them tried again when the backoff is over
		return false
	}
	if p.triedFirst(ctx, g) {
		return false
	}
	placed, atPermit, elsewhere := p.placedMembers(g, members)
	if placed+len(g.pods)+len(atPermit) < minMember {
		// The rest wait in the scheduler's queue (turned away by Coscheduling's PreFilter while
		// the gang was short, they wait for an event that may not come soon): tried now, they
		// fail and join the batch, or find room.
		p.nudge(elsewhere)
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

// placedMembers counts the gang's members that are placed: bound, or on a claim that is neither
// failed nor going (waiting for it, or reserved its node); and lists the others the scheduler
// reserved a node for since they failed (at Permit in the free room of a node that is up, or turned
// away from it again), which are planned with the batch's. It notes the zone of the placed
// members in g.zone when they share one.
func (p *Provisioner) placedMembers(g *gang, members []*corev1.Pod) (int, []*planning.Pod, []*corev1.Pod) {
	inBatch := map[types.UID]bool{}
	for _, pod := range g.pods {
		inBatch[pod.Pod.UID] = true
	}
	placed, zones := 0, map[string]bool{}
	var atPermit []*planning.Pod
	var elsewhere []*corev1.Pod
	for _, m := range members {
		if inBatch[m.UID] {
			continue
		}
		if m.Spec.NodeName != "" {
			placed++
			if n, err := p.nodeOf(m); err == nil {
				zones[n.Labels[corev1.LabelTopologyZone]] = true
			}
		} else if c, live := p.onLiveClaim(m.UID); live {
			placed++
			if c != nil {
				zones[c.Spec.Zone] = true
			}
		} else if r := p.gangs.reservedPod(m.UID); r != nil {
			atPermit = append(atPermit, r)
		} else if m.DeletionTimestamp == nil && len(m.Spec.SchedulingGates) == 0 {
			elsewhere = append(elsewhere, m)
		}
	}
	if len(zones) == 1 {
		for z := range zones {
			g.zone = z
		}
	}
	return placed, atPermit, elsewhere
}

// nudgeEvery is how often a held gang's members waiting in the scheduler's queue are tried again.
const nudgeEvery = time.Second

// nudge has the scheduler try pods again now, each at most once per nudgeEvery.
func (p *Provisioner) nudge(pods []*corev1.Pod) {
	now := p.clock().Now()
	g := &p.gangs
	g.mu.Lock()
	g.init()
	var due []*corev1.Pod
	for _, pod := range pods {
		if now.Sub(g.nudged[pod.UID]) >= nudgeEvery {
			g.nudged[pod.UID] = now
			due = append(due, pod)
		}
	}
	for uid, at := range g.nudged {
		if now.Sub(at) > time.Minute {
			delete(g.nudged, uid)
		}
	}
	g.mu.Unlock()
	if len(due) > 0 {
		p.Activate(due)
	}
}

// nodeOf is the node a pod is bound to, from the node cache.
func (p *Provisioner) nodeOf(pod *corev1.Pod) (*corev1.Node, error) {
	if p.Nodes == nil {
		return nil, fmt.Errorf("no node cache")
	}
	return p.Nodes.Get(pod.Spec.NodeName)
}

// triedFirst hands back to the scheduler, once, the pods of a gang now whole that no node was tried
// for (Coscheduling's PreFilter turned them away while the gang was short of pods), and holds the
// others: a gang that fits the free room of nodes that are up runs there; one that does not comes
// back, and is planned whole (with the members the scheduler reserved room for meanwhile, see
// placedMembers). It says whether it handed any back.
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

// gangNode is a gang's claim's node.
type gangNode struct{ claim, podGroup string }

// FollowGangClaim keeps track of the nodes of gangs' claims (GangRefusal); gone says the claim
// was deleted.
func (p *Provisioner) FollowGangClaim(c *v1alpha1.Claim, gone bool) {
	if c.Spec.Gang == nil || c.Status.NodeName == "" {
		return
	}
	g := &p.gangs
	g.mu.Lock()
	defer g.mu.Unlock()
	g.init()
	if gone {
		delete(g.nodes, c.Status.NodeName)
		return
	}
	g.nodes[c.Status.NodeName] = gangNode{claim: c.Name, podGroup: c.Spec.Gang.PodGroup}
}

// gangNodeOf is the gang claim of the named node, if any.
func (g *gangState) gangNodeOf(node string) (gangNode, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[node]
	return n, ok
}

// GangRefusal says why a gang's pod may not go to the named node ("" if it may). A gang's pods
// keep to the nodes launched for them together: landing in free room elsewhere while their own
// nodes boot, a member would wait at Permit, its siblings fail, and Coscheduling turn it away
// again, over and over; and its own node would stay empty. And no gang's pod takes the room of a
// node launched for another gang whose pods are still on their way there: a node that registers
// before they are nominated to it would otherwise be filled by whichever gang got there first.
func (p *Provisioner) GangRefusal(pod *corev1.Pod, node string) string {
	if p.PodGroups == nil || gangOf(pod) == "" {
		return ""
	}
	if n, ok := p.gangs.gangNodeOf(node); ok && n.podGroup != pod.Namespace+"/"+gangOf(pod) && p.Ledger.Waits(n.claim) {
		return fmt.Sprintf("launched for gang %s, whose pods are on their way (claim %s)", n.podGroup, n.claim)
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

// onLiveClaim says whether the pod waits on a claim, or was reserved its node, that is neither
// failed nor going (a gang's members on a failed launch are planned again with it, not counted as
// placed), and returns the claim (nil while the cache does not have it yet).
func (p *Provisioner) onLiveClaim(uid types.UID) (*v1alpha1.Claim, bool) {
	r, ok := p.Ledger.Lookup(uid)
	if !ok {
		r, ok = p.Ledger.Consumed(uid)
	}
	if !ok {
		return nil, false
	}
	c, ok := p.Claims.Get(r.Claim)
	if !ok {
		return nil, true // recorded a moment ago
	}
	return c, c.DeletionTimestamp == nil && c.Status.Phase != v1alpha1.ClaimFailed
}

// gangWaits tells the gang's PodGroup and pods why it gets no node, counts it, and (retry) has
// its pods planned again after the gang's backoff.
func (p *Provisioner) gangWaits(ctx context.Context, g *gang, reason, msg string, retry bool) {
	klog.FromContext(ctx).V(2).Info("Gang gets no capacity", "podGroup", g.key, "reason", reason, "message", msg)
	delay := p.gangs.wait(g.key, reason, p.clock().Now(), retry)
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

// planGang plans a ready gang whole: with the members already placed in their zone, else anywhere
// the gang zone policy allows.
func (p *Provisioner) planGang(ctx context.Context, g *gang, templates []*planning.Template, closed map[string]string) (*planning.Plan, string) {
	sameZone := p.Args.GangZonePolicy != config.GangAnyZone
	if sameZone && g.zone != "" {
		// Members already placed (a gang planned again in part) are in one zone: the rest join them.
		inZone := slices.DeleteFunc(slices.Clone(templates), func(t *planning.Template) bool { return t.Offering.Zone != g.zone })
		if plan, why := (&planning.Planner{Templates: inZone, Closed: closed}).PlanWhole(ctx, g.pods, true); plan != nil {
			return plan, why
		}
	}
	return (&planning.Planner{Templates: templates, Closed: closed}).PlanWhole(ctx, g.pods, sameZone)
}

// provisionGang plans a ready gang on its own and records its claims together, or says why not.
func (p *Provisioner) provisionGang(ctx context.Context, g *gang, templates []*planning.Template) {
	closed := p.closedPools(ctx, templates)
	plan, why := p.planGang(ctx, g, templates, closed)
	if plan != nil {
		// A gang is launched whole or not at all: one planned past a reservation's free
		// instances is planned again without the reservations it overbooks.
		if full := overbooked(plan.Nodes); len(full) > 0 {
			plan, why = p.planGang(ctx, g, withoutReservations(templates, full), closed)
		}
	}
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
