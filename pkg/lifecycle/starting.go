package lifecycle

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// Ready says whether the node reports Ready.
func Ready(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Starting says whether a node still carries a taint of a node coming up: Tailor's own, one of
// the pools' startup taints, or the node lifecycle's (not-ready, uninitialized, ...). Until they
// are gone, a node's room is not really there yet.
func Starting(args *config.TailorArgs, n *corev1.Node) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.TaintUnregistered || strings.HasPrefix(t.Key, "node.kubernetes.io/") || strings.HasPrefix(t.Key, "node.cloudprovider.kubernetes.io/") {
			return true
		}
		for i := range args.Pools {
			for _, st := range args.Pools[i].StartupTaints {
				if st.Key == t.Key {
					return true
				}
			}
		}
	}
	return false
}
