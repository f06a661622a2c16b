package provisioning

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// retryAfterFailure is how long pods wait before they are planned again when their claim could
// not be recorded (an API error, or the pool at its limit), so a persistent error is not a hot
// loop. A failed launch says on its claim when its pods are planned again (status.retryAt).
const retryAfterFailure = 30 * time.Second

// Reservations records planned nodes as claims, which the lifecycle launches, with the pods
// reserved on them, and keeps the ledger on the claims: which pods wait on which claim, and
// when they are tried again.
type Reservations struct {
	Options

	limits poolLimits
}

// NewReservations builds the Reservations.
func NewReservations(o Options) *Reservations {
	return &Reservations{Options: o}
}

// Record records a planned node as a claim, which the lifecycle launches, and reserves its pods
// on it.
// It returns nil (after telling the pods why) if the claim cannot be recorded or the pool is at
// its limit.
//
// Pods their controllers have not created yet (expected.go) are not the claim's pods: the claim
// counts them per workload (shares names each pod's workload) in its ExpectedPods.
func (l *Reservations) Record(ctx context.Context, n *planning.PlannedNode, shares map[types.UID]rollout.Workload) *v1alpha1.Claim {
	logger := klog.FromContext(ctx)
	t := n.Template
	claim := newClaim(n)
	uids := make([]types.UID, 0, len(n.Pods))
	// Named after every pod planned onto it, those still to come included, so two nodes planned
	// for pods still to come never share a name.
	var named []v1alpha1.PodRef
	for _, p := range n.Pods {
		ref := v1alpha1.PodRef{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: string(p.Pod.UID)}
		named = append(named, ref)
		if isExpected(p) {
			continue
		}
		claim.Spec.Pods = append(claim.Spec.Pods, ref)
		uids = append(uids, p.Pod.UID)
	}
	claim.Spec.PodCount = len(claim.Spec.Pods)
	claim.Spec.ExpectedPods = expectedOn(n, shares)
	var created *v1alpha1.Claim
	_, err := l.limits.admit(ctx, l, t.Pool, claim.Spec.InstanceTypes, func() (string, error) {
		var err error
		created, err = l.createClaim(ctx, claim, podsKey(named))
		if err != nil {
			return "", err
		}
		return created.Name, nil
	})
	if err != nil {
		logger.Info("No launch; pods will be retried", "pool", t.Pool.Name, "err", err, "after", retryAfterFailure)
		pods := make([]*corev1.Pod, 0, len(n.Pods))
		for _, p := range n.Pods {
			if isExpected(p) {
				continue
			}
			l.Recorder.Eventf(p.Pod, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "no launch: %v", err)
			pods = append(pods, p.Pod)
		}
		l.clock().AfterFunc(retryAfterFailure, func() { l.Activate(pods) })
		return nil
	}
	l.Ledger.Add(created.Name, "", uids)
	return created
}

// newClaim is the claim of a planned node, without its pods.
func newClaim(n *planning.PlannedNode) *v1alpha1.Claim {
	t := n.Template
	claim := &v1alpha1.Claim{
		ObjectMeta: metav1.ObjectMeta{GenerateName: t.Pool.Name + "-", Labels: map[string]string{v1alpha1.LabelPool: t.Pool.Name},
			Annotations: map[string]string{v1alpha1.AnnotationPoolHash: t.Pool.LaunchHash()},
			// A deleted claim's instance is drained and terminated before the claim goes.
			Finalizers: []string{v1alpha1.FinalizerTermination}},
		Spec: v1alpha1.ClaimSpec{
			Pool:         t.Pool.Name,
			CapacityType: string(t.Offering.CapacityType),
			Zone:         t.Offering.Zone,
			PodCount:     len(n.Pods),
			Resources:    t.Allocatable,
			Daemons:      daemonsOn(t),
		},
	}
	for _, alt := range n.Alternatives {
		claim.Spec.InstanceTypes = append(claim.Spec.InstanceTypes, alt.Type.Name)
	}
	if r := t.Offering.Reservation; r != nil {
		claim.Spec.CapacityReservation = &v1alpha1.CapacityReservation{ID: r.ID, CapacityBlock: r.CapacityBlock}
		if !r.EndsAt.IsZero() {
			claim.Spec.CapacityReservation.EndsAt = &metav1.Time{Time: r.EndsAt}
		}
	}
	return claim
}

// daemonsOn names the DaemonSets whose pods the plan counted on a node of t.
func daemonsOn(t *planning.Template) []v1alpha1.DaemonPod {
	var out []v1alpha1.DaemonPod
	for _, d := range t.Daemons {
		ds := metav1.GetControllerOfNoCopy(d)
		if ds == nil {
			continue
		}
		out = append(out, v1alpha1.DaemonPod{Namespace: d.Namespace, Name: ds.Name, UID: string(ds.UID),
			Requests: resourcehelper.PodRequests(d, resourcehelper.PodResourcesOptions{})})
	}
	return out
}

// RecordReplacement records a planned node launched to replace running nodes (consolidation):
// no pods wait for it (they run on the old nodes until those drain), and it names the nodes it
// replaces. The lifecycle launches it.
func (l *Reservations) RecordReplacement(ctx context.Context, n *planning.PlannedNode, replaces []string, count int) (*v1alpha1.Claim, error) {
	claim := newClaim(n)
	claim.Spec.PodCount = 0
	claim.Spec.Replacement = &v1alpha1.Replacement{Nodes: replaces, Claims: count}
	var created *v1alpha1.Claim
	_, err := l.limits.admit(ctx, l, n.Template.Pool, claim.Spec.InstanceTypes, func() (string, error) {
		var err error
		// Generated names: one decision may record several replacements for the same nodes,
		// and consolidation finds the replacements of a node by their spec.
		created, err = l.Claims.Create(ctx, claim)
		if err != nil {
			return "", err
		}
		return created.Name, nil
	})
	return created, err
}

// Release drops a deleted claim from the ledger and asks the scheduler to plan again the pods
// that were still waiting on it, whoever deleted it (the lifecycle's timeouts, a drain, a user).
func (l *Reservations) Release(c *v1alpha1.Claim) {
	l.limits.forget(c.Name) // gone: it no longer counts against its pool's limits
	dropped := l.Ledger.DropClaim(c.Name)
	if len(dropped) == 0 {
		return
	}
	waited := make(map[types.UID]bool, len(dropped))
	for _, uid := range dropped {
		waited[uid] = true
	}
	var pods []*corev1.Pod
	for _, p := range l.claimPods(c) {
		if waited[p.UID] {
			pods = append(pods, p)
		}
	}
	l.Activate(pods)
}

func (l *Reservations) claimPods(c *v1alpha1.Claim) []*corev1.Pod {
	var out []*corev1.Pod
	for _, ref := range c.Spec.Pods {
		if p, err := l.Pods.Pods(ref.Namespace).Get(ref.Name); err == nil && string(p.UID) == ref.UID && p.Spec.NodeName == "" {
			out = append(out, p)
		}
	}
	return out
}

// Wanted says whether a pod the claim was planned for still waits for a node, or a workload it
// was planned for still creates pods (one scaled back before the launch no longer does): the
// lifecycle drops a claim nobody wants instead of launching it.
func (l *Reservations) Wanted(c *v1alpha1.Claim) bool {
	return len(l.claimPods(c)) > 0 || l.stillExpected(c)
}

// Waits says whether pods wait on the claim now.
func (l *Reservations) Waits(claim string) bool { return l.Ledger.Waits(claim) }

// Waiting lists the claim's pods that still wait for a node (unbound, the same pod).
func (l *Reservations) Waiting(c *v1alpha1.Claim) []*corev1.Pod { return l.claimPods(c) }

// Follow brings the ledger up to date with a changed claim: pods newly recorded on it wait for
// it, its node name, once known, is theirs, and they are tried again once it launched (to be
// nominated to its node) and once its node is initialized (see waitingOn). A failed launch
// releases them, to be planned again at the claim's retryAt. Offerings a launch found
// unavailable are left out of this replica's plans. Pods the ledger already moved
// elsewhere (a re-plan) are not pulled back, and a resync without change does nothing.
func (l *Reservations) Follow(old, cur *v1alpha1.Claim) {
	if old.ResourceVersion == cur.ResourceVersion || old.Status.Phase == v1alpha1.ClaimFailed {
		return
	}
	if cur.Status.Phase == v1alpha1.ClaimFailed {
		l.launchFailed(cur)
		return
	}
	known := map[string]bool{}
	for _, ref := range old.Spec.Pods {
		known[ref.UID] = true
	}
	var added []types.UID
	for _, p := range l.claimPods(cur) {
		if !known[string(p.UID)] {
			added = append(added, p.UID)
		}
	}
	if len(added) > 0 {
		l.Ledger.Add(cur.Name, cur.Status.NodeName, added)
	}
	if cur.Status.NodeName != "" && cur.Status.NodeName != old.Status.NodeName {
		l.Ledger.SetNodeName(cur.Name, cur.Status.NodeName)
	}
	switch {
	case cur.Status.Phase == v1alpha1.ClaimLaunched && old.Status.Phase != v1alpha1.ClaimLaunched:
		l.launched(cur)
	case cur.Status.InitializedAt != nil && old.Status.InitializedAt == nil:
		l.Activate(l.waitingOn(cur))
	}
}

// launched leaves out of this replica's plans the offerings the launch found without capacity,
// and sends the claim's pods back to the scheduler, to be nominated to its node.
func (l *Reservations) launched(c *v1alpha1.Claim) {
	l.markUnavailable(c)
	l.Activate(l.claimPods(c))
}

// launchFailed leaves out of this replica's plans what the launch found unavailable, releases
// the claim's pods and has them planned again at the claim's retryAt.
func (l *Reservations) launchFailed(c *v1alpha1.Claim) {
	l.markUnavailable(c)
	pods := l.claimPods(c)
	l.Ledger.DropClaim(c.Name)
	var delay time.Duration
	if c.Status.RetryAt != nil {
		delay = c.Status.RetryAt.Sub(l.clock().Now())
	}
	if delay <= 0 {
		l.Activate(pods)
		return
	}
	l.clock().AfterFunc(delay, func() { l.Activate(l.claimPods(c)) })
}

// markUnavailable tells this replica's offerings what the claim's launch found unavailable: the
// launch ran where the lifecycle runs, which need not be the replica that plans.
func (l *Reservations) markUnavailable(c *v1alpha1.Claim) {
	ct := cloud.CapacityType(c.Spec.CapacityType)
	if len(c.Status.UnavailableOfferings) > 0 {
		errs := make([]cloud.OfferingError, 0, len(c.Status.UnavailableOfferings))
		for _, u := range c.Status.UnavailableOfferings {
			errs = append(errs, cloud.OfferingError{InstanceType: u.InstanceType, Zone: u.Zone, Code: u.Code})
		}
		l.Offerings.MarkFailed(ct, errs)
	}
	if code := c.Status.CapacityTypeUnavailable; code != "" {
		l.Offerings.MarkCapacityTypeUnavailable(ct, code)
	}
}

// waitingOn returns the claim's pods that still wait for it in the ledger. Once its node is up
// (Ready, no startup taint: the claim is initialized) they are tried again: a pod the node
// refused while it was still starting waits for no event the scheduler would retry it on (a
// not-ready taint the pod tolerates going away, a Ready condition), yet must now bind there or,
// refused by the node that is up, be planned anew.
func (l *Reservations) waitingOn(c *v1alpha1.Claim) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range l.claimPods(c) {
		if r, ok := l.Ledger.Lookup(p.UID); ok && r.Claim == c.Name {
			out = append(out, p)
		}
	}
	return out
}

// Rebuild fills the ledger from the claims, after a start: every pod of a live claim that is
// still unbound waits for that claim again.
func (l *Reservations) Rebuild(cs []*v1alpha1.Claim) {
	for _, c := range cs {
		if c.Status.Phase == v1alpha1.ClaimFailed {
			continue
		}
		var uids []types.UID
		for _, p := range l.claimPods(c) {
			uids = append(uids, p.UID)
		}
		l.Ledger.Add(c.Name, c.Status.NodeName, uids)
	}
}
