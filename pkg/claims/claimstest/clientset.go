// Package claimstest gives unit tests a fake claims clientset that keeps the API server's
// rules a claim's writers rely on, which client-go's object tracker does not.
package claimstest

import (
	"fmt"
	"slices"
	"strconv"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	clienttesting "k8s.io/client-go/testing"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
)

// NewClientset is a fake clientset holding objs whose claims behave as the API server's:
//   - every create and update gives the claim a new resourceVersion, and an update from any
//     version but the newest conflicts (optimistic concurrency; a custom resource's update must
//     name its version);
//   - a create and an update write the spec and metadata and keep the stored status; an update
//     of the status subresource writes only the status (the Claim CRD has a status subresource);
//   - a create with generateName gets a name of its own;
//   - a delete of a claim with finalizers marks it deleting; it goes when they are removed.
//
// A writer that loses another's change on the real API server loses it here too.
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	r := &rules{}
	objs = slices.Clone(objs) // the caller's objects stay as given
	for i, o := range objs {
		if c, ok := o.(*v1alpha1.Claim); ok {
			c = c.DeepCopy()
			c.ResourceVersion = r.next()
			objs[i] = c
		}
	}
	r.cs = fake.NewSimpleClientset(objs...)
	r.cs.PrependReactor("create", "claims", r.create)
	r.cs.PrependReactor("update", "claims", r.update)
	r.cs.PrependReactor("delete", "claims", r.delete)
	return r.cs
}

// rules are NewClientset's reactors, on the clientset's tracker.
type rules struct {
	cs      *fake.Clientset
	mu      sync.Mutex
	version int
}

// next is a new resourceVersion. r.mu is held, or r not yet shared.
func (r *rules) next() string {
	r.version++
	return strconv.Itoa(r.version)
}

func (r *rules) create(a clienttesting.Action) (bool, runtime.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := a.(clienttesting.CreateAction).GetObject().(*v1alpha1.Claim).DeepCopy()
	if c.Name == "" && c.GenerateName != "" {
		c.Name = c.GenerateName + utilrand.String(5)
	}
	c.ResourceVersion, c.Status = r.next(), v1alpha1.ClaimStatus{}
	if err := r.cs.Tracker().Create(a.GetResource(), c, a.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, c.DeepCopy(), nil
}

func (r *rules) update(a clienttesting.Action) (bool, runtime.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := a.(clienttesting.UpdateAction).GetObject().(*v1alpha1.Claim).DeepCopy()
	stored, err := r.cs.Tracker().Get(a.GetResource(), a.GetNamespace(), c.Name)
	if err != nil {
		return true, nil, err
	}
	cur := stored.(*v1alpha1.Claim)
	switch {
	case c.ResourceVersion == "":
		return true, nil, apierrors.NewBadRequest(fmt.Sprintf("claims %q: metadata.resourceVersion must be specified for an update", c.Name))
	case c.ResourceVersion != cur.ResourceVersion:
		return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), c.Name, fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
	}
	if a.GetSubresource() == "status" {
		status := c.Status
		c = cur.DeepCopy()
		c.Status = status
	} else {
		c.Status = cur.Status
	}
	c.ResourceVersion = r.next()
	if c.DeletionTimestamp != nil && len(c.Finalizers) == 0 {
		return true, c, r.cs.Tracker().Delete(a.GetResource(), a.GetNamespace(), c.Name)
	}
	if err := r.cs.Tracker().Update(a.GetResource(), c, a.GetNamespace()); err != nil {
		return true, nil, err
	}
	return true, c.DeepCopy(), nil
}

func (r *rules) delete(a clienttesting.Action) (bool, runtime.Object, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := a.(clienttesting.DeleteAction).GetName()
	stored, err := r.cs.Tracker().Get(a.GetResource(), a.GetNamespace(), name)
	if err != nil {
		return true, nil, err
	}
	c := stored.(*v1alpha1.Claim).DeepCopy()
	if len(c.Finalizers) == 0 {
		return true, nil, r.cs.Tracker().Delete(a.GetResource(), a.GetNamespace(), name)
	}
	if c.DeletionTimestamp == nil {
		now := metav1.Now()
		c.DeletionTimestamp = &now
		c.ResourceVersion = r.next()
		return true, nil, r.cs.Tracker().Update(a.GetResource(), c, a.GetNamespace())
	}
	return true, nil, nil
}
