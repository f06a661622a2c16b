package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/nodeagent"
)

// A pod that fits an existing node binds there; Tailor launches nothing and leaves the node,
// which it does not own, exactly as it was.
func TestPodFittingExistingNodeLaunchesNothing(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        "static-" + ns,
			Labels:      map[string]string{corev1.LabelHostname: "static-" + ns, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux"},
			Annotations: map[string]string{nodeagent.KwokAnnotation: nodeagent.KwokValue},
		},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "dedicated", Value: ns, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("32Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	if _, err := world.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ignoreNotFound(world.Client.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}))
	})
	fleets := world.Sim.Calls("CreateFleet")

	createPod(t, ns, "fits", "500m", "1Gi", withToleration("dedicated", ns))
	pods := waitRunning(t, ns, 1)

	if pods[0].Spec.NodeName != node.Name {
		t.Errorf("pod on %s, want the existing node %s", pods[0].Spec.NodeName, node.Name)
	}
	if got := world.Sim.Calls("CreateFleet"); got != fleets {
		t.Errorf("CreateFleet called %d times, want none", got-fleets)
	}
	after := getNode(t, node.Name)
	if len(after.Spec.Taints) != 1 || after.Labels[v1alpha1.LabelPool] != "" || after.Labels[v1alpha1.LabelClaim] != "" {
		t.Errorf("Tailor touched a node it does not own: labels %v taints %v", after.Labels, after.Spec.Taints)
	}
}

// A pod that fits nothing gets one launch of the cheapest type that holds it; the node registers,
// the pod runs there, and its events name the launch.
func TestUnschedulablePodGetsCheapestNode(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.Calls("CreateFleet")
	createPod(t, ns, "solo", "1", "2Gi")
	pods := waitRunning(t, ns, 1)

	if got := world.Sim.Calls("CreateFleet") - fleets; got != 1 {
		t.Errorf("CreateFleet called %d times, want 1", got)
	}
	cls := listClaims(t)
	if len(cls) != 1 {
		t.Fatalf("%d claims, want 1", len(cls))
	}
	cl := cls[0]
	if cl.Status.NodeName != pods[0].Spec.NodeName || cl.Status.Phase != v1alpha1.ClaimRegistered {
		t.Errorf("claim %s: node %q phase %s; pod runs on %s", cl.Name, cl.Status.NodeName, cl.Status.Phase, pods[0].Spec.NodeName)
	}
	if len(cl.Spec.Pods) != 1 || cl.Spec.Pods[0].Name != "solo" {
		t.Errorf("claim pods = %v", cl.Spec.Pods)
	}
	node := getNode(t, pods[0].Spec.NodeName)
	if node.Labels[v1alpha1.LabelClaim] != cl.Name || node.Labels[v1alpha1.LabelPool] != "general" {
		t.Errorf("node labels %v lack the claim and pool", node.Labels)
	}
	for _, taint := range node.Spec.Taints {
		if taint.Key == v1alpha1.TaintUnregistered {
			t.Errorf("node still carries %s", taint.Key)
		}
	}

	// No type the pool allows holds the pod for less, in any zone.
	if cheapest, price := cheapestHolder(t, "1", "2Gi"); price < onDemandPrice(instanceTypes(t)[cl.Status.InstanceType]) {
		t.Errorf("launched %s, but %s at $%.4f/h holds the pod for less", cl.Status.InstanceType, cheapest, price)
	}

	msg := waitEvent(t, ns, "solo", "Launched")
	if !strings.Contains(msg, cl.Name) || !strings.Contains(msg, cl.Status.InstanceID) {
		t.Errorf("Launched event %q does not name claim %s and instance %s", msg, cl.Name, cl.Status.InstanceID)
	}
}

// Twenty identical pods created at once are planned as one batch onto a few nodes, with one
// instance per claim and no instance outside a claim.
func TestBurstIsBatched(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.Calls("CreateFleet")
	createDeployment(t, ns, "burst", 20, podSpec("250m", "512Mi"))
	pods := waitRunning(t, ns, 20)

	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) >= 5 {
		t.Errorf("20 small pods on %d nodes, want fewer than 5", len(nodes))
	}
	cls := listClaims(t)
	byName := map[string]*v1alpha1.Claim{}
	for _, c := range cls {
		byName[c.Name] = c
	}
	perClaim := map[string]int{}
	for _, in := range liveInstances() {
		claim := in.Tags[v1alpha1.TagClaim]
		if byName[claim] == nil {
			t.Errorf("instance %s belongs to no claim (tag %q)", in.ID, claim)
		}
		perClaim[claim]++
	}
	for name, n := range perClaim {
		if n != 1 {
			t.Errorf("claim %s has %d instances, want 1", name, n)
		}
	}
	if got := world.Sim.Calls("CreateFleet") - fleets; got != len(cls) {
		t.Errorf("%d CreateFleet calls for %d claims: a launch was doubled", got, len(cls))
	}
	if len(cls) != len(nodes) {
		t.Errorf("%d claims for %d nodes in use", len(cls), len(nodes))
	}
	// Every claim's node runs some of the pods, and every pod runs on a claim's node.
	claimNodes := map[string]bool{}
	for _, c := range cls {
		claimNodes[c.Status.NodeName] = true
		if !nodes[c.Status.NodeName] {
			t.Errorf("claim %s (node %s) runs none of the pods", c.Name, c.Status.NodeName)
		}
	}
	for _, p := range pods {
		if !claimNodes[p.Spec.NodeName] {
			t.Errorf("pod %s runs on %s, which no claim launched", p.Name, p.Spec.NodeName)
		}
	}
}

// When EC2 has no capacity for the cheapest type, the launch falls back to another type and the
// pod still runs.
func TestInsufficientCapacityFallsBack(t *testing.T) {
	ns := newNamespace(t)
	cheapest, _ := cheapestHolder(t, "1", "2Gi")
	world.Sim.SetCapacity(cheapest, "", "", 0)
	t.Cleanup(func() { world.Sim.SetCapacity(cheapest, "", "", -1) })

	before := world.Sim.Calls("CreateFleet")
	createPod(t, ns, "fallback", "1", "2Gi")
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	if got := node.Labels[corev1.LabelInstanceTypeStable]; got == cheapest || got == "" {
		t.Errorf("pod runs on %q; EC2 had no capacity for %s", got, cheapest)
	}
	// Tailor did ask for the cheapest type (and EC2 refused it): the fallback was exercised.
	asked := false
	// The simulator keeps only the newest requests: this test's are the last ones.
	reqs := world.Sim.Requests("CreateFleet")
	for _, r := range reqs[max(0, len(reqs)-(world.Sim.Calls("CreateFleet")-before)):] {
		for k, v := range r {
			if strings.HasSuffix(k, ".InstanceType") && len(v) > 0 && v[0] == cheapest {
				asked = true
			}
		}
	}
	if !asked {
		t.Errorf("no CreateFleet asked for %s; the fallback path was not exercised", cheapest)
	}
}

// A DaemonSet's pod counts against the node launched beside it: the node holds both.
func TestDaemonSetOverheadCounts(t *testing.T) {
	ns := newNamespace(t)
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "node-agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "node-agent"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "node-agent"}},
				Spec: func() corev1.PodSpec {
					s := podSpec("1", "1Gi")
					s.SchedulerName = ""
					s.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
					return s
				}(),
			},
		},
	}
	createDaemonSet(t, ds)
	// Without the daemon, the cheapest holder of the pod would do; with it, it must not.
	alone, _ := cheapestHolder(t, "1", "2Gi")
	createPod(t, ns, "beside-daemon", "1", "2Gi")
	pods := waitRunning(t, ns, 1)
	typ := getNode(t, pods[0].Spec.NodeName).Labels[corev1.LabelInstanceTypeStable]
	alloc := catalog.Allocatable(instanceTypes(t)[typ])
	cpu, mem := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory]
	if typ == alone || cpu.Cmp(resource.MustParse("2")) < 0 || mem.Cmp(resource.MustParse("3Gi")) < 0 {
		t.Errorf("launched %s (%s cpu, %s memory), which cannot hold the pod beside the 1 cpu / 1Gi daemon", typ, cpu.String(), mem.String())
	}
}

// The room a node's plan counted for a DaemonSet's pod stays free until that pod is there: the
// DaemonSet controller creates the pod only once the node has registered, and a pod that comes
// meanwhile must not take its room, or the daemon never runs there. The agent's pods here have
// no scheduler, so its room stays kept; a pod that fits the node only by taking that room goes
// elsewhere.
func TestDaemonRoomIsKeptUntilItsPodComes(t *testing.T) {
	ns := newNamespace(t)
	agent := podSpec("100m", "1Gi")
	agent.SchedulerName = "nobody"
	agent.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "agent"}}, Spec: agent}}}
	createDaemonSet(t, ds)
	createPod(t, ns, "first", "1", "2Gi")
	first := waitRunning(t, ns, 1)[0]
	node := getNode(t, first.Spec.NodeName)
	if !pollWithin(waitTimeout, func() bool { return len(pendingAgents(t, ns, node.Name)) == 1 }) {
		t.Fatalf("no agent pod created for %s\n%s", node.Name, describePods(ns))
	}
	// Fits the node's free memory, but only with the agent's 1Gi: half of it is taken.
	free := node.Status.Allocatable.Memory().Value() - 2<<30
	second := createPod(t, ns, "second", "100m", resource.NewQuantity(free-512<<20, resource.BinarySI).String())
	pods := waitRunning(t, ns, 2)
	for _, p := range pods {
		if p.Name == second.Name && p.Spec.NodeName == node.Name {
			t.Errorf("%s took the room %s keeps for the agent's pod (%s free)", p.Name, node.Name, resource.NewQuantity(free, resource.BinarySI))
		}
	}
}

// pendingAgents lists the agent DaemonSet's pods made for the node and not yet on it.
func pendingAgents(t *testing.T, ns, node string) []corev1.Pod {
	t.Helper()
	list, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=agent"})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Spec.NodeName == "" && strings.Contains(describeAffinity(p), node) {
			out = append(out, p)
		}
	}
	return out
}

// describeAffinity is the pod's required node affinity as text (where a DaemonSet pins its pod).
func describeAffinity(p corev1.Pod) string {
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil {
		return ""
	}
	return p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.String()
}

// A pod bigger than every allowed type gets an event that says so, and nothing is launched.
func TestTooBigPodIsExplained(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.Calls("CreateFleet")
	createPod(t, ns, "huge", "500", "1Gi")
	msg := waitEvent(t, ns, "huge", "ProvisioningFailed")
	if !strings.Contains(msg, "requests 500 cpu; the largest allowed instance type") {
		t.Errorf("event %q does not explain the cpu request", msg)
	}
	if got := world.Sim.Calls("CreateFleet") - fleets; got != 0 {
		t.Errorf("CreateFleet called %d times for an unservable pod", got)
	}
	for _, c := range listClaims(t) {
		for _, p := range c.Spec.Pods {
			if p.Namespace == ns {
				t.Errorf("claim %s planned for the unservable pod", c.Name)
			}
		}
	}
}

// A pod that selects arm64 gets an arm64 type.
func TestArm64Selector(t *testing.T) {
	ns := newNamespace(t)
	createPod(t, ns, "graviton", "500m", "1Gi", withNodeSelector(corev1.LabelArchStable, "arm64"))
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	it := instanceTypes(t)[node.Labels[corev1.LabelInstanceTypeStable]]
	if node.Labels[corev1.LabelArchStable] != "arm64" || it == nil || it.Arch != "arm64" {
		t.Errorf("pod runs on %s (%s), want an arm64 type", node.Labels[corev1.LabelInstanceTypeStable], node.Labels[corev1.LabelArchStable])
	}
}

// Invalid plugin args stop the scheduler from starting, with a message naming the field.
func TestInvalidArgsRefuseToStart(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(args map[string]any)
		want   string
	}{
		{"unknown capacity type", func(a map[string]any) { pool(a, 0)["capacityTypes"] = []any{"dedicated"} }, `TailorArgs.pools[0].capacityTypes[0]: Unsupported value: "dedicated"`},
		{"reserved without reservations", func(a map[string]any) { pool(a, 0)["capacityTypes"] = []any{"reserved"} }, `TailorArgs.pools[0].capacityReservationSelector: Required value`},
		{"requirement on an unknown label", func(a map[string]any) {
			pool(a, 1)["requirements"] = []any{map[string]any{"key": "example.com/rack", "operator": "In", "values": []any{"a"}}}
		}, `TailorArgs.pools[1].requirements[0].key: Unsupported value: "example.com/rack"`},
		{"weight out of range", func(a map[string]any) { pool(a, 0)["weight"] = 500 }, `TailorArgs.pools[0].weight: Invalid value: 500`},
		{"missing cluster name", func(a map[string]any) { delete(a, "clusterName") }, `TailorArgs.clusterName: Required value`},
		{"unknown field", func(a map[string]any) { a["pool"] = "x" }, `unknown field "pool"`},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path, err := world.WriteSchedulerConfig(fmt.Sprintf("bad-%d.yaml", i), false, tc.mutate)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			_, err = setupScheduler(ctx, path)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("scheduler setup error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func pool(args map[string]any, i int) map[string]any {
	return args["pools"].([]any)[i].(map[string]any)
}

// onDemandPrice is the type's lowest on-demand price in any zone (0 if it has none).
func onDemandPrice(it *cloud.InstanceType) float64 {
	best := 0.0
	for _, o := range it.Offerings {
		if o.CapacityType == cloud.OnDemand && (best == 0 || o.PricePerHour < best) {
			best = o.PricePerHour
		}
	}
	return best
}

// cheapestHolder is the cheapest on-demand type of the example's general pool whose allocatable
// holds a pod with these requests, found by brute force over the catalog.
func cheapestHolder(t *testing.T, cpu, mem string) (string, float64) {
	t.Helper()
	sel := generalPoolSelector(t)
	name, best := "", 0.0
	for _, it := range instanceTypes(t) {
		p := onDemandPrice(it)
		if p <= 0 || (best > 0 && p >= best) || !sel.Match(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: catalog.Labels(it)}}) {
			continue
		}
		alloc := catalog.Allocatable(it)
		c, m := alloc[corev1.ResourceCPU], alloc[corev1.ResourceMemory]
		if c.Cmp(resource.MustParse(cpu)) >= 0 && m.Cmp(resource.MustParse(mem)) >= 0 {
			name, best = it.Name, p
		}
	}
	if name == "" {
		t.Fatalf("no type holds %s cpu / %s", cpu, mem)
	}
	return name, best
}

// generalPoolSelector is the example config's general pool requirements, written out here so
// the test does not lean on the planner's own reading of them.
func generalPoolSelector(t *testing.T) *nodeaffinity.NodeSelector {
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: v1alpha1.LabelInstanceCategory, Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: v1alpha1.LabelInstanceGeneration, Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
		{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

// A pod that arrives while a node planned for earlier pods is still launching goes onto that
// node's spare room instead of a new launch.
func TestLateArrivalUsesInFlightCapacity(t *testing.T) {
	ns := newNamespace(t)
	// A slow boot: the first claim's instance stays pending (its node cannot register) for 8 s,
	// far longer than the late pod takes to be planned.
	world.Sim.SetPendingFor(8 * time.Second)
	t.Cleanup(func() { world.Sim.SetPendingFor(0) })
	fleets := world.Sim.FleetRequests()

	createPod(t, ns, "first", "1", "1Gi")
	waitFor(t, "the first pod's claim to be launched", func() bool {
		for _, c := range listClaims(t) {
			for _, p := range c.Spec.Pods {
				if p.Namespace == ns && c.Status.Phase == v1alpha1.ClaimLaunched {
					return true
				}
			}
		}
		return false
	})
	if nodes, _ := world.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); len(nodes.Items) > 1 {
		t.Fatalf("the first claim's node registered too early for this test: %d nodes", len(nodes.Items))
	}
	createPod(t, ns, "late", "250m", "256Mi")
	pods := waitRunning(t, ns, 2)

	if pods[0].Spec.NodeName != pods[1].Spec.NodeName {
		t.Errorf("pods on %s and %s, want both on the in-flight node", pods[0].Spec.NodeName, pods[1].Spec.NodeName)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("%d fleets launched, want 1", got)
	}
	cls := listClaims(t)
	if len(cls) != 1 || len(cls[0].Spec.Pods) != 2 {
		t.Errorf("claims %v, want one claim recording both pods", claimNames(cls))
	}
}

// The node launched for a pod is taken before the pod gets there (another pod, bound to it
// directly, uses the room while the node boots): once the node is up and still refuses the pod,
// the pod is planned again and gets a node of its own, on a new claim. The claim it was planned
// onto first is not taken for a new one (claims are named after their pods, and that claim is for
// this pod alone), so it is not launched again and keeps its node.
func TestPlannedNodeTakenPlansAgain(t *testing.T) {
	ns := newNamespace(t)
	fleets, calls := world.Sim.FleetRequests(), world.Sim.Calls("CreateFleet")
	first, release := launchHeld(t, ns, "planned", "1", "1Gi")
	it := instanceTypes(t)[first.Status.InstanceType]
	// What the planned pod leaves of the node's cpu, and a little more: the pod no longer fits.
	alloc := catalog.Allocatable(it)
	taker := alloc.Cpu().DeepCopy()
	taker.Sub(resource.MustParse("900m"))
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taker"}, Spec: corev1.PodSpec{
		NodeName:    first.Status.NodeName,
		Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: taker, corev1.ResourceMemory: resource.MustParse("256Mi")}}}},
	}}
	if _, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	release() // the node boots, with the taker on it

	pods := waitRunning(t, ns, 2)
	var planned string
	for _, p := range pods {
		if p.Name == "planned" {
			planned = p.Spec.NodeName
		}
	}
	if planned == "" || planned == first.Status.NodeName {
		t.Fatalf("planned pod on %q, want a node other than the taken %s", planned, first.Status.NodeName)
	}
	cls := listClaims(t)
	var kept bool
	for _, c := range cls {
		if c.UID == first.UID {
			kept = c.Status.Phase == v1alpha1.ClaimRegistered && c.Status.InstanceID == first.Status.InstanceID && c.Status.NodeName == first.Status.NodeName
		}
	}
	if len(cls) != 2 || !kept {
		t.Errorf("claims %v, want the first (%s) still Registered on %s and one new", claimNames(cls), first.Name, first.Status.NodeName)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 2 {
		t.Errorf("EC2 launched %d fleets, want 2", got)
	}
	if got := world.Sim.Calls("CreateFleet") - calls; got != 2 {
		t.Errorf("%d CreateFleet calls, want 2: the first claim is not launched again", got)
	}
	checkSettled(t, ns, 2)
}
