package consolidation

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
	claimsfake "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// triageWorld is a controller on fakes (the Kubernetes API, the claims API, the cloud) holding
// one owned node, its claim, its running instance and its pods.
type triageWorld struct {
	c      *Controller
	kube   *fake.Clientset
	claims *claimsfake.Clientset
	o      *ownedNode
}

func newTriageWorld(t *testing.T, w *world, o *ownedNode, pods ...*corev1.Pod) *triageWorld {
	t.Helper()
	o.claim.Finalizers = []string{v1alpha1.FinalizerTermination}
	o.claim.Status.InstanceID = "i-" + o.node.Name
	objs := []runtime.Object{o.node}
	for _, p := range pods {
		objs = append(objs, p)
	}
	kube := fake.NewClientset(objs...)
	cs := claimstest.NewClientset(o.claim)
	provider := cloudfake.New(nil, nil, nil)
	provider.AddInstance(cloud.Instance{ID: o.claim.Status.InstanceID, Tags: map[string]string{v1alpha1.TagClaim: o.claim.Name}})
	c := &Controller{Args: &config.TailorArgs{Pools: []config.Pool{*w.pool}}, Cloud: provider, Claims: claims.NewStoreForClient(cs),
		Client: kube, Recorder: events.NewFakeRecorder(100), Clock: testingclock.NewFakePassiveClock(w.now), DrainTimeout: time.Minute}
	c.activity, c.events, c.decided = map[string]time.Time{}, map[string]time.Time{}, map[string]time.Time{} // as Run makes them
	return &triageWorld{c: c, kube: kube, claims: cs, o: o}
}

// node reads the node from the API server.
func (tw *triageWorld) node(t *testing.T) *corev1.Node {
	t.Helper()
	n, err := tw.kube.CoreV1().Nodes().Get(context.Background(), tw.o.node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// claimDeleting says whether the claim is being deleted (and still there: its finalizer is the
// lifecycle's to take off).
func (tw *triageWorld) claimDeleting(t *testing.T) bool {
	t.Helper()
	cl, err := tw.claims.TailorV1alpha1().Claims().Get(context.Background(), tw.o.claim.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the claim is gone (%v): its finalizer is the termination stage's to take off", err)
	}
	return cl.DeletionTimestamp != nil
}

// evicted lists the pods an eviction was asked for.
func (tw *triageWorld) evicted() []string {
	var out []string
	for _, a := range tw.kube.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetSubresource() == "eviction" {
			if e, ok := c.GetObject().(*policyv1.Eviction); ok {
				out = append(out, e.Name)
			}
		}
	}
	return out
}

// Each pass first moves every drain along and picks the nodes a decision may take: a node handed
// over for termination is left alone, a deleted claim's empty node is handed over, a disrupting
// node's pods are evicted, an interrupted node is a candidate whatever its state, and a node is
// otherwise one only once it is initialized.
func TestTriage(t *testing.T) {
	w := newWorld(t)
	initialized := func(_ *world, o *ownedNode) { o.claim.Status.InitializedAt = &metav1.Time{Time: w.now.Add(-time.Hour)} }
	deleting := func(_ *world, o *ownedNode) { o.claim.DeletionTimestamp = &metav1.Time{Time: w.now} }
	disrupting := func(_ *world, o *ownedNode) {
		o.node.Spec.Unschedulable = true
		o.node.Spec.Taints = append(o.node.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintDisrupting, Value: methodDelete, Effect: corev1.TaintEffectNoSchedule})
		annotated(v1alpha1.AnnotationDisruptingSince, w.now.UTC().Format(time.RFC3339))(w, o)
	}
	tests := []struct {
		name          string
		opts          []nodeOpt
		pods          func(node string) []*corev1.Pod
		wantCandidate bool
		wantDraining  bool
		// check looks at what the pass wrote.
		check func(t *testing.T, tw *triageWorld)
	}{
		{name: "initialized and Ready: a candidate", opts: []nodeOpt{initialized}, wantCandidate: true,
			check: func(t *testing.T, tw *triageWorld) {
				if tw.claimDeleting(t) || lifecycle.Drained(tw.node(t)) {
					t.Error("a candidate was handed over")
				}
			}},
		{name: "not initialized yet: capacity still arriving"},
		{name: "annotated drained by hand, never drained: a candidate like any other", wantCandidate: true,
			opts: []nodeOpt{initialized, annotated(v1alpha1.AnnotationDrained, time.Now().UTC().Format(time.RFC3339))},
			check: func(t *testing.T, tw *triageWorld) {
				if tw.claimDeleting(t) {
					t.Error("the claim of a node never drained was handed over")
				}
			}},
		{name: "handed over for termination: left to the lifecycle", opts: []nodeOpt{initialized, deleting, disrupting,
			annotated(v1alpha1.AnnotationDrained, time.Now().UTC().Format(time.RFC3339))},
			check: func(t *testing.T, tw *triageWorld) {
				if len(tw.kube.Actions()) != 0 {
					t.Errorf("the pass wrote %v for a node handed over", tw.kube.Actions())
				}
			}},
		{name: "marked drained, its claim not deleted yet (a crash came between): the claim is deleted", opts: []nodeOpt{initialized, disrupting,
			annotated(v1alpha1.AnnotationDrained, time.Now().UTC().Format(time.RFC3339))},
			check: func(t *testing.T, tw *triageWorld) {
				if !tw.claimDeleting(t) {
					t.Error("the drained node's claim is not being deleted")
				}
				if got := tw.evicted(); len(got) != 0 {
					t.Errorf("evicted %v from a node handed over", got)
				}
			}},
		{name: "its claim deleted, the node empty: drained and handed over", opts: []nodeOpt{initialized, deleting}, wantDraining: true,
			check: func(t *testing.T, tw *triageWorld) {
				if n := tw.node(t); !lifecycle.Drained(n) || disruptedBy(n) != methodDeleted {
					t.Errorf("node taint %q, annotations %v: want it tainted for the deletion and marked drained", disruptedBy(n), n.Annotations)
				}
				if !tw.claimDeleting(t) {
					t.Error("the claim is not being deleted")
				}
			}},
		{name: "disrupting with a pod left: the pod is evicted", opts: []nodeOpt{initialized, disrupting}, wantDraining: true,
			pods: func(node string) []*corev1.Pod { return []*corev1.Pod{w.pod("web-1", node, "1")} },
			check: func(t *testing.T, tw *triageWorld) {
				if got := tw.evicted(); !slices.Equal(got, []string{"web-1"}) {
					t.Errorf("evicted %v, want web-1", got)
				}
				if lifecycle.Drained(tw.node(t)) {
					t.Error("a node with a pod left is marked drained")
				}
			}},
		{name: "interrupted, not even initialized: a candidate", opts: []nodeOpt{annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot)},
			wantCandidate: true, wantDraining: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := w.node("n", "m6g.large", tc.opts...)
			var pods []*corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(o.node.Name)
			}
			tw := newTriageWorld(t, w, o, pods...)
			s := w.snapshot(1, []*ownedNode{o}, pods...)
			reserved := map[string]bool{}
			candidates, draining := tw.c.triage(context.Background(), s, map[string][]*corev1.Pod{o.node.Name: pods}, reserved)
			if got := len(candidates) == 1; got != tc.wantCandidate {
				t.Errorf("a candidate: %v, want %v", got, tc.wantCandidate)
			}
			if draining != tc.wantDraining {
				t.Errorf("draining: %v, want %v", draining, tc.wantDraining)
			}
			if tc.check != nil {
				tc.check(t, tw)
			}
		})
	}
}
