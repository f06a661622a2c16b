package planning

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A zone-spread class in a cluster whose zones are uneven (its two pods run on a node in
// us-east-1a, none on the node in us-east-1b) is first accepted only by the emptier zone's templates; as the plan fills that
// zone, the other zone's templates take their turn. Judged once, up front, the class got nodes in
// us-east-1b only, and every pod past the skew was called unschedulable.
func TestSpreadOverUnevenZones(t *testing.T) {
	fw := offline(t)
	t.Cleanup(func() { fw.SetSnapshot(nil, nil) })
	spread := func(name, node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{NodeName: node,
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		}
	}
	running := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "running", Labels: map[string]string{
		corev1.LabelHostname: "running", corev1.LabelTopologyZone: "us-east-1a"}}}
	idle := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "idle", Labels: map[string]string{
		corev1.LabelHostname: "idle", corev1.LabelTopologyZone: "us-east-1b"}}}
	fw.SetSnapshot([]*corev1.Node{running, idle}, []*corev1.Pod{spread("old-1", "running"), spread("old-2", "running")})
	var pods []*Pod
	for i := range 6 {
		p := spread(fmt.Sprintf("new-%d", i), "")
		state, err := fw.PreFilter(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		pods = append(pods, NewPod(p, &FilterState{Plugins: fw, State: state, Pod: p}))
	}
	plan := testPlanner(t).Plan(context.Background(), pods)
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("%d of 6 pods unschedulable: %s", len(plan.Unschedulable), plan.Unschedulable[0].Reason)
	}
	perZone := map[string]int{"us-east-1a": 2}
	for _, n := range plan.Nodes {
		perZone[n.Template.Offering.Zone] += len(n.Pods)
	}
	if perZone["us-east-1a"] != 4 || perZone["us-east-1b"] != 4 {
		t.Errorf("pods per zone, the running ones included: %v, want 4 and 4", perZone)
	}
}
