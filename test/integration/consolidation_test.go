package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/dryrun"
)

// consolidating restarts the scheduler with the general pool consolidating after one quiet
// second, checked every second, within budget (nodes: "10%" unless given). Batches wait for a
// second of quiet, so the replicas of one Deployment are planned together.
func consolidating(t *testing.T, budget string, more ...func(args map[string]any)) {
	t.Helper()
	restartScheduler(t, func(args map[string]any) {
		defer func() {
			for _, m := range more {
				m(args)
			}
		}()
		args["consolidationInterval"] = "1s"
		args["batchIdleDuration"], args["batchMaxDuration"] = "1s", "5s"
		d := map[string]any{"consolidateAfter": "1s"}
		if budget != "" {
			d["budgets"] = []any{map[string]any{"nodes": budget}}
		}
		args["pools"].([]any)[0].(map[string]any)["disruption"] = d
	})
}

// twoHalfEmptyNodes leaves two general nodes with a 400m pod each, where one node could hold
// both: deployment a's two replicas are planned together (one 1-cpu node holds both), b's
// replica needs a node of its own, then a is scaled to one. b's pod template gets bAnnotations.
func twoHalfEmptyNodes(t *testing.T, ns string, bAnnotations map[string]string) {
	t.Helper()
	createDeployment(t, ns, "a", 2, podSpec("400m", "512Mi"))
	waitRunning(t, ns, 2)
	b := deployment(ns, "b", 1, podSpec("400m", "512Mi"))
	b.Spec.Template.Annotations = bAnnotations
	createDeploymentObject(t, b)
	waitRunning(t, ns, 3)
	if cls := listClaims(t); len(cls) != 2 {
		var desc []string
		for _, c := range cls {
			desc = append(desc, fmt.Sprintf("%s %s %v", c.Name, c.Status.InstanceType, c.Spec.Pods))
		}
		t.Fatalf("setup: %d claims, want 2: %v", len(cls), desc)
	}
	scale(t, ns, "a", 1)
	waitFor(t, "a scaled to one pod", func() bool { return len(runningPods(t, ns)) == 2 })
}

func scale(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	// The deployment controller writes the Deployment too (its status): scale the newest one.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := world.Client.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = replicas
		_, err = world.Client.AppsV1().Deployments(ns).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func runningPods(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	list, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func tailorNodes(t *testing.T) []corev1.Node {
	t.Helper()
	list, err := world.Client.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelClaim})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// An empty node goes, and a node Tailor did not launch stays, empty or not.
func TestEmptyNodeRemovedForeignNodeKept(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "foreign-1", Labels: map[string]string{corev1.LabelHostname: "foreign-1"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: mustQ("2"), corev1.ResourceMemory: mustQ("4Gi"), corev1.ResourcePods: mustQ("10")},
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "foreign", Effect: corev1.TaintEffectNoSchedule}}}}
	if _, err := world.Client.CoreV1().Nodes().Create(context.Background(), foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = world.Client.CoreV1().Nodes().Delete(context.Background(), "foreign-1", metav1.DeleteOptions{})
	})
	createDeployment(t, ns, "short", 1, podSpec("500m", "1Gi"))
	pods := waitRunning(t, ns, 1)
	node := pods[0].Spec.NodeName
	if err := world.Client.AppsV1().Deployments(ns).Delete(context.Background(), "short", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the empty node to go", func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		return apierrors.IsNotFound(err) && len(listClaims(t)) == 0 && len(liveInstances()) == 0
	})
	for _, name := range []string{"foreign-1", "system-0"} {
		n := getNode(t, name)
		if n.Spec.Unschedulable || hasTaint(n, v1alpha1.TaintDisrupting) {
			t.Errorf("node %s, which Tailor did not launch, was touched: %+v", name, n.Spec)
		}
	}
}

// Two half-empty nodes become one: the pods of one move onto the other through evictions.
func TestUnderutilizedNodeIsDeleted(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	twoHalfEmptyNodes(t, ns, nil)
	waitFor(t, "one node left", func() bool { return len(listClaims(t)) == 1 && len(tailorNodes(t)) == 1 })
	waitFor(t, "both pods running", func() bool { return len(runningPods(t, ns)) == 2 })
	for _, p := range runningPods(t, ns) {
		if p.Spec.NodeName != tailorNodes(t)[0].Name {
			t.Errorf("pod %s on %s, want the remaining node", p.Name, p.Spec.NodeName)
		}
	}
}

// A PodDisruptionBudget that allows nothing keeps the node, and the node says why.
func TestPDBKeepsNode(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	zero := intstr.FromInt32(0)
	for _, app := range []string{"a", "b"} {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
			Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}
		if _, err := world.Client.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	twoHalfEmptyNodes(t, ns, nil)
	node := runningPods(t, ns)[0].Spec.NodeName
	msg := waitEvent(t, "default", node, "DisruptionBlocked")
	if !strings.Contains(msg, "PodDisruptionBudget") {
		t.Errorf("event %q does not name the PodDisruptionBudget", msg)
	}
	if n := len(listClaims(t)); n != 2 {
		t.Errorf("%d claims, want both nodes kept", n)
	}
}

// A pod annotated do-not-disrupt keeps its node.
func TestDoNotDisruptKeepsNode(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	twoHalfEmptyNodes(t, ns, map[string]string{v1alpha1.AnnotationDoNotDisrupt: "true"})
	var bNode string
	for _, p := range runningPods(t, ns) {
		if p.Labels["app"] == "b" {
			bNode = p.Spec.NodeName
		}
	}
	// b's node is the one whose pod would move; the pinned pod keeps it.
	msg := waitEvent(t, "default", bNode, "DisruptionBlocked")
	if !strings.Contains(msg, v1alpha1.AnnotationDoNotDisrupt) {
		t.Errorf("event %q does not name the annotation", msg)
	}
	getNode(t, bNode)
}

// With a budget of one node, empty nodes go one at a time.
func TestBudgetOfOne(t *testing.T) {
	consolidating(t, "1")
	ns := newNamespace(t)
	spec := podSpec("250m", "256Mi")
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "apart"}}, TopologyKey: corev1.LabelHostname}}}}
	createDeployment(t, ns, "apart", 3, spec)
	waitRunning(t, ns, 3)
	if err := world.Client.AppsV1().Deployments(ns).Delete(context.Background(), "apart", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// With one node allowed at a time, each empty node goes in a pass of its own (a second
	// apart); without the budget all three would go in one pass.
	w, err := world.Client.CoreV1().Nodes().Watch(context.Background(), metav1.ListOptions{LabelSelector: v1alpha1.LabelClaim})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var deleted []time.Time
	timeout := time.After(waitTimeout)
	for len(deleted) < 3 {
		select {
		case ev := <-w.ResultChan():
			if ev.Type == watch.Deleted {
				deleted = append(deleted, time.Now())
			}
		case <-timeout:
			t.Fatalf("%d of 3 empty nodes removed", len(deleted))
		}
	}
	for i := 1; i < len(deleted); i++ {
		if gap := deleted[i].Sub(deleted[i-1]); gap < 500*time.Millisecond {
			t.Errorf("nodes %d and %d removed %s apart: two were disrupting at once", i, i+1, gap)
		}
	}
}

// The scheduler dies while a node drains (a PodDisruptionBudget makes the drain wait for a
// replacement pod); after the restart the drain finishes: no tainted node is left, and every
// replica runs.
func TestKilledMidDrain(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}}}
	if _, err := world.Client.PolicyV1().PodDisruptionBudgets(ns).Create(context.Background(), pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Node 1 (small): two pods of a; node 2 (bigger): one pod of b and room for both of a's.
	createDeployment(t, ns, "a", 2, podSpec("400m", "512Mi"))
	waitRunning(t, ns, 2)
	createDeployment(t, ns, "b", 1, podSpec("1000m", "1Gi"))
	waitRunning(t, ns, 3)
	if n := len(listClaims(t)); n != 2 {
		t.Fatalf("setup: %d claims, want 2", n)
	}
	var tainted string
	waitFor(t, "a node to start draining", func() bool {
		for _, n := range tailorNodes(t) {
			if hasTaint(&n, v1alpha1.TaintDisrupting) {
				tainted = n.Name
				return true
			}
		}
		return false
	})
	// Crash between two evictions: one pod of a has been evicted (its replacement runs
	// elsewhere) and the PodDisruptionBudget holds the other on the draining node.
	waitFor(t, "the first eviction", func() bool {
		for _, p := range runningPods(t, ns) {
			if p.Labels["app"] == "a" && p.Spec.NodeName != tainted {
				return true
			}
		}
		return false
	})
	stopScheduler() // the crash, mid-drain
	if n, err := world.Client.CoreV1().Nodes().Get(context.Background(), tainted, metav1.GetOptions{}); err != nil || !hasTaint(n, v1alpha1.TaintDisrupting) {
		t.Fatalf("the drain of %s was over before the crash (%v): nothing to resume", tainted, err)
	}
	if err := startScheduler(); err != nil {
		t.Fatal(err)
	}
	// Up to the PDB controller's two minutes: an eviction cut off by the crash may have been
	// counted in the budget's disruptedPods without its pod being deleted, and the budget
	// allows nothing more until that entry expires, exactly as on a real cluster.
	waitForWithin(t, "the drain to finish", 3*time.Minute, func() bool {
		for _, n := range tailorNodes(t) {
			if hasTaint(&n, v1alpha1.TaintDisrupting) {
				return false
			}
		}
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), tainted, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	waitFor(t, "every replica running", func() bool {
		counts := map[string]int{}
		for _, p := range runningPods(t, ns) {
			counts[p.Labels["app"]]++
		}
		return counts["a"] == 2 && counts["b"] == 1
	})
}

func createDeploymentObject(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	if _, err := world.Client.AppsV1().Deployments(d.Namespace).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mustQ(s string) resource.Quantity { return resource.MustParse(s) }

// A big node left with one small pod is replaced by a cheaper node; the pod moves to it and
// keeps running.
func TestBigNodeReplacedByCheaper(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	createDeployment(t, ns, "big", 1, podSpec("3500m", "4Gi"))
	createDeployment(t, ns, "small", 1, podSpec("250m", "256Mi"))
	waitRunning(t, ns, 2)
	cls := listClaims(t)
	if len(cls) != 1 {
		t.Fatalf("setup: %d claims, want the two pods on one node", len(cls))
	}
	before, _ := strconv.ParseFloat(cls[0].Status.PricePerHour, 64)
	oldNode := cls[0].Status.NodeName
	if err := world.Client.AppsV1().Deployments(ns).Delete(context.Background(), "big", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, "the small pod on a cheaper node", 90*time.Second, func() bool {
		cls := listClaims(t)
		pods := runningPods(t, ns)
		if len(cls) != 1 || len(pods) != 1 || cls[0].Status.NodeName == oldNode || pods[0].Spec.NodeName != cls[0].Status.NodeName {
			return false
		}
		after, _ := strconv.ParseFloat(cls[0].Status.PricePerHour, 64)
		return after < before
	})
	// The node can outlive its claim by a lifecycle sweep: the sweep may put its finalizer back
	// between the drain taking it off and deleting the node, and then releases the deleted node.
	if !pollWithin(30*time.Second, func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), oldNode, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}) {
		t.Errorf("old node %s still there 30 s after its claim went", oldNode)
	}
}

// Thirty replicas scaled to five: the fleet shrinks to within 15% of the plan command's lower
// bound for the five.
func TestScaleDownShrinksFleet(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	createDeployment(t, ns, "web", 30, podSpec("750m", "1Gi"))
	waitRunning(t, ns, 30)
	scale(t, ns, "web", 5)
	manifest := filepath.Join(t.TempDir(), "five.yaml")
	b, err := yaml.Marshal(deployment(ns, "web", 5, podSpec("750m", "1Gi")))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, b, 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := dryrun.Plan(context.Background(), dryrun.Options{Files: []string{manifest}, Config: schedulerConfig,
		Catalog: "shipped", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		t.Fatal(err)
	}
	var fleet float64
	ok := pollWithin(2*time.Minute, func() bool {
		fleet = 0
		for _, c := range listClaims(t) {
			p, _ := strconv.ParseFloat(c.Status.PricePerHour, 64)
			fleet += p
		}
		return len(runningPods(t, ns)) == 5 && fleet <= 1.15*res.LowerBound
	})

	t.Logf("fleet $%.4f/h for 5 pods; lower bound $%.4f/h (%.3f×)", fleet, res.LowerBound, fleet/res.LowerBound)
	if !ok {
		for _, c := range listClaims(t) {
			t.Logf("claim %s %s $%s/h %v", c.Name, c.Status.InstanceType, c.Status.PricePerHour, c.Annotations)
		}
		t.Fatalf("the fleet did not shrink to within 15%% of the bound\n%s", describePods(ns))
	}
}

// A node launched before its pool's settings changed has drifted: it drains, and its pod runs
// on a node launched the way the pool says now.
func TestDriftedNodeIsReplaced(t *testing.T) {
	consolidating(t, "")
	ns := newNamespace(t)
	createDeployment(t, ns, "web", 1, podSpec("500m", "1Gi"))
	old := waitRunning(t, ns, 1)[0].Spec.NodeName
	consolidating(t, "", func(args map[string]any) {
		args["pools"].([]any)[0].(map[string]any)["labels"] = map[string]any{"team": "blue"}
	})
	waitForWithin(t, "the pod on a node of the new settings", 90*time.Second, func() bool {
		pods := runningPods(t, ns)
		if len(pods) != 1 || pods[0].Spec.NodeName == old {
			return false
		}
		return getNode(t, pods[0].Spec.NodeName).Labels["team"] == "blue"
	})
	waitFor(t, "the drifted node to go", func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), old, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// AWS releases a new EKS AMI behind the pool's alias: the node launched from the old image has
// drifted (the lifecycle marks its claim) and is renewed within the pool's budget; its pod ends on
// a node of the new image and the old node goes.
func TestNewImageBehindAliasRenewsNodes(t *testing.T) {
	consolidating(t, "1")
	ns := newNamespace(t)
	createDeployment(t, ns, "web", 1, podSpec("500m", "1Gi"))
	old := waitRunning(t, ns, 1)[0].Spec.NodeName
	imageOf := func(node string) string { return launchedImage(t, node) }
	next, err := world.Sim.ReleaseImage(al2023Param(t, imageOf(old)))
	if err != nil {
		t.Fatal(err)
	}
	// A fresh scheduler: a running one sees the release once its cached alias ages out (5 min).
	consolidating(t, "1")
	waitForWithin(t, "the pod on a node of the new image", 90*time.Second, func() bool {
		pods := runningPods(t, ns)
		return len(pods) == 1 && pods[0].Spec.NodeName != old && imageOf(pods[0].Spec.NodeName) == next
	})
	waitFor(t, "the node of the old image to go", func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), old, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// A pool that picks its image by tags launches the newest image of the account with them, and
// a newer one tagged later renews its nodes within the pool's budget (the node agent bootstraps
// each from the AL2023 user data its family gives).
func TestNewImageBySelectorRenewsNodes(t *testing.T) {
	ns := newNamespace(t)
	tags := map[string]string{"image-test": ns}
	first := world.Sim.AddImage(ns+"-1", "x86_64", time.Now().Add(-time.Hour), tags)
	selector := func(args map[string]any) {
		pool := args["pools"].([]any)[0].(map[string]any)
		delete(pool, "ami")
		pool["amiSelector"] = map[string]any{"tags": map[string]any{"image-test": ns}}
		pool["requirements"] = []any{map[string]any{"key": "kubernetes.io/arch", "operator": "In", "values": []any{"amd64"}}}
	}
	consolidating(t, "1", selector)
	createDeployment(t, ns, "web", 1, podSpec("500m", "1Gi"))
	old := waitRunning(t, ns, 1)[0].Spec.NodeName
	imageOf := func(node string) string { return launchedImage(t, node) }
	if got := imageOf(old); got != first {
		t.Fatalf("node %s launched from %s, want the tagged image %s", old, got, first)
	}
	next := world.Sim.AddImage(ns+"-2", "x86_64", time.Now(), tags)
	// A fresh scheduler: a running one sees the new image once its cached answer ages out.
	consolidating(t, "1", selector)
	waitForWithin(t, "the pod on a node of the new image", 90*time.Second, func() bool {
		pods := runningPods(t, ns)
		return len(pods) == 1 && pods[0].Spec.NodeName != old && imageOf(pods[0].Spec.NodeName) == next
	})
	waitFor(t, "the node of the old image to go", func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(context.Background(), old, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
}

// launchedImage is the image the node's claim launched it with.
func launchedImage(t *testing.T, node string) string {
	t.Helper()
	name := getNode(t, node).Labels[v1alpha1.LabelClaim]
	for _, c := range listClaims(t) {
		if c.Name == name && c.Status.Request != nil {
			return c.Status.Request.ImageID
		}
	}
	return ""
}
