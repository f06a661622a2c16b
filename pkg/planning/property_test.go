package planning

import (
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// TestPlansPassTheRealFilters plans random batches and checks every placement the way the
// scheduler will judge it once the planned nodes exist: the plan becomes a cluster (each
// planned node as the node its template registers, holding its daemons and every other planned
// pod), the pod's PreFilter runs afresh against it, and the profile's Filter plugins must accept
// the pod on its planned node. Resources are checked there too, against real allocatable.
func TestPlansPassTheRealFilters(t *testing.T) {
	batches := 1000
	if testing.Short() {
		batches = 100
	}
	fw := offline(t)
	pools := []config.Pool{
		{Name: "general", Weight: 10, CapacityTypes: []string{"on-demand"}},
		{Name: "spot", Weight: 20, CapacityTypes: []string{"on-demand"}, Taints: []corev1.Taint{{Key: "tailor.dev/spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
	}
	zones := map[string][]string{"general": {"us-east-1a", "us-east-1b", "us-east-1c"}, "spot": {"us-east-1a", "us-east-1b"}}
	types := testTypes()
	for i := range types {
		types[i].Offerings = append(types[i].Offerings, types[i].Offerings[0])
		types[i].Offerings[len(types[i].Offerings)-1].Zone = "us-east-1c"
	}
	tmpls, err := Templates(pools, types, zones)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(42))
	placedTotal, unschedulableTotal := 0, 0
	for b := 0; b < batches; b++ {
		fw.SetSnapshot(nil, nil)
		pods := randomBatch(t, r, b)
		for _, p := range pods {
			p.Filter = filterFor(t, p.Pod)
		}
		plan := (&Planner{Templates: tmpls}).Plan(context.Background(), pods)
		placed := verifyPlan(t, fw, b, pods, plan)
		placedTotal += placed
		unschedulableTotal += len(plan.Unschedulable)
		for _, u := range plan.Unschedulable {
			// Only the spot group can run out of room: its pool has two zones, but the general
			// pool's third zone counts in its spread (taints do not exclude nodes from topology
			// spread domains), so maxSkew 2 caps it at four pods. Every other pod can always get
			// a node of its own.
			if u.Pod.Spec.Tolerations == nil || !strings.Contains(u.Reason, "conflicts with other pods") {
				t.Errorf("batch %d: pod %s (%s) unschedulable: %s", b, u.Pod.Name, describe(u.Pod), u.Reason)
			}
		}
		if t.Failed() {
			t.Fatalf("batch %d failed; seed 42", b)
		}
	}
	if placedTotal < batches*10 {
		t.Fatalf("placed only %d pods in %d batches: the generator is off", placedTotal, batches)
	}
	t.Logf("%d batches: %d pods placed, %d left unschedulable by their own spread", batches, placedTotal, unschedulableTotal)
}

// verifyPlan checks one plan and returns how many pods it placed.
func verifyPlan(t *testing.T, fw *profile.Framework, batch int, pods []*Pod, plan *Plan) int {
	t.Helper()
	seen := map[types.UID]int{}
	var nodes []*corev1.Node
	var bound []*corev1.Pod
	nodeOf := map[types.UID]string{}
	for _, n := range plan.Nodes {
		node := nodeNamed(n.Template, n.Name)
		nodes = append(nodes, node)
		for i, d := range n.Template.Daemons {
			dp := d.DeepCopy()
			dp.Name, dp.UID, dp.Spec.NodeName = fmt.Sprintf("%s-%s-%d", d.Name, n.Name, i), types.UID(fmt.Sprintf("%s-%s-%d", d.UID, n.Name, i)), n.Name
			bound = append(bound, dp)
		}
		for _, p := range n.Pods {
			seen[p.Pod.UID]++
			nodeOf[p.Pod.UID] = n.Name
			bp := p.Pod.DeepCopy()
			bp.Spec.NodeName = n.Name
			bound = append(bound, bp)
		}
	}
	for _, u := range plan.Unschedulable {
		seen[u.Pod.UID]++
	}
	for _, p := range pods {
		if seen[p.Pod.UID] != 1 {
			t.Errorf("batch %d: pod %s appears %d times in the plan", batch, p.Pod.Name, seen[p.Pod.UID])
		}
	}
	ctx := context.Background()
	placed := 0
	for _, p := range pods {
		name, ok := nodeOf[p.Pod.UID]
		if !ok {
			continue
		}
		placed++
		others := make([]*corev1.Pod, 0, len(bound)-1)
		for _, bp := range bound {
			if bp.UID != p.Pod.UID {
				others = append(others, bp)
			}
		}
		fw.SetSnapshot(nodes, others)
		state, err := fw.PreFilter(ctx, p.Pod)
		if err != nil {
			t.Errorf("batch %d: pod %s fails PreFilter against the plan: %v", batch, p.Pod.Name, err)
			continue
		}
		ni, err := fw.SnapshotSharedLister().NodeInfos().Get(name)
		if err != nil {
			t.Fatal(err)
		}
		if s := fw.RunFilterPlugins(ctx, state, p.Pod, ni); !s.IsSuccess() {
			t.Errorf("batch %d: pod %s (%s) planned on %s (%s) is refused by the scheduler: %s", batch, p.Pod.Name, describe(p.Pod), name, ni.Node().Labels[corev1.LabelTopologyZone], s.Message())
		}
	}
	return placed
}

// randomBatch makes 1–40 pods in 1–5 groups; each group is one workload with one kind of
// constraint and pods of random sizes (cpu 100m–1.5, memory 100Mi–4Gi).
func randomBatch(t *testing.T, r *rand.Rand, b int) []*Pod {
	groups := 1 + r.Intn(5)
	var pods []*Pod
	for g := 0; g < groups; g++ {
		app := fmt.Sprintf("b%d-g%d", b, g)
		kind := r.Intn(11)
		n := 1 + r.Intn(40/groups)
		for i := 0; i < n; i++ {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), UID: types.UID(fmt.Sprintf("%s-%d", app, i)), Labels: map[string]string{"app": app, "batch": fmt.Sprint(b)}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(100+r.Int63n(1400), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity((100+r.Int63n(3996))<<20, resource.BinarySI),
				}}}}},
			}
			self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
			switch kind {
			case 1:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
			case 2:
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
			case 3:
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: self}}}}
			case 4:
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self}}}}
			case 5:
				// Keeps away from every other group of the batch: the others must avoid it too.
				p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname,
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"batch": fmt.Sprint(b)}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpNotIn, Values: []string{app}}}}}}}}
			case 6:
				p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
			case 7:
				p.Spec.NodeSelector = map[string]string{corev1.LabelArchStable: "arm64"}
			case 9:
				// A canary: plain, but labelled like the batch's first group, so it counts in
				// that group's spread and affinity.
				p.Labels["app"] = fmt.Sprintf("b%d-g0", b)
			case 10:
				// Nothing requested at all.
				p.Spec.Containers[0].Resources.Requests = nil
			case 8:
				p.Spec.Tolerations = []corev1.Toleration{{Key: "tailor.dev/spot", Operator: corev1.TolerationOpExists}}
				p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
			}
			pods = append(pods, NewPod(p, nil))
		}
	}
	return pods
}

func describe(p *corev1.Pod) string {
	switch {
	case len(p.Spec.TopologySpreadConstraints) > 0:
		return "spread over " + p.Spec.TopologySpreadConstraints[0].TopologyKey
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil:
		return "zone affinity"
	case p.Spec.Affinity != nil:
		return "anti-affinity"
	case len(p.Spec.Containers[0].Ports) > 0:
		return "host port"
	}
	return "plain"
}
