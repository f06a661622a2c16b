package integration

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// The scheduler dies after EC2 launched an instance for a claim but before the launch was
// recorded (the CreateFleet answer never arrives). After a restart the claim is resumed with the
// same client token: EC2 hands back the same instance, the pod runs on it, and nothing leaks or
// doubles.
func TestCrashAfterLaunchBeforeRecord(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.FleetRequests()
	claim, _ := launchWithAnswerLost(t, ns, "survivor")
	for _, c := range listClaims(t) {
		if c.Name == claim && c.Status.InstanceID != "" {
			t.Fatalf("claim %s recorded its instance; the crash came too late", claim)
		}
	}

	stopScheduler() // the crash
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}

	pods := waitRunning(t, ns, 1)
	var owned []string
	for _, in := range liveInstances() {
		if in.Tags[v1alpha1.TagClaim] == claim {
			owned = append(owned, in.ID)
		}
	}
	if len(owned) != 1 {
		t.Errorf("claim %s has instances %v, want exactly one", claim, owned)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1 (the retry must be idempotent)", got)
	}
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].Name != claim || cls[0].Status.NodeName != pods[0].Spec.NodeName {
		t.Errorf("claims %v; pod on %s, want it on claim %s's node", claimNames(cls), pods[0].Spec.NodeName, claim)
	}
}

// launchWithAnswerLost creates a 1-cpu pod whose launch EC2 carries out but never answers (the
// CreateFleet call hangs after taking effect, as a crash mid-call would leave it), and returns
// the claim and its instance once the instance exists.
func launchWithAnswerLost(t *testing.T, ns, pod string) (string, cloud.Instance) {
	t.Helper()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", AfterEffect: true, Latency: time.Hour, Times: 1})
	t.Cleanup(world.Sim.ClearFaults)
	createPod(t, ns, pod, "1", "2Gi")
	var claim string
	var inst cloud.Instance
	waitFor(t, "an instance launched for a claim", func() bool {
		for _, in := range liveInstances() {
			if c := in.Tags[v1alpha1.TagClaim]; c != "" {
				claim, inst = c, in
				return true
			}
		}
		return false
	})
	return claim, inst
}

func claimNames(cls []*v1alpha1.Claim) []string {
	var out []string
	for _, c := range cls {
		out = append(out, c.Name+"("+string(c.Status.Phase)+")")
	}
	return out
}

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	waitForWithin(t, what, waitTimeout, cond)
}

// waitForWithin polls cond until it holds, for at most timeout.
func waitForWithin(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	if !pollWithin(timeout, cond) {
		t.Fatalf("waiting for %s: not within %s", what, timeout)
	}
}

// pollWithin polls cond every 100 ms until it holds or timeout passes, and says which.
func pollWithin(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if cond() {
			return true
		}
		time.Sleep(100 * time.Millisecond)
	}
	return cond()
}

// The scheduler dies while a claim's launch is still on its way to EC2 (which never acts on it),
// and the claim's only pod is deleted meanwhile. After the restart the claim is dropped, not
// launched: no instance, no fleet.
func TestClaimWithoutPodsIsDropped(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.FleetRequests()
	crashWithLaunchUnanswered(t, ns, "gone")
	if err := world.Client.CoreV1().Pods(ns).Delete(context.Background(), "gone", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}
	waitForWithin(t, "the claim to be dropped", 90*time.Second, func() bool { return len(listClaims(t)) == 0 })
	if got := world.Sim.FleetRequests() - fleets; got > 1 {
		t.Errorf("EC2 saw %d fleet requests, want at most the one that never completed", got)
	}
	if live := liveInstances(); len(live) != 0 {
		t.Errorf("instances launched for a claim without pods: %v", live)
	}
}

// The scheduler dies after it planned a pod's node but before the claim was recorded: an
// admission policy refuses every claim, so the plan never becomes one, and no launch is made
// without a claim. The restarted scheduler plans the pod again: one claim, one fleet, the pod
// on the claim's node.
func TestCrashBeforeClaimRecorded(t *testing.T) {
	ns := newNamespace(t)
	fleets, calls := world.Sim.FleetRequests(), world.Sim.Calls("CreateFleet")
	allow := refuseClaims(t)
	createPod(t, ns, "planned", "1", "2Gi")
	waitEvent(t, ns, "planned", "ProvisioningFailed") // planned, and the claim refused
	stopScheduler()                                   // the crash
	if got := world.Sim.Calls("CreateFleet") - calls; got != 0 {
		t.Errorf("%d CreateFleet calls without a claim, want none", got)
	}
	allow()
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}
	pods := waitRunning(t, ns, 1)
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].Status.NodeName != pods[0].Spec.NodeName {
		t.Errorf("claims %v; pod on %s, want one claim, the pod on its node", claimNames(cls), pods[0].Spec.NodeName)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1", got)
	}
	checkSettled(t, ns, 1)
}

// refuseClaims makes the API server refuse to create claims until the returned func is called,
// or the test ends.
func refuseClaims(t *testing.T) (allow func()) {
	t.Helper()
	allow = denyCreates(t, "refuse-claims", admissionregistrationv1.Rule{APIGroups: []string{v1alpha1.Group}, APIVersions: []string{"v1alpha1"}, Resources: []string{"claims"}},
		nil, "claims are refused")
	// The policy is in force once a dry-run claim is refused.
	dc := dynamic.NewForConfigOrDie(world.CP.Config)
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.SchemeGroupVersion.String(), "kind": "Claim",
		"metadata": map[string]any{"name": "probe"},
		"spec":     map[string]any{"pool": "general", "capacityType": "on-demand", "zone": "z", "instanceTypes": []any{"m5.large"}},
	}}
	waitFor(t, "claims refused", func() bool {
		_, err := dc.Resource(v1alpha1.ClaimResource).Create(context.Background(), probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return apierrors.IsForbidden(err)
	})
	return allow
}

// crashWithLaunchUnanswered creates a 1-cpu pod and stops the scheduler (the crash) once its
// claim's launch reached EC2, which holds the call and never acts on it; it returns the claim.
func crashWithLaunchUnanswered(t *testing.T, ns, pod string) *v1alpha1.Claim {
	t.Helper()
	world.Sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "Unavailable", Latency: time.Hour, Times: 1})
	t.Cleanup(world.Sim.ClearFaults)
	calls := world.Sim.Calls("CreateFleet")
	createPod(t, ns, pod, "1", "2Gi")
	waitFor(t, "a claim for the pod", func() bool { return len(listClaims(t)) == 1 })
	waitFor(t, "the launch to reach EC2", func() bool { return world.Sim.Calls("CreateFleet") > calls })
	claim := listClaims(t)[0]
	stopScheduler()
	return claim
}

// The scheduler dies after a claim was recorded, while its launch is on its way to EC2, which
// never acts on it; the pod still waits. After the restart the claim is resumed with its recorded
// request and client token: one claim, one instance, one fleet, the pod on the claim's node.
func TestCrashAfterClaimBeforeLaunchResumes(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.FleetRequests()
	recorded := crashWithLaunchUnanswered(t, ns, "waits")
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}

	pods := waitRunning(t, ns, 1)
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].UID != recorded.UID || cls[0].Status.NodeName != pods[0].Spec.NodeName {
		t.Fatalf("claims %v; pod on %s, want it on the first claim %s's node", claimNames(cls), pods[0].Spec.NodeName, recorded.Name)
	}
	if r, first := cls[0].Status.Request, recorded.Status.Request; r == nil || first == nil || r.ImageID != first.ImageID {
		t.Errorf("claim's request %+v after the restart, %+v before it: want the request recorded before the first attempt, kept", r, first)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1", got)
	}
	checkSettled(t, ns, 1)
}

// The scheduler dies after EC2 launched a claim's instance but before the answer arrived, and
// while it is down the EKS AMI behind the pool's image alias is released anew. The resumed
// launch sends the request recorded on the claim before the first attempt, with the first
// image, and EC2 answers the same client token with the first instance: no second instance, and
// no IdempotentParameterMismatch (which the provider would answer by adopting the instance
// tagged with the claim; TestLaunchAdoptsAfterParameterMismatch covers that fallback).
func TestResumeAfterImageReleaseSendsFirstRequest(t *testing.T) {
	ns := newNamespace(t)
	fleets := world.Sim.FleetRequests()
	mismatches := world.Sim.Refusals("IdempotentParameterMismatch")
	claim, inst := launchWithAnswerLost(t, ns, "adopted")
	first := inst.ImageID
	param := al2023Param(t, first)
	stopScheduler() // the crash
	next, err := world.Sim.ReleaseImage(param)
	if err != nil {
		_ = startScheduler()
		t.Fatal(err)
	}
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}

	pods := waitRunning(t, ns, 1)
	var owned []cloud.Instance
	for _, in := range liveInstances() {
		if in.Tags[v1alpha1.TagClaim] == claim {
			owned = append(owned, in)
		}
	}
	if len(owned) != 1 || owned[0].ImageID != first {
		t.Errorf("claim %s has instances %+v, want exactly the first one (image %s, not the new %s)", claim, owned, first, next)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1", got)
	}
	if got := world.Sim.Refusals("IdempotentParameterMismatch") - mismatches; got != 0 {
		t.Errorf("EC2 refused %d requests with IdempotentParameterMismatch, want none: the resumed launch must send the first request", got)
	}
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].Name != claim || cls[0].Status.NodeName != pods[0].Spec.NodeName {
		t.Fatalf("claims %v; pod on %s, want it on claim %s's node", claimNames(cls), pods[0].Spec.NodeName, claim)
	}
	if r := cls[0].Status.Request; r == nil || r.ImageID != first {
		t.Errorf("claim %s records request %+v, want image %s", claim, r, first)
	}
}

// The scheduler dies after a claim's launch was recorded (the claim Launched, with its instance
// and node name) but before the node registered: the instance runs, its kubelet held back by the
// node agent until the restarted scheduler leads. The new process takes the claim as it finds
// it and does not launch it again; once the node registers, the pod runs on it. One claim, one
// instance, one fleet and one CreateFleet call in all.
func TestCrashAfterLaunchRecordedBeforeRegistration(t *testing.T) {
	ns := newNamespace(t)
	fleets, calls := world.Sim.FleetRequests(), world.Sim.Calls("CreateFleet")
	launched, release := launchHeld(t, ns, "held", "1", "2Gi")
	waitFor(t, "the claim's instance running", func() bool {
		in, ok := world.Sim.Instance(launched.Status.InstanceID)
		return ok && in.State == cloud.StateRunning
	})
	if _, err := world.Client.CoreV1().Nodes().Get(context.Background(), launched.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("node %s: %v; the hold should keep it from registering", launched.Status.NodeName, err)
	}

	leader := leaseHolder(t, "tailor-controllers")
	stopScheduler() // the crash
	if err := startScheduler(); err != nil {
		t.Fatalf("restarting the scheduler: %v", err)
	}
	waitFor(t, "the restarted scheduler to hold the controllers' lease", func() bool {
		h := leaseHolder(t, "tailor-controllers")
		return h != "" && h != leader
	})
	release() // the kubelet starts

	pods := waitRunning(t, ns, 1)
	if pods[0].Spec.NodeName != launched.Status.NodeName {
		t.Errorf("pod on %s, want the claim's node %s", pods[0].Spec.NodeName, launched.Status.NodeName)
	}
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].UID != launched.UID || cls[0].Status.InstanceID != launched.Status.InstanceID || cls[0].Status.Phase != v1alpha1.ClaimRegistered {
		t.Errorf("claims %v, want only %s (uid %s) Registered with instance %s", claimNames(cls), launched.Name, launched.UID, launched.Status.InstanceID)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1", got)
	}
	if got := world.Sim.Calls("CreateFleet") - calls; got != 1 {
		t.Errorf("%d CreateFleet calls, want 1: a launch recorded before the crash is not launched again", got)
	}
	checkSettled(t, ns, 1)
}

// launchHeld holds back the registration of Tailor's instances (the node agent's Hold, released
// by the returned func or when the test ends), creates a pod of cpu and mem and returns its claim
// once it is Launched, its instance and node name recorded.
func launchHeld(t *testing.T, ns, pod, cpu, mem string) (*v1alpha1.Claim, func()) {
	t.Helper()
	release := world.Agent.Hold(func(in cloud.Instance) bool { return in.Tags[v1alpha1.TagClaim] != "" })
	t.Cleanup(release)
	createPod(t, ns, pod, cpu, mem)
	var launched *v1alpha1.Claim
	waitFor(t, "the claim Launched with its instance recorded", func() bool {
		for _, c := range listClaims(t) {
			if c.Status.Phase == v1alpha1.ClaimLaunched && c.Status.InstanceID != "" && c.Status.NodeName != "" {
				launched = c
				return true
			}
		}
		return false
	})
	return launched, release
}
