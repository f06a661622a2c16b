// Package claims reads and writes Claim objects. Claims are Tailor's only durable state: the
// ledger, the lifecycle controller and garbage collection all rebuild from them.
package claims

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned"
	tailorv1alpha1 "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/typed/tailor/v1alpha1"
	informers "github.com/tailor-eks/tailor/pkg/generated/informers/externalversions/tailor/v1alpha1"
	listers "github.com/tailor-eks/tailor/pkg/generated/listers/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/trim"
)

const byInstanceID = "instanceID"

// Store is a cached, typed view of claims, on the generated clientset and informer. Every read
// hands out the caller's own copy, which it may change and write back.
type Store struct {
	client   tailorv1alpha1.ClaimInterface
	informer cache.SharedIndexInformer
	lister   listers.ClaimLister
}

// NewStore builds a store; call Run before reading from it.
func NewStore(cfg *rest.Config) (*Store, error) {
	// A custom resource speaks JSON only; the scheduler's kubeconfig asks for protobuf.
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType, cfg.AcceptContentTypes = runtime.ContentTypeJSON, runtime.ContentTypeJSON
	cs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewStoreForClient(cs), nil
}

// NewStoreForClient builds a store on a clientset (NewStore's, or a test's fake).
func NewStoreForClient(cs versioned.Interface) *Store {
	inf := informers.NewClaimInformer(cs, 10*time.Minute, cache.Indexers{byInstanceID: func(obj interface{}) ([]string, error) {
		if c, ok := obj.(*v1alpha1.Claim); ok && c.Status.InstanceID != "" {
			return []string{c.Status.InstanceID}, nil
		}
		return nil, nil
	}})
	_ = inf.SetTransform(trim.ManagedFields) // not started yet: cannot fail
	return &Store{client: cs.TailorV1alpha1().Claims(), informer: inf, lister: listers.NewClaimLister(inf.GetIndexer())}
}

// Run starts the informer and waits for its first list.
func (s *Store) Run(ctx context.Context) error {
	go s.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return fmt.Errorf("claims cache did not sync")
	}
	return nil
}

// AddEventHandler registers h for claim changes; objects are *v1alpha1.Claim (a deleted claim's
// last known state for a tombstone), copies h may keep or change.
func (s *Store) AddEventHandler(h cache.ResourceEventHandlerFuncs) error {
	_, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if c, ok := copyOf(obj); ok && h.AddFunc != nil {
				h.AddFunc(c)
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			o, ok1 := copyOf(old)
			c, ok2 := copyOf(obj)
			if ok1 && ok2 && h.UpdateFunc != nil {
				h.UpdateFunc(o, c)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if c, ok := copyOf(obj); ok && h.DeleteFunc != nil {
				h.DeleteFunc(c)
			}
		},
	})
	return err
}

func copyOf(obj interface{}) (*v1alpha1.Claim, bool) {
	c, ok := obj.(*v1alpha1.Claim)
	if !ok {
		return nil, false
	}
	return c.DeepCopy(), true
}

// List returns every cached claim.
func (s *Store) List() []*v1alpha1.Claim {
	cached, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	out := make([]*v1alpha1.Claim, len(cached))
	for i, c := range cached {
		out[i] = c.DeepCopy()
	}
	return out
}

// View returns the cached claims themselves, not copies, for a caller that only reads them: a
// burst's batches read every claim several times, and a copy of each was most of what they
// allocated. A claim from View is written back only through UpdateFrom, which copies it, or
// after a DeepCopy.
func (s *Store) View() []*v1alpha1.Claim {
	cached, err := s.lister.List(labels.Everything())
	if err != nil {
		return nil
	}
	return cached
}

// Get returns a cached claim.
func (s *Store) Get(name string) (*v1alpha1.Claim, bool) {
	c, err := s.lister.Get(name)
	if err != nil {
		return nil, false
	}
	return c.DeepCopy(), true
}

// ByInstanceID returns the cached claim of an instance.
func (s *Store) ByInstanceID(id string) (*v1alpha1.Claim, bool) {
	objs, err := s.informer.GetIndexer().ByIndex(byInstanceID, id)
	if err != nil || len(objs) == 0 {
		return nil, false
	}
	c, ok := objs[0].(*v1alpha1.Claim)
	if !ok {
		return nil, false
	}
	return c.DeepCopy(), true
}

// Fetch reads a claim from the API server, bypassing the cache.
func (s *Store) Fetch(ctx context.Context, name string) (*v1alpha1.Claim, error) {
	return s.client.Get(ctx, name, metav1.GetOptions{})
}

// UpdateFrom calls update with a copy of start, a version of the claim the caller holds (from
// the cache, or its own last write), and then, as long as update's write conflicts because that
// version was not the newest, with the newest from the API server (retry.DefaultRetry's steps).
// Starting from a held version saves a read per write: under a burst, every launch's writes
// queue at the API server with these reads, and provisioning asks of one claim after another.
func (s *Store) UpdateFrom(ctx context.Context, start *v1alpha1.Claim, update func(*v1alpha1.Claim) error) error {
	next := start.DeepCopy()
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := next
		next = nil
		if cur == nil {
			var err error
			if cur, err = s.Fetch(ctx, start.Name); err != nil {
				return err
			}
		}
		return update(cur)
	})
}

// Create writes a new claim (its status is ignored by the API server; set it with UpdateStatus).
func (s *Store) Create(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	return s.client.Create(ctx, c, metav1.CreateOptions{})
}

// Update writes the claim's spec (and metadata).
func (s *Store) Update(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	return s.client.Update(ctx, c, metav1.UpdateOptions{})
}

// UpdateStatus writes the claim's status.
func (s *Store) UpdateStatus(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	return s.client.UpdateStatus(ctx, c, metav1.UpdateOptions{})
}

// Delete removes a claim whose instance Tailor has dealt with (terminated, or never launched):
// its termination finalizer comes off first, so the claim goes at once. A claim already gone is
// not an error. Anyone else's delete leaves the finalizer to the drain.
func (s *Store) Delete(ctx context.Context, name string) error {
	if err := s.RemoveFinalizer(ctx, name); err != nil {
		return err
	}
	err := s.client.Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// Terminate deletes a claim with its termination finalizer on: the lifecycle's termination stage
// terminates its instance (if the claim's own) and removes its node before the claim goes. It is
// how consolidation and interruption hand a claim over once they have decided it goes. A claim
// already gone is not an error.
func (s *Store) Terminate(ctx context.Context, name string) error {
	// A claim without the finalizer (stripped by hand, or from before finalizers) would go at
	// once, and its instance with nobody left to terminate it: it gets the finalizer first. The
	// delete names the claim read, not a claim of the same name made since.
	var uid types.UID
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		uid = c.UID
		if c.DeletionTimestamp != nil || slices.Contains(c.Finalizers, v1alpha1.FinalizerTermination) {
			return nil
		}
		c.Finalizers = append(c.Finalizers, v1alpha1.FinalizerTermination)
		_, err = s.client.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if err == nil {
		err = s.client.Delete(ctx, name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	}
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// RemoveFinalizer takes Tailor's termination finalizer off the claim (a claim already deleting
// then goes).
func (s *Store) RemoveFinalizer(ctx context.Context, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		c, err := s.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fins := slices.DeleteFunc(slices.Clone(c.Finalizers), func(f string) bool { return f == v1alpha1.FinalizerTermination })
		if len(fins) == len(c.Finalizers) {
			return nil
		}
		c.Finalizers = fins
		_, err = s.client.Update(ctx, c, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// FromUnstructured converts a dynamic client's object into a typed claim.
func FromUnstructured(obj interface{}) (*v1alpha1.Claim, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, fmt.Errorf("unexpected object %T", obj)
	}
	c := &v1alpha1.Claim{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		return nil, err
	}
	return c, nil
}

// ReservedInFlight counts the claims that will take an instance of the capacity reservation that
// a read of the reservation at readAt did not count: pending ones, and those launched since.
func (s *Store) ReservedInFlight(reservationID string, readAt time.Time) int {
	n := 0
	for _, c := range s.View() {
		if r := c.Spec.CapacityReservation; r == nil || r.ID != reservationID {
			continue
		}
		switch {
		case c.Status.Phase == "" || c.Status.Phase == v1alpha1.ClaimPending:
			n++
		case c.Status.Phase != v1alpha1.ClaimFailed && c.Status.LaunchedAt != nil && !c.Status.LaunchedAt.Time.Before(readAt):
			n++
		}
	}
	return n
}
