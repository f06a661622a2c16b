package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/dryrun"
)

// The control plane runs kube-controller-manager's default controllers, as EKS does: a Job, a
// StatefulSet and a DaemonSet applied to it get their pods (kwok runs a Job's pods to
// completion). Tailor launches nodes for the Job's,
// the StatefulSet's and a Deployment's pods, counting the DaemonSet's pod on each, and the
// DaemonSet's pod runs on every node Tailor launched.
func TestWorkloadControllersGetPods(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	labels := func(app string) map[string]string { return map[string]string{"app": app} }
	agent := podSpec("50m", "64Mi")
	agent.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels("agent")},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("agent")}, Spec: agent}}}
	createDaemonSet(t, ds)
	job := podSpec("500m", "1Gi")
	job.RestartPolicy = corev1.RestartPolicyNever
	if _, err := world.Client.BatchV1().Jobs(ns).Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fan"}, Spec: batchv1.JobSpec{
		Parallelism: ptr.To[int32](4), Completions: ptr.To[int32](4),
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("fan")}, Spec: job}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := world.Client.AppsV1().StatefulSets(ns).Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}, Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To[int32](3), ServiceName: "db", PodManagementPolicy: appsv1.ParallelPodManagement,
		Selector: &metav1.LabelSelector{MatchLabels: labels("db")},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels("db")}, Spec: podSpec("1", "2Gi")}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 4, podSpec("500m", "1Gi"))

	running := func(app string) map[string]bool {
		nodes := map[string]bool{}
		for _, p := range runningPods(t, ns) {
			if p.Labels["app"] == app {
				nodes[p.Spec.NodeName] = true
			}
		}
		return nodes
	}
	// Running, or, for the Job's pods, Succeeded: kwok completes a Job's pods.
	count := func(app string) int {
		list, err := world.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range list.Items {
			if p.Spec.NodeName != "" && (p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded) {
				n++
			}
		}
		return n
	}
	if !pollWithin(2*time.Minute, func() bool { return count("fan") == 4 && count("db") == 3 && count("web") == 4 }) {
		t.Fatalf("the Job's, StatefulSet's and Deployment's pods not all Running (or done): %d/4, %d/3, %d/4\n%s\n%s", count("fan"), count("db"), count("web"),
			describePods(ns), describeNodes(t))
	}
	launched := func() []string {
		nodes, err := world.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelClaim})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range nodes.Items {
			names = append(names, n.Name)
		}
		return names
	}
	ok := pollWithin(waitTimeout, func() bool {
		on := running("agent")
		for _, n := range launched() {
			if !on[n] {
				return false
			}
		}
		return len(launched()) > 0
	})
	if !ok {
		t.Fatalf("the DaemonSet's pods do not run on every launched node: on %v, launched %v\n%s", running("agent"), launched(), describePods(ns))
	}
	t.Logf("%d launched nodes, a DaemonSet pod on each", len(launched()))
}

// A scale-up of 310 pods in four Deployments, created two seconds apart and by the controller
// manager over some 15 s, with consolidation at its most eager (a pass every second, nodes
// consolidated after one quiet second): not one pod is evicted and no node drained before every
// pod runs. Then, scaled down, the fleet is given back.
func TestScaleUpEvictsNothing(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	spread := podSpec("1", "2Gi")
	spread.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
	apps := []struct {
		name     string
		replicas int32
		spec     corev1.PodSpec
	}{
		{"web", 150, podSpec("250m", "512Mi")},
		{"api", 70, spread},
		{"worker", 50, podSpec("2", "4Gi")},
		{"memory", 40, podSpec("500m", "6Gi")},
	}
	total := 0
	for _, a := range apps {
		total += int(a.replicas)
	}

	// The scale-up ends when the pod watch first sees every replica Running; what either watch
	// sees after that is consolidation's business. A pod evicted is deleted, and its ReplicaSet
	// makes another: both show.
	var settled atomic.Bool
	created, deleted := map[types.UID]bool{}, map[types.UID]string{}
	stopPods := watchPods(ns, func(pods []corev1.Pod) {
		if settled.Load() {
			return
		}
		running := 0
		for _, p := range pods {
			created[p.UID] = true
			if p.DeletionTimestamp != nil {
				deleted[p.UID] = p.Name + " on " + p.Spec.NodeName
			} else if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		settled.Store(running == total)
	})
	drained := map[string]bool{}
	quit := make(chan struct{})
	nodesDone := make(chan struct{})
	go func() {
		defer close(nodesDone)
		for !settled.Load() {
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			nodes, err := world.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
			if err != nil || settled.Load() {
				continue
			}
			for _, n := range nodes.Items {
				for _, taint := range n.Spec.Taints {
					// The watch behind settled may lag the API server under load: a drain that
					// began once every pod ran, as the API server tells now, came after the
					// scale-up.
					if taint.Key == v1alpha1.TaintDisrupting && !allRunning(ns, total) {
						drained[n.Name] = true
					}
				}
			}
		}
	}()
	start := time.Now()
	for _, a := range apps {
		createDeployment(t, ns, a.name, a.replicas, a.spec)
		time.Sleep(2 * time.Second)
	}
	waitForWithin(t, fmt.Sprintf("all %d pods Running", total), 4*time.Minute, settled.Load)
	stopPods()
	close(quit)
	<-nodesDone
	pods := len(created)
	before := fleetPrice(t)
	t.Logf("%d pods Running %s after the first Deployment, on %d claims, $%.4f/h; %d pods created in all", total, time.Since(start).Round(time.Second), len(listClaims(t)), before, pods)
	if len(deleted) > 0 || pods != total {
		t.Errorf("pods deleted during the scale-up (%d created for %d replicas): %v", pods, total, deleted)
	}
	if len(drained) > 0 {
		t.Errorf("nodes drained during the scale-up: %v", drained)
	}

	scale(t, ns, "web", 10)
	scale(t, ns, "worker", 5)
	var after float64
	if !pollWithin(3*time.Minute, func() bool {
		after = fleetPrice(t)
		return after < 0.9*before
	}) {
		t.Fatalf("after the scale-down the fleet is $%.4f/h, was $%.4f/h: not given back", after, before)
	}
	t.Logf("scaled down: fleet $%.4f/h -> $%.4f/h", before, after)
}

// allRunning says whether the API server lists n Running pods in ns.
func allRunning(ns string, n int) bool {
	list, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return false
	}
	running := 0
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			running++
		}
	}
	return running >= n
}

// describeNodes is one line per node: its name, readiness and taints.
func describeNodes(t *testing.T) string {
	t.Helper()
	nodes, err := world.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, n := range nodes.Items {
		ready := "not ready"
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = "ready"
			}
		}
		fmt.Fprintf(&b, "  node %s %s unschedulable=%v taints=%v\n", n.Name, ready, n.Spec.Unschedulable, n.Spec.Taints)
	}
	return b.String()
}

// fleetPrice is the hourly price of every claim's instance.
func fleetPrice(t *testing.T) float64 {
	t.Helper()
	var sum float64
	for _, c := range listClaims(t) {
		var p float64
		_, _ = fmt.Sscan(c.Status.PricePerHour, &p)
		sum += p
	}
	return sum
}

// A rollout reaches the scheduler over seconds (the controller manager creates about 20 pods a
// second), yet is planned whole: the fleet two Deployments of 210 pods end with costs at most
// 5% more than the plan command's for the same pods, on at most 15% more nodes (issue 20's bar;
// measured here: the plan's own fleet, one batch, in 10 runs of 10). Planned wave by wave, each
// second's pods got nodes of their own (2x the nodes); planned whole but with the pods created
// during planning left out, or with a zone spread's pods refused the room kept for them while
// the other zones' nodes booted, the stragglers got nodes of their own (up to 1.4x); pods of
// the zone spread refused by their node while their siblings had yet to land were planned
// again, and got nodes of their own (up to 1.2x, one run in three).
func TestRolloutPlannedWhole(t *testing.T) {
	ns := newNamespace(t)
	spread := podSpec("1", "2Gi")
	spread.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
		WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
	deployments := []*appsv1.Deployment{deployment(ns, "web", 150, podSpec("250m", "512Mi")), deployment(ns, "api", 60, spread)}
	var manifest []byte
	for _, d := range deployments {
		b, err := yaml.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		manifest = append(append(manifest, b...), []byte("---\n")...)
	}
	path := filepath.Join(t.TempDir(), "rollout.yaml")
	if err := os.WriteFile(path, manifest, 0o600); err != nil {
		t.Fatal(err)
	}
	plan, err := dryrun.Plan(context.Background(), dryrun.Options{Files: []string{path}, Config: schedulerConfig,
		Catalog: "shipped", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range deployments {
		createDeploymentObject(t, d)
	}
	waitForWithin(t, "all 210 pods Running", 3*time.Minute, func() bool { return len(runningPods(t, ns)) == 210 })
	fleet, nodes := fleetPrice(t), len(listClaims(t))
	want, wantNodes := plan.Plan.PricePerHour(), len(plan.Plan.Nodes)
	t.Logf("fleet $%.4f/h on %d nodes; plan $%.4f/h on %d nodes (%.3f×, %.3f×)", fleet, nodes, want, wantNodes, fleet/want, float64(nodes)/float64(wantNodes))
	if fleet > 1.05*want || float64(nodes) > 1.15*float64(wantNodes) {
		for _, c := range listClaims(t) {
			t.Logf("claim %s %s %s pods=%d expected=%v", c.Name, c.Status.InstanceType, c.Status.Zone, len(c.Spec.Pods), c.Spec.ExpectedPods)
		}
		t.Errorf("fleet $%.4f/h on %d nodes, want at most 5%% above the plan's $%.4f/h and 15%% above its %d nodes", fleet, nodes, want, wantNodes)
	}
	// While the nodes come up one by one, the zone whose node is up first refuses the api pods
	// planned there beyond a skew of one until the other zones' pods land: they wait for them
	// rather than be planned again, each onto a node of its own.
	replanned, err := world.Client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "reason=Replanning"})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range replanned.Items {
		t.Errorf("pod %s planned again: %s", e.InvolvedObject.Name, e.Message)
	}
}
