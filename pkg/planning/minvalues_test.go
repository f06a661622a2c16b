package planning

import (
	"context"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

const (
	family   = v1alpha1.LabelInstanceFamily
	category = v1alpha1.LabelInstanceCategory
)

// mvTypes are spot types of one zone. By price: c6g.large and m6g.large (arm64, two families),
// then the amd64 ones: c5, c6i, c7i, m5, m6i, r5 large, c5, m5, r5 xlarge, m5, r5 2xlarge, and
// r5.4xlarge, the cheapest per GiB.
func mvTypes() []cloud.InstanceType {
	mk := func(name, arch string, cpu, memGiB int64, price float64) cloud.InstanceType {
		enis, ips := int64(3), int64(10)
		if cpu >= 4 {
			enis, ips = 4, 15
		}
		if cpu >= 16 {
			enis, ips = 8, 30
		}
		return cloud.InstanceType{Name: name, Arch: arch, VCPUs: cpu, MemoryMiB: memGiB << 10, MaxENIs: enis, IPv4PerENI: ips,
			Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.Spot, PricePerHour: price}}}
	}
	return []cloud.InstanceType{
		mk("c6g.large", "arm64", 2, 4, 0.028),
		mk("m6g.large", "arm64", 2, 8, 0.035),
		mk("c5.large", "amd64", 2, 4, 0.030),
		mk("c6i.large", "amd64", 2, 4, 0.031),
		mk("c7i.large", "amd64", 2, 4, 0.032),
		mk("m5.large", "amd64", 2, 8, 0.040),
		mk("m6i.large", "amd64", 2, 8, 0.041),
		mk("r5.large", "amd64", 2, 16, 0.050),
		mk("c5.xlarge", "amd64", 4, 8, 0.060),
		mk("m5.xlarge", "amd64", 4, 16, 0.080),
		mk("r5.xlarge", "amd64", 4, 32, 0.100),
		mk("m5.2xlarge", "amd64", 8, 32, 0.160),
		mk("r5.2xlarge", "amd64", 8, 64, 0.200),
		mk("r5.4xlarge", "amd64", 16, 128, 0.300),
	}
}

// minValues is a requirement that every type meets (Exists) with a minimum.
func minValues(key string, n int32) config.Requirement {
	return config.Requirement{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpExists}, MinValues: n}
}

// mvPlanner plans onto a spot pool of mvTypes with the requirements.
func mvPlanner(t *testing.T, maxAlternatives int, reqs ...config.Requirement) *Planner {
	t.Helper()
	pools := []config.Pool{{Name: "spot", CapacityTypes: []string{"spot"}, Requirements: reqs}}
	tmpls, err := Templates(pools, mvTypes(), map[string][]string{"spot": {"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	return &Planner{Templates: tmpls, MaxAlternatives: maxAlternatives}
}

// podIn is a pod that only types whose key has one of values may run.
func podIn(t testing.TB, name, cpu, mem, key string, values ...string) *Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name)},
		Spec: corev1.PodSpec{
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}}}}},
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
		},
	}
	return NewPod(p, filterFor(t, p))
}

func typeNames(ts []*Template) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Type.Name)
	}
	return out
}

// unplaced lists the plan's unschedulable pods and why, for failures.
func unplaced(us []Unschedulable) []string {
	var out []string
	for _, u := range us {
		out = append(out, u.Pod.Name+": "+u.Reason)
	}
	return out
}

// valuesOf lists the distinct values of key among the templates, sorted.
func valuesOf(ts []*Template, key string) []string {
	var out []string
	for _, t := range ts {
		if v := t.Node.Labels[key]; !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return out
}

// A planned node of a pool with minValues offers types spanning them: the cheapest holders when
// they do, extended past MaxAlternatives with the next holders that add a missing value when
// they do not, in another partition (architecture) when its own cannot; and a pool without
// minValues offers what it always did.
func TestMinValuesAlternatives(t *testing.T) {
	for _, tc := range []struct {
		name string
		max  int
		reqs []config.Requirement
		want []string
	}{
		{name: "no minValues: the cheapest holders of one image", max: 10,
			want: []string{"c6g.large", "m6g.large"}},
		{name: "met by the cheapest holders", max: 10, reqs: []config.Requirement{minValues(family, 2)},
			want: []string{"c6g.large", "m6g.large"}},
		{name: "an architecture short of values gives way to one that has them", max: 10, reqs: []config.Requirement{minValues(family, 3)},
			want: []string{"c5.large", "c6i.large", "c7i.large", "m5.large", "m6i.large", "r5.large", "c5.xlarge", "m5.xlarge", "r5.xlarge", "m5.2xlarge"}},
		{name: "extended past MaxAlternatives with the types that add a value", max: 3, reqs: []config.Requirement{minValues(category, 3)},
			want: []string{"c5.large", "c6i.large", "c7i.large", "m5.large", "r5.large"}},
		{name: "two keys at once", max: 2, reqs: []config.Requirement{minValues(category, 3), minValues(family, 5)},
			want: []string{"c5.large", "c6i.large", "c7i.large", "m5.large", "m6i.large", "r5.large"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mvPlanner(t, tc.max, tc.reqs...).Plan(context.Background(), []*Pod{pod(t, "a", "500m", "1Gi", nil)})
			if len(plan.Unschedulable) != 0 || len(plan.Nodes) != 1 {
				t.Fatalf("%d nodes, unschedulable %q; want one node", len(plan.Nodes), unplaced(plan.Unschedulable))
			}
			n := plan.Nodes[0]
			if got := typeNames(n.Alternatives); !slices.Equal(got, tc.want) {
				t.Errorf("alternatives %v, want %v", got, tc.want)
			}
			if n.Template != n.Alternatives[0] {
				t.Errorf("template %s is not the first alternative", n.Template.Key())
			}
		})
	}
}

// Pods whose holders cannot span a pool's minimum get no node, and say which pool, key and
// minimum, and the values the types that hold them have.
func TestMinValuesImpossible(t *testing.T) {
	for _, tc := range []struct {
		name string
		reqs []config.Requirement
		pods []*Pod
		why  string
	}{
		{name: "too big for all but two families", reqs: []config.Requirement{minValues(family, 3)},
			pods: []*Pod{pod(t, "big", "6", "20Gi", nil), pod(t, "big2", "6", "20Gi", nil)},
			why:  "pool spot needs 3 values of tailor.dev/instance-family among the types it offers EC2; the types that hold these pods have 2 (m5, r5)"},
		{name: "the pod's own affinity leaves one family (the first minimum missed)", reqs: []config.Requirement{minValues(family, 2), minValues(category, 2)},
			pods: []*Pod{podIn(t, "m5-only", "500m", "1Gi", family, "m5")},
			why:  "pool spot needs 2 values of tailor.dev/instance-family among the types it offers EC2; the types that hold these pods have 1 (m5)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := mvPlanner(t, 10, tc.reqs...).Plan(context.Background(), tc.pods)
			if len(plan.Nodes) != 0 || len(plan.Unschedulable) != len(tc.pods) {
				t.Fatalf("%d nodes, %d of %d pods unschedulable; want none planned", len(plan.Nodes), len(plan.Unschedulable), len(tc.pods))
			}
			for _, u := range plan.Unschedulable {
				if u.Reason != tc.why {
					t.Errorf("pod %s: %q, want %q", u.Pod.Name, u.Reason, tc.why)
				}
			}
		})
	}
}

// Memory-hungry pods would pack cheapest onto one r5.4xlarge, which no other family's type
// holds when full: the pool with minValues fills each node only as far as a type of another
// family holds it too, so every node is made.
func TestMinValuesBoundsNodeSize(t *testing.T) {
	var pods []*Pod
	for _, name := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		pods = append(pods, pod(t, name, "1", "10Gi", nil))
	}
	plan := mvPlanner(t, 10, minValues(family, 2)).Plan(context.Background(), pods)
	if len(plan.Unschedulable) != 0 {
		t.Fatalf("unschedulable: %q", unplaced(plan.Unschedulable))
	}
	placed := 0
	for _, n := range plan.Nodes {
		placed += len(n.Pods)
		if fams := valuesOf(n.Alternatives, family); len(fams) < 2 {
			t.Errorf("node %s (%s) offers %v: families %v", n.Name, n.Template.Type.Name, typeNames(n.Alternatives), fams)
		}
		if r := overPacked(n); r != "" {
			t.Errorf("node %s over-packed: %s", n.Name, r)
		}
	}
	if placed != len(pods) {
		t.Errorf("placed %d of %d pods", placed, len(pods))
	}
}

// Two workloads whose own affinities each leave two families, but only m5 in common, would
// share an m5.large (the cheapest way to run both), which cannot offer two families: they get a
// node each instead.
func TestMinValuesKeepsClassesApartWhenTogetherTheyFallShort(t *testing.T) {
	pods := []*Pod{podIn(t, "cm", "500m", "1Gi", family, "c5", "m5"), podIn(t, "mr", "500m", "1Gi", family, "m5", "r5")}
	plan := mvPlanner(t, 10, minValues(family, 2)).Plan(context.Background(), pods)
	if len(plan.Unschedulable) != 0 || len(plan.Nodes) != 2 {
		t.Fatalf("%d nodes, unschedulable %q; want two nodes", len(plan.Nodes), unplaced(plan.Unschedulable))
	}
	for _, n := range plan.Nodes {
		if fams := valuesOf(n.Alternatives, family); len(fams) != 2 {
			t.Errorf("node of %s offers %v: families %v, want 2", n.Pods[0].Pod.Name, typeNames(n.Alternatives), fams)
		}
	}
}

// A gang (PlanWhole) gets nodes that meet the minimum, or no plan and the reason.
func TestMinValuesPlanWhole(t *testing.T) {
	pl := mvPlanner(t, 2, minValues(category, 3))
	plan, why := pl.PlanWhole(context.Background(), []*Pod{pod(t, "g-0", "1", "1Gi", nil), pod(t, "g-1", "1", "1Gi", nil)}, true)
	if plan == nil {
		t.Fatalf("no plan: %s", why)
	}
	for _, n := range plan.Nodes {
		if cats := valuesOf(n.Alternatives, category); len(cats) < 3 {
			t.Errorf("node %s offers %v: categories %v", n.Name, typeNames(n.Alternatives), cats)
		}
	}
	plan, why = pl.PlanWhole(context.Background(), []*Pod{pod(t, "g-0", "1", "1Gi", nil), pod(t, "huge", "6", "20Gi", nil)}, true)
	if want := "pod default/huge: pool spot needs 3 values of tailor.dev/instance-category"; plan != nil || !strings.Contains(why, want) {
		t.Errorf("plan %v, why %q; want no plan, saying %q", plan, why, want)
	}
}

// Consolidation's replacements (Repack onto new nodes) meet the minimum too, or the pods have
// nowhere to go.
func TestMinValuesRepack(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cpu    string
		mem    string
		placed bool
	}{
		{name: "replacement offers three families", cpu: "1", mem: "2Gi", placed: true},
		{name: "no replacement can", cpu: "6", mem: "20Gi"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pl := mvPlanner(t, 2, minValues(family, 3))
			var big *Template
			for _, tm := range pl.Templates {
				if tm.Type.Name == "r5.4xlarge" {
					big = tm
				}
			}
			old := nodeNamed(big, "old")
			running := pod(t, "running", tc.cpu, tc.mem, nil)
			running.Pod.Spec.NodeName = "old"
			fw := offline(t)
			fw.SetSnapshot([]*corev1.Node{old}, []*corev1.Pod{running.Pod})
			defer fw.SetSnapshot(nil, nil)
			moving := running.Pod.DeepCopy()
			moving.Spec.NodeName = ""
			cl := NewCluster([]*corev1.Node{old}, []*corev1.Pod{running.Pod}, nil, nil)
			got := pl.Repack(context.Background(), cl, []string{"old"}, []*Pod{NewPod(moving, filterFor(t, moving))})
			if !tc.placed {
				if len(got.Nodes) != 0 || len(got.Unschedulable) != 1 || !strings.Contains(got.Unschedulable[0].Reason, "needs 3 values of tailor.dev/instance-family") {
					t.Fatalf("nodes %d, unschedulable %q; want the pod without a place, for the minimum", len(got.Nodes), unplaced(got.Unschedulable))
				}
				return
			}
			if len(got.Nodes) != 1 || len(got.Unschedulable) != 0 {
				t.Fatalf("nodes %d, unschedulable %q; want one replacement", len(got.Nodes), unplaced(got.Unschedulable))
			}
			if fams := valuesOf(got.Nodes[0].Alternatives, family); len(fams) < 3 {
				t.Errorf("replacement offers %v: families %v", typeNames(got.Nodes[0].Alternatives), fams)
			}
		})
	}
}

// Extension stops at CreateFleet's cap: a minimum that only more types than that could meet is
// not met, though the types that hold the pod have the values.
func TestMinValuesExtendStopsAtTheCap(t *testing.T) {
	var types []cloud.InstanceType
	for i := range 70 {
		types = append(types, cloud.InstanceType{Name: "x" + string(rune('a'+i/26)) + string(rune('a'+i%26)) + ".large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192,
			MaxENIs: 3, IPv4PerENI: 10, Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.Spot, PricePerHour: 0.01 + float64(i)/1000}}})
	}
	for _, tc := range []struct {
		min  int32
		want int    // alternatives, if the pod gets a node
		why  string // else why not
	}{
		{min: 50, want: 50},
		{min: 61, why: "pool spot needs its instance types to span 61 values of tailor.dev/instance-family, and no 60 of the types that hold these pods do"},
	} {
		pools := []config.Pool{{Name: "spot", CapacityTypes: []string{"spot"}, Requirements: []config.Requirement{minValues(family, tc.min)}}}
		tmpls, err := Templates(pools, types, map[string][]string{"spot": {"us-east-1a"}})
		if err != nil {
			t.Fatal(err)
		}
		plan := (&Planner{Templates: tmpls}).Plan(context.Background(), []*Pod{pod(t, "a", "100m", "128Mi", nil)})
		switch {
		case tc.want == 0 && (len(plan.Nodes) != 0 || len(plan.Unschedulable) != 1 || plan.Unschedulable[0].Reason != tc.why):
			t.Errorf("minValues %d: %d nodes, unschedulable %q; want the pod unschedulable: %q", tc.min, len(plan.Nodes), unplaced(plan.Unschedulable), tc.why)
		case tc.want > 0 && (len(plan.Nodes) != 1 || len(plan.Nodes[0].Alternatives) != tc.want):
			t.Errorf("minValues %d: %d nodes, unschedulable %q; want one node offering %d types", tc.min, len(plan.Nodes), unplaced(plan.Unschedulable), tc.want)
		}
	}
}

// A pool without minValues beside one with them plans as it would alone: its templates keep
// their room and its nodes their cheapest holders.
func TestMinValuesLeaveOtherPoolsAlone(t *testing.T) {
	plain := config.Pool{Name: "plain", Weight: 10, CapacityTypes: []string{"spot"}}
	diverse := config.Pool{Name: "diverse", CapacityTypes: []string{"spot"}, Requirements: []config.Requirement{minValues(family, 3)}}
	plan := func(pools ...config.Pool) *Plan {
		tmpls, err := Templates(pools, mvTypes(), map[string][]string{"plain": {"us-east-1a"}, "diverse": {"us-east-1a"}})
		if err != nil {
			t.Fatal(err)
		}
		return (&Planner{Templates: tmpls}).Plan(context.Background(), []*Pod{pod(t, "a", "1", "6Gi", nil), pod(t, "b", "1", "6Gi", nil)})
	}
	alone, beside := plan(plain), plan(plain, diverse)
	if len(alone.Nodes) != len(beside.Nodes) || len(beside.Unschedulable) != 0 {
		t.Fatalf("%d nodes alone, %d beside a pool with minValues (unschedulable %q)", len(alone.Nodes), len(beside.Nodes), unplaced(beside.Unschedulable))
	}
	for i, n := range beside.Nodes {
		if got, want := typeNames(n.Alternatives), typeNames(alone.Nodes[i].Alternatives); n.Template.Pool.Name != "plain" || !slices.Equal(got, want) {
			t.Errorf("node %d in pool %s offers %v, alone %v", i, n.Template.Pool.Name, got, want)
		}
	}
}

// A reserved offering is one type in one reservation: a pool's minima do not apply to it, so a
// pool with minValues still plans onto its reservation first.
func TestMinValuesLeaveReservationsAlone(t *testing.T) {
	types := testTypes()
	r := &cloud.CapacityReservation{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1a", Available: 1}
	for i := range types {
		if types[i].Name == "m5.large" {
			types[i].Offerings = append(types[i].Offerings, cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.Reserved, PricePerHour: 1e-7, Reservation: r})
		}
	}
	pool := config.Pool{Name: "ml", CapacityTypes: []string{"reserved", "on-demand"}, Requirements: []config.Requirement{{
		NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-family", Operator: corev1.NodeSelectorOpExists}, MinValues: 2}}}
	tmpls, err := Templates([]config.Pool{pool}, types, map[string][]string{"ml": {"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	plan := (&Planner{Templates: tmpls}).Plan(context.Background(), []*Pod{pod(t, "p", "1", "1Gi", nil)})
	if len(plan.Nodes) != 1 || plan.Nodes[0].Template.Offering.Reservation != r || len(plan.Nodes[0].Alternatives) != 1 {
		t.Fatalf("plan %+v (unschedulable %v), want one node in the reservation, offering its one type", plan.Nodes, plan.Unschedulable)
	}
}
