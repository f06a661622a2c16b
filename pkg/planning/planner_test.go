package planning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func testTypes() []cloud.InstanceType {
	mk := func(name, arch string, cpu, memMiB int64, enis, ips int64, price float64) cloud.InstanceType {
		return cloud.InstanceType{Name: name, Arch: arch, VCPUs: cpu, MemoryMiB: memMiB, MaxENIs: enis, IPv4PerENI: ips,
			Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: price}, {Zone: "us-east-1b", CapacityType: cloud.OnDemand, PricePerHour: price}}}
	}
	return []cloud.InstanceType{
		mk("m5.large", "amd64", 2, 8192, 3, 10, 0.096),
		mk("m5.xlarge", "amd64", 4, 16384, 4, 15, 0.192),
		mk("m5.2xlarge", "amd64", 8, 32768, 4, 15, 0.384),
		mk("c5.large", "amd64", 2, 4096, 3, 10, 0.085),
		mk("m6g.large", "arm64", 2, 8192, 3, 10, 0.077),
		mk("m6g.xlarge", "arm64", 4, 16384, 4, 15, 0.154),
	}
}

func testPlanner(t *testing.T, pools ...config.Pool) *Planner {
	t.Helper()
	if len(pools) == 0 {
		pools = []config.Pool{{Name: "default", CapacityTypes: []string{"on-demand"}, Requirements: []config.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}}}}}
	}
	zones := map[string][]string{}
	for _, p := range pools {
		zones[p.Name] = []string{"us-east-1a", "us-east-1b"}
	}
	tmpls, err := Templates(pools, testTypes(), zones)
	if err != nil {
		t.Fatal(err)
	}
	return &Planner{Templates: tmpls}
}

func pod(t testing.TB, name, cpu, mem string, sel map[string]string) *Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: corev1.PodSpec{NodeSelector: sel, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}}},
	}
	return NewPod(p, filterFor(t, p))
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name          string
		pods          []*Pod
		maxNodes      int
		wantType      string // of every node, if set
		unschedulable string // substring of the reason, if the pods cannot be served
	}{
		{name: "one small pod gets the cheapest type", pods: []*Pod{pod(t, "a", "100m", "128Mi", nil)}, maxNodes: 1, wantType: "m6g.large"},
		{name: "amd64 selector", pods: []*Pod{pod(t, "a", "100m", "128Mi", map[string]string{corev1.LabelArchStable: "amd64"})}, maxNodes: 1, wantType: "c5.large"},
		{name: "twenty identical pods share few nodes", pods: func() []*Pod {
			var ps []*Pod
			for i := 0; i < 20; i++ {
				ps = append(ps, pod(t, fmt.Sprintf("p%d", i), "250m", "512Mi", nil))
			}
			return ps
		}(), maxNodes: 4},
		{name: "too big for any type", pods: []*Pod{pod(t, "big", "200", "1Gi", nil)}, unschedulable: "requests 200 cpu; the largest allowed instance type (m5.2xlarge) has 7910m allocatable"},
		{name: "selector nobody satisfies", pods: []*Pod{pod(t, "x", "100m", "1Gi", map[string]string{"disktype": "ssd"})}, unschedulable: "didn't match Pod's node affinity/selector"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			plan := testPlanner(t).Plan(context.Background(), tc.pods)
			if tc.unschedulable != "" {
				if len(plan.Nodes) != 0 || len(plan.Unschedulable) != len(tc.pods) || !strings.Contains(plan.Unschedulable[0].Reason, tc.unschedulable) {
					t.Fatalf("want all unschedulable with %q, got nodes=%d unschedulable=%+v", tc.unschedulable, len(plan.Nodes), plan.Unschedulable)
				}
				return
			}
			if len(plan.Unschedulable) != 0 {
				t.Fatalf("unexpected unschedulable: %+v", plan.Unschedulable)
			}
			if len(plan.Nodes) == 0 || len(plan.Nodes) > tc.maxNodes {
				t.Fatalf("got %d nodes, want 1..%d", len(plan.Nodes), tc.maxNodes)
			}
			placed := 0
			for _, n := range plan.Nodes {
				placed += len(n.Pods)
				if tc.wantType != "" && n.Template.Type.Name != tc.wantType {
					t.Errorf("node %s is %s, want %s", n.Name, n.Template.Type.Name, tc.wantType)
				}
				if n.Alternatives[0] != n.Template {
					t.Errorf("alternatives must start with the chosen template")
				}
				for _, alt := range n.Alternatives {
					if alt.Type.Arch != n.Template.Type.Arch || alt.Offering.Zone != n.Template.Offering.Zone {
						t.Errorf("alternative %s cannot share a launch with %s", alt.Key(), n.Template.Key())
					}
				}
				if r := overPacked(n); r != "" {
					t.Errorf("node %s over-packed: %s", n.Name, r)
				}
			}
			if placed != len(tc.pods) {
				t.Errorf("placed %d of %d pods", placed, len(tc.pods))
			}
		})
	}
}

func TestPoolWeightWins(t *testing.T) {
	pools := []config.Pool{
		{Name: "cheap", Weight: 1, CapacityTypes: []string{"on-demand"}},
		{Name: "preferred", Weight: 50, CapacityTypes: []string{"on-demand"}, Requirements: []config.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}}}}},
	}
	plan := testPlanner(t, pools...).Plan(context.Background(), []*Pod{pod(t, "a", "100m", "128Mi", nil)})
	if len(plan.Nodes) != 1 || plan.Nodes[0].Template.Pool.Name != "preferred" {
		t.Fatalf("want one node in the preferred pool, got %+v", plan.Nodes)
	}
}

// A closed pool (at its limit) leaves the tier before it is chosen: its pods go to the next pool
// by weight in the same plan, and say so; with every pool that takes them closed, they are
// unschedulable for the closed pools' reasons.
func TestClosedPoolHandsItsPodsToTheNextByWeight(t *testing.T) {
	pools := []config.Pool{
		{Name: "cheap", Weight: 1, CapacityTypes: []string{"on-demand"}},
		{Name: "preferred", Weight: 50, CapacityTypes: []string{"on-demand"}, Requirements: []config.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}}}}},
	}
	const full = "pool preferred is at its cpu limit"
	for _, tc := range []struct {
		name     string
		closed   map[string]string
		wantPool string
		diverted bool
		wantWhy  string
	}{
		{"no pool closed", nil, "preferred", false, ""},
		{"top pool closed", map[string]string{"preferred": full}, "cheap", true, ""},
		{"every pool closed", map[string]string{"preferred": full, "cheap": "pool cheap is at its memory limit"}, "", false,
			"pool cheap is at its memory limit; " + full},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := testPlanner(t, pools...)
			pl.Closed = tc.closed
			pods := []*Pod{pod(t, "a", "100m", "128Mi", nil), pod(t, "b", "100m", "128Mi", nil)}
			plan := pl.Plan(context.Background(), pods)
			if tc.wantPool == "" {
				if len(plan.Nodes) != 0 || len(plan.Unschedulable) != 2 || plan.Unschedulable[0].Reason != tc.wantWhy {
					t.Fatalf("nodes %d, unschedulable %+v; want both pods unschedulable because %q", len(plan.Nodes), plan.Unschedulable, tc.wantWhy)
				}
				return
			}
			if len(plan.Nodes) != 1 || plan.Nodes[0].Template.Pool.Name != tc.wantPool {
				t.Fatalf("want one node in pool %s, got %+v", tc.wantPool, plan.Nodes)
			}
			if got := len(plan.Diverted); tc.diverted != (got == 2) || !tc.diverted && got != 0 {
				t.Fatalf("%d pods diverted, want diverted %v", got, tc.diverted)
			}
			if tc.diverted && (len(plan.Diverted[0].Reasons) != 1 || plan.Diverted[0].Reasons[0] != full) {
				t.Errorf("diverted for %v, want [%s]", plan.Diverted[0].Reasons, full)
			}
		})
	}
}

// DaemonSet pods that land on a template take their share: a pod that fits the bare allocatable
// of the cheapest type but not beside the daemons goes to a bigger type.
func TestDaemonOverhead(t *testing.T) {
	pl := testPlanner(t)
	daemon := pod(t, "logging", "1", "512Mi", nil)
	amd64Only := pod(t, "amd64-agent", "500m", "128Mi", map[string]string{corev1.LabelArchStable: "amd64"})
	AddDaemons(context.Background(), pl.Templates, []*Pod{daemon, amd64Only})
	for _, tmpl := range pl.Templates {
		want := 1
		if tmpl.Type.Arch == "amd64" {
			want = 2
		}
		if len(tmpl.Daemons) != want {
			t.Fatalf("%s runs %d daemons, want %d", tmpl.Key(), len(tmpl.Daemons), want)
		}
	}
	plan := pl.Plan(context.Background(), []*Pod{pod(t, "a", "1", "1Gi", nil)})
	if len(plan.Nodes) != 1 {
		t.Fatalf("got %d nodes", len(plan.Nodes))
	}
	// m6g.large (1930m) cannot hold 1 cpu beside the 1-cpu daemon; m6g.xlarge can.
	if got := plan.Nodes[0].Template.Type.Name; got != "m6g.xlarge" {
		t.Errorf("planned %s, want m6g.xlarge", got)
	}
}

// Once a real node of a type has reported a smaller allocatable than the model, plans use it.
func TestUseObserved(t *testing.T) {
	pl := testPlanner(t)
	small := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("6Gi"), corev1.ResourcePods: resource.MustParse("29")}
	// The templates' nodes are shared with other copies of the templates (offerings builds
	// them once per catalog): UseObserved must leave them as they were.
	before := map[*corev1.Node]string{}
	for _, tm := range pl.Templates {
		before[tm.Node] = tm.Node.Status.Allocatable.Cpu().String()
	}
	UseObserved(pl.Templates, func(pool, it string) (corev1.ResourceList, bool) {
		return small, pool == "default" && it == "m6g.large"
	})
	for n, cpu := range before {
		if got := n.Status.Allocatable.Cpu().String(); got != cpu {
			t.Errorf("UseObserved changed a shared template node's cpu from %s to %s", cpu, got)
		}
	}
	plan := pl.Plan(context.Background(), []*Pod{pod(t, "a", "1", "1Gi", nil)})
	if len(plan.Nodes) != 1 {
		t.Fatalf("got %d nodes", len(plan.Nodes))
	}
	if got := plan.Nodes[0].Template.Type.Name; got == "m6g.large" {
		t.Errorf("planned %s, which reported only 500m allocatable", got)
	}
}

// FitOnto fills the room a planned node has left, and no more.
func TestFitOnto(t *testing.T) {
	pl := testPlanner(t)
	var tmpl *Template
	for _, c := range pl.Templates {
		if c.Type.Name == "m6g.large" { // 1930m allocatable
			tmpl = c
			break
		}
	}
	placed := []*Pod{pod(t, "a", "1", "1Gi", nil)}
	got := FitOnto(context.Background(), tmpl, "ip-10-0-0-9.ec2.internal", placed, []*Pod{pod(t, "b", "500m", "1Gi", nil), pod(t, "c", "500m", "1Gi", nil)})
	if len(got) != 1 || got[0].Pod.Name != "b" {
		t.Fatalf("accepted %d pods, want only b (930m left)", len(got))
	}
}

// A higher-weight pool wins only for pods it can hold: a pod too big for every type of the
// preferred pool falls back to the other one rather than going without.
func TestPoolWeightFallsBackForBigPods(t *testing.T) {
	pools := []config.Pool{
		{Name: "cheap", Weight: 1, CapacityTypes: []string{"on-demand"}},
		{Name: "preferred", Weight: 50, CapacityTypes: []string{"on-demand"}, Requirements: []config.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}}}}},
	}
	plan := testPlanner(t, pools...).Plan(context.Background(), []*Pod{pod(t, "big", "6", "8Gi", nil)})
	if len(plan.Unschedulable) != 0 || len(plan.Nodes) != 1 || plan.Nodes[0].Template.Pool.Name != "cheap" {
		t.Fatalf("want one node in the cheap pool, got nodes %+v, unschedulable %+v", plan.Nodes, plan.Unschedulable)
	}
}
