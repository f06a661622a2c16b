package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/dynamic"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// Faults from outside Tailor (issue 10): someone deletes a node or terminates an instance by
// hand, an instance is left behind, EC2 stops describing instance types or refuses launches on
// an account quota. Each test ends on the same three checks: nothing leaked, nothing doubled,
// every pod Running (checkSettled).

// checkSettled fails unless the cluster is settled after a fault: every live instance tagged
// with a claim has that claim (none leaked), every claim has at most one live instance and a
// launched one exactly one (none doubled), and the namespace's n pods run on nodes of claims
// that exist.
func checkSettled(t *testing.T, ns string, n int) {
	t.Helper()
	pods := waitRunning(t, ns, n)
	cls := listClaims(t)
	byName := map[string]*v1alpha1.Claim{}
	for _, c := range cls {
		byName[c.Name] = c
	}
	perClaim := map[string][]string{}
	for _, in := range liveInstances() {
		name := in.Tags[v1alpha1.TagClaim]
		if name == "" {
			continue
		}
		if byName[name] == nil {
			t.Errorf("instance %s (%s) is live but its claim %s is gone: leaked", in.ID, in.State, name)
		}
		perClaim[name] = append(perClaim[name], in.ID)
	}
	for _, c := range cls {
		ids := perClaim[c.Name]
		if len(ids) > 1 || c.Status.InstanceID != "" && (len(ids) != 1 || ids[0] != c.Status.InstanceID) {
			t.Errorf("claim %s (%s, instance %q) has live instances %v, want exactly its own", c.Name, c.Status.Phase, c.Status.InstanceID, ids)
		}
	}
	nodeClaims := map[string]string{}
	for _, c := range cls {
		nodeClaims[c.Status.NodeName] = c.Name
	}
	for _, p := range pods {
		if _, ok := nodeClaims[p.Spec.NodeName]; !ok {
			t.Errorf("pod %s runs on %s, which no claim owns", p.Name, p.Spec.NodeName)
		}
	}
}

// podNode returns the node of the namespace's only running pod, that node's claim and fails
// unless it is a Registered claim of Tailor's.
func podNode(t *testing.T, ns string) (string, *v1alpha1.Claim) {
	t.Helper()
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	for _, c := range listClaims(t) {
		if c.Name == node.Labels[v1alpha1.LabelClaim] {
			if c.Status.Phase != v1alpha1.ClaimRegistered || c.Status.InstanceID == "" {
				t.Fatalf("setup: claim %s is %s with instance %q, want Registered", c.Name, c.Status.Phase, c.Status.InstanceID)
			}
			return node.Name, c
		}
	}
	t.Fatalf("setup: node %s has no claim", node.Name)
	return "", nil
}

// waitGone waits until the node and the claim are gone and the instance is no longer live.
func waitGone(t *testing.T, node string, claim *v1alpha1.Claim, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	dc := dynamic.NewForConfigOrDie(world.CP.Config)
	waitForWithin(t, "node "+node+", claim "+claim.Name+" and instance "+claim.Status.InstanceID+" to go", timeout, func() bool {
		_, nerr := world.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		_, cerr := dc.Resource(v1alpha1.ClaimResource).Get(ctx, claim.Name, metav1.GetOptions{})
		in, ok := world.Sim.Instance(claim.Status.InstanceID)
		dead := !ok || in.State == cloud.StateShuttingDown || in.State == cloud.StateTerminated
		return apierrors.IsNotFound(nerr) && apierrors.IsNotFound(cerr) && dead
	})
}

// waitRunningElsewhere waits until the namespace's pod runs on a node other than old.
func waitRunningElsewhere(t *testing.T, ns, old string, timeout time.Duration) string {
	t.Helper()
	var node string
	waitForWithin(t, "the pod to run on a node other than "+old, timeout, func() bool {
		for _, p := range runningPods(t, ns) {
			if p.Spec.NodeName != "" && p.Spec.NodeName != old {
				node = p.Spec.NodeName
				return true
			}
		}
		return false
	})
	return node
}

// A Tailor node deleted by hand (kubectl delete node) in a pool at its cpu limit: the drain its
// finalizer runs terminates the instance and removes the claim, and the removed claim stops
// counting against the limit, so the Deployment's pod, evicted by the drain, gets a new node
// in the same pool. Were the deleted node's claim still counted (or its instance still up), the
// pool would stay at its limit and the pod pending for good. (Deletion's drain and PDB handling
// are TestDeletionDrainsBeforeTerminating's.)
func TestDeletedNodeFreesPoolLimit(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		pools := args["pools"].([]any)
		// One 2-vCPU node fits the limit, never two: the replacement can launch only once the
		// deleted node's claim no longer counts.
		pools[0].(map[string]any)["limits"] = map[string]any{"cpu": "3"}
	})
	ctx := context.Background()
	ns := newNamespace(t)
	createDeployment(t, ns, "web", 1, podSpec("1500m", "1Gi"))
	old, claim := podNode(t, ns)
	fleets := world.Sim.FleetRequests()

	start := time.Now()
	if err := world.Client.CoreV1().Nodes().Delete(ctx, old, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, old, claim, 2*time.Minute)
	gone := time.Since(start)
	node := waitRunningElsewhere(t, ns, old, 2*time.Minute)
	t.Logf("node deleted: claim and instance gone after %s, pod running on %s after %s", gone.Round(time.Second), node, time.Since(start).Round(time.Second))

	if _, ok := world.Sim.TerminatedAt(claim.Status.InstanceID); !ok {
		t.Errorf("instance %s of the deleted node was never terminated", claim.Status.InstanceID)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("%d fleets launched after the deletion, want 1 (the replacement)", got)
	}
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].Spec.Pool != "general" || cls[0].Status.NodeName != node {
		t.Errorf("claims %v, want one general claim for node %s", claimNames(cls), node)
	}
	checkSettled(t, ns, 1)
}

// An instance terminated in the EC2 console (here through the harness's own EC2 client, never
// Tailor's): its Node goes (the cloud controller's part, played by the node agent), Tailor
// releases the Node's finalizer and removes the claim without terminating anything, and the
// Deployment's pod, collected from the vanished node, runs again on a new node. With no
// interruption queue configured, nothing tells Tailor but the instance's absence.
func TestConsoleTerminatedInstanceIsReplaced(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	createDeployment(t, ns, "web", 1, podSpec("500m", "512Mi"))
	old, claim := podNode(t, ns)

	start := time.Now()
	if err := world.Cloud.Terminate(ctx, claim.Status.InstanceID); err != nil {
		t.Fatal(err)
	}
	waitGone(t, old, claim, 90*time.Second)
	gone := time.Since(start)
	// The pod garbage collector deletes pods of a vanished node (after its quarantine), and the
	// Deployment's new pod is provisioned as usual.
	node := waitRunningElsewhere(t, ns, old, 3*time.Minute)
	t.Logf("instance terminated: node and claim gone after %s, pod running on %s after %s", gone.Round(time.Second), node, time.Since(start).Round(time.Second))
	checkSettled(t, ns, 1)
}

// Orphan collection: an instance tagged as Tailor's (the cluster tag and a tailor.dev/claim tag
// naming a claim that does not exist), older than the orphan grace and never joined, is
// terminated by the sweep; an instance with the cluster tag but no claim tag (not launched by
// Tailor) is left running through the same sweeps. Both are launched directly, by a client
// whose user data lacks the cluster endpoint, so neither ever registers a Node, as an orphan
// launched just before a crash would not have yet; the simulator backdates their launch instead
// of the test waiting out the two-minute grace.
func TestOrphanInstanceTerminatedForeignKept(t *testing.T) {
	newNamespace(t) // its cleanup terminates the foreign instance
	orphan := launchDirect(t, "orphan", map[string]string{v1alpha1.TagClaim: "general-gone-" + rand.String(5)})
	foreign := launchDirect(t, "foreign", map[string]string{})
	// Claims are named after their pods: an instance left by an earlier claim of the same name
	// is an orphan too once the live claim has recorded its own instance.
	ns := newNamespace(t)
	createPod(t, ns, "owner", "500m", "512Mi")
	waitRunning(t, ns, 1)
	claim := listClaims(t)[0]
	stale := launchDirect(t, "stale", map[string]string{v1alpha1.TagClaim: claim.Name})
	if !world.Sim.BackdateInstances(10*time.Minute, orphan.ID, foreign.ID, stale.ID) {
		t.Fatal("backdating: instance not found")
	}

	start := time.Now()
	waitForWithin(t, "the orphans to be terminated", 3*lifecycle.DefaultSweepPeriod, func() bool {
		_, ok := world.Sim.TerminatedAt(orphan.ID)
		_, staleGone := world.Sim.TerminatedAt(stale.ID)
		return ok && staleGone
	})
	if _, gone := world.Sim.TerminatedAt(claim.Status.InstanceID); gone {
		t.Errorf("claim %s's own instance %s was terminated with the stale one", claim.Name, claim.Status.InstanceID)
	}
	t.Logf("orphan %s terminated %s after it passed its grace", orphan.ID, time.Since(start).Round(time.Second))
	// One more sweep passes over the foreign instance.
	time.Sleep(lifecycle.DefaultSweepPeriod + 2*time.Second)
	if at, ok := world.Sim.TerminatedAt(foreign.ID); ok {
		t.Errorf("instance %s without a claim tag was terminated at %s: it is not Tailor's", foreign.ID, at)
	}
	if in, ok := world.Sim.Instance(foreign.ID); !ok || in.State != cloud.StateRunning {
		t.Errorf("instance %s without a claim tag: %+v, want it running", foreign.ID, in)
	}
}

// DescribeInstanceTypes failing (InternalError, until cleared) once the catalog has loaded:
// plans and launches keep using the loaded catalog, so a new pending pod that needs a new node
// still gets one. The scheduler's catalog TTL (5 minutes) is not configurable here, so this
// proves the cache serves through the outage; that a refresh failing past the TTL keeps the last
// good types is pkg/cloud/ec2's TestFailedTypesRefreshKeepsCatalog.
func TestInstanceTypesOutageKeepsCatalog(t *testing.T) {
	ns := newNamespace(t)
	createPod(t, ns, "before", "500m", "512Mi")
	waitRunning(t, ns, 1) // the catalog has loaded: this pod was planned from it
	world.Sim.InjectFault(ec2sim.Fault{Action: "DescribeInstanceTypes", Code: "InternalError"})
	t.Cleanup(world.Sim.ClearFaults)
	calls := world.Sim.Calls("DescribeInstanceTypes")
	fleets := world.Sim.FleetRequests()

	// Too big for the first node: it needs a launch, planned and launched during the outage.
	createPod(t, ns, "during", "3", "4Gi")
	pods := waitRunning(t, ns, 2)
	if pods[0].Spec.NodeName == pods[1].Spec.NodeName {
		t.Fatalf("both pods on %s: the second needed no new node", pods[0].Spec.NodeName)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("%d fleets launched during the outage, want 1", got)
	}
	t.Logf("DescribeInstanceTypes called %d times during the outage (all failed)", world.Sim.Calls("DescribeInstanceTypes")-calls)
	checkSettled(t, ns, 2)
}

// An account quota refusing launches (CreateFleet reporting VcpuLimitExceeded on every
// override, as an instant fleet does) is not a lack of capacity in the offerings it names:
// Tailor must not mark them unavailable and plan the pod again at once on the next offering,
// and the next, which would walk it through every offering (one CreateFleet each) and leave
// them all out of plans for minutes after the quota is raised. It retries later instead: a few
// CreateFleet calls while the quota holds, and once it is lifted the pod gets its node.
func TestAccountQuotaBacksOff(t *testing.T) {
	const hold = 20 * time.Second
	ns := newNamespace(t)
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "VcpuLimitExceeded", InFleet: true})
	t.Cleanup(world.Sim.ClearFaults)
	calls := world.Sim.Calls("CreateFleet")
	createDeployment(t, ns, "web", 1, podSpec("500m", "512Mi"))
	waitFor(t, "the first launch to reach EC2", func() bool { return world.Sim.Calls("CreateFleet") > calls })
	time.Sleep(hold)
	during := world.Sim.Calls("CreateFleet") - calls
	t.Logf("%d CreateFleet calls in the %s the quota held", during, hold)
	if during > 3 {
		t.Errorf("%d CreateFleet calls while VcpuLimitExceeded held for %s, want at most 3: the quota was taken for offerings without capacity", during, hold)
	}
	if live := liveInstances(); len(live) != 0 {
		t.Errorf("instances launched while the quota held: %v", live)
	}

	world.Sim.ClearFaults()
	lifted := time.Now()
	pods := waitRunning(t, ns, 1)
	t.Logf("pod running %s after the quota was lifted", time.Since(lifted).Round(time.Second))
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].Status.CapacityType != "on-demand" {
		t.Errorf("claims %v, want one on-demand claim", claimNames(cls))
	}
	t.Logf("pod on %s after %d CreateFleet calls in all", pods[0].Spec.NodeName, world.Sim.Calls("CreateFleet")-calls)
	checkSettled(t, ns, 1)
}

// EC2 refusing a launch as misconfigured or not permitted (an instant fleet reports it on every
// override) is not a lack of capacity in the offerings: Tailor must not mark them unavailable and
// plan the pod again at once onto the next offering, which would walk it through the catalog one
// CreateFleet at a time. The claim fails with an event quoting EC2's code and message, and its pods
// wait out a backoff: one CreateFleet call while the refusal holds. Once the cause is fixed the pod
// runs.
func TestLaunchRefusalsMarkNothing(t *testing.T) {
	for _, tt := range []struct {
		code, message, kind string
		fixed               bool // the cause is then fixed and the pod must run
	}{
		{"UnauthorizedOperation", "You are not authorized to perform this operation. User: arn:aws:sts::000000000000:assumed-role/tailor/x is not authorized to perform: ec2:RunInstances", "permission", true},
		{"InvalidParameterValue", "Volume of size 8GB is smaller than snapshot 'snap-0123456789abcdef0', expect size >= 20GB", "configuration", false},
	} {
		t.Run(tt.code, func(t *testing.T) {
			ns := newNamespace(t)
			world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: tt.code, Message: tt.message, InFleet: true})
			t.Cleanup(world.Sim.ClearFaults)
			calls := world.Sim.Calls("CreateFleet")
			pod := createPod(t, ns, "web", "500m", "512Mi")
			// Events of a claim, which has no namespace, are in default.
			msg := waitEventOn(t, metav1.NamespaceDefault, "involvedObject.kind=Claim", "LaunchFailed", tt.message)
			if want := "launch failed (" + tt.kind + ")"; !strings.Contains(msg, want) || !strings.Contains(msg, tt.code) {
				t.Errorf("claim event %q, want it to say %q and quote %s", msg, want, tt.code)
			}
			waitEvent(t, ns, pod.Name, "ProvisioningFailed")
			time.Sleep(5 * time.Second)
			if got := world.Sim.Calls("CreateFleet") - calls; got != 1 {
				t.Errorf("%d CreateFleet calls while EC2 answered %s, want 1: the refusal was taken for offerings without capacity", got, tt.code)
			}
			for _, c := range listClaims(t) {
				if strings.Contains(c.Status.Message, tt.code) && len(c.Status.UnavailableOfferings) > 0 {
					t.Errorf("claim %s refused with %s marked offerings unavailable: %v", c.Name, tt.code, c.Status.UnavailableOfferings)
				}
			}
			if !tt.fixed {
				return
			}
			world.Sim.ClearFaults()
			checkSettled(t, ns, 1)
		})
	}
}

// The account's spot instance quota is used up (every spot CreateFleet reports
// MaxSpotInstanceCountExceeded on each override; on-demand launches are not refused). A pod that
// prefers the spot pool but may run in the on-demand pool does not wait for the quota: spot is
// left out of plans for a while, after one refused spot launch, and the pod runs on on-demand
// at once. No offering is walked through: two CreateFleet calls in all.
func TestSpotQuotaFallsBackToOnDemand(t *testing.T) {
	// A fresh scheduler before and after: the spot mark must not outlive the test in the
	// shared one, whose later tests want spot.
	restartScheduler(t, func(map[string]any) {})
	ns := newNamespace(t)
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "MaxSpotInstanceCountExceeded", InFleet: true, CapacityType: "spot"})
	t.Cleanup(world.Sim.ClearFaults)
	calls := world.Sim.Calls("CreateFleet")
	earlier := map[string]bool{}
	for _, in := range liveInstances() {
		earlier[in.ID] = true
	}
	createDeployment(t, ns, "batch", 1, podSpec("500m", "512Mi", withToleration("tailor.dev/spot", "true")))
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	if pool, ct := node.Labels[v1alpha1.LabelPool], node.Labels[v1alpha1.LabelCapacityType]; pool != "general" || ct != "on-demand" {
		t.Errorf("pod on pool %q capacity %q while the spot quota holds, want the general pool on on-demand", pool, ct)
	}
	if got := world.Sim.Calls("CreateFleet") - calls; got != 2 {
		t.Errorf("%d CreateFleet calls, want 2: one spot launch refused, one on-demand launch", got)
	}
	for _, in := range liveInstances() {
		if in.CapacityType == cloud.Spot && !earlier[in.ID] {
			t.Errorf("spot instance %s launched while the spot quota held", in.ID)
		}
	}
	checkSettled(t, ns, 1)
}
