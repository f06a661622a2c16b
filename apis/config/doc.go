// +k8s:deepcopy-gen=package

// Package config holds the internal form of Tailor's plugin args, registered in the
// kube-scheduler configuration scheme the way sigs.k8s.io/scheduler-plugins registers its own.
package config
