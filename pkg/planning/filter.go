package planning

import (
	"context"
	"fmt"
	"math"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// FilterState is one pod's PreFilter state together with the profile's plugins that read it:
// the scheduler's own verdict on whether the pod may run on a node. In the scheduler it is the
// CycleState of the cycle that failed; offline (the plan command, tests) it comes from running
// the profile's PreFilter plugins. The planner never decides a constraint itself: it asks this.
type FilterState struct {
	Plugins framework.PluginsRunner
	State   fwk.CycleState
	Pod     *corev1.Pod
}

// Fork returns a copy whose state can follow one plan without touching the original.
func (f *FilterState) Fork() *FilterState {
	return &FilterState{Plugins: f.Plugins, State: f.State.Clone(), Pod: f.Pod}
}

// AddPod tells the PreFilter extensions that pod runs on node, exactly as preemption does, so
// inter-pod constraints (affinity, topology spread, volume conflicts) count it.
func (f *FilterState) AddPod(ctx context.Context, pod fwk.PodInfo, node fwk.NodeInfo) (reason string) {
	defer recovered(ctx, "AddPod", f.Pod, node, &reason)
	if s := f.Plugins.RunPreFilterExtensionAddPod(ctx, f.State, f.Pod, pod, node); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}

// RemovePod undoes AddPod.
func (f *FilterState) RemovePod(ctx context.Context, pod fwk.PodInfo, node fwk.NodeInfo) (reason string) {
	defer recovered(ctx, "RemovePod", f.Pod, node, &reason)
	if s := f.Plugins.RunPreFilterExtensionRemovePod(ctx, f.State, f.Pod, pod, node); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}

// Filter runs the profile's Filter plugins for the pod on node; "" means the pod fits.
func (f *FilterState) Filter(ctx context.Context, node fwk.NodeInfo) (reason string) {
	defer recovered(ctx, "Filter", f.Pod, node, &reason)
	state := f.State
	if len(f.Pod.Spec.ResourceClaims) > 0 {
		// Dynamic resource allocation writes into the state during Filter.
		state = state.Clone()
	}
	if s := f.Plugins.RunFilterPlugins(ctx, state, f.Pod, node); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}

// recovered turns a panic in a plugin call made for Tailor's own questions into that question's
// failure: the pod does not fit the node. In-tree plugins assume what the scheduler's own cycle
// guarantees; one that panics on a state Tailor built must fail one question, never take the
// scheduler, and all scheduling with it, down. Deferred by every plugin call of FilterState.
// It cannot catch a panic in a plugin's own parallel workers (kube-scheduler's parallelizer
// crashes the process on those, in its own cycle too), which is why every snapshot Tailor
// builds holds only what the scheduler's own would (see profile.Framework.SetSnapshot).
func recovered(ctx context.Context, call string, pod *corev1.Pod, node fwk.NodeInfo, reason *string) {
	r := recover()
	if r == nil {
		return
	}
	nodeName := ""
	if node != nil && node.Node() != nil {
		nodeName = node.Node().Name
	}
	klog.FromContext(ctx).Error(fmt.Errorf("%v", r), "A scheduler plugin panicked; this placement is refused",
		"call", call, "pod", klog.KObj(pod), "node", nodeName, "stack", string(debug.Stack()))
	*reason = fmt.Sprintf("a scheduler plugin panicked in %s: %v", call, r)
}

// nodeInfo builds the NodeInfo the plugins see for node with pods on it.
func nodeInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}

// filterInfo is the NodeInfo the planner asks the Filter plugins about: node with pods on it, its
// allocatable far beyond any plan, so the plugins' resource check (NodeResourcesFit) only asks
// whether the node offers a resource at all: how much fits is the packer's own arithmetic, on
// the same numbers, per pod rather than per class. Only the NodeInfo's own Allocatable (what the
// plugins read) is inflated; the node is shared, not copied, as templates number in thousands.
func filterInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := nodeInfo(node, pods...)
	a := ni.Allocatable
	a.MilliCPU, a.Memory, a.EphemeralStorage = beyondAnyPlan(a.MilliCPU), beyondAnyPlan(a.Memory), beyondAnyPlan(a.EphemeralStorage)
	a.AllowedPodNumber = int(beyondAnyPlan(int64(a.AllowedPodNumber)))
	for name, v := range a.ScalarResources {
		a.ScalarResources[name] = beyondAnyPlan(v)
	}
	return ni
}

// beyondAnyPlan maps an amount a node offers to one no plan can fill; none stays none, and a
// larger amount stays larger.
func beyondAnyPlan(v int64) int64 {
	switch {
	case v <= 0:
		return v
	case v > (math.MaxInt64-1<<40)/1024:
		return math.MaxInt64 / 2 // the largest types (u-*tb) would overflow
	default:
		return v*1024 + 1<<40
	}
}
