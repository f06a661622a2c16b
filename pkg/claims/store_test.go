package claims

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
)

// TestStoreHandsOutCopies: every read of the cache, by name, by instance, in a list or in an
// event, is the caller's own claim: changing it changes nothing another reader sees.
func TestStoreHandsOutCopies(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	claim := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}, Spec: v1alpha1.ClaimSpec{Pool: "general"},
		Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched, InstanceID: "i-1"}}
	s := NewStoreForClient(fake.NewSimpleClientset(claim))
	added := make(chan *v1alpha1.Claim, 1)
	if err := s.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { added <- obj.(*v1alpha1.Claim) }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-added:
		c.Spec.Pool = "changed by the handler"
	case <-time.After(5 * time.Second):
		t.Fatal("the handler saw no add")
	}

	reads := []struct {
		name string
		read func() (*v1alpha1.Claim, bool)
	}{
		{"Get", func() (*v1alpha1.Claim, bool) { return s.Get("general-a") }},
		{"ByInstanceID", func() (*v1alpha1.Claim, bool) { return s.ByInstanceID("i-1") }},
		{"List", func() (*v1alpha1.Claim, bool) {
			list := s.List()
			if len(list) != 1 {
				return nil, false
			}
			return list[0], true
		}},
	}
	for _, r := range reads {
		c, ok := r.read()
		if !ok {
			t.Fatalf("%s: no claim", r.name)
		}
		if c.Spec.Pool != "general" {
			t.Errorf("%s: pool %q, want general: an earlier reader's change reached the cache", r.name, c.Spec.Pool)
		}
		c.Spec.Pool = "changed by " + r.name
	}
	if _, ok := s.ByInstanceID("i-2"); ok {
		t.Error("ByInstanceID found a claim for an instance no claim has")
	}
}
