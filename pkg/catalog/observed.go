package catalog

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Observed remembers the allocatable that real nodes of each instance type reported. The model in
// allocatable.go is an estimate; once a node of a type has registered, its kubelet's own numbers
// (AMI, kubelet flags and all) replace the estimate for every later plan.
type Observed struct {
	mu sync.RWMutex
	m  map[string]corev1.ResourceList
}

// Record stores a node's allocatable for its instance type; an empty list is ignored.
func (o *Observed) Record(instanceType string, alloc corev1.ResourceList) {
	if instanceType == "" || len(alloc) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]corev1.ResourceList{}
	}
	o.m[instanceType] = alloc.DeepCopy()
}

// Allocatable returns what nodes of the type reported, if any registered.
func (o *Observed) Allocatable(instanceType string) (corev1.ResourceList, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	rl, ok := o.m[instanceType]
	return rl, ok
}
