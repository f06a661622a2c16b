package rollout

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func TestOwes(t *testing.T) {
	now := metav1.Now()
	failed := []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue}}
	rs := func(want *int32, have int32, conds []appsv1.ReplicaSetCondition) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: want}, Status: appsv1.ReplicaSetStatus{Replicas: have, Conditions: conds}}
	}
	job := func(parallelism, completions *int32, active, succeeded int32, conds ...batchv1.JobConditionType) *batchv1.Job {
		j := &batchv1.Job{Spec: batchv1.JobSpec{Parallelism: parallelism, Completions: completions}, Status: batchv1.JobStatus{Active: active, Succeeded: succeeded}}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return j
	}
	tests := []struct {
		name string
		got  int
		want int
	}{
		{"ReplicaSet creating pods", replicaSetOwes(rs(ptr.To[int32](400), 120, nil)), 280},
		{"ReplicaSet complete", replicaSetOwes(rs(ptr.To[int32](3), 3, nil)), 0},
		{"ReplicaSet scaling down", replicaSetOwes(rs(ptr.To[int32](1), 3, nil)), 0},
		{"ReplicaSet without replicas wants one", replicaSetOwes(rs(nil, 0, nil)), 1},
		{"ReplicaSet that cannot create its pods", replicaSetOwes(rs(ptr.To[int32](5), 0, failed)), 0},
		{"ReplicaSet being deleted", replicaSetOwes(func() *appsv1.ReplicaSet {
			r := rs(ptr.To[int32](5), 0, nil)
			r.DeletionTimestamp = &now
			return r
		}()), 0},
		{"StatefulSet creating pods", statefulSetOwes(&appsv1.StatefulSet{Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](60)}, Status: appsv1.StatefulSetStatus{Replicas: 7}}), 53},
		{"Job fanning out", jobOwes(job(ptr.To[int32](400), ptr.To[int32](400), 100, 0)), 300},
		{"Job with few completions left", jobOwes(job(ptr.To[int32](10), ptr.To[int32](12), 1, 9)), 2},
		{"Job without parallelism runs one", jobOwes(job(nil, nil, 0, 0)), 1},
		{"Job complete", jobOwes(job(ptr.To[int32](5), ptr.To[int32](5), 0, 5, batchv1.JobComplete)), 0},
		{"Job failed", jobOwes(job(ptr.To[int32](5), nil, 0, 0, batchv1.JobFailed)), 0},
		{"Job suspended", jobOwes(func() *batchv1.Job { j := job(ptr.To[int32](5), nil, 0, 0); j.Spec.Suspend = ptr.To(true); return j }()), 0},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: owes %d, want %d", tc.name, tc.got, tc.want)
		}
	}
}

// Owing lists only the profile's workloads, with what they owe and their template.
func TestOwing(t *testing.T) {
	tmpl := func(scheduler string) corev1.PodTemplateSpec {
		return corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: scheduler}}
	}
	objs := []*appsv1.ReplicaSet{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "ours"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Template: tmpl("tailor")}, Status: appsv1.ReplicaSetStatus{Replicas: 1}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "theirs"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Template: tmpl("default-scheduler")}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "done"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2), Template: tmpl("tailor")}, Status: appsv1.ReplicaSetStatus{Replicas: 2}},
	}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	for _, o := range objs {
		if err := factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	ss := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}, Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3), Template: tmpl("tailor")}}
	if err := factory.Apps().V1().StatefulSets().Informer().GetIndexer().Add(ss); err != nil {
		t.Fatal(err)
	}
	l := &Lister{ReplicaSets: factory.Apps().V1().ReplicaSets().Lister(), StatefulSets: factory.Apps().V1().StatefulSets().Lister(),
		Jobs: factory.Batch().V1().Jobs().Lister(), SchedulerName: "tailor"}
	ws, err := l.Owing()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.String())
		if w.Template == nil || w.Template.Spec.SchedulerName != "tailor" {
			t.Errorf("%s: template %v", w, w.Template)
		}
	}
	want := []string{"ReplicaSet ns/ours owes 3 pods", "StatefulSet ns/db owes 3 pods"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("owing %q, want %q", got, want)
	}
}

// A workload counts while it creates pods, and stops counting once it has owed the same number
// for Stall; a change (a pod created, a new scale) counts as progress again.
func TestProgress(t *testing.T) {
	p := &Progress{Stall: time.Minute}
	start := time.Now()
	w := func(owed int) []Workload {
		return []Workload{{Kind: "ReplicaSet", Name: "web", UID: types.UID("web"), Owed: owed}}
	}
	steps := []struct {
		after  time.Duration
		owed   int
		moving bool
	}{
		{0, 10, true},
		{30 * time.Second, 10, true},
		{61 * time.Second, 10, false},
		{62 * time.Second, 9, true},
		{2 * time.Minute, 9, true},
		{3 * time.Minute, 9, false},
	}
	for _, s := range steps {
		if got := len(p.Moving(w(s.owed), start.Add(s.after))) == 1; got != s.moving {
			t.Errorf("after %s owing %d: moving %v, want %v", s.after, s.owed, got, s.moving)
		}
	}
	p.Moving(nil, start.Add(4*time.Minute))
	if len(p.seen) != 0 {
		t.Errorf("a workload that owes nothing is still remembered")
	}
}

// With pods to count, what a workload owes follows the pods created, not the controller's
// status, which a ReplicaSet updates only after each burst of creations: a workload whose pods
// all exist owes none, and each pod created is progress.
func TestOwingCountsCreatedPods(t *testing.T) {
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid"},
		Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](4), Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{SchedulerName: "tailor"}}},
		Status: appsv1.ReplicaSetStatus{Replicas: 0}}
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	if err := factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
		t.Fatal(err)
	}
	pods := factory.Core().V1().Pods().Informer().GetIndexer()
	l := &Lister{ReplicaSets: factory.Apps().V1().ReplicaSets().Lister(), StatefulSets: factory.Apps().V1().StatefulSets().Lister(),
		Jobs: factory.Batch().V1().Jobs().Lister(), Pods: factory.Core().V1().Pods().Lister(), SchedulerName: "tailor"}
	p := &Progress{Stall: time.Minute}
	now := time.Now()
	for created, want := range []string{"ReplicaSet ns/web owes 4 pods", "ReplicaSet ns/web owes 3 pods", "ReplicaSet ns/web owes 2 pods", "ReplicaSet ns/web owes 1 pods", ""} {
		if created > 0 {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("web-", created), Labels: labels,
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: "rs-uid", Controller: ptr.To(true)}}}}
			if err := pods.Add(pod); err != nil {
				t.Fatal(err)
			}
		}
		ws, err := l.Owing()
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if len(ws) == 1 {
			got = ws[0].String()
		}
		if got != want || len(ws) > 1 {
			t.Fatalf("%d pods created, status still 0: owing %v, want %q", created, ws, want)
		}
		// Each pod created is progress, whatever the status says: the workload keeps counting
		// past Stall as long as pods keep coming.
		now = now.Add(50 * time.Second)
		if want != "" && len(p.Moving(ws, now)) != 1 {
			t.Fatalf("%d pods created, a pod every 50s: no longer moving", created)
		}
	}
}

// A Deployment of the profile is unsynced while its controller has not acted on its spec (its
// ReplicaSet for it may not exist yet); one of another scheduler, scaled to zero, paused,
// failing to create its ReplicaSet, or synced is not.
func TestUnsynced(t *testing.T) {
	deployment := func(scheduler string, generation, observed int64, replicas int32, paused bool) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", Generation: generation},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Paused: paused,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: scheduler}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: observed}}
	}
	for _, tc := range []struct {
		name string
		d    *appsv1.Deployment
		want bool
	}{
		{"just created", deployment("tailor", 1, 0, 3, false), true},
		{"scaled, not yet seen", deployment("tailor", 2, 1, 3, false), true},
		{"synced", deployment("tailor", 2, 2, 3, false), false},
		{"another scheduler's", deployment("default-scheduler", 1, 0, 3, false), false},
		{"scaled to zero", deployment("tailor", 1, 0, 0, false), false},
		{"paused", deployment("tailor", 1, 0, 3, true), false},
		{"its ReplicaSet cannot be created", func() *appsv1.Deployment {
			d := deployment("tailor", 1, 0, 3, false)
			d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue}}
			return d
		}(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			if err := factory.Apps().V1().Deployments().Informer().GetIndexer().Add(tc.d); err != nil {
				t.Fatal(err)
			}
			l := &Lister{Deployments: factory.Apps().V1().Deployments().Lister(), SchedulerName: "tailor"}
			if got := l.Unsynced(); got != tc.want {
				t.Errorf("Unsynced = %v, want %v", got, tc.want)
			}
		})
	}
}
