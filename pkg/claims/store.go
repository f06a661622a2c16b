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
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

const byInstanceID = "instanceID"

// Store is a cached, typed view of claims.
type Store struct {
	client   dynamic.ResourceInterface
	informer cache.SharedIndexInformer
}

// NewStore builds a store; call Run before reading from it.
func NewStore(cfg *rest.Config) (*Store, error) {
	dc, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return NewStoreForClient(dc), nil
}

// NewStoreForClient builds a store on a dynamic client (NewStore's, or a test's).
func NewStoreForClient(dc dynamic.Interface) *Store {
	inf := dynamicinformer.NewFilteredDynamicInformer(dc, v1alpha1.ClaimResource, metav1.NamespaceAll, 10*time.Minute,
		cache.Indexers{byInstanceID: func(obj interface{}) ([]string, error) {
			c, err := FromUnstructured(obj)
			if err != nil || c.Status.InstanceID == "" {
				return nil, nil
			}
			return []string{c.Status.InstanceID}, nil
		}}, nil)
	return &Store{client: dc.Resource(v1alpha1.ClaimResource), informer: inf.Informer()}
}

// Run starts the informer and waits for its first list.
func (s *Store) Run(ctx context.Context) error {
	go s.informer.Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.informer.HasSynced) {
		return fmt.Errorf("claims cache did not sync")
	}
	return nil
}

// AddEventHandler registers h for claim changes; objects are *v1alpha1.Claim or tombstones.
func (s *Store) AddEventHandler(h cache.ResourceEventHandlerFuncs) error {
	_, err := s.informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if c, err := FromUnstructured(obj); err == nil && h.AddFunc != nil {
				h.AddFunc(c)
			}
		},
		UpdateFunc: func(old, obj interface{}) {
			o, err1 := FromUnstructured(old)
			c, err2 := FromUnstructured(obj)
			if err1 == nil && err2 == nil && h.UpdateFunc != nil {
				h.UpdateFunc(o, c)
			}
		},
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if c, err := FromUnstructured(obj); err == nil && h.DeleteFunc != nil {
				h.DeleteFunc(c)
			}
		},
	})
	return err
}

// List returns every cached claim.
func (s *Store) List() []*v1alpha1.Claim {
	var out []*v1alpha1.Claim
	for _, obj := range s.informer.GetStore().List() {
		if c, err := FromUnstructured(obj); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// Get returns a cached claim.
func (s *Store) Get(name string) (*v1alpha1.Claim, bool) {
	obj, ok, err := s.informer.GetStore().GetByKey(name)
	if err != nil || !ok {
		return nil, false
	}
	c, err := FromUnstructured(obj)
	return c, err == nil
}

// ByInstanceID returns the cached claim of an instance.
func (s *Store) ByInstanceID(id string) (*v1alpha1.Claim, bool) {
	objs, err := s.informer.GetIndexer().ByIndex(byInstanceID, id)
	if err != nil || len(objs) == 0 {
		return nil, false
	}
	c, err := FromUnstructured(objs[0])
	return c, err == nil
}

// Fetch reads a claim from the API server, bypassing the cache.
func (s *Store) Fetch(ctx context.Context, name string) (*v1alpha1.Claim, error) {
	u, err := s.client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return FromUnstructured(u)
}

// Create writes a new claim (its status is ignored by the API server; set it with UpdateStatus).
func (s *Store) Create(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	u, err := toUnstructured(c)
	if err != nil {
		return nil, err
	}
	out, err := s.client.Create(ctx, u, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	return FromUnstructured(out)
}

// Update writes the claim's spec (and metadata).
func (s *Store) Update(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	u, err := toUnstructured(c)
	if err != nil {
		return nil, err
	}
	out, err := s.client.Update(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return FromUnstructured(out)
}

// UpdateStatus writes the claim's status.
func (s *Store) UpdateStatus(ctx context.Context, c *v1alpha1.Claim) (*v1alpha1.Claim, error) {
	u, err := toUnstructured(c)
	if err != nil {
		return nil, err
	}
	out, err := s.client.UpdateStatus(ctx, u, metav1.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return FromUnstructured(out)
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

// RemoveFinalizer takes Tailor's termination finalizer off the claim (a claim already deleting
// then goes).
func (s *Store) RemoveFinalizer(ctx context.Context, name string) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u, err := s.client.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		fins := slices.DeleteFunc(u.GetFinalizers(), func(f string) bool { return f == v1alpha1.FinalizerTermination })
		if len(fins) == len(u.GetFinalizers()) {
			return nil
		}
		u.SetFinalizers(fins)
		_, err = s.client.Update(ctx, u, metav1.UpdateOptions{})
		return err
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// FromUnstructured converts an informer object into a typed claim.
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

func toUnstructured(c *v1alpha1.Claim) (*unstructured.Unstructured, error) {
	c = c.DeepCopy()
	c.APIVersion, c.Kind = v1alpha1.SchemeGroupVersion.String(), "Claim"
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, err
	}
	return &unstructured.Unstructured{Object: m}, nil
}
