package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// reservedPool gives the shared pool reserved capacity first, from the reservations with the
// tag, then on-demand.
func reservedPool(t *testing.T, tag string) {
	restartScheduler(t, func(a map[string]any) {
		pool := a["pools"].([]any)[0].(map[string]any)
		pool["capacityTypes"] = []any{"reserved", "on-demand"}
		pool["capacityReservationSelector"] = map[string]any{"tags": map[string]any{"reservation-test": tag}}
	})
}

// A reservation's instances are used before any other capacity, up to its free count; the pods
// past it get on-demand nodes of the pool. Each pod fills an m5.large.
func TestReservedCapacityFirst(t *testing.T) {
	ns := newNamespace(t)
	zone := world.Sim.Zones()[0]
	id, err := world.Sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 2,
		InstanceMatchCriteria: "targeted", Tags: map[string]string{"reservation-test": ns}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = world.Sim.SetCapacityReservationState(id, "cancelled") })
	reservedPool(t, ns)
	for _, name := range []string{"a", "b", "c"} {
		createPod(t, ns, name, "1500m", "1Gi", withNodeSelector(corev1.LabelInstanceTypeStable, "m5.large"))
	}
	pods := waitRunning(t, ns, 3)
	reserved, onDemand := 0, 0
	for _, p := range pods {
		node := getNode(t, p.Spec.NodeName)
		cl, ok := claimOf(t, node)
		if !ok {
			t.Fatalf("node %s has no claim", node.Name)
		}
		switch ct := node.Labels[v1alpha1.LabelCapacityType]; ct {
		case "reserved":
			reserved++
			if r := cl.Spec.CapacityReservation; r == nil || r.ID != id || node.Labels[corev1.LabelTopologyZone] != zone {
				t.Errorf("reserved node %s: claim reservation %+v, zone %s; want %s in %s", node.Name, r, node.Labels[corev1.LabelTopologyZone], id, zone)
			}
		case "on-demand":
			onDemand++
		default:
			t.Errorf("node %s capacity type %q", node.Name, ct)
		}
	}
	if reserved != 2 || onDemand != 1 {
		t.Errorf("%d pods on reserved nodes and %d on on-demand ones, want 2 and 1", reserved, onDemand)
	}
	if r, ok := world.Sim.CapacityReservation(id); !ok || r.AvailableInstanceCount != 0 {
		t.Errorf("reservation %+v, want it full", r)
	}
}

// A node in a Capacity Block is replaced and drained once the block is within 40 minutes of its
// end, before EC2 reclaims its instance (30 minutes before the end): the workload's pod runs on
// the replacement, never on no node, and the block's instance goes.
func TestCapacityBlockDrainedBeforeItEnds(t *testing.T) {
	ns := newNamespace(t)
	zone := world.Sim.Zones()[0]
	now := time.Now()
	id, err := world.Sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1,
		Type: ec2sim.ReservationTypeCapacityBlock, StartDate: now.Add(-time.Hour), EndDate: now.Add(3 * time.Hour),
		Tags: map[string]string{"reservation-test": ns}})
	if err != nil {
		t.Fatal(err)
	}
	reservedPool(t, ns)
	createDeployment(t, ns, "trainer", 1, podSpec("1500m", "1Gi", withNodeSelector(corev1.LabelInstanceTypeStable, "m5.large")))
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	if node.Labels[v1alpha1.LabelCapacityType] != "reserved" {
		t.Fatalf("node %s is %s, want reserved in the block", node.Name, node.Labels[v1alpha1.LabelCapacityType])
	}
	blockInstance := lifecycle.InstanceID(node.Spec.ProviderID)

	// The block now ends in a little over 40 minutes: Tailor drains within a sweep or two, while
	// EC2 would reclaim the instance only ten minutes later.
	if err := world.Sim.SetCapacityReservationEndDate(id, time.Now().Add(40*time.Minute+2*time.Second)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the pod to run on another node", func() bool {
		ps, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false
		}
		for _, p := range ps.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.NodeName != "" && p.Spec.NodeName != node.Name {
				return true
			}
		}
		return false
	})
	waitFor(t, "the block's instance to be terminated by Tailor", func() bool {
		_, terminated := world.Sim.TerminatedAt(blockInstance)
		return terminated
	})
	if n, err := world.Client.CoreV1().Nodes().Get(context.Background(), node.Name, metav1.GetOptions{}); err == nil {
		if n.Annotations[v1alpha1.AnnotationInterrupted] != "capacity-block-ending" {
			t.Errorf("node %s annotations %v, want it handed over as capacity-block-ending", n.Name, n.Annotations)
		}
	}
}

// claimOf is the claim of a node of Tailor's.
func claimOf(t *testing.T, node *corev1.Node) (*v1alpha1.Claim, bool) {
	t.Helper()
	for _, cl := range listClaims(t) {
		if cl.Name == node.Labels[v1alpha1.LabelClaim] {
			return cl, true
		}
	}
	return nil, false
}
