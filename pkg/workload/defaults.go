package workload

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	resourcehelper "k8s.io/component-helpers/resource"
)

// defaultPod applies the API server's defaults that bear on placement, as creating the pod
// would (k8s.io/kubernetes/pkg/apis/core/v1 SetDefaults_Pod and SetDefaults_PodSpec): requests
// default to limits, per container and at pod level; host-network pods' container ports are
// host ports; ports are TCP; and the pod spec's scalar defaults (scheduler name, restart and DNS
// policy, grace period). The rest of the API server's defaulting and all admission plugins
// (LimitRange, RuntimeClass overhead, priority classes, ...) are not applied.
func defaultPod(p *corev1.Pod) {
	s := &p.Spec
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
	if s.EnableServiceLinks == nil {
		s.EnableServiceLinks = ptr(corev1.DefaultEnableServiceLinks)
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			if c.Resources.Limits != nil {
				if c.Resources.Requests == nil {
					c.Resources.Requests = corev1.ResourceList{}
				}
				for name, q := range c.Resources.Limits {
					if _, ok := c.Resources.Requests[name]; !ok {
						c.Resources.Requests[name] = q.DeepCopy()
					}
				}
			}
			for j := range c.Ports {
				port := &c.Ports[j]
				if port.Protocol == "" {
					port.Protocol = corev1.ProtocolTCP
				}
				if s.HostNetwork && port.HostPort == 0 {
					port.HostPort = port.ContainerPort
				}
			}
		}
	}
	defaultHugePagePodLimits(p)
	defaultPodRequests(p)
}

func isHugePages(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// defaultHugePagePodLimits copies the API server's: when pod-level resources are partly given,
// pod-level hugepages limits default to the containers' total.
func defaultHugePagePodLimits(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || (len(r.Limits) == 0 && len(r.Requests) == 0) {
		return
	}
	lims := r.Limits
	if lims == nil {
		lims = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerLimits(p, resourcehelper.PodResourcesOptions{}) {
		if !resourcehelper.IsSupportedPodLevelResource(name) || !isHugePages(name) {
			continue
		}
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if _, ok := lims[name]; !ok {
			lims[name] = q.DeepCopy()
		}
	}
	if len(lims) > 0 {
		r.Limits = lims
	}
}

// defaultPodRequests copies the API server's: when pod-level limits are given, pod-level
// requests default to the containers' total request (CPU, memory) or else to the pod's limit.
func defaultPodRequests(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || len(r.Limits) == 0 {
		return
	}
	reqs := r.Requests
	if reqs == nil {
		reqs = corev1.ResourceList{}
	}
	for name, q := range resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{}) {
		if _, ok := reqs[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) && !isHugePages(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := reqs[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			reqs[name] = q.DeepCopy()
		}
	}
	if len(reqs) > 0 {
		r.Requests = reqs
	}
}

// addDaemonTolerations adds the tolerations the DaemonSet controller gives its pods
// (k8s.io/kubernetes/pkg/controller/daemon/util AddOrUpdateDaemonPodTolerations).
func addDaemonTolerations(s *corev1.PodSpec) {
	add := func(key string, effect corev1.TaintEffect) {
		t := corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
		for i := range s.Tolerations {
			if t.MatchToleration(&s.Tolerations[i]) {
				if !equality.Semantic.DeepEqual(t, s.Tolerations[i]) {
					s.Tolerations[i] = t // drops tolerationSeconds: never evicted
				}
				return
			}
		}
		s.Tolerations = append(s.Tolerations, t)
	}
	add(corev1.TaintNodeNotReady, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeUnreachable, corev1.TaintEffectNoExecute)
	add(corev1.TaintNodeDiskPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeMemoryPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodePIDPressure, corev1.TaintEffectNoSchedule)
	add(corev1.TaintNodeUnschedulable, corev1.TaintEffectNoSchedule)
	if s.HostNetwork {
		add(corev1.TaintNodeNetworkUnavailable, corev1.TaintEffectNoSchedule)
	}
}
