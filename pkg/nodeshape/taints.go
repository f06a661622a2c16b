package nodeshape

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// TemplateTaints are the taints the planner judges a pool's node by: its taints, not its startup
// taints, which another agent removes once the node is up (Tailor plans as if they were absent).
func TemplateTaints(pool *config.Pool) []corev1.Taint {
	return append([]corev1.Taint(nil), pool.Taints...)
}

// NodeTaints are the taints a claim's node carries once registered.
func NodeTaints(pool *config.Pool) []corev1.Taint {
	return append(append([]corev1.Taint(nil), pool.Taints...), pool.StartupTaints...)
}

// RegistrationTaints are passed to the kubelet: the pool's taints plus the unregistered taint
// that keeps pods off the node until Tailor has matched it to its claim. That taint is
// NoSchedule, not NoExecute: a pod the scheduler binds the moment Tailor removes it would
// otherwise be deleted by kube-controller-manager's taint eviction, whose node cache may still
// hold the taint (kubernetes/kubernetes#119862, unfixed in 1.34). Nothing runs on the node
// before it registers, so there is nothing for NoExecute to evict.
func RegistrationTaints(pool *config.Pool) []cloud.Taint {
	var out []cloud.Taint
	for _, t := range NodeTaints(pool) {
		out = append(out, cloud.Taint{Key: t.Key, Value: t.Value, Effect: string(t.Effect)})
	}
	return append(out, cloud.Taint{Key: v1alpha1.TaintUnregistered, Effect: string(corev1.TaintEffectNoSchedule)})
}

// RegisteredTaints are a registering node's taints once it is matched to its claim: without the
// unregistered taint, and with every NodeTaints taint the kubelet did not already set (by key
// and effect; a value changed on the node since is left alone).
func RegisteredTaints(current []corev1.Taint, pool *config.Pool) []corev1.Taint {
	var taints []corev1.Taint
	for _, t := range current {
		if t.Key != v1alpha1.TaintUnregistered {
			taints = append(taints, t)
		}
	}
	for _, want := range NodeTaints(pool) {
		if !hasTaintIn(taints, want.Key, want.Effect) {
			taints = append(taints, want)
		}
	}
	return taints
}

func hasTaintIn(ts []corev1.Taint, key string, effect corev1.TaintEffect) bool {
	for _, t := range ts {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}
