package dryrun

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/profile/profiletest"
	"github.com/tailor-eks/tailor/pkg/workload"
)

// testPod requests cpu; apart keeps it off nodes with another pod of its app (hostname
// anti-affinity); selector, when set, is its node selector.
func testPod(name, app, cpu string, apart bool, selector map[string]string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeSelector: selector, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	if apart {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}}
	}
	return p
}

func testNode(name string, labels map[string]string) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: "us-east-1a"}},
		Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: resource.MustParse("10")}},
	}
	for k, v := range labels {
		n.Labels[k] = v
	}
	return n
}

// filterOn is the profile's Filter verdict for pod, given its PreFilter state, on a copy of
// node as the snapshot holds it that also has the label probe=yes.
func filterOn(t *testing.T, fw *profile.Framework, pod *corev1.Pod, state fwk.CycleState, node string) string {
	t.Helper()
	ni, err := fw.SnapshotSharedLister().NodeInfos().Get(node)
	if err != nil {
		t.Fatal(err)
	}
	probe := ni.(*framework.NodeInfo).SnapshotConcrete()
	n := probe.Node().DeepCopy()
	n.Labels["probe"] = "yes"
	probe.SetNode(n)
	if s := fw.RunFilterPlugins(context.Background(), state.Clone(), pod, probe); !s.IsSuccess() {
		return fmt.Sprint(s.Reasons())
	}
	return "fits"
}

// TestScheduleOnExisting: pending pods take the manifest's nodes first, in name order, each seeing
// the pods bound before it; the pods left for the planner carry PreFilter states as a fresh
// PreFilter over the final cluster gives them, also for a pod asked before later pods were bound.
func TestScheduleOnExisting(t *testing.T) {
	probe := map[string]string{"probe": "yes"}
	uniform := func(uid string, pods ...*corev1.Pod) []*corev1.Pod {
		for _, p := range pods {
			p.UID = types.UID(uid)
		}
		return pods
	}
	for _, tc := range []struct {
		name         string
		nodes        []*corev1.Node
		pods         []*corev1.Pod
		wantExisting map[string][]string
		wantPending  []string
	}{
		{"no nodes", nil, []*corev1.Pod{testPod("a", "a", "1", false, nil)}, map[string][]string{}, []string{"a"}},
		{"nodes fill in name order", []*corev1.Node{testNode("n2", nil), testNode("n1", nil)},
			[]*corev1.Pod{testPod("a", "a", "1", false, nil), testPod("b", "a", "1", false, nil), testPod("c", "a", "1500m", false, nil), testPod("d", "a", "1", false, nil)},
			map[string][]string{"n1": {"a", "b"}, "n2": {"c"}}, []string{"d"}},
		{"pods bound in the manifest count, on known nodes only", []*corev1.Node{testNode("n1", nil)},
			[]*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gone", UID: "uid-gone"}, Spec: corev1.PodSpec{NodeName: "deleted"}},
				func() *corev1.Pod { p := testPod("old", "a", "1500m", false, nil); p.Spec.NodeName = "n1"; return p }(),
				testPod("a", "a", "500m", false, nil), testPod("b", "a", "500m", false, nil)},
			map[string][]string{"n1": {"a"}}, []string{"b"}},
		{"anti-affinity: one per node", []*corev1.Node{testNode("n1", nil), testNode("n2", nil)},
			[]*corev1.Pod{testPod("x0", "x", "100m", true, nil), testPod("x1", "x", "100m", true, nil), testPod("x2", "x", "100m", true, nil)},
			map[string][]string{"n1": {"x0"}, "n2": {"x1"}}, []string{"x2"}},
		// big is asked before x0 is bound: its state must count x0's anti-affinity.
		{"a pod asked before a later bind", []*corev1.Node{testNode("n1", nil)},
			[]*corev1.Pod{testPod("big", "x", "100m", true, probe), testPod("x0", "x", "100m", true, nil)},
			map[string][]string{"n1": {"x0"}}, []string{"big"}},
		// The scheduler's cache keys pods by UID and refuses the second; the snapshot is then
		// rebuilt from all the pods, with the same answers.
		{"two pods of one UID", []*corev1.Node{testNode("n1", nil), testNode("n2", nil)},
			uniform("same", testPod("a", "a", "1500m", false, nil), testPod("b", "a", "1500m", false, nil), testPod("c", "a", "1", false, nil)),
			map[string][]string{"n1": {"a"}, "n2": {"b"}}, []string{"c"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			_, fw := profiletest.Example(t)
			pending, existing := scheduleOnExisting(ctx, fw, &workload.Workload{Pods: tc.pods, Nodes: tc.nodes})
			gotExisting := map[string][]string{}
			for node, pods := range existing {
				for _, p := range pods {
					gotExisting[node] = append(gotExisting[node], p.Name)
				}
			}
			var gotPending []string
			for _, p := range pending {
				gotPending = append(gotPending, p.pod.Name)
			}
			if !reflect.DeepEqual(gotExisting, tc.wantExisting) || !reflect.DeepEqual(gotPending, tc.wantPending) {
				t.Fatalf("existing %v, pending %v; want %v, %v", gotExisting, gotPending, tc.wantExisting, tc.wantPending)
			}
			for _, p := range pending {
				fresh, err := fw.PreFilter(ctx, p.pod)
				if fmt.Sprint(err) != fmt.Sprint(p.err) {
					t.Fatalf("%s: PreFilter error %v, fresh %v", p.pod.Name, p.err, err)
				}
				for _, n := range tc.nodes {
					if got, want := filterOn(t, fw, p.pod, p.state, n.Name), filterOn(t, fw, p.pod, fresh, n.Name); got != want {
						t.Errorf("%s on %s: %s with its state, %s with a fresh one", p.pod.Name, n.Name, got, want)
					}
				}
			}
		})
	}
}
