package provisioning

import (
	"context"
	"strconv"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
)

// The API server writes a claim but its answer is lost (a timeout): the retry, for the same
// pods, finds that claim by its name instead of creating a second one. A retry for other pods,
// or one after the first claim failed or its node registered, is a new claim.
func TestCreateClaimAfterLostAnswer(t *testing.T) {
	client := claimstest.NewClientset()
	lose, generated := true, 0
	client.PrependReactor("create", "claims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		obj := a.(k8stesting.CreateAction).GetObject().(*v1alpha1.Claim)
		generated++
		if obj.Name == "" {
			obj.Name = obj.GenerateName + "generated-" + strconv.Itoa(generated)
		}
		obj.ResourceVersion = "created-" + strconv.Itoa(generated) // the API server's, which later updates must name
		if err := client.Tracker().Create(v1alpha1.ClaimResource, obj, ""); err != nil {
			return true, nil, err
		}
		if lose {
			lose = false
			return true, nil, apierrors.NewTimeoutError("the answer was lost", 1)
		}
		return true, obj, nil
	})
	l := &Reservations{Options: Options{Claims: claims.NewStoreForClient(client)}}
	ctx := context.Background()
	claim := func(uids ...string) *v1alpha1.Claim {
		c := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{GenerateName: "general-"}, Spec: v1alpha1.ClaimSpec{Pool: "general"}}
		for _, u := range uids {
			c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{Namespace: "default", Name: "p-" + u, UID: u})
		}
		return c
	}
	count := func() int {
		list, err := client.TailorV1alpha1().Claims().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(list.Items)
	}

	if _, err := l.createClaim(ctx, claim("a", "b"), podsKey(claim("a", "b").Spec.Pods)); !apierrors.IsTimeout(err) {
		t.Fatalf("first create: %v, want the lost answer", err)
	}
	again, err := l.createClaim(ctx, claim("b", "a"), podsKey(claim("b", "a").Spec.Pods))
	if err != nil {
		t.Fatal(err)
	}
	if want := claimName("general-", podsKey(claim("a", "b").Spec.Pods)); again.Name != want || count() != 1 {
		t.Fatalf("retry answered %s with %d claims, want the first claim %s alone", again.Name, count(), want)
	}

	other, err := l.createClaim(ctx, claim("c"), podsKey(claim("c").Spec.Pods))
	if err != nil || other.Name == again.Name || count() != 2 {
		t.Fatalf("claim for other pods: %v, %v; %d claims", other, err, count())
	}

	failed := again.DeepCopy()
	failed.Status.Phase = v1alpha1.ClaimFailed
	if _, err := l.Claims.UpdateStatus(ctx, failed); err != nil {
		t.Fatal(err)
	}
	next, err := l.createClaim(ctx, claim("a", "b"), podsKey(claim("a", "b").Spec.Pods))
	if err != nil || next.Name == again.Name || count() != 3 {
		t.Fatalf("after the first claim failed: %v, %v; %d claims, want a new one", next, err, count())
	}

	// A claim whose node registered is no lost answer: its pod, planned again, was refused by
	// that node and needs another one. Taking the old claim would launch it again and again.
	registered := other.DeepCopy()
	registered.Status.Phase, registered.Status.NodeName = v1alpha1.ClaimRegistered, "node-1"
	if _, err := l.Claims.UpdateStatus(ctx, registered); err != nil {
		t.Fatal(err)
	}
	replanned, err := l.createClaim(ctx, claim("c"), podsKey(claim("c").Spec.Pods))
	if err != nil || replanned.Name == other.Name || count() != 4 {
		t.Fatalf("after the claim's node registered: %v, %v; %d claims, want a new one", replanned, err, count())
	}
}
