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

// Pods of a zone spread taking room planned for their workload on a node still booting are not
// refused for the spread alone (the nodes planned in the other zones, booting too, hold none of
// their pods yet); planned onto free room instead, they are; and the room's size still counts.
func TestFitOntoPlannedToleratesSpreadOnly(t *testing.T) {
	fw := offline(t)
	t.Cleanup(func() { fw.SetSnapshot(nil, nil) })
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{corev1.LabelHostname: "a", corev1.LabelTopologyZone: "us-east-1a"}}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{corev1.LabelHostname: "b", corev1.LabelTopologyZone: "us-east-1b"}}}
	fw.SetSnapshot([]*corev1.Node{a, b}, nil)
	spread := func(name, cpu string) *Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		}
		state, err := fw.PreFilter(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return NewPod(p, &FilterState{Plugins: fw, State: state, Pod: p})
	}
	var tmpl *Template
	for _, c := range testPlanner(t).Templates {
		if c.Type.Name == "m5.2xlarge" && c.Offering.Zone == "us-east-1a" { // 7910m allocatable
			tmpl = c
			break
		}
	}
	placed := []*Pod{spread("placed-0", "1"), spread("placed-1", "1")}
	candidates := []*Pod{spread("new-0", "1"), spread("new-1", "1"), spread("big", "6")}
	if got := FitOnto(context.Background(), tmpl, "ip-10-0-0-9.ec2.internal", placed, candidates); len(got) != 0 {
		t.Errorf("free room took %d pods two ahead of the other zone", len(got))
	}
	got := FitOntoPlanned(context.Background(), tmpl, "ip-10-0-0-9.ec2.internal", placed, candidates)
	if len(got) != 2 || got[0].Pod.Name != "new-0" || got[1].Pod.Name != "new-1" {
		t.Errorf("planned room took %d pods, want new-0 and new-1 (the big one does not fit)", len(got))
	}
}
