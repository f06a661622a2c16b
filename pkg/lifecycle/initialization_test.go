package lifecycle

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestCheckInitialized(t *testing.T) {
	startup := corev1.Taint{Key: "example.com/agent-not-ready", Effect: corev1.TaintEffectNoSchedule}
	cordoned := corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name     string
		node     *corev1.Node
		launched time.Time
		// initialized: the claim records it; removed: the claim is given up like one that never
		// registered.
		initialized, removed bool
	}{
		{name: "Ready without startup taints", node: nodeFor("n", "i-1", true), launched: testNow.Add(-time.Minute), initialized: true},
		{name: "Ready and cordoned: an operational taint is not a startup taint", node: nodeFor("n", "i-1", true, cordoned),
			launched: testNow.Add(-time.Minute), initialized: true},
		{name: "not Ready yet", node: nodeFor("n", "i-1", false), launched: testNow.Add(-time.Minute)},
		{name: "a startup taint still on", node: nodeFor("n", "i-1", true, startup), launched: testNow.Add(-time.Minute)},
		{name: "not Ready past the registration timeout", node: nodeFor("n", "i-1", false), launched: testNow.Add(-16 * time.Minute), removed: true},
		{name: "a startup taint never lifted", node: nodeFor("n", "i-1", true, startup), launched: testNow.Add(-16 * time.Minute), removed: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := claimIn("a", v1alpha1.ClaimRegistered, "i-1", tc.launched, tc.launched)
			cl.Status.NodeName = "n"
			h := newHarness(t, []*v1alpha1.Claim{cl}, []*corev1.Node{tc.node}, []cloud.Instance{instanceOf("i-1", "a", tc.launched)})
			h.c.Args.Pools[0].StartupTaints = []corev1.Taint{startup}
			h.c.sweep(context.Background())
			if got := h.claimGone(t, "a"); got != tc.removed {
				t.Fatalf("claim removed: %v, want %v", got, tc.removed)
			}
			if tc.removed {
				if h.running(t, "i-1") {
					t.Error("the instance of a claim given up still runs")
				}
				return
			}
			if got := h.claim(t, "a").Status.InitializedAt != nil; got != tc.initialized {
				t.Errorf("initialized recorded: %v, want %v", got, tc.initialized)
			}
		})
	}
}

// A claim written since the cache saw it (the provisioner put pods on it while its node came
// up) is still recorded initialized in the same pass, keeping the pods written meanwhile: they
// wait on it, and are tried on the node once it is.
func TestInitializedRecordedOnAClaimWrittenMeanwhile(t *testing.T) {
	ctx := context.Background()
	cl := claimIn("a", v1alpha1.ClaimRegistered, "i-1", testNow.Add(-time.Minute), testNow.Add(-time.Minute))
	cl.Status.NodeName = "n"
	h := newHarness(t, []*v1alpha1.Claim{cl}, []*corev1.Node{nodeFor("n", "i-1", true)}, []cloud.Instance{instanceOf("i-1", "a", testNow.Add(-time.Minute))})
	cached := h.claim(t, "a")
	meanwhile := cached.DeepCopy()
	meanwhile.Spec.Pods = append(meanwhile.Spec.Pods, v1alpha1.PodRef{Namespace: "default", Name: "arrived", UID: "uid-arrived"})
	if _, err := h.claims.TailorV1alpha1().Claims().Update(ctx, meanwhile, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if !h.c.recordInitialized(ctx, cached, nodeFor("n", "i-1", true), testNow) {
		t.Fatal("a Ready node without startup taints is not initialized")
	}
	got := h.claim(t, "a")
	if got.Status.InitializedAt == nil {
		t.Error("the claim is not recorded initialized")
	}
	if len(got.Spec.Pods) != len(meanwhile.Spec.Pods) {
		t.Errorf("the claim holds %d pods, want the %d written meanwhile", len(got.Spec.Pods), len(meanwhile.Spec.Pods))
	}
}
