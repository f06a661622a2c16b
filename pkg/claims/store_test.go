package claims

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
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
	// View is the one read that is not a copy: it shows the cache as it is, untouched by
	// every change above.
	if view := s.View(); len(view) != 1 || view[0].Name != "general-a" || view[0].Spec.Pool != "general" {
		t.Errorf("View = %v, want the one cached claim as written", view)
	}
}

// TestUpdateFromReadsOnlyAfterAConflict: a write from the version the caller holds costs no read
// when that version is the newest; when it is not, the write conflicts and is made again on the
// API server's newest version, so nothing written meanwhile is lost.
func TestUpdateFromReadsOnlyAfterAConflict(t *testing.T) {
	tests := []struct {
		name      string
		held      int // which write's version the caller holds: 1 the create, 2 the update after it
		wantCalls []string
		wantPods  int
	}{
		{"held version is the newest", 2, []string{"update"}, 3},
		{"held version is behind", 1, []string{"update", "get", "update"}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cs := claimstest.NewClientset()
			s := NewStoreForClient(cs)
			versions := make([]*v1alpha1.Claim, 2)
			c, err := s.Create(ctx, &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "general-a"}, Spec: v1alpha1.ClaimSpec{Pool: "general", PodCount: 1}})
			if err != nil {
				t.Fatal(err)
			}
			versions[0] = c.DeepCopy()
			c.Spec.PodCount = 2
			if versions[1], err = s.Update(ctx, c); err != nil {
				t.Fatal(err)
			}
			held := versions[tt.held-1]
			heldPods := held.Spec.PodCount
			cs.ClearActions()
			var written *v1alpha1.Claim
			err = s.UpdateFrom(ctx, held, func(c *v1alpha1.Claim) error {
				c.Spec.PodCount++
				var err error
				written, err = s.Update(ctx, c)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, a := range cs.Actions() {
				calls = append(calls, a.GetVerb())
			}
			if !slices.Equal(calls, tt.wantCalls) {
				t.Errorf("API calls %v, want %v", calls, tt.wantCalls)
			}
			if written.Spec.PodCount != tt.wantPods {
				t.Errorf("pod count %d, want %d: not written from the newest version", written.Spec.PodCount, tt.wantPods)
			}
			if held.Spec.PodCount != heldPods {
				t.Errorf("the held claim was changed: pod count %d, was %d", held.Spec.PodCount, heldPods)
			}
		})
	}
}

// Terminate hands a claim to the lifecycle's termination: it is deleted with its finalizer on,
// even one that had lost it (it would otherwise go at once and leave its instance to nobody),
// and a claim already gone is no error.
func TestTerminateKeepsTheFinalizer(t *testing.T) {
	for _, tc := range []struct {
		name       string
		finalizers []string
	}{
		{"with the finalizer", []string{v1alpha1.FinalizerTermination}},
		{"without it", nil},
		{"with someone else's only", []string{"example.com/other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			client := claimstest.NewClientset(&v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "a", Finalizers: tc.finalizers}})
			s := NewStoreForClient(client)
			if err := s.Terminate(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			got, err := client.TailorV1alpha1().Claims().Get(ctx, "a", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the claim is gone (%v): its termination finalizer should hold it", err)
			}
			if got.DeletionTimestamp == nil || !slices.Contains(got.Finalizers, v1alpha1.FinalizerTermination) {
				t.Errorf("deleting %v, finalizers %v; want deleting with %s", got.DeletionTimestamp != nil, got.Finalizers, v1alpha1.FinalizerTermination)
			}
			if err := s.Terminate(ctx, "missing"); err != nil {
				t.Errorf("terminating a claim already gone: %v", err)
			}
		})
	}
}
