package provisioner

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/pkg/profile/profiletest"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// Of the profile's workloads that owe pods, those that have created none get a pod as their
// controller will create it, with its PreFilter state; the workloads are listed again at most
// every upcomingEvery.
func TestUpcoming(t *testing.T) {
	ctx := context.Background()
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	replicaSet := func(name string, replicas int32, scheduler string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("rs-" + name)},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{SchedulerName: scheduler, Containers: []corev1.Container{{Name: "c"}}}}}}
		if err := factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
			t.Fatal(err)
		}
		return rs
	}
	replicaSet("cache", 30, "tailor")
	web := replicaSet("web", 400, "tailor")
	replicaSet("other-scheduler", 5, "default-scheduler")
	replicaSet("done", 0, "tailor")
	started := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "web-1", Labels: map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: web.UID, Controller: ptr.To(true)}}}}
	if err := factory.Core().V1().Pods().Informer().GetIndexer().Add(started); err != nil {
		t.Fatal(err)
	}
	_, fw := profiletest.Example(t)
	clock := clocktesting.NewFakePassiveClock(time.Now())
	u := &upcoming{handle: fw, clock: clock, rollouts: &rollout.Lister{ReplicaSets: factory.Apps().V1().ReplicaSets().Lister(),
		StatefulSets: factory.Apps().V1().StatefulSets().Lister(), Jobs: factory.Batch().V1().Jobs().Lister(),
		Pods: factory.Core().V1().Pods().Lister(), SchedulerName: "tailor"}}

	names := func() []string {
		var out []string
		for _, p := range u.list() {
			if p.Filter == nil || p.Filter.State == nil {
				t.Errorf("pod %s has no PreFilter state", p.Pod.Name)
			}
			if w, ok := u.rollouts.Of(p.Pod); !ok || w.Name+"-upcoming" != p.Pod.Name {
				t.Errorf("pod %s is not its workload's", p.Pod.Name)
			}
			out = append(out, p.Pod.Name)
		}
		return out
	}
	u.refresh(ctx)
	if got := names(); len(got) != 1 || got[0] != "cache-upcoming" {
		t.Errorf("pods to come: %v, want cache's alone (web has started, one is another scheduler's, one wants none)", got)
	}
	replicaSet("api", 200, "tailor")
	clock.SetTime(clock.Now().Add(upcomingEvery / 2))
	u.refresh(ctx)
	if got := names(); len(got) != 1 {
		t.Errorf("listed again within %s: %v", upcomingEvery, got)
	}
	clock.SetTime(clock.Now().Add(upcomingEvery))
	u.refresh(ctx)
	if got := names(); len(got) != 2 {
		t.Errorf("pods to come after %s: %v, want cache's and api's", upcomingEvery, got)
	}
}
