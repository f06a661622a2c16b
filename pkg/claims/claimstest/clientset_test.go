package claimstest

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// The fake keeps the API server's rules for claims: optimistic concurrency, a spec update that
// keeps the status and a status update that keeps the spec, generated names, and finalizers.
func TestClientsetKeepsTheAPIServersRules(t *testing.T) {
	ctx := context.Background()
	client := NewClientset(&v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "seeded"}}).TailorV1alpha1().Claims()
	seeded, err := client.Get(ctx, "seeded", metav1.GetOptions{})
	if err != nil || seeded.ResourceVersion == "" {
		t.Fatalf("a seeded claim has no version: %v, %v", seeded, err)
	}
	c, err := client.Create(ctx, &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{GenerateName: "general-", Finalizers: []string{v1alpha1.FinalizerTermination}},
		Spec: v1alpha1.ClaimSpec{Pool: "general"}, Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched}}, metav1.CreateOptions{})
	if err != nil || c.Name == "" || c.Name == "general-" || c.Status.Phase != "" {
		t.Fatalf("create with generateName and a status: %v, %v; want a name of its own, no status", c, err)
	}

	withStatus := c.DeepCopy()
	withStatus.Status.Phase = v1alpha1.ClaimLaunched
	if withStatus, err = client.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stale := c.DeepCopy()
	stale.Spec.PodCount = 1
	if _, err := client.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update from a version behind: %v, want a conflict", err)
	}
	noVersion := withStatus.DeepCopy()
	noVersion.ResourceVersion = ""
	if _, err := client.Update(ctx, noVersion, metav1.UpdateOptions{}); !apierrors.IsBadRequest(err) {
		t.Errorf("update naming no version: %v, want it refused", err)
	}
	specOnly := withStatus.DeepCopy()
	specOnly.Spec.PodCount, specOnly.Status.Phase = 2, v1alpha1.ClaimFailed
	updated, err := client.Update(ctx, specOnly, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.PodCount != 2 || updated.Status.Phase != v1alpha1.ClaimLaunched {
		t.Errorf("spec update: pod count %d, phase %q; want 2 and the stored Launched", updated.Spec.PodCount, updated.Status.Phase)
	}
	statusOnly := updated.DeepCopy()
	statusOnly.Spec.PodCount, statusOnly.Status.Phase = 5, v1alpha1.ClaimRegistered
	if updated, err = client.UpdateStatus(ctx, statusOnly, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if updated.Spec.PodCount != 2 || updated.Status.Phase != v1alpha1.ClaimRegistered {
		t.Errorf("status update: pod count %d, phase %q; want the stored 2 and Registered", updated.Spec.PodCount, updated.Status.Phase)
	}

	if err := client.Delete(ctx, c.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleting, err := client.Get(ctx, c.Name, metav1.GetOptions{})
	if err != nil || deleting.DeletionTimestamp == nil {
		t.Fatalf("a claim with a finalizer after delete: %v, %v; want it kept, deleting", deleting, err)
	}
	deleting.Finalizers = nil
	if _, err := client.Update(ctx, deleting, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.Get(ctx, c.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a deleting claim without finalizers: %v, want it gone", err)
	}
}
