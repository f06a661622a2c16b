package integration

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// refuseEvictions makes the API server answer every eviction in ns 403 Forbidden (a
// ValidatingAdmissionPolicy on pods/eviction, as a policy engine would), until the test ends.
func refuseEvictions(t *testing.T, ns string) {
	t.Helper()
	denyCreates(t, "refuse-evictions-"+ns, admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
		&metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}, "evictions are refused in this namespace")
}

// failEvictions makes the API server answer every eviction in ns 500 Internal Error, until the
// test ends: a validating webhook on pods/eviction that cannot be reached (a closed loopback
// port) with failurePolicy Fail, as a policy engine that is down leaves it.
func failEvictions(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	fail, none := admissionregistrationv1.Fail, admissionregistrationv1.SideEffectClassNone
	url := "https://127.0.0.1:1/validate" // port 1: nothing listens
	hook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "fail-evictions-" + ns},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "evictions.fail.test",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			FailurePolicy:           &fail,
			SideEffects:             &none,
			AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/eviction"}},
			}},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		}},
	}
	api := world.Client.AdmissionregistrationV1().ValidatingWebhookConfigurations()
	if _, err := api.Create(ctx, hook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = api.Delete(ctx, hook.Name, metav1.DeleteOptions{}) })
}

// A drain meets two faults. Its evictions are answered 403 Forbidden (a policy) or 500 Internal
// Error (a policy webhook that is down), not a PodDisruptionBudget's 429: Tailor keeps asking and
// never deletes the pod around the API. Then a bare pod, which nothing would recreate, is bound
// straight to the cordoned node before it is terminated: the drain is rolled back. Both pods
// keep running where they were, and both nodes stay.
func TestEvictionRefusedThenBlockingPodRollsBackDrain(t *testing.T) {
	for _, tt := range []struct {
		name    string
		refuse  func(*testing.T, string)
		refused func(error) bool
	}{
		{"403 from a policy", refuseEvictions, apierrors.IsForbidden},
		{"500 from a webhook that is down", failEvictions, apierrors.IsInternalError},
	} {
		t.Run(tt.name, func(t *testing.T) { drainMeetsRefusalThenBlockingPod(t, tt.refuse, tt.refused) })
	}
}

func drainMeetsRefusalThenBlockingPod(t *testing.T, refuse func(*testing.T, string), refused func(error) bool) {
	consolidating(t, "")
	ns := newNamespace(t)
	refuse(t, ns)
	twoHalfEmptyNodes(t, ns, nil)
	before := map[string]string{} // pod name → UID
	for _, p := range runningPods(t, ns) {
		before[p.Name] = string(p.UID)
	}

	// The policy is in force once a dry-run eviction is refused.
	anyPod := runningPods(t, ns)[0]
	waitFor(t, "evictions refused", func() bool {
		err := world.Client.PolicyV1().Evictions(ns).Evict(context.Background(), &policyv1.Eviction{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: anyPod.Name}, DeleteOptions: &metav1.DeleteOptions{DryRun: []string{metav1.DryRunAll}}})
		return refused(err)
	})

	var draining string
	waitFor(t, "a node marked for disruption", func() bool {
		for _, n := range tailorNodes(t) {
			if hasTaint(&n, v1alpha1.TaintDisrupting) {
				draining = n.Name
				return true
			}
		}
		return false
	})
	msg := waitEvent(t, ns, podOn(t, ns, draining).Name, "EvictionFailed")
	t.Logf("eviction answered: %s", msg)
	time.Sleep(3 * time.Second) // a few more passes, each asking again
	for _, p := range runningPods(t, ns) {
		if uid, ok := before[p.Name]; !ok || uid != string(p.UID) {
			t.Fatalf("pod %s (%s) is not one of the pods before %v: the refused eviction was worked around", p.Name, p.UID, before)
		}
	}

	bare := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bare"}, Spec: podSpec("100m", "64Mi")}
	bare.Spec.NodeName = draining
	if _, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), bare, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEvent(t, "default", draining, "DisruptionRolledBack")
	n := getNode(t, draining)
	if hasTaint(n, v1alpha1.TaintDisrupting) || n.Spec.Unschedulable {
		t.Errorf("node %s still marked after the rollback: taints %v, unschedulable %v", draining, n.Spec.Taints, n.Spec.Unschedulable)
	}
	waitFor(t, "three pods running", func() bool { return len(runningPods(t, ns)) == 3 })
	for _, p := range runningPods(t, ns) {
		if uid, ok := before[p.Name]; ok && uid != string(p.UID) {
			t.Errorf("pod %s was replaced", p.Name)
		}
		if p.Name == "bare" && p.Spec.NodeName != draining {
			t.Errorf("the bare pod runs on %s, want %s", p.Spec.NodeName, draining)
		}
	}
	if cls := listClaims(t); len(cls) != 2 {
		t.Errorf("%d claims, want both nodes kept", len(cls))
	}
}

// podOn is the namespace's pod on node.
func podOn(t *testing.T, ns, node string) corev1.Pod {
	t.Helper()
	for _, p := range runningPods(t, ns) {
		if p.Spec.NodeName == node {
			return p
		}
	}
	t.Fatalf("no pod of %s on %s", ns, node)
	return corev1.Pod{}
}
