package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/klog/v2"
	dsutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-eks/tailor/pkg/planning"
)

// daemonPods builds, for each DaemonSet, the pod it would run on a new node (with the
// tolerations the DaemonSet controller adds), and runs the profile's PreFilter plugins for it so
// the planner can ask the same Filter plugins whether it lands on a template.
func daemonPods(ctx context.Context, h framework.Handle, lister appslisters.DaemonSetLister) []*planning.Pod {
	fw, ok := h.(framework.Framework)
	if !ok {
		return nil
	}
	dss, err := lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*planning.Pod
	for _, ds := range dss {
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name + "-daemon", UID: ds.UID, Labels: ds.Spec.Template.Labels},
			Spec:       *ds.Spec.Template.Spec.DeepCopy(),
		}
		dsutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
		state := framework.NewCycleState()
		if _, s, _ := fw.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
			klog.FromContext(ctx).V(4).Info("DaemonSet pod fails PreFilter; not counted on new nodes", "daemonset", klog.KObj(ds), "status", s.Message())
			continue
		}
		out = append(out, planning.NewPod(pod, &filterChecker{handle: h, state: state, pod: pod}))
	}
	return out
}
