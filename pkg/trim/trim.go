// Package trim holds transforms for the informers Tailor reads, so their caches keep only what
// Tailor and the scheduler's plugins read.
package trim

import "k8s.io/apimachinery/pkg/api/meta"

// ManagedFields drops an object's metadata.managedFields, a cache.TransformFunc. kube-scheduler
// means to drop them from its pod informer, but client-go's InformerFor replaces that transform
// with the factory's (none), so every cached pod and node keeps them: at 7000 pods they were
// the largest single item of the scheduler's live heap (14 MB). Nothing here reads them, and an
// update sent without them keeps the stored ones.
func ManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil && m.GetManagedFields() != nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}
