package planning

import (
	"context"
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/noderesources"
)

// panicking is the profile's plugins with one call that panics, as an in-tree plugin does on a
// state it assumes never happens.
type panicking struct {
	framework.PluginsRunner
	call string
}

func (p *panicking) RunFilterPlugins(ctx context.Context, s fwk.CycleState, pod *corev1.Pod, n fwk.NodeInfo) *fwk.Status {
	if p.call == "Filter" {
		panic("Filter broke")
	}
	return p.PluginsRunner.RunFilterPlugins(ctx, s, pod, n)
}

func (p *panicking) RunPreFilterExtensionAddPod(ctx context.Context, s fwk.CycleState, pod *corev1.Pod, add fwk.PodInfo, n fwk.NodeInfo) *fwk.Status {
	if p.call == "AddPod" {
		panic("AddPod broke")
	}
	return p.PluginsRunner.RunPreFilterExtensionAddPod(ctx, s, pod, add, n)
}

func (p *panicking) RunPreFilterExtensionRemovePod(ctx context.Context, s fwk.CycleState, pod *corev1.Pod, rm fwk.PodInfo, n fwk.NodeInfo) *fwk.Status {
	if p.call == "RemovePod" {
		panic("RemovePod broke")
	}
	return p.PluginsRunner.RunPreFilterExtensionRemovePod(ctx, s, pod, rm, n)
}

// TestPanickingPluginFailsOneQuestion: a plugin that panics refuses the placement it was asked
// about, with a reason naming the call; the process goes on, and a plan over such a pod calls it
// unschedulable while the other pods of the batch are planned as usual.
func TestPanickingPluginFailsOneQuestion(t *testing.T) {
	ctx := context.Background()
	node := nodeInfo(testPlanner(t).Templates[0].Node)
	for _, call := range []string{"Filter", "AddPod", "RemovePod"} {
		t.Run(call, func(t *testing.T) {
			p := pod(t, "p", "100m", "128Mi", nil)
			f := &FilterState{Plugins: &panicking{PluginsRunner: p.Filter.Plugins, call: call}, State: p.Filter.State, Pod: p.Pod}
			other := pod(t, "other", "100m", "128Mi", nil)
			pi, err := framework.NewPodInfo(other.Pod)
			if err != nil {
				t.Fatal(err)
			}
			var reason string
			switch call {
			case "Filter":
				reason = f.Filter(ctx, node)
			case "AddPod":
				reason = f.AddPod(ctx, pi, node)
			case "RemovePod":
				reason = f.RemovePod(ctx, pi, node)
			}
			if !strings.Contains(reason, "panicked in "+call) {
				t.Errorf("reason %q, want it to say the plugin panicked in %s", reason, call)
			}
		})
	}
	t.Run("plan", func(t *testing.T) {
		bad := pod(t, "bad", "100m", "128Mi", nil)
		bad.Filter = &FilterState{Plugins: &panicking{PluginsRunner: bad.Filter.Plugins, call: "Filter"}, State: bad.Filter.State, Pod: bad.Pod}
		// Of another class, so its verdicts are its own.
		good := pod(t, "good", "100m", "128Mi", map[string]string{corev1.LabelArchStable: "amd64"})
		plan := testPlanner(t).Plan(ctx, []*Pod{bad, good})
		if len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Pod.Name != "bad" || !strings.Contains(plan.Unschedulable[0].Reason, "panicked") {
			t.Errorf("unschedulable %+v, want only the pod whose plugin panicked, saying so", plan.Unschedulable)
		}
		if len(plan.Nodes) != 1 || len(plan.Nodes[0].Pods) != 1 || plan.Nodes[0].Pods[0].Pod.Name != "good" {
			t.Errorf("want one node for the other pod, got %d nodes", len(plan.Nodes))
		}
	})
}

// The Filter plugins' resource check, asked about a filterInfo, only says whether the node
// offers a resource at all, and the node itself is left as it is (templates share it).
func TestFilterInfoOffersWhatTheNodeHas(t *testing.T) {
	const gpu corev1.ResourceName = "nvidia.com/gpu"
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi"),
		corev1.ResourcePods: resource.MustParse("29"), gpu: resource.MustParse("0"),
	}}}
	want := node.DeepCopy()
	daemon := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "daemon"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	info := filterInfo(node, daemon)
	if !equality.Semantic.DeepEqual(node, want) || info.Node() != node {
		t.Fatalf("filterInfo changed or copied the node")
	}
	for _, tc := range []struct {
		name     string
		requests corev1.ResourceList
		fits     bool
	}{
		{"far more CPU and memory than the node has", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000"), corev1.ResourceMemory: resource.MustParse("1Ti")}, true},
		{"a GPU on a node with none", corev1.ResourceList{gpu: resource.MustParse("1")}, false},
		{"a resource the node does not list", corev1.ResourceList{"example.com/fpga": resource.MustParse("1")}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Resources: corev1.ResourceRequirements{Requests: tc.requests}}}}}
			short := noderesources.Fits(pod, info, noderesources.ResourceRequestsOptions{})
			if fits := len(short) == 0; fits != tc.fits {
				t.Errorf("fits = %v (short of %v), want %v", fits, short, tc.fits)
			}
		})
	}
}

func TestBeyondAnyPlanKeepsOrder(t *testing.T) {
	for _, pair := range [][2]int64{{0, 1}, {1, 2}, {29, 110}, {4 << 30, 8 << 30}, {1 << 50, math.MaxInt64}} {
		lo, hi := beyondAnyPlan(pair[0]), beyondAnyPlan(pair[1])
		if lo > hi || (pair[0] > 0 && lo < 1<<40) || (pair[0] == 0 && lo != 0) {
			t.Errorf("beyondAnyPlan(%d) = %d, beyondAnyPlan(%d) = %d", pair[0], lo, pair[1], hi)
		}
	}
}
