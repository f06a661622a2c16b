package integration

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/pkg/dryrun"
)

// Two hundred pods of four shapes all run, on a fleet whose $/h is within 10% of the LP lower
// bound the plan command computes for the same manifests.
//
// What is measured is the planner on one batch: the pods are held by a scheduling gate until
// all 200 exist and then released together, and the quiet window is one second (Karpenter's
// default). Pods that trickle in over seconds are planned in several batches, each packed
// tight on its own, and land further from the bound until consolidation repacks them.
func TestMixedFleetNearLowerBound(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		args["batchIdleDuration"], args["batchMaxDuration"] = "1s", "10s"
	})
	ns := newNamespace(t)
	manifest := filepath.Join(t.TempDir(), "mixed.yaml")
	var docs []byte
	for _, s := range []struct{ name, cpu, mem string }{
		{"web", "250m", "512Mi"}, {"api", "500m", "1Gi"}, {"worker", "1", "2Gi"}, {"cache", "250m", "2Gi"},
	} {
		b, err := yaml.Marshal(deployment(ns, s.name, 50, podSpec(s.cpu, s.mem)))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(append(docs, b...), []byte("---\n")...)
		held := podSpec(s.cpu, s.mem)
		held.SchedulingGates = []corev1.PodSchedulingGate{{Name: holdGate}}
		createDeployment(t, ns, s.name, 50, held)
	}
	releaseHeldPods(t, ns, 200)
	if err := os.WriteFile(manifest, docs, 0o600); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ns, 200)
	var fleet float64
	for _, c := range listClaims(t) {
		price, err := strconv.ParseFloat(c.Status.PricePerHour, 64)
		if err != nil {
			t.Fatalf("claim %s price %q: %v", c.Name, c.Status.PricePerHour, err)
		}
		fleet += price
	}
	res, err := dryrun.Plan(context.Background(), dryrun.Options{Files: []string{manifest}, Config: schedulerConfig,
		Catalog: "shipped", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Plan.Unschedulable) > 0 || res.LowerBound <= 0 {
		t.Fatalf("plan command: lower bound %.4f, unschedulable %v", res.LowerBound, res.Plan.Unschedulable)
	}
	t.Logf("fleet $%.4f/h over %d claims; plan command: plan $%.4f/h, lower bound $%.4f/h; fleet = %.3f × bound",
		fleet, len(listClaims(t)), res.Plan.PricePerHour(), res.LowerBound, fleet/res.LowerBound)
	if fleet < res.LowerBound {
		t.Errorf("fleet $%.4f/h is below the lower bound $%.4f/h: the bound is wrong", fleet, res.LowerBound)
	}
	if fleet > 1.10*res.LowerBound {
		t.Errorf("fleet $%.4f/h is more than 10%% above the lower bound $%.4f/h", fleet, res.LowerBound)
	}
}

// holdGate keeps pods from being scheduled until a test releases them.
const holdGate = "tailor.dev/test-hold"

// releaseHeldPods waits until n pods exist in ns and removes holdGate from all of them.
func releaseHeldPods(t *testing.T, ns string, n int) {
	t.Helper()
	ctx := context.Background()
	var pods *corev1.PodList
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = world.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(pods.Items) >= n, nil
	}); err != nil {
		t.Fatalf("waiting for %d pods: %v", n, err)
	}
	for _, p := range pods.Items {
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur, err := world.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Spec.SchedulingGates = nil
			_, err = world.Client.CoreV1().Pods(ns).Update(ctx, cur, metav1.UpdateOptions{})
			return err
		})
		if err != nil {
			t.Fatalf("releasing %s: %v", p.Name, err)
		}
	}
}
