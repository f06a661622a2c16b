package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	schedschemev1 "k8s.io/kube-scheduler/config/v1"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the version users write.
var SchemeGroupVersion = schema.GroupVersion{Group: schedconfig.GroupName, Version: "v1"}

var (
	localSchemeBuilder = &schedschemev1.SchemeBuilder
	// AddToScheme registers the versioned types, their defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &TailorArgs{})
	return nil
}

func init() {
	localSchemeBuilder.Register(addKnownTypes)
	localSchemeBuilder.Register(RegisterDefaults)
	localSchemeBuilder.Register(RegisterConversions)
}
