// +k8s:deepcopy-gen=package
// +groupName=tailor.dev

// Package v1alpha1 holds Tailor's own API objects: the Claim, one per launch, which is the
// durable record of in-flight and launched capacity.
package v1alpha1
