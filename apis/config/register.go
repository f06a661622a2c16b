package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of kubescheduler.config.k8s.io that the scheduler
// converts plugin args into before it hands them to a plugin factory.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: runtime.APIVersionInternal}

var (
	// Registering into the scheduler's own SchemeBuilder means every scheme it builds (including
	// the plugin-args conversion scheme it builds lazily) knows TailorArgs.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme registers the internal types.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &TailorArgs{})
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}
