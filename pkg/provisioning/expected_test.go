package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/profile/profiletest"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// rolloutWorld is a ReplicaSet of the profile in informer caches, with a way to add its pods.
type rolloutWorld struct {
	t       *testing.T
	fw      *profile.Framework
	factory informers.SharedInformerFactory
	rs      *appsv1.ReplicaSet
	lister  *rollout.Lister
}

func newRolloutWorld(t *testing.T, replicas int32) *rolloutWorld {
	factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-web"},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, Spec: corev1.PodSpec{SchedulerName: "tailor"}}}}
	if err := factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Add(rs); err != nil {
		t.Fatal(err)
	}
	l := &rollout.Lister{ReplicaSets: factory.Apps().V1().ReplicaSets().Lister(), StatefulSets: factory.Apps().V1().StatefulSets().Lister(),
		Jobs: factory.Batch().V1().Jobs().Lister(), Pods: factory.Core().V1().Pods().Lister(), SchedulerName: "tailor"}
	_, fw := profiletest.Example(t)
	return &rolloutWorld{t: t, fw: fw, factory: factory, rs: rs, lister: l}
}

// newRolloutProvisioner is a Provisioner of a reservations world whose pods and workloads are a
// rollout world's: a ReplicaSet web wanting replicas pods.
func newRolloutProvisioner(t *testing.T, replicas int32) (*rolloutWorld, *reservationsWorld, *Provisioner) {
	t.Helper()
	w := newRolloutWorld(t, replicas)
	lw := newReservationsWorld(t)
	o := lw.l.Options
	o.Rollouts, o.Pods = w.lister, w.factory.Core().V1().Pods().Lister()
	return w, lw, New(o)
}

// pod is a pending pod of the ReplicaSet, in the caches, as the batch holds it.
func (w *rolloutWorld) pod(i int) *planning.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("web-%d", i), UID: types.UID(fmt.Sprintf("web-%d", i)),
		Labels:          map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: w.rs.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
	if err := w.factory.Core().V1().Pods().Informer().GetIndexer().Add(p); err != nil {
		w.t.Fatal(err)
	}
	state, err := w.fw.PreFilter(context.Background(), p)
	if err != nil {
		w.t.Fatal(err)
	}
	return planning.NewPod(p, &planning.FilterState{Plugins: w.fw, State: state, Pod: p})
}

func (w *rolloutWorld) scale(replicas int32) {
	rs := w.rs.DeepCopy()
	rs.Spec.Replicas = ptr.To(replicas)
	if err := w.factory.Apps().V1().ReplicaSets().Informer().GetIndexer().Update(rs); err != nil {
		w.t.Fatal(err)
	}
}

// A batch with pods of a ReplicaSet still creating its pods is planned with the pods still to
// come, once: a later batch of the same rollout adds none, a scale-up adds the difference.
func TestExpectedPods(t *testing.T) {
	w := newRolloutWorld(t, 10)
	p := &Provisioner{Options: Options{Rollouts: w.lister}}
	batch := []*planning.Pod{w.pod(0), w.pod(1)}
	expected, shares := p.expected(batch)
	if len(expected) != 8 {
		t.Fatalf("%d pods expected, want 8 (10 wanted, 2 here)", len(expected))
	}
	for _, e := range expected {
		if !isExpected(e) || e.Pod.Labels["app"] != "web" || e.Filter == nil || e.Filter.Pod != e.Pod || shares[e.Pod.UID].Name != "web" {
			t.Errorf("expected pod %s: not a copy of the batch's pod planned for web", e.Pod.Name)
		}
	}
	if len(shares) != 10 {
		t.Errorf("%d pods with a workload, want 10", len(shares))
	}
	if again, _ := p.expected([]*planning.Pod{w.pod(2), w.pod(3)}); len(again) != 0 {
		t.Errorf("the next wave of the same rollout expects %d more pods, want none", len(again))
	}
	w.scale(15)
	if more, _ := p.expected([]*planning.Pod{w.pod(4)}); len(more) != 5 {
		t.Errorf("scaled from 10 to 15: %d more pods expected, want 5", len(more))
	}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare", UID: "bare"}}
	if none, shares := p.expected([]*planning.Pod{planning.NewPod(bare, &planning.FilterState{State: framework.NewCycleState(), Pod: bare})}); len(none) != 0 || len(shares) != 0 {
		t.Errorf("a pod without a controller: %d expected, %d shares", len(none), len(shares))
	}
}

// Pods created after the batch was taken, neither bound nor on a claim, are planned with the
// pods still to come: the next batch finds room kept for them. Pods already bound or waiting on
// a claim are not planned again.
func TestExpectedCountsPodsOutsideTheBatch(t *testing.T) {
	w := newRolloutWorld(t, 10)
	p := &Provisioner{Options: Options{Rollouts: w.lister, Ledger: ledger.New()}}
	batch := []*planning.Pod{w.pod(0), w.pod(1)}
	bound := w.pod(2).Pod.DeepCopy()
	bound.Spec.NodeName = "node-a"
	if err := w.factory.Core().V1().Pods().Informer().GetIndexer().Update(bound); err != nil {
		t.Fatal(err)
	}
	p.Ledger.Add("claim-a", "", []types.UID{w.pod(3).Pod.UID})
	w.pod(4) // created after the batch was taken
	w.pod(5)
	expected, _ := p.expected(batch)
	if len(expected) != 6 {
		t.Errorf("%d pods expected, want 6 (10 wanted: 2 in the batch, 1 bound, 1 on a claim)", len(expected))
	}
}

// A claim counts, per workload with pods still to come on its node, every pod of it the node
// holds; its pods are only those that exist.
func TestExpectedOn(t *testing.T) {
	w := newRolloutWorld(t, 10)
	p := &Provisioner{Options: Options{Rollouts: w.lister}}
	real := []*planning.Pod{w.pod(0), w.pod(1)}
	expected, shares := p.expected(real)
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "other", UID: "other"}}
	n := &planning.PlannedNode{Pods: append([]*planning.Pod{real[0], planning.NewPod(other, nil)}, expected[:3]...)}
	got := expectedOn(n, shares)
	want := []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "rs-web", Count: 4, Requests: expected[0].Requests}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("expectedOn = %v, want %v", got, want)
	}
	if got := expectedOn(&planning.PlannedNode{Pods: real}, shares); len(got) != 0 {
		t.Errorf("a node of pods that exist expects %v", got)
	}
}

// A claim planned only for pods a workload has not created yet is wanted while the workload
// still means to create them; scaled back before the launch, it is not (the lifecycle drops it).
func TestWantedForExpectedPods(t *testing.T) {
	w := newRolloutWorld(t, 4)
	lw := newReservationsWorld(t)
	lw.l.Rollouts = w.lister
	w.pod(0)
	c := lw.claim(t, "for-expected")
	c.Spec.Pods = nil
	c.Spec.ExpectedPods = []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "rs-web", Count: 3}}
	if !lw.l.Wanted(c) {
		t.Fatal("web wants 4 pods and has 1: its claim is not wanted")
	}
	w.scale(1)
	if lw.l.Wanted(c) {
		t.Error("web scaled back to the pod it has: its claim is still wanted")
	}
}

// Pods of a rollout planned whole take the room planned for them on claims whose nodes have not
// registered, as many as each planned, instead of being planned anew; the rest are returned.
func TestFillExpected(t *testing.T) {
	w, lw, p := newRolloutProvisioner(t, 10)
	first := w.pod(0)
	c := lw.claim(t, "web-room")
	c.Spec.Pods = []v1alpha1.PodRef{{Namespace: "ns", Name: first.Pod.Name, UID: string(first.Pod.UID)}}
	c.Spec.ExpectedPods = []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "rs-web", Count: 3}}
	if _, err := lw.l.Claims.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	waitCached(t, lw, "web-room")
	templates, err := p.Offerings.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	batch := []*planning.Pod{w.pod(1), w.pod(2), w.pod(3), w.pod(4)}
	rest := p.fillExpected(context.Background(), batch, planning.IndexTemplates(templates))
	if len(rest) != 2 {
		t.Fatalf("%d pods left, want 2 (the claim had room for 2 more of web's pods)", len(rest))
	}
	got, err := lw.l.Claims.Fetch(context.Background(), "web-room")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Pods) != 3 || got.Spec.PodCount != 3 {
		t.Errorf("claim has %d pods (podCount %d), want 3", len(got.Spec.Pods), got.Spec.PodCount)
	}
	for _, ref := range got.Spec.Pods[1:] {
		if r, ok := p.Ledger.Lookup(types.UID(ref.UID)); !ok || r.Claim != "web-room" {
			t.Errorf("pod %s is on the claim but not waiting for it in the ledger", ref.Name)
		}
	}
	if again := p.fillExpected(context.Background(), rest, planning.IndexTemplates(templates)); len(again) != 2 {
		t.Errorf("the claim's room is full, yet %d of 2 pods were taken", 2-len(again))
	}
}

// waitCached runs the claims cache and waits until it holds the claim with its expected pods.
func waitCached(t *testing.T, lw *reservationsWorld, name string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := lw.l.Claims.Run(ctx); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		c, ok := lw.l.Claims.Get(name)
		return ok && len(c.Spec.ExpectedPods) > 0, nil
	})
	if err != nil {
		t.Fatalf("claim %s not cached: %v", name, err)
	}
}

// A batch is covered while every pod's workload is still creating pods and no Deployment of the
// profile waits for its ReplicaSet, and only then.
func TestCovered(t *testing.T) {
	w := newRolloutWorld(t, 10)
	w.lister.Deployments = w.factory.Apps().V1().Deployments().Lister()
	p := &Provisioner{Options: Options{Rollouts: w.lister, Ledger: ledger.New()}}
	batch := []*planning.Pod{w.pod(0), w.pod(1)}
	if !p.covered(batch) {
		t.Errorf("the ReplicaSet wants 10 and has 2: want covered")
	}
	if p.covered(append(batch, planning.NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare", UID: "bare"}}, nil))) {
		t.Errorf("a bare pod in the batch: want not covered")
	}
	api := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "api", Generation: 1},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](3), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{SchedulerName: "tailor"}}}}
	deployments := w.factory.Apps().V1().Deployments().Informer().GetIndexer()
	if err := deployments.Add(api); err != nil {
		t.Fatal(err)
	}
	if p.covered(batch) {
		t.Errorf("a Deployment of the profile has no ReplicaSet yet: want not covered")
	}
	api = api.DeepCopy()
	api.Status.ObservedGeneration = 1
	if err := deployments.Update(api); err != nil {
		t.Fatal(err)
	}
	if !p.covered(batch) {
		t.Errorf("the Deployment's controller has acted on it: want covered")
	}
	w.scale(2)
	if p.covered(batch) {
		t.Errorf("the ReplicaSet has all its pods: want not covered")
	}
}

// A workload that has created no pod yet is planned with the batch from the pod Upcoming gives
// for it (another workload's pod failed first), once: the next batch finds it covered.
func TestExpectedPlansWorkloadsWithoutPods(t *testing.T) {
	w := newRolloutWorld(t, 6)
	template := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-upcoming", UID: "upcoming:rs-web",
		Labels:          map[string]string{"app": "web"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", UID: w.rs.UID, Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "c"}}}}
	state, err := w.fw.PreFilter(context.Background(), template)
	if err != nil {
		t.Fatal(err)
	}
	upcoming := planning.NewPod(template, &planning.FilterState{Plugins: w.fw, State: state, Pod: template})
	p := &Provisioner{Options: Options{Rollouts: w.lister, Upcoming: func() []*planning.Pod { return []*planning.Pod{upcoming} }}}
	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bare", UID: "bare"}}
	batch := []*planning.Pod{planning.NewPod(bare, &planning.FilterState{State: framework.NewCycleState(), Pod: bare})}
	expected, shares := p.expected(batch)
	if len(expected) != 6 {
		t.Fatalf("%d pods expected, want web's 6", len(expected))
	}
	for _, e := range expected {
		if !isExpected(e) || e.Pod.Labels["app"] != "web" || e.Filter == nil || shares[e.Pod.UID].Name != "web" {
			t.Errorf("expected pod %s: not web's pod to come", e.Pod.Name)
		}
	}
	if again, _ := p.expected(batch); len(again) != 0 {
		t.Errorf("web's pods were planned; the next batch expects %d more, want none", len(again))
	}
}
