package planning

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// PodInfos hands out one PodInfo per pod object to the Clusters and questions of a caller that
// asks about the same pods again and again (consolidation: a Cluster per pass, and every pod of
// a node it considers placed once per question). A PodInfo parses the pod's affinity terms and
// sums its requests (CalculateResource) once; informers never change a pod object in place, so
// the same object always has the same answers. Not safe for concurrent use.
type PodInfos struct {
	// cur are the infos asked for since the last Rotate, prev those asked for before it.
	cur, prev map[*corev1.Pod]*framework.PodInfo
}

// NewPodInfos returns an empty PodInfos.
func NewPodInfos() *PodInfos {
	return &PodInfos{cur: map[*corev1.Pod]*framework.PodInfo{}}
}

// Get returns p's PodInfo, made on the first ask since the last two Rotates; nil if the pod's
// affinity terms do not parse, or c is nil (no PodInfos kept).
func (c *PodInfos) Get(p *corev1.Pod) *framework.PodInfo {
	if c == nil {
		return nil
	}
	if pi, ok := c.cur[p]; ok {
		return pi
	}
	pi, ok := c.prev[p]
	if !ok {
		var err error
		if pi, err = framework.NewPodInfo(p); err != nil {
			return nil
		}
	}
	c.cur[p] = pi
	return pi
}

// Rotate starts a new round of asks: the infos of pods not asked for during the round that
// ends are dropped at the next Rotate, so deleted pods and replaced objects do not pile up.
func (c *PodInfos) Rotate() {
	c.prev, c.cur = c.cur, make(map[*corev1.Pod]*framework.PodInfo, len(c.cur))
}
