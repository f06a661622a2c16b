// Package provisioner is the Tailor scheduler plugin: a thin adapter that hands pods the
// scheduler could not place to the provisioner (PostFilter), nominates them to the capacity
// launched for them, and reports Reserve/Unreserve to the provisioner, which keeps the ledger of
// in-flight capacity true.
package provisioner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
	"k8s.io/utils/clock"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/operator"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/provisioning"
)

// Name is the plugin's name in profiles; its args kind is TailorArgs.
const Name = "Tailor"

// Plugin implements PostFilter, Filter, PreScore and Score, Reserve and Unreserve, and PostBind.
type Plugin struct {
	handle framework.Handle
	args   *config.TailorArgs
	ledger *ledger.Ledger
	prov   *provisioning.Provisioner
	// expected are the claims keeping room for pods still to come (Score).
	expected *provisioning.Expectations
	daemons  *daemons
	upcoming *upcoming
	ready    atomic.Bool

	// starting holds pods that failed while Tailor was starting; they are activated once it is
	// ready instead of waiting for the scheduler's periodic flush.
	startingMu sync.Mutex
	starting   []*corev1.Pod
}

var (
	_ framework.PostFilterPlugin = &Plugin{}
	_ framework.ReservePlugin    = &Plugin{}
	_ framework.PreScorePlugin   = &Plugin{}
	_ framework.ScorePlugin      = &Plugin{}
	_ framework.FilterPlugin     = &Plugin{}
	_ framework.PostBindPlugin   = &Plugin{}
)

// NewFactory returns the plugin's factory. configFile is the scheduler's --config: consolidation
// builds the profile's plugins again from it, to ask them where pods would go if a node went
// away (the scheduler does not hand plugins its profile). The parts behind the plugin are built
// by the composition root, pkg/operator.
func NewFactory(configFile string) func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
		args, ok := obj.(*config.TailorArgs)
		if !ok {
			return nil, fmt.Errorf("%s: want args of type TailorArgs, got %T", Name, obj)
		}
		if err := validation.ValidateTailorArgs(field.NewPath("TailorArgs"), args); err != nil {
			return nil, fmt.Errorf("%s: invalid plugin args: %w", Name, err)
		}
		logger := klog.FromContext(ctx).WithName(Name)
		ctx = klog.NewContext(ctx, logger)
		daemonSets := h.SharedInformerFactory().Apps().V1().DaemonSets()
		pl := &Plugin{handle: h, args: args, daemons: &daemons{handle: h, lister: daemonSets.Lister()},
			upcoming: &upcoming{handle: h, clock: clock.RealClock{}}}
		op, err := operator.NewFromArgs(ctx, args, h, pl.daemons.list, pl.upcoming.list, configFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		pl.upcoming.rollouts = op.Rollouts
		pl.ledger, pl.prov, pl.expected = op.Ledger, op.Provisioner, op.Expectations
		op.Start(ctx, func() {
			pl.ready.Store(true)
			pl.startingMu.Lock()
			operator.Activate(h, logger, pl.starting)
			pl.starting = nil
			pl.startingMu.Unlock()
		})
		return pl, nil
	}
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

// PostFilter runs when no existing node fits the pod. A pod already planned onto a claim is
// nominated to its node (or, refused there for where its siblings run while they land, waits
// unnominated); any other pod goes to the batcher. It never blocks the scheduling loop.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, statuses framework.NodeToStatusReader) (*framework.PostFilterResult, *fwk.Status) {
	if r, ok := pl.ledger.Lookup(pod.UID); ok {
		switch {
		case r.NodeName == "":
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("waiting for claim %s to launch", r.Claim))
		case !pl.failedOnRegisteredNode(r.NodeName) || heldForGang(statuses, r.NodeName) || pl.gangGrace(pod, r.NodeName):
			return &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatedNodeName: r.NodeName, NominatingMode: framework.ModeOverride}},
				fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("waiting for node %s of claim %s", r.NodeName, r.Claim))
		case refusedForSiblings(statuses, r.NodeName) && pl.siblingsGrace(r.NodeName) && pl.prov.SiblingsWaiting(pod):
			// Its nomination is dropped: the pods nominated to a node count as if they ran
			// there, so siblings nominated to one node would refuse each other for good.
			return &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatingMode: framework.ModeOverride}},
				fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("node %s of claim %s refused it for where its siblings run; waiting for them to reach their nodes", r.NodeName, r.Claim))
		default:
			// The node it was planned for is up and still refused it (others took the room):
			// plan it again.
			pl.prov.Forget(pod.UID)
			pl.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeNormal, "Replanning", "Provisioning",
				"node %s of claim %s is ready but no longer holds this pod; planning again", r.NodeName, r.Claim)
		}
	}
	if !pl.ready.Load() {
		pl.startingMu.Lock()
		pl.starting = append(pl.starting, pod)
		pl.startingMu.Unlock()
		return nil, fwk.NewStatus(fwk.Unschedulable, "Tailor is starting")
	}
	pl.daemons.refresh(ctx)
	pl.upcoming.refresh(ctx)
	// The planner asks the profile's Filter plugins with the state this cycle computed.
	// A node absent from the statuses has the PreFilter's: Coscheduling's, if it turned the pod
	// away before any node was tried.
	pl.prov.Enqueue(planning.NewPod(pod, &planning.FilterState{Plugins: pl.handle, State: state.Clone(), Pod: pod}), heldForGang(statuses, ""))
	return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for capacity: Tailor is planning a launch")
}

// failedOnRegisteredNode tells whether the pod's planned node is up, Ready and free of every
// taint that marks a node still starting (Tailor's, the pool's startup taints, the node
// lifecycle's not-ready/uninitialized ones), so this scheduling attempt really tried it and the
// pod no longer fits there.
func (pl *Plugin) failedOnRegisteredNode(name string) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(name)
	if err != nil || ni.Node() == nil {
		return false
	}
	return lifecycle.Ready(ni.Node()) && !lifecycle.Starting(pl.args, ni.Node())
}

// siblingsRefusalGrace bounds, counted from the node's registration, how long a pod its node
// refuses for where its siblings run waits for them (Provisioner.SiblingsWaiting) before it is
// planned again: the nodes planned together come up within a minute of each other on EKS.
const siblingsRefusalGrace = 2 * time.Minute

// siblingsGrace says whether the node registered less than siblingsRefusalGrace ago.
func (pl *Plugin) siblingsGrace(node string) bool {
	age, ok := pl.nodeAge(node)
	return ok && age < siblingsRefusalGrace
}

// gangRefusalGrace is how long a gang's pod refused by its node stays nominated to it, counted
// from the node's registration, before it is planned again. The room may be held by another gang's pod that found it free
// before this one was nominated there, and waits at Permit: turned away when its own gang's
// sibling fails, it leaves, and is kept to its own node from then (Provisioner.GangRefusal).
const gangRefusalGrace = 30 * time.Second

// gangGrace says whether pod is a gang's whose node registered less than gangRefusalGrace ago.
func (pl *Plugin) gangGrace(pod *corev1.Pod, node string) bool {
	if !pl.prov.GangMember(pod) {
		return false
	}
	age, ok := pl.nodeAge(node)
	return ok && age < gangRefusalGrace
}

// nodeAge is how long ago the node registered. (Not the Ready condition's transition: kubelet
// stand-ins rewrite it with every heartbeat.)
func (pl *Plugin) nodeAge(node string) (time.Duration, bool) {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil || ni.Node() == nil {
		return 0, false
	}
	return time.Since(ni.Node().CreationTimestamp.Time), true
}

// heldForGang says whether the node's status is Coscheduling's: its PreFilter turned the pod
// away before any node was tried (the gang was short of pods or backed off, or short of its
// minResources while its nodes start). The node did not refuse the pod, which stays nominated
// there: planned again, a gang member would get a second node.
func heldForGang(statuses framework.NodeToStatusReader, node string) bool {
	if statuses == nil {
		return false
	}
	s := statuses.Get(node)
	return s != nil && s.Plugin() == coscheduling.Name
}

// refusedForSiblings says whether the node refused the pod for where its siblings run (a
// topology spread, pod affinity or anti-affinity): a verdict that changes as the siblings planned
// with it reach their nodes (Provisioner.SiblingsWaiting).
func refusedForSiblings(statuses framework.NodeToStatusReader, node string) bool {
	if statuses == nil {
		return false
	}
	s := statuses.Get(node)
	return s != nil && (s.Plugin() == names.PodTopologySpread || s.Plugin() == names.InterPodAffinity)
}

// PreScore skips Score when no claim keeps room for pods still to come.
func (pl *Plugin) PreScore(_ context.Context, _ fwk.CycleState, _ *corev1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if !pl.expected.Any() {
		return fwk.NewStatus(fwk.Skip)
	}
	return nil
}

// Score prefers, for a pod of a workload whose pods were planned before they existed, the nodes
// launched with room for them, and for any other pod the nodes whose room is not planned for
// others (provisioning.Expectations).
func (pl *Plugin) Score(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) (int64, *fwk.Status) {
	return pl.expected.Score(pod, ni, framework.MaxNodeScore), nil
}

// Filter refuses a node whose free room is kept for other workloads' pods still to come
// (provisioning.Expectations): the plan launched it for them; and keeps a gang's pods planned
// onto claims to their own nodes (Provisioner.GangRefusal).
func (pl *Plugin) Filter(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, ni fwk.NodeInfo) *fwk.Status {
	if why := pl.expected.Refusal(pod, ni); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	if why := pl.prov.GangRefusal(pod, ni.Node().Name); why != "" {
		return fwk.NewStatus(fwk.Unschedulable, why)
	}
	return nil
}

// ScoreExtensions: the scores need no normalizing.
func (pl *Plugin) ScoreExtensions() framework.ScoreExtensions { return nil }

// Reserve takes the pod off its claim: it has a node now.
func (pl *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	pl.prov.Reserved(pod.UID)
	if pl.prov.GangMember(pod) {
		// The scheduler reserves the pod as it assumed it, bound to the node: planned again, it
		// is the pending pod.
		pending := pod.DeepCopy()
		pending.Spec.NodeName = ""
		pl.prov.GangMemberReserved(planning.NewPod(pending, &planning.FilterState{Plugins: pl.handle, State: state.Clone(), Pod: pending}))
	}
	return nil
}

// PostBind forgets the cycle state kept for a gang's pod since its Reserve: it is bound.
func (pl *Plugin) PostBind(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.prov.GangMemberBound(pod)
}

// Unreserve puts the pod back on its claim: binding failed. A gang's pod keeps its cycle state
// until it is bound: turned away at Permit, it is planned with its gang (GangMemberReserved).
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.prov.Unreserved(pod.UID)
}
