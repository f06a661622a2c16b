package integration

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// EC2 throttles CreateFleet while a burst of pods waits for nodes (30 anti-affine pods, so 30
// claims at once, and the first 30 CreateFleet calls answered RequestLimitExceeded, slowly).
// Tailor keeps at most 8 launches in flight, backs off, and every pod ends Running on its own
// node: one instance per claim, none without a claim, and the calls EC2 saw bounded by the
// throttled ones plus one per node and a little slack (a launch loop would be in the hundreds).
func TestThrottledBurstLaunchesEveryPodOnce(t *testing.T) {
	const (
		replicas  = 30
		throttled = 30
		inFlight  = 8 // provisioning's maxLaunchesInFlight
	)
	ns := newNamespace(t)
	calls := world.Sim.Calls("CreateFleet")
	world.Sim.ResetMostConcurrent()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "RequestLimitExceeded", Latency: 200 * time.Millisecond, Times: throttled})
	t.Cleanup(world.Sim.ClearFaults)

	spec := podSpec("250m", "256Mi")
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "burst"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	createDeployment(t, ns, "burst", replicas, spec)
	waitForWithin(t, "every pod Running", 4*time.Minute, func() bool { return len(runningPods(t, ns)) == replicas })

	pods := runningPods(t, ns)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != replicas {
		t.Errorf("%d anti-affine pods on %d nodes", replicas, len(nodes))
	}
	claims := map[string]bool{}
	for _, c := range listClaims(t) {
		claims[c.Name] = true
	}
	perClaim := map[string]int{}
	for _, in := range liveInstances() {
		c := in.Tags[v1alpha1.TagClaim]
		if c == "" {
			continue // not Tailor's
		}
		if !claims[c] {
			t.Errorf("instance %s of claim %s, which does not exist: leaked", in.ID, c)
		}
		perClaim[c]++
	}
	for c, n := range perClaim {
		if n != 1 {
			t.Errorf("claim %s has %d instances", c, n)
		}
	}
	if len(perClaim) != replicas {
		t.Errorf("%d claims with an instance, want %d", len(perClaim), replicas)
	}
	got := world.Sim.Calls("CreateFleet") - calls
	t.Logf("CreateFleet: %d calls (%d throttled), at most %d at once", got, throttled, world.Sim.MostConcurrent("CreateFleet"))
	if limit := throttled + replicas + 10; got > limit {
		t.Errorf("%d CreateFleet calls, want at most %d", got, limit)
	}
	if most := world.Sim.MostConcurrent("CreateFleet"); most > inFlight {
		t.Errorf("%d CreateFleet calls at once, want at most %d", most, inFlight)
	}
}
