package planning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
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
func (f *FilterState) AddPod(ctx context.Context, pod fwk.PodInfo, node fwk.NodeInfo) string {
	if s := f.Plugins.RunPreFilterExtensionAddPod(ctx, f.State, f.Pod, pod, node); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}

// RemovePod undoes AddPod.
func (f *FilterState) RemovePod(ctx context.Context, pod fwk.PodInfo, node fwk.NodeInfo) string {
	if s := f.Plugins.RunPreFilterExtensionRemovePod(ctx, f.State, f.Pod, pod, node); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}

// Filter runs the profile's Filter plugins for the pod on node; "" means the pod fits.
func (f *FilterState) Filter(ctx context.Context, node fwk.NodeInfo) string {
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

// nodeInfo builds the NodeInfo the plugins see for node with pods on it.
func nodeInfo(node *corev1.Node, pods ...*corev1.Pod) *framework.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
