// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/tailor-eks/tailor/apis/config
// +k8s:defaulter-gen=TypeMeta
// +k8s:defaulter-gen-input=github.com/tailor-eks/tailor/apis/config/v1

// Package v1 is the versioned form of Tailor's plugin args as users write them in a
// KubeSchedulerConfiguration (apiVersion kubescheduler.config.k8s.io/v1, kind TailorArgs).
package v1
