package integration

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/pkg/sim/env"
)

// Two replicas of the scheduler under leader election, as the chart runs them: two processes of
// the tailor-scheduler binary (cmd/scheduler) with the same configuration and identity (the
// chart's service account). The leader, which holds both leases, is killed (SIGKILL: it gives
// no lease back) while CreateFleet for a claim is under way, EC2 having launched the instance
// but its answer never coming. The standby takes both leases once they expire and resumes the
// claim with the same client token, which gets the same instance back: one claim, one
// instance, one fleet, every CreateFleet call for that claim, and the pod running on its node.
// (This process's own scheduler stays stopped meanwhile: kube-scheduler exits the process when
// a leader-elected scheduler stops.)
func TestLeaderKilledMidLaunch(t *testing.T) {
	bin := schedulerBinary(t)
	config, err := world.WriteSchedulerConfig(t.Name()+".yaml", true, quietConsolidation)
	if err != nil {
		t.Fatal(err)
	}
	stopScheduler()
	leases := []string{"tailor-scheduler", "tailor-controllers"}
	t.Cleanup(func() {
		// The replicas are gone (killed: the leases still name them); this process's scheduler
		// need not wait for the leases to expire.
		for _, l := range leases {
			if err := world.Client.CoordinationV1().Leases(env.InstallNamespace).Delete(context.Background(), l, metav1.DeleteOptions{}); ignoreNotFound(err) != nil {
				t.Error(err)
			}
		}
		if err := startScheduler(); err != nil {
			t.Fatal(err)
		}
	})
	before := map[string]string{}
	for _, l := range leases {
		before[l] = leaseHolder(t, l)
	}
	first := startReplica(t, bin, config, "first")
	leader := map[string]string{}
	waitForWithin(t, "the first replica to hold both leases", 90*time.Second, func() bool {
		for _, l := range leases {
			h := leaseHolder(t, l)
			if h == "" || h == before[l] {
				return false
			}
			leader[l] = h
		}
		return true
	})
	startReplica(t, bin, config, "second")

	ns := newNamespace(t)
	fleets, calls := world.Sim.FleetRequests(), world.Sim.Calls("CreateFleet")
	claim, inst := launchWithAnswerLost(t, ns, "survivor")
	var uid string
	for _, c := range listClaims(t) {
		if c.Name == claim {
			uid = string(c.UID)
			if c.Status.InstanceID != "" {
				t.Fatalf("claim %s recorded its instance; the leader died too late", claim)
			}
		}
	}
	for _, l := range leases {
		if h := leaseHolder(t, l); h != leader[l] {
			t.Fatalf("lease %s held by %q, want the first replica's %q", l, h, leader[l])
		}
	}

	if err := first.Process.Kill(); err != nil { // the crash
		t.Fatal(err)
	}
	_ = first.Wait()
	pods := waitRunning(t, ns, 1)
	for _, l := range leases {
		if h := leaseHolder(t, l); h == "" || h == leader[l] {
			t.Errorf("lease %s held by %q after the leader died, want the second replica", l, h)
		}
	}
	cls := listClaims(t)
	if len(cls) != 1 || string(cls[0].UID) != uid || cls[0].Status.InstanceID != inst.ID || cls[0].Status.NodeName != pods[0].Spec.NodeName {
		t.Errorf("claims %v; pod on %s, want it on claim %s (uid %s) with instance %s", claimNames(cls), pods[0].Spec.NodeName, claim, uid, inst.ID)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 1 {
		t.Errorf("EC2 launched %d fleets, want 1", got)
	}
	got := world.Sim.Calls("CreateFleet") - calls
	if got != 2 {
		t.Errorf("%d CreateFleet calls, want 2: the leader's and the standby's resumption", got)
	}
	reqs := world.Sim.Requests("CreateFleet")
	for _, r := range reqs[max(0, len(reqs)-got):] {
		if tok := r.Get("ClientToken"); tok != uid {
			t.Errorf("a CreateFleet call with client token %q, want only claim %s's %s", tok, claim, uid)
		}
	}
	checkSettled(t, ns, 1)
}

// startReplica runs a replica of Tailor's scheduler as a process of its own, with this
// process's environment (the simulator's AWS endpoints and keys, POD_NAMESPACE), until the test
// ends; a failed test shows the end of its log.
func startReplica(t *testing.T, bin, config, name string) *exec.Cmd {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--config", config, "--secure-port=0", "-v=2")
	cmd.Stdout, cmd.Stderr, cmd.Env = logFile, logFile, os.Environ()
	env.DieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		logFile.Close()
		if b, err := os.ReadFile(logPath); err == nil && t.Failed() {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			t.Logf("the %s replica's last log lines:\n%s", name, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	})
	return cmd
}

// schedulerBinary returns Tailor's scheduler binary: $TAILOR_SCHEDULER, or cmd/scheduler built
// for this test (from this source tree, so it is never stale).
func schedulerBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("TAILOR_SCHEDULER"); p != "" {
		return p
	}
	bin := filepath.Join(t.TempDir(), "tailor-scheduler")
	build := exec.Command("go", "build", "-o", bin, "./cmd/scheduler")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building cmd/scheduler: %v\n%s", err, out)
	}
	return bin
}
