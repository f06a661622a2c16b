package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

// Resource is a resource of this group, for the generated listers' errors.
func Resource(resource string) schema.GroupResource {
	return SchemeGroupVersion.WithResource(resource).GroupResource()
}
