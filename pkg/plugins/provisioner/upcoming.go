package provisioner

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// upcomingEvery bounds how often the workloads are listed again: refresh runs in PostFilter,
// once per unschedulable pod, and a burst brings thousands. It is short next to a batch's
// window: a workload created in the last moments before a batch closes is planned with it.
const upcomingEvery = 200 * time.Millisecond

// upcoming holds, for each workload of the profile that owes pods and has created none yet, a
// pod as its controller will create it, with its PreFilter state, so a batch plans that
// workload's pods with its own (provisioning's Upcoming). Like daemons, refresh runs on the
// scheduling goroutine, the only one that may read the scheduler's snapshot; the provisioner
// only reads the result.
type upcoming struct {
	handle   framework.Handle
	rollouts *rollout.Lister
	clock    clock.PassiveClock

	mu        sync.Mutex
	pods      map[types.UID]*planning.Pod
	refreshed time.Time
}

// refresh lists the workloads that owe pods and have none, at most every upcomingEvery, and
// computes a pod for each workload not seen before. Scheduling goroutine only.
func (u *upcoming) refresh(ctx context.Context) {
	fw, ok := u.handle.(framework.Framework)
	if !ok || u.rollouts == nil {
		return
	}
	now := u.clock.Now()
	u.mu.Lock()
	defer u.mu.Unlock()
	if now.Sub(u.refreshed) < upcomingEvery {
		return
	}
	u.refreshed = now
	owing, err := u.rollouts.Owing()
	if err != nil {
		return
	}
	seen := make(map[types.UID]*planning.Pod, len(owing))
	for _, w := range owing {
		if w.Owed < w.Wants {
			continue // it has pods: they come to the batches themselves
		}
		if pod, ok := u.pods[w.UID]; ok {
			seen[w.UID] = pod
			continue
		}
		planned, why := prefiltered(ctx, fw, upcomingPod(w))
		if planned == nil {
			klog.FromContext(ctx).V(4).Info("A workload's pod to come fails PreFilter; planned once it comes", "workload", w.String(), "status", why)
		}
		seen[w.UID] = planned
	}
	u.pods = seen
}

// upcomingPod is a pod of w as its controller will create it: its template, owned by w.
func upcomingPod(w rollout.Workload) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name + "-upcoming", UID: types.UID("upcoming:" + string(w.UID)),
			Labels: w.Template.Labels, Annotations: w.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: apiVersionOf(w.Kind), Kind: w.Kind, Name: w.Name, UID: w.UID, Controller: ptr.To(true)}}},
		Spec: *w.Template.Spec.DeepCopy(),
	}
}

func apiVersionOf(kind string) string {
	if kind == "Job" {
		return "batch/v1"
	}
	return "apps/v1"
}

// list returns the pods as last refreshed.
func (u *upcoming) list() []*planning.Pod {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]*planning.Pod, 0, len(u.pods))
	for _, p := range u.pods {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}
