package catalog

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// Observed remembers the allocatable that real nodes of each pool and instance type reported. The
// model in allocatable.go is an estimate; once a node has registered, its kubelet's own numbers
// (AMI, kubelet flags and all: hence per pool) replace the estimate for every later plan.
type Observed struct {
	mu sync.RWMutex
	m  map[string]corev1.ResourceList
}

// Record stores a node's allocatable for its pool and instance type; an empty list is ignored.
func (o *Observed) Record(pool, instanceType string, alloc corev1.ResourceList) {
	if instanceType == "" || len(alloc) == 0 {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]corev1.ResourceList{}
	}
	o.m[pool+"/"+instanceType] = alloc.DeepCopy()
}

// Allocatable returns what nodes of the pool and type reported, if any registered.
func (o *Observed) Allocatable(pool, instanceType string) (corev1.ResourceList, bool) {
	o.mu.RLock()
	defer o.mu.RUnlock()
	rl, ok := o.m[pool+"/"+instanceType]
	return rl, ok
}
