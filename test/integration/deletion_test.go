package integration

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Deleting a Registered claim, or its Node, as a user would (kubectl delete), drains the node
// through the Eviction API before the instance is terminated: a 3-replica Deployment with a
// PodDisruptionBudget (maxUnavailable 1) never has fewer than 2 replicas running, no pod is on
// the node when its instance goes, and the objects go only after.
func TestDeletionDrainsBeforeTerminating(t *testing.T) {
	for _, what := range []string{"claim", "node"} {
		t.Run("delete "+what, func(t *testing.T) { deleteAndWatchDrain(t, what) })
	}
}

func deleteAndWatchDrain(t *testing.T, what string) {
	ctx := context.Background()
	ns := newNamespace(t)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := world.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createDeployment(t, ns, "web", 3, podSpec("400m", "512Mi"))
	pods := waitRunning(t, ns, 3)
	// The node with the most replicas: with two or more there, the budget lets only one leave
	// at a time, so the drain must wait for a replacement to run elsewhere.
	count := map[string]int{}
	nodeName := ""
	for _, p := range pods {
		if count[p.Spec.NodeName]++; count[p.Spec.NodeName] > count[nodeName] {
			nodeName = p.Spec.NodeName
		}
	}
	node := getNode(t, nodeName)
	claimName := node.Labels[v1alpha1.LabelClaim]
	if claimName == "" || !hasFinalizer(node.Finalizers) {
		t.Fatalf("node %s: claim %q finalizers %v; want a Tailor node with its termination finalizer", nodeName, claimName, node.Finalizers)
	}
	var claim *v1alpha1.Claim
	for _, c := range listClaims(t) {
		if c.Name == claimName {
			claim = c
		}
	}
	if claim == nil || claim.Status.Phase != v1alpha1.ClaimRegistered || !hasFinalizer(claim.Finalizers) {
		t.Fatalf("claim %s: %+v; want Registered with its termination finalizer", claimName, claim)
	}
	onNode := count[nodeName]
	if onNode < 2 {
		t.Fatalf("setup: the replicas are on %d nodes, one each: the budget would never hold the drain", len(count))
	}

	// Watch, until the instance is gone: the fewest replicas running at any moment, and how many
	// pods were still on the node when the instance was first seen gone.
	var (
		mu              sync.Mutex
		minRunning      = 3
		podsAtTerminate = -1
	)
	stop := watchPods(ns, func(pods []corev1.Pod) {
		running, there := 0, 0
		for _, p := range pods {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				running++
			}
			if p.Spec.NodeName == nodeName {
				there++
			}
		}
		insts, err := world.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClaim: claimName})
		if err != nil {
			return
		}
		up := false
		for _, in := range insts {
			up = up || in.ID == claim.Status.InstanceID && in.State == cloud.StateRunning
		}
		mu.Lock()
		minRunning = min(minRunning, running)
		if !up && podsAtTerminate < 0 {
			podsAtTerminate = there
		}
		mu.Unlock()
	})
	defer stop()

	dc := dynamic.NewForConfigOrDie(world.CP.Config)
	var err error
	if what == "claim" {
		err = dc.Resource(v1alpha1.ClaimResource).Delete(ctx, claimName, metav1.DeleteOptions{})
	} else {
		err = world.Client.CoreV1().Nodes().Delete(ctx, nodeName, metav1.DeleteOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	waitForWithin(t, "the claim, node and instance to go", 2*time.Minute, func() bool {
		_, cerr := dc.Resource(v1alpha1.ClaimResource).Get(ctx, claimName, metav1.GetOptions{})
		_, nerr := world.Client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{})
		mu.Lock()
		defer mu.Unlock()
		return apierrors.IsNotFound(cerr) && apierrors.IsNotFound(nerr) && podsAtTerminate >= 0
	})
	running := waitRunning(t, ns, 3)
	for _, p := range running {
		if p.Spec.NodeName == nodeName {
			t.Errorf("pod %s still on the deleted node", p.Name)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if podsAtTerminate != 0 {
		t.Errorf("%d pods were on %s when its instance was terminated: evictions must come first", podsAtTerminate, nodeName)
	}
	if minRunning < 2 {
		t.Errorf("only %d replicas were running at one moment: the drain went around the PodDisruptionBudget", minRunning)
	}
	evs, err := world.Client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evicted := 0
	for _, e := range evs.Items {
		if e.Reason == "Evicted" && e.ReportingController != "" {
			evicted++
		}
	}
	if evicted < onNode {
		t.Errorf("%d Evicted events for the %d pods on the node: they did not leave through the Eviction API", evicted, onNode)
	}
}

func hasFinalizer(fins []string) bool {
	for _, f := range fins {
		if f == v1alpha1.FinalizerTermination {
			return true
		}
	}
	return false
}
