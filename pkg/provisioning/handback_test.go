package provisioning

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// Room counts only on claims whose nodes are up (as the claim records it, or as the node cache
// shows it before the claim does) and whose expectations stand, less the workload's pods
// already on each node.
func TestRoomKeptOnUpNodes(t *testing.T) {
	now := time.Now()
	initializedAt := metav1.NewTime(now.Add(-time.Minute))
	claim := func(name string, phase v1alpha1.ClaimPhase, initialized bool, age time.Duration, count int) *v1alpha1.Claim {
		c := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec:   v1alpha1.ClaimSpec{ExpectedPods: []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", UID: "rs-web", Count: count}, {Kind: "ReplicaSet", UID: "rs-api", Count: 7}}},
			Status: v1alpha1.ClaimStatus{Phase: phase, NodeName: "node-" + name}}
		if initialized {
			c.Status.InitializedAt = &initializedAt
		}
		return c
	}
	bound := func(node string) *corev1.Pod { return &corev1.Pod{Spec: corev1.PodSpec{NodeName: node}} }
	claims := []*v1alpha1.Claim{
		claim("up", v1alpha1.ClaimRegistered, true, time.Minute, 5),
		claim("full", v1alpha1.ClaimRegistered, true, time.Minute, 1),
		claim("booting", v1alpha1.ClaimRegistered, false, time.Minute, 4),
		claim("launched", v1alpha1.ClaimLaunched, false, time.Minute, 4),
		claim("stale", v1alpha1.ClaimRegistered, true, expectationsStand+time.Minute, 4),
		claim("up-not-recorded", v1alpha1.ClaimLaunched, false, time.Minute, 2),
	}
	up := func(c *v1alpha1.Claim) bool { return c.Status.InitializedAt != nil || c.Name == "up-not-recorded" }
	pods := []*corev1.Pod{bound("node-up"), bound("node-up"), bound("node-full"), bound("node-full"), {}}
	if got := roomKeptOnUpNodes("rs-web", pods, claims, up, now); got != 5 {
		t.Errorf("room for web = %d, want 5 (5 planned on the node that is up, 2 there; 2 on the one up before its claim says so)", got)
	}
	if got := roomKeptOnUpNodes("rs-other", pods, claims, up, now); got != 0 {
		t.Errorf("room for a workload no claim planned = %d", got)
	}
}
