package provisioner

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	"k8s.io/klog/v2"
	dsutil "k8s.io/kubernetes/pkg/controller/daemon/util"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-eks/tailor/pkg/planning"
)

// daemons holds, for each DaemonSet, the pod it would run on a new node (with the tolerations
// the DaemonSet controller adds) and its PreFilter state, so the planner can ask the profile's
// Filter plugins whether it lands on a template. PreFilter plugins read the scheduler's snapshot,
// which only the scheduling goroutine may touch: refresh runs there (from PostFilter); the
// planner only reads the result.
type daemons struct {
	handle framework.Handle
	lister appslisters.DaemonSetLister

	mu   sync.Mutex
	pods map[types.UID]daemonPod
}

type daemonPod struct {
	generation int64
	pod        *planning.Pod
}

// refresh recomputes the daemon pods of DaemonSets that are new or changed. Scheduling
// goroutine only.
func (d *daemons) refresh(ctx context.Context) {
	fw, ok := d.handle.(framework.Framework)
	if !ok {
		return
	}
	dss, err := d.lister.List(labels.Everything())
	if err != nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.pods == nil {
		d.pods = map[types.UID]daemonPod{}
	}
	seen := make(map[types.UID]bool, len(dss))
	for _, ds := range dss {
		seen[ds.UID] = true
		if cached, ok := d.pods[ds.UID]; ok && cached.generation == ds.Generation {
			continue
		}
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ds.Namespace, Name: ds.Name + "-daemon", UID: ds.UID, Labels: ds.Spec.Template.Labels,
				// Its DaemonSet, as on the real pod: a claim names the DaemonSets it keeps room for.
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}},
			Spec: *ds.Spec.Template.Spec.DeepCopy(),
		}
		dsutil.AddOrUpdateDaemonPodTolerations(&pod.Spec)
		planned, why := prefiltered(ctx, fw, pod)
		if planned == nil {
			klog.FromContext(ctx).V(4).Info("DaemonSet pod fails PreFilter; not counted on new nodes", "daemonset", klog.KObj(ds), "status", why)
		}
		d.pods[ds.UID] = daemonPod{generation: ds.Generation, pod: planned}
	}
	for uid := range d.pods {
		if !seen[uid] {
			delete(d.pods, uid)
		}
	}
}

// prefiltered is pod, a pod its controller will create, with the state the profile's PreFilter
// plugins give it, to be planned like a pending pod; nil and why if PreFilter rejects it.
// Scheduling goroutine only: PreFilter reads the scheduler's snapshot.
func prefiltered(ctx context.Context, fw framework.Framework, pod *corev1.Pod) (*planning.Pod, string) {
	state := framework.NewCycleState()
	if _, s, _ := fw.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
		return nil, s.Message()
	}
	return planning.NewPod(pod, &planning.FilterState{Plugins: fw, State: state, Pod: pod}), ""
}

// list returns the daemon pods as last refreshed.
func (d *daemons) list(context.Context) []*planning.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*planning.Pod, 0, len(d.pods))
	for _, dp := range d.pods {
		if dp.pod != nil {
			out = append(out, dp.pod)
		}
	}
	return out
}
