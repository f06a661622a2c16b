package planning

import (
	"encoding/json"
	"hash/fnv"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Pod is a pod waiting for capacity. Requests include init containers and pod overhead.
type Pod struct {
	Pod      *corev1.Pod
	Requests corev1.ResourceList
	// Filter asks the scheduler's Filter plugins whether the pod fits a node. Pods only placed
	// (never planned) may leave it nil.
	Filter *FilterState
	// class is the pod's classKey when Keyed computed it (0: hashed where needed).
	class uint64
	// info is the PodInfo its placements use (see WithPodInfo); nil: each makes its own.
	info *framework.PodInfo
}

// WithPodInfo has p placed with pi, the PodInfo of a pod with p's labels, requests, ports and
// terms that the caller keeps (PodInfos): a pod asked about in many questions has its requests
// summed and its terms parsed once, not at every trial placement. pi may be the PodInfo of the
// pod as bound to its node: what a placement reads of a PodInfo is the same unbound.
func (p *Pod) WithPodInfo(pi *framework.PodInfo) *Pod {
	p.info = pi
	return p
}

// podInfo is the PodInfo a placement of p adds to its node.
func (p *Pod) podInfo() (*framework.PodInfo, error) {
	if p.info != nil {
		return p.info, nil
	}
	return framework.NewPodInfo(p.Pod)
}

// NewPod computes a pod's effective requests the way the scheduler does.
func NewPod(p *corev1.Pod, f *FilterState) *Pod {
	return &Pod{Pod: p, Requests: resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}), Filter: f}
}

// Keyed is a copy of p that carries its class key, for a caller that asks about the same pods
// many times (consolidation's questions): planning it, or a pod made from it by For, never
// hashes its constraints again.
func Keyed(p *Pod) *Pod {
	cp := *p
	cp.class = p.classKey()
	return &cp
}

// For is p's counterpart for another pod alike to it (Alike says so): it shares p's requests,
// Filter state and class key, so a question about a template's replicas computes each once.
// Nothing changes a Pod's requests.
func (p *Pod) For(other *corev1.Pod) *Pod {
	cp := *p
	cp.Pod, cp.info = other, nil
	return &cp
}

// classKey is the pod's class key, the one Keyed computed if any.
func (p *Pod) classKey() uint64 {
	if p.class != 0 {
		return p.class
	}
	return classKey(p)
}

// class is a set of pods with identical scheduling constraints (e.g. replicas of one template,
// whatever their requests): the Filter plugins give them the same verdict on a node whose
// allocatable is inflated (see inflate), so that verdict is asked once for the class, and the
// class's state follows the plan as it grows.
type class struct {
	key     uint64
	members []*member
	// minReq is the smallest request in every dimension; a node without that much room is
	// full for the class.
	minReq vec
	// compatible lists indexes into the planner's templates that accept the class, restricted
	// to the highest-weight pool that has any; compatibleSet is the same as a set.
	compatible []int
	// closedBy are the reasons of the closed pools whose templates accepted the class;
	// minValuesBy why pools with minValues could not meet them for it (see meetMinValues).
	closedBy, minValuesBy []string
	// minValuesHeld are the templates the class gave up for minValues that hold its smallest pod.
	minValuesHeld []int
	compatibleSet map[int]bool
	// tierSet is compatibleSet before a plan's excluded types left it: nodes are opened on
	// compatible templates only, but finished on the cheapest of the tier, so a plan that
	// excluded a type still gives its nodes that type when it is the cheapest that holds them.
	tierSet map[int]bool
	// reasons counts why templates were rejected, for the explanation.
	reasons map[string]int
	// interPod marks classes with required pod affinity or anti-affinity terms. They are placed
	// after the others: the scheduler skips the inter-pod check for a pod with no terms of its
	// own when no running pod has anti-affinity, so only the class that carries the terms can
	// keep them.
	interPod bool
	// spreadKeys are the topology keys of the class's hard topology spread constraints.
	spreadKeys []string
	// lpPacked marks the classes packByLP placed; fill places the others, steered by the mix.
	lpPacked bool

	// While the class is being placed: its state forked from the first pod's, how much of the
	// plan's placement log it has seen, the templates standing for each spread domain, and the
	// log length at which those domains were last refreshed.
	state         *FilterState
	synced        int
	forgotRemoved bool
	domains       []int
	refreshedAt   int
}

type member struct {
	pod   *Pod
	req   vec
	class *class
	// Once placed: the PodInfo the plugins saw, and the node.
	placed bool
	info   fwk.PodInfo
}

func (c *class) rep() *Pod { return c.members[0].pod }

// AlikeKey is equal for pods the Filter plugins and the packer see alike: the same scheduling
// constraints and the same requests. A template's replicas are alike.
type AlikeKey struct {
	class    uint64
	requests string
}

// Alike is p's AlikeKey. Alike pods have the same PreFilter state on one snapshot, so one pod's
// state serves them all.
func Alike(p *Pod) AlikeKey { return AlikeKey{p.classKey(), requestsKey(p.Requests)} }

// requestsKey is the requests in a canonical text form.
func requestsKey(rl corev1.ResourceList) string {
	names := make([]string, 0, len(rl))
	for name := range rl {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		q := rl[corev1.ResourceName(n)]
		b.WriteString(n)
		b.WriteByte('=')
		b.WriteString(q.String())
		b.WriteByte(';')
	}
	return b.String()
}

// classKey hashes everything the Filter plugins look at on the pod side, except the amounts of
// the requests: which resources a pod requests is part of the key, how much is not.
func classKey(p *Pod) uint64 {
	s := &p.Pod.Spec
	names := make([]string, 0, len(p.Requests))
	for name, q := range p.Requests {
		if !q.IsZero() {
			names = append(names, string(name))
		}
	}
	sort.Strings(names)
	b, _ := json.Marshal(struct {
		Namespace      string
		Labels         map[string]string
		Resources      []string
		NodeSelector   map[string]string
		Affinity       *corev1.Affinity
		Tolerations    []corev1.Toleration
		Spread         []corev1.TopologySpreadConstraint
		Volumes        []corev1.Volume
		Ports          []corev1.ContainerPort
		NodeName       string
		PriorityClass  string
		ResourceClaims []corev1.PodResourceClaim
	}{p.Pod.Namespace, p.Pod.Labels, names, s.NodeSelector, s.Affinity, s.Tolerations, s.TopologySpreadConstraints, s.Volumes, hostPorts(s), s.NodeName, s.PriorityClassName, s.ResourceClaims})
	h := fnv.New64a()
	_, _ = h.Write(b)
	return h.Sum64()
}

func hostPorts(s *corev1.PodSpec) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			for _, p := range cs[i].Ports {
				if p.HostPort != 0 {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

func hasInterPodTerms(p *corev1.Pod) bool {
	a := p.Spec.Affinity
	if a == nil {
		return false
	}
	return a.PodAffinity != nil && len(a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 ||
		a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0
}

func hardSpreadKeys(p *corev1.Pod) []string {
	var keys []string
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			keys = append(keys, c.TopologyKey)
		}
	}
	return keys
}
