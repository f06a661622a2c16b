package planning

import (
	"encoding/json"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Pod is a pod waiting for capacity. Requests include init containers and pod overhead.
type Pod struct {
	Pod      *corev1.Pod
	Requests corev1.ResourceList
	// Check asks the scheduler whether this pod fits the node (with the pods already placed on it).
	Check Checker
}

// NewPod computes a pod's effective requests the way the scheduler does.
func NewPod(p *corev1.Pod, check Checker) *Pod {
	return &Pod{Pod: p, Requests: resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}), Check: check}
}

// class is a set of pods with identical scheduling constraints (e.g. replicas of one template):
// the Filter plugins give the same verdict for all of them on an empty template node, so that
// verdict is computed once.
type class struct {
	key  uint64
	pods []*Pod
	// compatible lists indexes into the planner's templates that hold one pod of the class,
	// restricted to the highest-weight pool that has any.
	compatible []int
	// reasons counts why templates were rejected, for the explanation.
	reasons map[string]int
}

// classKey hashes everything the Filter plugins look at on the pod side.
func classKey(p *Pod) uint64 {
	s := &p.Pod.Spec
	b, _ := json.Marshal(struct {
		Namespace      string
		Labels         map[string]string
		Requests       corev1.ResourceList
		NodeSelector   map[string]string
		Affinity       *corev1.Affinity
		Tolerations    []corev1.Toleration
		Spread         []corev1.TopologySpreadConstraint
		Volumes        []corev1.Volume
		Ports          []corev1.ContainerPort
		NodeName       string
		PriorityClass  string
		ResourceClaims []corev1.PodResourceClaim
	}{p.Pod.Namespace, p.Pod.Labels, p.Requests, s.NodeSelector, s.Affinity, s.Tolerations, s.TopologySpreadConstraints, s.Volumes, hostPorts(s), s.NodeName, s.PriorityClassName, s.ResourceClaims})
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}

func hostPorts(s *corev1.PodSpec) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, c := range append(append([]corev1.Container(nil), s.InitContainers...), s.Containers...) {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, p)
			}
		}
	}
	return out
}
