package planning

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// For pods of one shape both LP relaxations have a closed form: the cheapest type per pod, each
// type's pods-per-node (min over resources of available / request) whole in the configuration
// LP and fractional in the split one. The bound must meet the whole-pod form exactly: lower
// would mean it lets cpu and memory of the same pods go to different types (what a
// per-resource split did, ~40% low on mixed workloads), or splits a pod across nodes; higher,
// it is no bound.
func TestLowerBoundOneShape(t *testing.T) {
	amd64 := config.Pool{Name: "default", CapacityTypes: []string{"on-demand"}, Requirements: []config.Requirement{
		{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}
	tests := []struct {
		name, cpu, mem string
		n              int
		types          []cloud.InstanceType // default testTypes()
	}{
		// Neither type suits 1 cpu / 4Gi alone; a per-resource split would serve the cpu on
		// c5 and the memory on r5 and claim a cost no packing of these pods reaches.
		{name: "between a compute and a memory type", cpu: "1", mem: "4Gi", n: 30, types: computeAndMemory()},
		{name: "cpu-heavy", cpu: "1", mem: "1Gi", n: 30},
		{name: "memory-heavy", cpu: "250m", mem: "3Gi", n: 30},
		{name: "balanced", cpu: "500m", mem: "2Gi", n: 40},
		{name: "tiny, pod-count bound", cpu: "10m", mem: "16Mi", n: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*Pod
			for i := 0; i < tc.n; i++ {
				pods = append(pods, pod(t, fmt.Sprintf("p%d", i), tc.cpu, tc.mem, map[string]string{corev1.LabelArchStable: "amd64"}))
			}
			types := tc.types
			if types == nil {
				types = testTypes()
			}
			tmpls, err := Templates([]config.Pool{amd64}, types, map[string][]string{"default": {"us-east-1a"}})
			if err != nil {
				t.Fatal(err)
			}
			plan := (&Planner{Templates: tmpls}).Plan(context.Background(), pods)
			if len(plan.Unschedulable) != 0 {
				t.Fatalf("unschedulable: %+v", plan.Unschedulable)
			}
			got, err := plan.LowerBound()
			if err != nil {
				t.Fatal(err)
			}
			want := math.Inf(1)
			req := pods[0].Requests
			for _, tmpl := range plan.templates {
				perNode := math.Inf(1)
				for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
					a, q := tmpl.Available[r], req[r]
					perNode = math.Min(perNode, float64(a.MilliValue())/float64(q.MilliValue()))
				}
				pods := tmpl.Available[corev1.ResourcePods]
				perNode = math.Floor(math.Min(perNode, float64(pods.Value())) * (1 + 1e-12))
				if perNode >= 1 {
					want = math.Min(want, float64(tc.n)/perNode*tmpl.Offering.PricePerHour)
				}
			}
			if math.Abs(got-want) > 1e-6*want {
				t.Errorf("bound %.6f, want the one-shape whole-pod optimum %.6f", got, want)
			}
			if got > plan.PricePerHour()+1e-9 {
				t.Errorf("bound %.6f above the plan's %.6f", got, plan.PricePerHour())
			}
		})
	}
}

func computeAndMemory() []cloud.InstanceType {
	mk := func(name string, memMiB int64, price float64) cloud.InstanceType {
		return cloud.InstanceType{Name: name, Arch: "amd64", VCPUs: 2, MemoryMiB: memMiB, MaxENIs: 3, IPv4PerENI: 10,
			Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: price}}}
	}
	return []cloud.InstanceType{mk("c5.large", 4096, 0.085), mk("r5.large", 16384, 0.126)}
}

// TestBoundKeepsPodsWhole: a pod only m5.2xlarge holds must be priced on m5.2xlarge, not as
// shares of the cheaper m6g.xlarge it does not fit (which would give about $0.236/h).
func TestBoundKeepsPodsWhole(t *testing.T) {
	pl := testPlanner(t)
	plan := pl.Plan(context.Background(), []*Pod{pod(t, "big", "6", "20Gi", nil)})
	bound, err := plan.LowerBound()
	if err != nil {
		t.Fatal(err)
	}
	// m5.2xlarge: $0.384/h for 7.91 allocatable cpu; the pod needs 6 of them.
	if want := 0.384 * 6 / 7.91; bound < want*0.99 || bound > 0.384 {
		t.Errorf("bound $%.4f/h, want about $%.4f/h (m5.2xlarge's share)", bound, want)
	}
}

// TestBoundDimsFixedOrder: the bound's LP rows follow the resource names, not map order, so the
// same plan gets the same bound to the last digit on every run.
func TestBoundDimsFixedOrder(t *testing.T) {
	one := resource.MustParse("1")
	plan := &Plan{
		templates: []*Template{{Available: corev1.ResourceList{corev1.ResourceCPU: one, corev1.ResourceMemory: one, corev1.ResourcePods: one,
			corev1.ResourceEphemeralStorage: one, "nvidia.com/gpu": one, "hugepages-2Mi": one}}},
		classes: []classSummary{{pods: []*Pod{{Requests: corev1.ResourceList{corev1.ResourceCPU: one, "example.com/dongle": one}}}}},
	}
	want := []corev1.ResourceName{corev1.ResourcePods, corev1.ResourceCPU, corev1.ResourceEphemeralStorage, "example.com/dongle",
		"hugepages-2Mi", corev1.ResourceMemory, "nvidia.com/gpu"}
	for i := 0; i < 20; i++ { // map order changes from one iteration to the next
		if got := boundDims(plan).names; !slices.Equal(got, want) {
			t.Fatalf("dimensions %v, want %v", got, want)
		}
	}
}

// TestBoundIgnoresClassesOfTheSameTemplates: pods of one request in classes that accept the same
// templates are one group of the LPs, so the bound does not depend on how pods are split into
// such classes. Before, each class kept its own groups, and 250 single-pod classes (250
// Deployments) were rounded onto the coarsest grid and still left 250 rows.
func TestBoundIgnoresClassesOfTheSameTemplates(t *testing.T) {
	for _, tc := range []struct {
		name   string
		n      int
		cpu    func(i int) string
		groups int // in the bound's LPs
	}{
		{"one request", 30, func(int) string { return "500m" }, 1},
		{"two requests", 40, func(i int) string { return []string{"250m", "1"}[i%2] }, 2},
		{"a request per pod, past maxBoundGroups", 250, func(i int) string { return fmt.Sprintf("%dm", 100+10*i) }, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bound := func(classes int) (float64, int) {
				var pods []*Pod
				for i := 0; i < tc.n; i++ {
					p := pod(t, fmt.Sprintf("p%d", i), tc.cpu(i), "1Gi", nil)
					p.Pod.Labels = map[string]string{"app": fmt.Sprint(i % classes)}
					pods = append(pods, p)
				}
				plan := testPlanner(t).Plan(context.Background(), pods)
				if len(plan.Unschedulable) != 0 || len(plan.classes) != classes {
					t.Fatalf("%d unschedulable, %d classes; want 0 and %d", len(plan.Unschedulable), len(plan.classes), classes)
				}
				b, err := plan.LowerBound()
				if err != nil {
					t.Fatal(err)
				}
				return b, len(boundShapes(plan, boundDims(plan)))
			}
			one, oneGroups := bound(1)
			many, manyGroups := bound(tc.n)
			if math.Abs(one-many) > 1e-9*one {
				t.Errorf("bound %.9f with one class, %.9f with %d", one, many, tc.n)
			}
			if manyGroups != oneGroups || tc.groups > 0 && manyGroups != tc.groups || manyGroups > maxBoundGroups {
				t.Errorf("%d groups with one class, %d with %d; want %d, at most %d", oneGroups, manyGroups, tc.n, tc.groups, maxBoundGroups)
			}
		})
	}
}
