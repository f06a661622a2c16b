package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// A node registers but its pool's startup taint is never lifted (the agent that should lift it
// never starts): the pod cannot land, and 20 s (registrationTimeout) after the launch Tailor
// gives the node up, terminating its instance and planning the pod again. Once an agent lifts
// the taint on the new node, the pod runs there; the first instance is gone, not leaked, and
// each claim has had exactly one instance.
func TestStartupTaintNeverLiftedTimesOut(t *testing.T) {
	const startupTaint = "example.com/agent-not-ready"
	restartScheduler(t, func(args map[string]any) {
		args["registrationTimeout"] = "20s"
		args["pools"].([]any)[0].(map[string]any)["startupTaints"] = []any{map[string]any{"key": startupTaint, "effect": "NoSchedule"}}
	})
	ns := newNamespace(t)
	createDeployment(t, ns, "waits", 1, podSpec("500m", "512Mi"))

	var first *v1alpha1.Claim
	waitFor(t, "a node registered with the startup taint", func() bool {
		for _, c := range listClaims(t) {
			if c.Status.Phase == v1alpha1.ClaimRegistered {
				first = c
				return true
			}
		}
		return false
	})
	if n := getNode(t, first.Status.NodeName); !hasTaint(n, startupTaint) {
		t.Fatalf("node %s has no startup taint: %v", n.Name, n.Spec.Taints)
	}
	// Claims are named after their pods, so the replacement may reuse the name: claims are
	// told apart by UID.
	waitForWithin(t, "the first claim given up", 90*time.Second, func() bool {
		for _, c := range listClaims(t) {
			if c.UID == first.UID {
				return false
			}
		}
		return true
	})
	in, ok := world.Sim.Instance(first.Status.InstanceID)
	if !ok || (in.State != cloud.StateTerminated && in.State != cloud.StateShuttingDown) {
		t.Errorf("instance %s of the given-up claim: %+v, want terminated", first.Status.InstanceID, in)
	}
	if first.Status.LaunchedAt != nil {
		t.Logf("given up %s after launch", time.Since(first.Status.LaunchedAt.Time).Round(time.Second))
	}

	// The replacement registers; an agent lifts its taint, and the pod runs there.
	var second *v1alpha1.Claim
	waitFor(t, "a second node registered", func() bool {
		for _, c := range listClaims(t) {
			if c.UID != first.UID && c.Status.Phase == v1alpha1.ClaimRegistered {
				second = c
				return true
			}
		}
		return false
	})
	// As an agent would: on the newest node, again if kwok or Tailor wrote it meanwhile.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := getNode(t, second.Status.NodeName)
		var taints []corev1.Taint
		for _, tt := range n.Spec.Taints {
			if tt.Key != startupTaint {
				taints = append(taints, tt)
			}
		}
		n.Spec.Taints = taints
		_, err := world.Client.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pods := waitRunning(t, ns, 1)
	if pods[0].Spec.NodeName != second.Status.NodeName {
		t.Errorf("pod on %s, want the second node %s", pods[0].Spec.NodeName, second.Status.NodeName)
	}
	waitFor(t, "the second claim initialized", func() bool {
		for _, c := range listClaims(t) {
			if c.UID == second.UID {
				return c.Status.InitializedAt != nil
			}
		}
		return false
	})
	var live []string
	for _, in := range liveInstances() {
		if in.Tags[v1alpha1.TagClaim] != "" {
			live = append(live, in.ID)
		}
	}
	if len(live) != 1 || live[0] != second.Status.InstanceID {
		t.Errorf("live Tailor instances %v, want only the second claim's %s", live, second.Status.InstanceID)
	}
}

// The node of one of Tailor's own launches never registers (the node agent holds that instance's
// kubelet for good): 15 s (registrationTimeout) after the launch the sweep gives the claim up,
// terminates its instance and plans the pod again, on a new claim whose node registers, and the
// pod runs there. Two fleets in all, the first instance terminated, none left without a claim.
// (TestStartupTaintNeverLiftedTimesOut is the node that registers but never initializes.)
func TestNodeNeverRegistersTimesOut(t *testing.T) {
	restartScheduler(t, func(args map[string]any) { args["registrationTimeout"] = "15s" })
	var mu sync.Mutex
	var stuck string // the first Tailor instance the agent sees, held for good
	release := world.Agent.Hold(func(in cloud.Instance) bool {
		mu.Lock()
		defer mu.Unlock()
		if stuck == "" && in.Tags[v1alpha1.TagClaim] != "" {
			stuck = in.ID
		}
		return in.ID == stuck
	})
	t.Cleanup(release)
	ns := newNamespace(t)
	fleets := world.Sim.FleetRequests()
	createPod(t, ns, "waits", "500m", "512Mi")

	var first *v1alpha1.Claim
	waitFor(t, "the claim Launched on the held instance", func() bool {
		mu.Lock()
		held := stuck
		mu.Unlock()
		for _, c := range listClaims(t) {
			if c.Status.Phase == v1alpha1.ClaimLaunched && held != "" && c.Status.InstanceID == held {
				first = c
				return true
			}
		}
		return false
	})
	// Claims are named after their pods, so the replacement may reuse the name: claims are told
	// apart by UID.
	waitForWithin(t, "the first claim given up", 90*time.Second, func() bool {
		for _, c := range listClaims(t) {
			if c.UID == first.UID {
				return false
			}
		}
		return true
	})
	if in, ok := world.Sim.Instance(first.Status.InstanceID); !ok || (in.State != cloud.StateTerminated && in.State != cloud.StateShuttingDown) {
		t.Errorf("instance %s of the given-up claim: %+v, want terminated", first.Status.InstanceID, in)
	}
	if _, err := world.Client.CoreV1().Nodes().Get(context.Background(), first.Status.NodeName, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("node %s of the held instance: %v, want none ever registered", first.Status.NodeName, err)
	}

	pods := waitRunning(t, ns, 1)
	cls := listClaims(t)
	if len(cls) != 1 || cls[0].UID == first.UID || cls[0].Status.NodeName != pods[0].Spec.NodeName || cls[0].Status.InstanceID == first.Status.InstanceID {
		t.Errorf("claims %v; pod on %s, want it on a second claim's node", claimNames(cls), pods[0].Spec.NodeName)
	}
	if got := world.Sim.FleetRequests() - fleets; got != 2 {
		t.Errorf("EC2 launched %d fleets, want 2 (the given-up one and its replacement)", got)
	}
	checkSettled(t, ns, 1)
}
