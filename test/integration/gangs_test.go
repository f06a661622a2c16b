package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclient "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
)

// createGang creates a PodGroup of minMember and pods of it, each requesting cpu and mem.
func createGang(t *testing.T, ns, name string, minMember int32, pods int, cpu, mem string) {
	t.Helper()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: schedv1alpha1.PodGroupSpec{MinMember: minMember}}
	// PodGroups have no protobuf encoding.
	cfg := rest.CopyConfig(world.CP.Config)
	cfg.ContentType = "application/json"
	if _, err := pgclient.NewForConfigOrDie(cfg).SchedulingV1alpha1().PodGroups(ns).Create(context.Background(), pg, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := range pods {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d", name, i),
			Labels: map[string]string{schedv1alpha1.PodGroupLabel: name}}, Spec: podSpec(cpu, mem)}
		if _, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// An 8-pod gang gets its nodes in one batch, in one zone, and every pod runs.
func TestGangRunsWhole(t *testing.T) {
	ns := newNamespace(t)
	createGang(t, ns, "train", 8, 8, "3", "4Gi")
	pods := waitRunning(t, ns, 8)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	cls := listClaims(t)
	zones := map[string]bool{}
	for _, c := range cls {
		zones[c.Spec.Zone] = true
		if !nodes[c.Status.NodeName] {
			t.Errorf("claim %s (node %s) runs none of the gang", c.Name, c.Status.NodeName)
		}
	}
	if len(cls) < 2 || len(zones) != 1 {
		t.Errorf("%d claims in zones %v, want several in one zone", len(cls), zones)
	}
}
