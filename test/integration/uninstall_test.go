package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2/ktesting"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cleanup"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
)

// Uninstalling leaves nothing with Tailor's finalizer: `tailor-scheduler cleanup`, with the
// install's identity (the chart's service account, its RBAC only) and Tailor's AWS key (so the
// suite's IAM check proves the controller policy allows its calls), against the real API server
// and the simulator.
//   - graceful: Tailor still runs (as during the chart's pre-delete hook); deleting the Claims
//     has it drain its node through the Eviction API and terminate the instance, then cleanup
//     stops it;
//   - forced: Tailor is gone first (uninstalled without the hook); the command terminates
//     Tailor's instances (an orphan whose claim is gone too) but not one without Tailor's tags,
//     and removes the finalizers, Claims, Nodes and launch templates.
func TestUninstallCleanup(t *testing.T) {
	t.Run("graceful", func(t *testing.T) {
		stopTailor := pauseScheduler(t)
		ns := newNamespace(t)
		createPod(t, ns, "solo", "500m", "512Mi")
		node := waitRunning(t, ns, 1)[0].Spec.NodeName
		c := newCleaner(t)
		c.Timeout, c.Interval = 2*time.Minute, 500*time.Millisecond
		c.StopTailor = func(context.Context) error { stopTailor(); return nil }
		_, ctx := ktesting.NewTestContext(t)
		start := time.Now()
		res, err := c.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("cleanup took %s: %+v", time.Since(start).Round(time.Second), res)
		if !res.ClaimsGoneGracefully || res.InstancesTerminated != 0 || res.ClaimsForced != 0 {
			t.Errorf("result %+v: want every claim gone through Tailor's own path, nothing forced", res)
		}
		evicted := waitEventOn(t, ns, "involvedObject.name=solo", "Evicted")
		t.Logf("the pod left %s through the Eviction API: %s", node, evicted)
		checkNothingLeft(t, "")
	})
	t.Run("forced", func(t *testing.T) {
		stopTailor := pauseScheduler(t)
		ns := newNamespace(t)
		createDeployment(t, ns, "web", 2, podSpec("500m", "512Mi"))
		waitRunning(t, ns, 2)
		orphan := launchDirect(t, "orphan", map[string]string{v1alpha1.TagClaim: "general-gone-" + rand.String(5)})
		foreign := launchDirect(t, "foreign", map[string]string{})
		if len(listClaims(t)) == 0 {
			t.Fatal("setup: no claim")
		}
		stopTailor()
		// The command as the binary runs it, with the install's kubeconfig; the endpoint and
		// the AWS key come from the environment (AWS_ENDPOINT_URL_EC2), as in a pod.
		cmd := cleanup.NewCommand()
		cmd.SetArgs([]string{"--kubeconfig", world.SchedulerKubeconfig, "--cluster-name", clusterName, "--timeout", "3s"})
		_, ctx := ktesting.NewTestContext(t)
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Fatal(err)
		}
		checkNothingLeft(t, foreign.ID)
		if _, ok := world.Sim.TerminatedAt(orphan.ID); !ok {
			t.Errorf("orphan %s (Tailor's tags, its claim gone) not terminated", orphan.ID)
		}
	})
}

// pauseScheduler returns a func that stops Tailor's scheduler (once); the scheduler starts
// again when the test ends, after the test's namespace is gone (so it launches nothing for the
// pods left Pending).
func pauseScheduler(t *testing.T) (stop func()) {
	t.Helper()
	stopped := false
	t.Cleanup(func() {
		if stopped {
			if err := startScheduler(); err != nil {
				t.Fatal(err)
			}
		}
	})
	return func() {
		if !stopped {
			stopScheduler()
			stopped = true
		}
	}
}

// newCleaner builds the cleanup as the install's identity: the scheduler's kubeconfig (the
// chart's service account), never the admin's, and Tailor's AWS key from the environment.
func newCleaner(t *testing.T) *cleanup.Cleaner {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", world.SchedulerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	provider, err := ec2.New(context.Background(), ec2.Options{Region: world.Region, ClusterName: clusterName})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cleanup.NewCleaner(cfg, provider, clusterName)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkNothingLeft asserts the uninstall invariant: no Claim, no Node with Tailor's finalizer or
// claim label, no live instance with a claim tag, no launch template of a pool; keep, if set,
// is an instance without Tailor's tags that must still run.
func checkNothingLeft(t *testing.T, keep string) {
	t.Helper()
	if cls := listClaims(t); len(cls) > 0 {
		t.Errorf("%d claims left, e.g. %s (finalizers %v)", len(cls), cls[0].Name, cls[0].Finalizers)
	}
	nodes, err := world.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		if _, ok := n.Labels[v1alpha1.LabelClaim]; ok || slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
			t.Errorf("node %s left (labels %v, finalizers %v)", n.Name, n.Labels, n.Finalizers)
		}
	}
	for _, in := range liveInstances() {
		if _, ok := in.Tags[v1alpha1.TagClaim]; ok {
			t.Errorf("instance %s (claim %s) still %s", in.ID, in.Tags[v1alpha1.TagClaim], in.State)
		}
	}
	for _, lt := range world.Sim.LaunchTemplates() {
		if _, ok := lt.Tags[v1alpha1.TagPool]; ok {
			t.Errorf("launch template %s of pool %s left", lt.Name, lt.Tags[v1alpha1.TagPool])
		}
	}
	if keep != "" {
		if in, ok := world.Sim.Instance(keep); !ok || in.State != cloud.StateRunning {
			t.Errorf("instance %s without Tailor's tags: %+v, want it running", keep, in)
		}
	}
}
