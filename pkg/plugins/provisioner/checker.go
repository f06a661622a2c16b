package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// filterChecker answers the planner's question with the profile's own Filter plugins, using the
// CycleState the scheduler computed for the pod in the cycle that failed. Pods already planned
// onto the hypothetical node are added through the PreFilter extensions first, exactly as
// preemption does, so inter-pod constraints see them.
type filterChecker struct {
	handle framework.Handle
	state  fwk.CycleState
	pod    *corev1.Pod
}

func (c *filterChecker) Fits(ctx context.Context, node *corev1.Node, placed []*corev1.Pod) string {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	// Always a fresh clone: some plugins (DRA) write into the state during Filter.
	state := c.state.Clone()
	if len(placed) > 0 {
		for _, p := range placed {
			pi, err := framework.NewPodInfo(p)
			if err != nil {
				return err.Error()
			}
			ni.AddPodInfo(pi)
			if s := c.handle.RunPreFilterExtensionAddPod(ctx, state, c.pod, pi, ni); !s.IsSuccess() {
				return s.Message()
			}
		}
	}
	if s := c.handle.RunFilterPlugins(ctx, state, c.pod, ni); !s.IsSuccess() {
		return s.Message()
	}
	return ""
}
