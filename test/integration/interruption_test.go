package integration

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

const interruptionQueue = "it-interruption"

// interrupting restarts the scheduler reading the simulator's interruption queue by name (the
// SDK resolves it with GetQueueUrl at AWS_ENDPOINT_URL_SQS), with batches that plan a
// Deployment's replicas together.
func interrupting(t *testing.T) {
	t.Helper()
	if err := world.Sim.CreateQueue(interruptionQueue); err != nil {
		t.Fatal(err)
	}
	restartScheduler(t, func(args map[string]any) {
		args["interruptionQueue"] = interruptionQueue
		args["batchIdleDuration"], args["batchMaxDuration"] = "1s", "5s"
	})
}

// spotNodeOf returns the node all of the namespace's n running pods share, its claim, and fails
// unless that is one spot node of Tailor's.
func spotNodeOf(t *testing.T, ns string, n int) (*corev1.Node, *v1alpha1.Claim) {
	t.Helper()
	pods := waitRunning(t, ns, n)
	nodeName := pods[0].Spec.NodeName
	for _, p := range pods {
		if p.Spec.NodeName != nodeName {
			t.Fatalf("setup: replicas on %s and %s, want them on one node", nodeName, p.Spec.NodeName)
		}
	}
	node := getNode(t, nodeName)
	for _, c := range listClaims(t) {
		if c.Name == node.Labels[v1alpha1.LabelClaim] {
			if c.Status.Phase != v1alpha1.ClaimRegistered || c.Status.CapacityType != "spot" {
				t.Fatalf("setup: claim %s is %s %s, want a Registered spot claim", c.Name, c.Status.Phase, c.Status.CapacityType)
			}
			return node, c
		}
	}
	t.Fatalf("setup: node %s has no claim", nodeName)
	return nil, nil
}

// A spot node running a 3-replica Deployment with a PodDisruptionBudget (maxUnavailable 1) gets
// an interruption warning: a replacement node comes up and every replica runs there before the
// instance is terminated, never fewer than two replicas running meanwhile; the interrupted spot
// offering is marked unavailable (the replacement is another offering). A malformed message
// before it is deleted and changes nothing; a second copy of the warning, sent at once, and a
// third after everything settled, do nothing new.
func TestInterruptionReplacesDrainsThenTerminates(t *testing.T) {
	interrupting(t)
	ctx := context.Background()
	ns := newNamespace(t)
	one := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := world.Client.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Small enough that the cheapest plan is one node for all three (with 400m each, two
	// c7g.medium spot nodes can cost less than one c7g.large).
	createDeployment(t, ns, "web", 3, podSpec("250m", "256Mi", withToleration("tailor.dev/spot", "true")))
	node, claim := spotNodeOf(t, ns, 3)
	id := claim.Status.InstanceID
	claimsBefore := len(listClaims(t))

	// A malformed message is deleted, and nothing happens.
	if _, err := world.Sim.SendMessage(interruptionQueue, `{"detail-type": "EC2 Spot Instance Interruption Warning", "detail": `); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the malformed message to be deleted", func() bool { return world.Sim.QueueMessages(interruptionQueue) == 0 })
	time.Sleep(2 * time.Second) // a wrong reaction would have had time to start
	if n := getNode(t, node.Name); n.Annotations[v1alpha1.AnnotationInterrupted] != "" || hasTaint(n, v1alpha1.TaintDisrupting) || n.Spec.Unschedulable {
		t.Fatalf("a malformed message touched node %s: %v %v", n.Name, n.Annotations, n.Spec)
	}
	if _, terminated := world.Sim.TerminatedAt(id); terminated || len(listClaims(t)) != claimsBefore {
		t.Fatalf("a malformed message terminated %s (%v) or changed the claims", id, terminated)
	}
	fleetsBefore := world.Sim.FleetRequests()

	// Watch until the instance is terminated: the fewest replicas running, and when all three
	// were first seen running and Ready on another node of Tailor's. A time seen is no earlier
	// than the fact, so "seen before the termination" proves the order.
	var (
		mu             sync.Mutex
		minRunning     = 3
		allElsewhereAt time.Time
		replacementAt  time.Time
	)
	stop := watchPods(ns, func(pods []corev1.Pod) {
		nodes, err := world.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelClaim})
		if err != nil {
			return
		}
		seen := time.Now()
		readyReplacement := map[string]bool{}
		for _, n := range nodes.Items {
			if n.Name != node.Name && nodeReady(&n) {
				readyReplacement[n.Name] = true
			}
		}
		running, elsewhere := 0, 0
		for _, p := range pods {
			if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
				continue
			}
			running++
			if readyReplacement[p.Spec.NodeName] && podReady(&p) {
				elsewhere++
			}
		}
		mu.Lock()
		minRunning = min(minRunning, running)
		if len(readyReplacement) > 0 && replacementAt.IsZero() {
			replacementAt = seen
		}
		if elsewhere >= 3 && allElsewhereAt.IsZero() {
			allElsewhereAt = seen
		}
		mu.Unlock()
	})

	body, err := world.Sim.EventBody(ec2sim.Event{Kind: ec2sim.SpotInterruption, InstanceID: id})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // SQS delivers at least once: the second copy must change nothing
		if _, err := world.Sim.SendMessage(interruptionQueue, body); err != nil {
			t.Fatal(err)
		}
	}
	waitForWithin(t, "the interrupted instance to be terminated and its node and claim to go", 2*time.Minute, func() bool {
		_, terminated := world.Sim.TerminatedAt(id)
		_, err := world.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		gone := true
		for _, c := range listClaims(t) {
			gone = gone && c.Name != claim.Name
		}
		return terminated && apierrors.IsNotFound(err) && gone
	})
	stop()
	terminatedAt, _ := world.Sim.TerminatedAt(id)
	mu.Lock()
	if replacementAt.IsZero() || !replacementAt.Before(terminatedAt) {
		t.Errorf("a replacement node was first seen Ready at %v, the instance terminated at %v", replacementAt, terminatedAt)
	}
	if allElsewhereAt.IsZero() || !allElsewhereAt.Before(terminatedAt) {
		t.Errorf("all three replicas were first seen running on the replacement at %v, the instance terminated at %v", allElsewhereAt, terminatedAt)
	}
	if minRunning < 2 {
		t.Errorf("only %d replicas were running at one point: the drain did not respect the PodDisruptionBudget", minRunning)
	}
	mu.Unlock()
	if world.Sim.QueueMessages(interruptionQueue) != 0 {
		t.Errorf("%d messages left on the queue", world.Sim.QueueMessages(interruptionQueue))
	}

	// The replacement runs on another spot offering: the interrupted one is out of plans.
	cls := listClaims(t)
	if len(cls) != 1 {
		t.Fatalf("claims %v after the interruption, want the one replacement", claimNames(cls))
	}
	if r := cls[0]; r.Status.CapacityType != "spot" || r.Status.InstanceType == claim.Status.InstanceType && r.Status.Zone == claim.Status.Zone {
		t.Errorf("replacement %s is %s %s in %s; the interrupted offering was %s in %s", r.Name, r.Status.CapacityType, r.Status.InstanceType, r.Status.Zone,
			claim.Status.InstanceType, claim.Status.Zone)
	}
	if fleets := world.Sim.FleetRequests() - fleetsBefore; fleets != 1 {
		t.Errorf("%d fleets launched for the interruption, want 1 (the duplicate message must not launch another)", fleets)
	}
	if n := countEvents(t, node.Name, "Interrupted"); n != 1 {
		t.Errorf("%d Interrupted events on node %s, want 1", n, node.Name)
	}
	m := scrape(t)
	if v, _ := value(m["tailor_provisioning_offerings_marked_unavailable_total"], map[string]string{
		"instance_type": claim.Status.InstanceType, "zone": claim.Status.Zone, "capacity_type": "spot", "code": "SpotInterruption"}); v < 1 {
		t.Errorf("the interrupted offering was not marked unavailable: %v", v)
	}
	for kind, want := range map[string]float64{"spot_interruption": 2, "malformed": 1} {
		if v, _ := value(m["tailor_interruption_messages_received_total"], map[string]string{"kind": kind}); v < want {
			t.Errorf("messages received of kind %s: %v, want at least %v", kind, v, want)
		}
	}
	if v, _ := value(m["tailor_interruption_actions_total"], map[string]string{"action": "duplicate"}); v < 1 {
		t.Errorf("the duplicate was not counted as one: %v", v)
	}

	// A third copy, after all is done, is about an instance Tailor no longer owns: deleted,
	// nothing launched or drained.
	if _, err := world.Sim.SendMessage(interruptionQueue, body); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the late copy to be deleted", func() bool { return world.Sim.QueueMessages(interruptionQueue) == 0 })
	time.Sleep(2 * time.Second)
	if fleets := world.Sim.FleetRequests() - fleetsBefore; fleets != 1 {
		t.Errorf("the late copy launched capacity: %d fleets", fleets)
	}
	for _, n := range tailorNodes(t) {
		if hasTaint(&n, v1alpha1.TaintDisrupting) || n.Annotations[v1alpha1.AnnotationInterrupted] != "" {
			t.Errorf("node %s is being disrupted after the late copy", n.Name)
		}
	}
	if got := len(runningPods(t, ns)); got != 3 {
		t.Errorf("%d replicas running at the end, want 3", got)
	}
}

// An instance that is already stopping has nothing left to save: its node and claim go at once
// (no drain, no replacement first), and its pod is provisioned again as usual.
func TestInterruptionStoppingInstanceRemovedAtOnce(t *testing.T) {
	interrupting(t)
	ctx := context.Background()
	ns := newNamespace(t)
	createDeployment(t, ns, "batch", 1, podSpec("500m", "512Mi", withToleration("tailor.dev/spot", "true")))
	node, claim := spotNodeOf(t, ns, 1)
	if _, err := world.Sim.SendEvent(interruptionQueue, ec2sim.Event{Kind: ec2sim.StateChange, InstanceID: claim.Status.InstanceID, State: "stopping"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the node and claim of the stopping instance to go", func() bool {
		_, err := world.Client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
		_, terminated := world.Sim.TerminatedAt(claim.Status.InstanceID)
		for _, c := range listClaims(t) {
			if c.Name == claim.Name {
				return false
			}
		}
		return apierrors.IsNotFound(err) && terminated
	})
	evs, err := world.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Evicted"})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs.Items) != 0 {
		t.Errorf("the stopping node was drained (%d evictions)", len(evs.Items))
	}
	// Its pod, bound to a node that is gone, is collected by the pod garbage collector and
	// provisioned again.
	waitForWithin(t, "the pod to run on another node", 3*time.Minute, func() bool {
		for _, p := range runningPods(t, ns) {
			if p.Spec.NodeName != node.Name && p.Spec.NodeName != "" {
				return true
			}
		}
		return false
	})
}

// countEvents counts the events with the reason about the named object, in any namespace.
func countEvents(t *testing.T, name, reason string) int {
	t.Helper()
	evs, err := world.Client.CoreV1().Events(metav1.NamespaceAll).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// A rebalance recommendation is advice: by default the spot node gets an event and keeps running
// with its pods: no taint, no drain, no replacement launched, nothing terminated. (Replace, the
// opt-in renewal within budgets, is the renew method's: pkg/consolidation's tests.)
func TestRebalanceRecommendationIsAdvice(t *testing.T) {
	interrupting(t)
	ns := newNamespace(t)
	createDeployment(t, ns, "batch", 1, podSpec("500m", "512Mi", withToleration("tailor.dev/spot", "true")))
	node, claim := spotNodeOf(t, ns, 1)
	pod := waitRunning(t, ns, 1)[0]
	fleets := world.Sim.Calls("CreateFleet")
	if _, err := world.Sim.SendEvent(interruptionQueue, ec2sim.Event{Kind: ec2sim.RebalanceRecommendation, InstanceID: claim.Status.InstanceID}); err != nil {
		t.Fatal(err)
	}
	msg := waitEventOn(t, metav1.NamespaceDefault, "involvedObject.name="+node.Name, "RebalanceRecommended")
	if !strings.Contains(msg, "Advisory") {
		t.Errorf("event %q, want it to say the recommendation is advisory", msg)
	}
	time.Sleep(10 * time.Second) // two consolidation intervals of the test's profile and more
	cur := getNode(t, node.Name)
	for _, taint := range cur.Spec.Taints {
		if taint.Key == v1alpha1.TaintDisrupting {
			t.Errorf("node tainted %v after an advisory rebalance recommendation", taint)
		}
	}
	if a := cur.Annotations; a[v1alpha1.AnnotationInterrupted] != "" || a[v1alpha1.AnnotationRebalanceRecommended] != "" {
		t.Errorf("node annotated %v after an advisory rebalance recommendation", a)
	}
	if got := waitRunning(t, ns, 1)[0]; got.UID != pod.UID {
		t.Errorf("pod %s replaced by %s after an advisory rebalance recommendation", pod.Name, got.Name)
	}
	if got := world.Sim.Calls("CreateFleet") - fleets; got != 0 {
		t.Errorf("%d CreateFleet calls after an advisory rebalance recommendation, want none", got)
	}
	if n := countEvents(t, pod.Name, "Evicted"); n != 0 {
		t.Errorf("pod evicted %d times after an advisory rebalance recommendation", n)
	}
	if _, terminated := world.Sim.TerminatedAt(claim.Status.InstanceID); terminated {
		t.Error("instance terminated after an advisory rebalance recommendation")
	}
}
