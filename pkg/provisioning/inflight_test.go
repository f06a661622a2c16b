package provisioning

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// A claim takes pods that arrive while its node is not up: launched, or registered but not yet
// initialized (the scheduler cannot place a pod there before). Once up, or going, it takes none.
func TestInFlight(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name        string
		phase       v1alpha1.ClaimPhase
		initialized bool
		deleting    bool
		want        bool
	}{
		{name: "launching", phase: v1alpha1.ClaimPending},
		{name: "launched", phase: v1alpha1.ClaimLaunched, want: true},
		{name: "registered, starting", phase: v1alpha1.ClaimRegistered, want: true},
		{name: "registered, up", phase: v1alpha1.ClaimRegistered, initialized: true},
		{name: "launched, deleted", phase: v1alpha1.ClaimLaunched, deleting: true},
		{name: "failed", phase: v1alpha1.ClaimFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: tc.phase}}
			if tc.initialized {
				c.Status.InitializedAt = &now
			}
			if tc.deleting {
				c.DeletionTimestamp = &now
			}
			if got := inFlight(c); got != tc.want {
				t.Errorf("inFlight = %v, want %v", got, tc.want)
			}
		})
	}
}

// A claim whose node is deleted or drained takes no more pods, up or not.
func TestNodeGoing(t *testing.T) {
	now := metav1.Now()
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "starting"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleted", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.FinalizerTermination}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "drained"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintDisrupting, Effect: corev1.TaintEffectNoSchedule}}}},
	} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	p := &Provisioner{Options: Options{Nodes: corelisters.NewNodeLister(indexer)}}
	for node, want := range map[string]bool{"starting": false, "deleted": true, "drained": true, "not-yet-registered": false, "": false} {
		c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: node}}
		if got := p.nodeGoing(c); got != want {
			t.Errorf("node %q: nodeGoing = %v, want %v", node, got, want)
		}
	}
}

// A pod arriving while a claim's node boots takes the room its plan left free, never the room
// kept for its workloads' pods still to come: once the node is up, the scheduler's Filter would
// refuse it that room, and it would be planned again.
func TestFillInFlightLeavesRoomKeptForPodsToCome(t *testing.T) {
	for _, tc := range []struct {
		name     string
		toCome   int
		wantKept bool
	}{
		{name: "no pods to come: the pod takes the free room", toCome: 0, wantKept: true},
		{name: "three api pods to come: their room is not free", toCome: 3, wantKept: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lw := newReservationsWorld(t)
			p := New(lw.l.Options)
			c := lw.claim(t, "booting")
			c.Spec.ExpectedPods = []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "default", Name: "api", UID: "rs-api", Count: tc.toCome,
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("2Gi")}}}
			c, err := lw.l.Claims.Update(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			c.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched, InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", NodeName: "node-1"}
			if _, err := lw.l.Claims.UpdateStatus(context.Background(), c); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := lw.l.Claims.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				got, ok := lw.l.Claims.Get("booting")
				return ok && inFlight(got), nil
			}); err != nil {
				t.Fatal("the claim is not cached in flight")
			}
			templates, err := p.Offerings.Templates(ctx)
			if err != nil {
				t.Fatal(err)
			}
			arriving := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "worker", UID: "uid-worker"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("3Gi")}}}}}}
			if err := lw.pods.Add(arriving); err != nil {
				t.Fatal(err)
			}
			fw := newRolloutWorld(t, 1).fw
			state, err := fw.PreFilter(ctx, arriving)
			if err != nil {
				t.Fatal(err)
			}
			pod := planning.NewPod(arriving, &planning.FilterState{Plugins: fw, State: state, Pod: arriving})
			rest := p.fillInFlight(ctx, []*planning.Pod{pod}, planning.IndexTemplates(templates))
			if placed := len(rest) == 0; placed != tc.wantKept {
				t.Errorf("placed on the booting claim: %v, want %v", placed, tc.wantKept)
			}
		})
	}
}

// A claim's node is up once the claim records it initialized, or, before the claim does, once
// the node cache shows it Ready with no taint of a node coming up.
func TestNodeUp(t *testing.T) {
	now := metav1.Now()
	ready := corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, n := range []*corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "ready"}, Status: ready},
		{ObjectMeta: metav1.ObjectMeta{Name: "cordoned"}, Spec: corev1.NodeSpec{Unschedulable: true,
			Taints: []corev1.Taint{{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}}}, Status: ready},
		{ObjectMeta: metav1.ObjectMeta{Name: "unregistered"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: v1alpha1.TaintUnregistered, Effect: corev1.TaintEffectNoExecute}}}, Status: ready},
		{ObjectMeta: metav1.ObjectMeta{Name: "not-ready"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "deleted", DeletionTimestamp: &now, Finalizers: []string{v1alpha1.FinalizerTermination}}, Status: ready},
	} {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
	}
	p := &Provisioner{Options: Options{Args: &config.TailorArgs{}, Nodes: corelisters.NewNodeLister(indexer)}}
	for _, tc := range []struct {
		node        string
		initialized bool
		want        bool
	}{
		{node: "ready", want: true},
		{node: "cordoned", want: true},
		{node: "unregistered"},
		{node: "not-ready"},
		{node: "deleted"},
		{node: "not-yet-registered"},
		{node: ""},
		{node: "not-ready", initialized: true, want: true},
	} {
		c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched, NodeName: tc.node}}
		if tc.initialized {
			c.Status.InitializedAt = &now
		}
		if got := p.nodeUp(c); got != tc.want {
			t.Errorf("node %q, initialized %v: nodeUp = %v, want %v", tc.node, tc.initialized, got, tc.want)
		}
	}
}

// A claim whose node the node cache shows up, before the claim records it, takes no pods: the
// pods that fit there are handed back to the scheduler, once, instead of written to a claim
// about to change (or planned anew beside it).
func TestFillInFlightHandsBackPodsForANodeUp(t *testing.T) {
	lw := newReservationsWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := lw.claim(t, "booted")
	c.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand", NodeName: "node-1"}
	if _, err := lw.l.Claims.UpdateStatus(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := lw.l.Claims.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		got, ok := lw.l.Claims.Get("booted")
		return ok && inFlight(got), nil
	}); err != nil {
		t.Fatal("the claim is not cached in flight")
	}
	nodes := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	if err := nodes.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}); err != nil {
		t.Fatal(err)
	}
	var activated []*corev1.Pod
	o := lw.l.Options
	o.Nodes = corelisters.NewNodeLister(nodes)
	o.Activate = func(ps []*corev1.Pod) { activated = append(activated, ps...) }
	p := New(o)
	templates, err := p.Offerings.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	arriving := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "small", UID: "uid-small"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	fw := newRolloutWorld(t, 1).fw
	state, err := fw.PreFilter(ctx, arriving)
	if err != nil {
		t.Fatal(err)
	}
	pod := planning.NewPod(arriving, &planning.FilterState{Plugins: fw, State: state, Pod: arriving})
	if rest := p.fillInFlight(ctx, []*planning.Pod{pod}, planning.IndexTemplates(templates)); len(rest) != 0 || len(activated) != 1 {
		t.Fatalf("%d pods left to plan, %d handed back; want the pod handed back", len(rest), len(activated))
	}
	if got, _ := lw.l.Claims.Get("booted"); len(got.Spec.Pods) != 1 {
		t.Errorf("the claim holds %d pods, want only its own: nothing written to it", len(got.Spec.Pods))
	}
	if rest := p.fillInFlight(ctx, []*planning.Pod{pod}, planning.IndexTemplates(templates)); len(rest) != 1 {
		t.Errorf("handed back again: a pod the scheduler failed again must be planned")
	}
}
