package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// createGang creates a PodGroup of minMember and pods of it, each requesting cpu and mem.
func createGang(t *testing.T, ns, name string, minMember int32, pods int, cpu, mem string, opts ...podOption) {
	t.Helper()
	createPodGroup(t, ns, name, minMember)
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i),
			Labels: map[string]string{schedv1alpha1.PodGroupLabel: name, "app": name}}, Spec: podSpec(cpu, mem, opts...)}
		if _, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// createPodGroup creates a PodGroup of minMember (and minResources, if given).
func createPodGroup(t *testing.T, ns, name string, minMember int32, minResources ...corev1.ResourceList) {
	t.Helper()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: schedv1alpha1.PodGroupSpec{MinMember: minMember}}
	if len(minResources) > 0 {
		pg.Spec.MinResources = minResources[0]
	}
	// PodGroups have no protobuf encoding.
	cfg := rest.CopyConfig(world.CP.Config)
	cfg.ContentType = "application/json"
	if _, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// onePerNode keeps a gang's pods on nodes of their own (hostname anti-affinity on the app label).
func onePerNode(app string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}, TopologyKey: corev1.LabelHostname,
			}},
		}}
	}
}

// gangClaims checks that the claims are one gang's plan (one spec.gang, counting them all) in one
// zone, and returns that zone.
func gangClaims(t *testing.T, cls []*v1alpha1.Claim, podGroup string) string {
	t.Helper()
	zones, ids := map[string]bool{}, map[string]bool{}
	for _, c := range cls {
		zones[c.Spec.Zone] = true
		if g := c.Spec.Gang; g == nil || g.PodGroup != podGroup || g.Claims != len(cls) {
			t.Errorf("claim %s has gang %+v, want one of %d claims of %s", c.Name, g, len(cls), podGroup)
		} else {
			ids[g.ID] = true
		}
	}
	if len(zones) != 1 || len(ids) != 1 {
		t.Errorf("claims in zones %v with gang IDs %v, want one zone and one gang", zones, ids)
	}
	for z := range zones {
		return z
	}
	return ""
}

// An 8-pod gang gets its nodes in one plan, in one zone, launched with one CreateFleet per
// claim, and every pod runs.
func TestGangRunsWhole(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.Calls("CreateFleet")
	createGang(t, ns, "train", 8, 8, "3", "4Gi")
	pods := waitRunning(t, ns, 8)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	cls := listClaims(t)
	gangClaims(t, cls, ns+"/train")
	for _, c := range cls {
		if !nodes[c.Status.NodeName] {
			t.Errorf("claim %s (node %s) runs none of the gang", c.Name, c.Status.NodeName)
		}
	}
	if len(cls) < 2 {
		t.Errorf("%d claims, want the gang spread over several nodes", len(cls))
	}
	if got := world.Sim.Calls("CreateFleet") - fleets; got != len(cls) {
		t.Errorf("%d CreateFleet calls for %d claims", got, len(cls))
	}
}

// waitGangEvent waits for a GangNotProvisioned event on the PodGroup (one saying the given text,
// if any) and returns its message.
func waitGangEvent(t *testing.T, ns, podGroup string, saying ...string) string {
	t.Helper()
	return waitEventOn(t, ns, "involvedObject.kind=PodGroup,involvedObject.name="+podGroup, "GangNotProvisioned", saying...)
}

// A gang of 3 pods whose minMember is 4 gets no claim; its PodGroup and pods say why.
func TestGangShortOfMinMemberGetsNothing(t *testing.T) {
	ns := newNamespace(t)
	createGang(t, ns, "short", 4, 3, "1", "1Gi")
	want := "has 3 of its minMember 4 pods"
	if msg := waitGangEvent(t, ns, "short"); !strings.Contains(msg, want) {
		t.Errorf("PodGroup event %q does not say %q", msg, want)
	}
	if msg := waitEvent(t, ns, "short-0", "GangNotProvisioned"); !strings.Contains(msg, want) {
		t.Errorf("pod event %q does not say %q", msg, want)
	}
	if cls := listClaims(t); len(cls) != 0 {
		t.Errorf("%d claims for an incomplete gang", len(cls))
	}
}

// A gang whose nodes together would pass the pool's cpu limit gets no claim, though the pool has
// room for some of them; the event names the limit.
func TestGangOverPoolLimitGetsNothing(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		for _, p := range args["pools"].([]any) {
			if pool := p.(map[string]any); pool["name"] == "general" {
				pool["limits"] = map[string]any{"cpu": "16"}
			}
		}
	})
	ns := newNamespace(t)
	createGang(t, ns, "big", 6, 6, "3", "4Gi", onePerNode("big"))
	if msg := waitGangEvent(t, ns, "big"); !strings.Contains(msg, "pool general is at its cpu limit") {
		t.Errorf("PodGroup event %q does not name the general pool's cpu limit", msg)
	}
	if cls := listClaims(t); len(cls) != 0 {
		t.Errorf("%d claims for a gang over its pool's limit", len(cls))
	}
}

// A gang one of whose launches finds no capacity is given up whole (the instances launched for
// the others are terminated), then runs whole on other offerings.
func TestGangInsufficientCapacityLeavesNothingAlone(t *testing.T) {
	ns := newNamespace(t)
	t.Cleanup(world.Sim.ClearFaults)
	before := map[string]bool{}
	for _, in := range world.Sim.Instances() {
		before[in.ID] = true
	}
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "InsufficientInstanceCapacity", InFleet: true, Times: 1})
	createGang(t, ns, "ice", 4, 4, "1", "2Gi", onePerNode("ice"))
	pods := waitRunning(t, ns, 4)
	var running []*v1alpha1.Claim
	mine := map[string]bool{}
	for _, c := range listClaims(t) {
		if c.Status.Phase != v1alpha1.ClaimFailed { // the given-up attempt's, until the sweep removes them
			running = append(running, c)
			mine[c.Status.InstanceID] = true
		}
	}
	gangClaims(t, running, ns+"/ice")
	gaveUp := 0
	for _, in := range world.Sim.Instances() {
		if before[in.ID] || mine[in.ID] {
			continue
		}
		gaveUp++
		if in.State != "shutting-down" && in.State != "terminated" {
			t.Errorf("instance %s of the given-up attempt is %s", in.ID, in.State)
		}
	}
	if gaveUp == 0 || gaveUp > 3 {
		t.Errorf("%d instances besides the gang's, want the 1 to 3 of the given-up attempt launched (and terminated) beside the one refused", gaveUp)
	}
	if len(pods) != 4 || len(running) != 4 {
		t.Errorf("%d pods on %d claims, want 4 on 4", len(pods), len(running))
	}
	waitGangEvent(t, ns, "ice", "InsufficientInstanceCapacity")
}

// Consolidation leaves a running gang whole: the node of a gang's pod, which could be emptied
// into the other node's room, is kept, and says why; the gang's pod keeps running where it was.
func TestConsolidationKeepsGangWhole(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	// a's pods may not move: the only node consolidation could empty is the gang's.
	a := deployment(ns, "a", 2, podSpec("400m", "512Mi"))
	a.Spec.Template.Annotations = map[string]string{v1alpha1.AnnotationDoNotDisrupt: "true"}
	createDeploymentObject(t, a)
	waitRunning(t, ns, 2)
	// The gang's pod has a controller, so only the gang keeps it (kwok completes Jobs' pods).
	createPodGroup(t, ns, "g", 1)
	g := deployment(ns, "g", 1, podSpec("400m", "512Mi"))
	g.Spec.Template.Labels[schedv1alpha1.PodGroupLabel] = "g"
	createDeploymentObject(t, g)
	waitRunning(t, ns, 3)
	if cls := listClaims(t); len(cls) != 2 {
		t.Fatalf("setup: %d claims, want 2", len(cls))
	}
	scale(t, ns, "a", 1)
	waitFor(t, "a scaled to one pod", func() bool { return len(runningPods(t, ns)) == 2 })
	var member corev1.Pod
	for _, p := range runningPods(t, ns) {
		if p.Labels[schedv1alpha1.PodGroupLabel] == "g" {
			member = p
		}
	}
	msg := waitEvent(t, "default", member.Spec.NodeName, "DisruptionBlocked")
	if !strings.Contains(msg, "gang "+"g") {
		t.Errorf("event %q does not name the gang", msg)
	}
	for _, p := range runningPods(t, ns) {
		if p.Labels[schedv1alpha1.PodGroupLabel] == "g" && (p.UID != member.UID || p.Spec.NodeName != member.Spec.NodeName) {
			t.Errorf("the gang's pod is %s on %s, want %s still on %s", p.UID, p.Spec.NodeName, member.UID, member.Spec.NodeName)
		}
	}
	if n := len(listClaims(t)); n != 2 {
		t.Errorf("%d claims, want both nodes kept", n)
	}
}

// A gang that fits the free room of nodes that are up runs there with no launch (the scheduler
// tries them once all its pods exist); one that needs a new node gets all its nodes new, launched
// together in one zone, and none of its pods is left in the free room (where Coscheduling would
// turn it away each time a sibling fails while the new nodes boot).
func TestGangAndRoomOnNodesThatAreUp(t *testing.T) {
	for _, tc := range []struct {
		name             string
		pods             int
		apart            bool
		claims, onFiller int
	}{
		{"fits the room", 2, false, 0, 2},
		{"needs a node", 3, true, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			createPod(t, ns, "filler", "400m", "512Mi")
			filler := waitRunning(t, ns, 1)[0]
			fleets := world.Sim.Calls("CreateFleet")
			var opts []podOption
			if tc.apart {
				opts = append(opts, onePerNode("g"))
			}
			createGang(t, ns, "g", int32(tc.pods), tc.pods, "200m", "256Mi", opts...)
			pods := waitRunning(t, ns, tc.pods+1)
			onFiller := 0
			for _, p := range pods {
				if p.Labels[schedv1alpha1.PodGroupLabel] == "g" && p.Spec.NodeName == filler.Spec.NodeName {
					onFiller++
				}
			}
			var gang []*v1alpha1.Claim
			for _, c := range listClaims(t) {
				if c.Spec.Gang != nil {
					gang = append(gang, c)
				}
			}
			if len(gang) > 0 {
				gangClaims(t, gang, ns+"/g")
			}
			if onFiller != tc.onFiller || len(gang) != tc.claims || world.Sim.Calls("CreateFleet")-fleets != tc.claims {
				t.Errorf("%d gang pods on the filler's node, %d gang claims, %d CreateFleet calls; want %d, %d and %d",
					onFiller, len(gang), world.Sim.Calls("CreateFleet")-fleets, tc.onFiller, tc.claims, tc.claims)
			}
		})
	}
}

// A gang whose minResources the nodes that are up cannot hold is turned away by Coscheduling's
// PreFilter, which provisioning takes as something it can fix: the gang gets its nodes and runs.
func TestGangMinResourcesAreProvisioned(t *testing.T) {
	ns := newNamespace(t)
	createPodGroup(t, ns, "big", 2, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("6")})
	for i := range 2 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%d", i),
			Labels: map[string]string{schedv1alpha1.PodGroupLabel: "big"}}, Spec: podSpec("3", "4Gi")}
		if _, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitRunning(t, ns, 2)
	var gang []*v1alpha1.Claim
	for _, c := range listClaims(t) {
		if c.Spec.Gang != nil {
			gang = append(gang, c)
		}
	}
	if len(gang) == 0 {
		t.Fatal("no gang claim")
	}
	gangClaims(t, gang, ns+"/big")
}
