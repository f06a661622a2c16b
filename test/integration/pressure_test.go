package integration

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// What pkg/provisioning promises under EC2 pressure, and the SDK's retries under it.
const (
	inFlight = 8 // provisioning's maxLaunchesInFlight
	// sdkAttempts is the SDK's standard retryer's attempts per call (retry.DefaultMaxAttempts):
	// one Tailor launch is at most this many CreateFleet calls.
	sdkAttempts = 3
)

// EC2 throttles CreateFleet while 200 pods wait for nodes: five Deployments of 40 replicas, each
// anti-affine within itself, so at least 40 nodes and claims, planned in waves as the ReplicaSets
// create their pods; the first 30 CreateFleet calls are answered RequestLimitExceeded, slowly.
// Tailor keeps at most 8 launches in flight, backs off, and every pod ends Running, no two of a
// Deployment on one node: one instance per claim, none without a claim, and the calls EC2 saw
// bounded by the throttled ones plus one per claim and a little slack (a launch loop would be in
// the hundreds).
func TestThrottledBurstLaunchesEveryPodOnce(t *testing.T) {
	const (
		apps      = 5
		replicas  = 40
		throttled = 30
	)
	ns := newNamespace(t)
	calls := world.Sim.Calls("CreateFleet")
	world.Sim.ResetMostConcurrent()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "RequestLimitExceeded", Latency: 200 * time.Millisecond, Times: throttled})
	t.Cleanup(world.Sim.ClearFaults)

	for i := range apps {
		createBurst(t, ns, fmt.Sprintf("burst-%d", i), replicas)
	}
	nodes := checkBurstSettled(t, ns, apps*replicas)
	got := world.Sim.Calls("CreateFleet") - calls
	claims := len(listClaims(t))
	t.Logf("%d pods on %d nodes of %d claims; CreateFleet: %d calls (%d throttled), at most %d at once", apps*replicas, nodes, claims, got, throttled, world.Sim.MostConcurrent("CreateFleet"))
	if limit := throttled + claims + 10; got > limit {
		t.Errorf("%d CreateFleet calls, want at most %d (%d throttled, one per claim, 10 to spare)", got, limit, throttled)
	}
	if most := world.Sim.MostConcurrent("CreateFleet"); most > inFlight {
		t.Errorf("%d CreateFleet calls at once, want at most %d", most, inFlight)
	}
}

// CreateFleet answers InternalError (HTTP 500) to every call for 13 s while 20 anti-affine pods
// (20 claims) wait. The SDK retries each call (3 attempts at most), then the launch fails and its
// pods wait out the backoff all launches share (2 s, doubling with each wave; pkg/provisioning)
// before they are planned again: a pod's plans start at least 2, 4, 8 s after its failures, so
// at 0, 2 and 6 s at the earliest, and no fourth starts before 14 s. Within the outage EC2 sees
// at most 20 pods × 3 plans × 3 attempts = 180 calls; failed launches planned again at once
// would make hundreds. Once EC2 answers again, every pod runs on its own node and claim: one
// instance each, none leaked, one call per claim (and at most the launches under way when the
// outage ended) after it.
func TestCreateFleetOutageBacksOff(t *testing.T) {
	const (
		replicas = 20
		outage   = 13 * time.Second
		// The earliest starts of a pod's plans (0, 2, 6, 14 s) that fall within the outage.
		plans = 3
	)
	ns := newNamespace(t)
	before := world.Sim.Calls("CreateFleet")
	fleets := world.Sim.FleetRequests()
	world.Sim.ResetMostConcurrent()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "InternalError"})
	t.Cleanup(world.Sim.ClearFaults)
	start := time.Now()
	createBurst(t, ns, "burst", replicas)
	time.Sleep(time.Until(start.Add(outage)))
	during := world.Sim.Calls("CreateFleet") - before
	world.Sim.ClearFaults()

	t.Logf("CreateFleet: %d calls in the %s outage, at most %d at once", during, outage, world.Sim.MostConcurrent("CreateFleet"))
	if during == 0 {
		t.Fatalf("no CreateFleet call during the outage: it tested nothing")
	}
	if limit := replicas * plans * sdkAttempts; during > limit {
		t.Errorf("%d CreateFleet calls during the %s outage, want at most %d (%d pods × %d plans × %d attempts)", during, outage, limit, replicas, plans, sdkAttempts)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 0 {
		t.Errorf("%d fleets created during the outage, want none", got)
	}
	if nodes := checkBurstSettled(t, ns, replicas); nodes != replicas {
		t.Errorf("%d anti-affine pods on %d nodes", replicas, nodes)
	}
	after := world.Sim.Calls("CreateFleet") - before - during
	t.Logf("CreateFleet: %d calls after the outage", after)
	if after > replicas+inFlight {
		t.Errorf("%d CreateFleet calls after the outage, want at most %d (one per claim, and the %d launches that may have been under way)", after, replicas+inFlight, inFlight)
	}
	if got := world.Sim.FleetRequests() - fleets; got != replicas {
		t.Errorf("%d fleets created, want %d (one per pod)", got, replicas)
	}
	if most := world.Sim.MostConcurrent("CreateFleet"); most > inFlight {
		t.Errorf("%d CreateFleet calls at once, want at most %d", most, inFlight)
	}
}

// EC2 answers CreateFleet only after 40 s, for two claims launched at once (two anti-affine
// pods): one call takes effect at once and only its answer is late (AfterEffect), the other
// takes effect when it answers. While the calls are out (longer than a Pending claim waits
// before the sweep resumes it, 30 s, plus a sweep period), Tailor makes no second call and no
// second claim for the same pods; the SDK does not time out and retry. Then each claim has its
// one instance, each pod runs on its claim's node, and EC2 saw one call per claim, with the
// claim's UID as client token.
func TestSlowCreateFleetLaunchesOnce(t *testing.T) {
	const latency = 40 * time.Second
	ns := newNamespace(t)
	before, fleets := world.Sim.Calls("CreateFleet"), world.Sim.FleetRequests()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Latency: latency, AfterEffect: true, Times: 1})
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Latency: latency, Times: 1})
	t.Cleanup(world.Sim.ClearFaults)
	createBurst(t, ns, "burst", 2)
	waitFor(t, "both launches to reach EC2", func() bool { return world.Sim.Calls("CreateFleet")-before == 2 })
	sent := time.Now()
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("%d fleets while both calls are out, want 1 (the call that took effect at once)", got)
	}

	launched := func() bool {
		n := 0
		for _, c := range listClaims(t) {
			if c.Status.Phase == v1alpha1.ClaimLaunched || c.Status.Phase == v1alpha1.ClaimRegistered {
				n++
			}
		}
		return n == 2
	}
	var calls, claims int
	answered := pollWithin(latency+30*time.Second, func() bool {
		calls, claims = world.Sim.Calls("CreateFleet")-before, len(listClaims(t))
		return calls != 2 || claims != 2 || launched()
	})
	if !answered || calls != 2 || claims != 2 {
		t.Fatalf("%d CreateFleet calls and %d claims %s after the calls went out (launched: %v), want 2 and 2 until both are answered", calls, claims, time.Since(sent).Round(time.Second), answered)
	}
	t.Logf("both claims launched %s after their calls went out", time.Since(sent).Round(time.Second))

	if nodes := checkBurstSettled(t, ns, 2); nodes != 2 {
		t.Errorf("2 anti-affine pods on %d nodes", nodes)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 2 {
		t.Errorf("EC2 launched %d fleets, want 2", got)
	}
	if got := world.Sim.Calls("CreateFleet") - before; got != 2 {
		t.Errorf("%d CreateFleet calls, want 2: one per claim", got)
	}
	reqs := world.Sim.Requests("CreateFleet")
	tokens := map[string]bool{}
	for _, r := range reqs[len(reqs)-2:] {
		tokens[r.Get("ClientToken")] = true
	}
	for _, c := range listClaims(t) {
		if !tokens[string(c.UID)] {
			t.Errorf("claim %s (uid %s) was not launched with its UID as client token: %v", c.Name, c.UID, tokens)
		}
	}
}

// createBurst creates a Deployment of replicas small pods (250m, 256Mi) with hostname
// anti-affinity among themselves: each needs a node of its own.
func createBurst(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	spec := podSpec("250m", "256Mi")
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	createDeployment(t, ns, name, replicas, spec)
}

// checkBurstSettled waits until the namespace's pods pods (of createBurst's Deployments) all run
// and fails unless no two of a Deployment share a node, every claim with a live instance has
// exactly one and every node the pods run on is a claim's, and nothing leaked (checkSettled).
// It returns how many nodes the pods run on.
func checkBurstSettled(t *testing.T, ns string, pods int) int {
	t.Helper()
	waitForWithin(t, "every pod Running", 4*time.Minute, func() bool { return len(runningPods(t, ns)) == pods })
	nodes := map[string]bool{}
	apps := map[string]map[string]string{} // app → node → pod
	for _, p := range runningPods(t, ns) {
		nodes[p.Spec.NodeName] = true
		app := p.Labels["app"]
		if apps[app] == nil {
			apps[app] = map[string]string{}
		}
		if other, ok := apps[app][p.Spec.NodeName]; ok {
			t.Errorf("pods %s and %s of %s, anti-affine, share node %s", other, p.Name, app, p.Spec.NodeName)
		}
		apps[app][p.Spec.NodeName] = p.Name
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
	if len(perClaim) < len(nodes) {
		t.Errorf("%d claims with an instance for pods on %d nodes", len(perClaim), len(nodes))
	}
	checkSettled(t, ns, pods)
	return len(nodes)
}
