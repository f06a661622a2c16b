package claims

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
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
	var seen []*v1alpha1.Claim
	if err := s.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj interface{}) { seen = append(seen, obj.(*v1alpha1.Claim)) }}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(ctx); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return len(seen) == 1, nil
	}); err != nil {
		t.Fatalf("the handler saw %d adds, want 1", len(seen))
	}
	seen[0].Spec.Pool = "changed by the handler"

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
