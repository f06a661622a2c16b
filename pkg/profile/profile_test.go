package profile

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/manifests"
)

// TestSnapshotOfPodsOnUnknownNodes: pods bound to a node the caller's node list lacks (deleted
// meanwhile, or not yet in its cache) are left out of the snapshot, so the profile's PreFilter
// plugins, topology spread's among them, answer for a spread pod without a panic and count only
// the pods on known nodes.
func TestSnapshotOfPodsOnUnknownNodes(t *testing.T) {
	ctx := context.Background()
	prof, err := Load(manifests.SchedulerConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	fw, _, err := prof.NewFramework(ctx)
	if err != nil {
		t.Fatal(err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "known", Labels: map[string]string{
		corev1.LabelHostname: "known", corev1.LabelTopologyZone: "us-east-1a"}}}
	spread := func(name, nodeName string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "api"}},
			Spec: corev1.PodSpec{NodeName: nodeName,
				TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
					WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1")}}}}},
		}
	}
	fw.SetSnapshot([]*corev1.Node{node}, []*corev1.Pod{spread("on-known", "known"), spread("on-deleted", "deleted")})
	infos, err := fw.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 1 || infos[0].Node() == nil || infos[0].Node().Name != "known" || len(infos[0].GetPods()) != 1 {
		t.Fatalf("snapshot lists %d node infos, want only the known node with its one pod", len(infos))
	}
	if _, err := fw.PreFilter(ctx, spread("new", "")); err != nil {
		t.Fatalf("PreFilter of a spread pod: %v", err)
	}
}

// The example profile sorts its queue with Coscheduling, which is not in-tree: the framework
// leaves it out and still builds, with the in-tree sort in its place.
func TestOutOfTreeQueueSortIsLeftOut(t *testing.T) {
	prof, err := Load(manifests.SchedulerConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	fw, skipped, err := prof.NewFramework(context.Background())
	if err != nil {
		t.Fatalf("building the example profile: %v", err)
	}
	if !slices.Contains(skipped, "Coscheduling") {
		t.Errorf("skipped %v, want Coscheduling among them", skipped)
	}
	if fw.QueueSortFunc() == nil {
		t.Error("no queue sort")
	}
}

func TestEnables(t *testing.T) {
	prof, err := Load(manifests.SchedulerConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	for plugin, want := range map[string]bool{"Coscheduling": true, TailorPlugin: true, "NodeResourcesFit": true, "CapacityScheduling": false} {
		if got := prof.Enables(plugin); got != want {
			t.Errorf("Enables(%s) = %v, want %v", plugin, got, want)
		}
	}
}
