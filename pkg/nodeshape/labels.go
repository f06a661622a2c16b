// Package nodeshape says what a node of a pool looks like: the labels and taints it carries and
// the tags on what is launched for it. Planning's template nodes (what the Filter plugins judge),
// the launch (the kubelet's flags and the EC2 tags) and registration (what the lifecycle
// controller puts on the Node) all take them from here, so the node that registers is the node
// that was planned.
//
// One precedence holds everywhere: the instance type's labels describe the instance, and the
// pool's labels, pool and capacity type are Tailor's promises and win over them. (Validation
// keeps a pool's labels off the instance labels' keys, so the two never meet on a valid pool.)
package nodeshape

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// NodeLabels are the labels a pool's node registers with (besides those the kubelet and cloud
// provider derive from the instance). Nothing per-claim goes here: the labels are baked into the
// launch template's user data, and one template per claim would be wasteful. The claim label is
// applied when the node registers.
func NodeLabels(pool *config.Pool, capacityType string) map[string]string {
	l := map[string]string{}
	for k, v := range pool.Labels {
		l[k] = v
	}
	l[v1alpha1.LabelPool] = pool.Name
	l[v1alpha1.LabelCapacityType] = capacityType
	return l
}

// TemplateLabels are the labels a node of the pool, instance type (typeLabels, from
// catalog.Labels), zone and capacity type carries once registered, but for its hostname and
// claim, which are per node: the planner matches pods against them before any instance exists.
func TemplateLabels(pool *config.Pool, typeLabels map[string]string, zone, capacityType string) map[string]string {
	labels := make(map[string]string, len(typeLabels)+len(pool.Labels)+4)
	for k, v := range typeLabels {
		labels[k] = v
	}
	labels[corev1.LabelTopologyZone] = zone
	for k, v := range NodeLabels(pool, capacityType) {
		labels[k] = v
	}
	return labels
}

// RegisteredLabels adds to a registering node's labels what the planner matched its pods
// against: the instance type's labels where the kubelet and cloud provider have not set them
// (theirs come from the real instance), the pool's NodeLabels over anything, and the claim. The
// zone is the cloud provider's to set. labels may be nil; the result is labels, filled in.
func RegisteredLabels(labels map[string]string, pool *config.Pool, typeLabels map[string]string, capacityType, claim string) map[string]string {
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range typeLabels {
		if _, set := labels[k]; !set {
			labels[k] = v
		}
	}
	for k, v := range NodeLabels(pool, capacityType) {
		labels[k] = v
	}
	labels[v1alpha1.LabelClaim] = claim
	return labels
}
