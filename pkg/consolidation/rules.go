package consolidation

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A pod on a node being drained is one of three things: left alone (DaemonSet and mirror pods,
// which belong to the node, and pods that have finished), evicted, or a reason the node may not be
// disrupted at all. Each rule below is one such judgement, as Cluster Autoscaler's drainability
// rules are; the first that speaks decides.

type verdict int

const (
	evict verdict = iota
	skip
	block
)

// ruleInput is what a rule may look at besides the pod: the cluster's PodDisruptionBudgets (nil:
// budgets are not asked), the time of the judgement, and whether the profile runs Coscheduling
// (gangs: its PodGroups' pods are gangs).
type ruleInput struct {
	pdbs  []*policyv1.PodDisruptionBudget
	now   time.Time
	gangs bool
}

type podRule func(p *corev1.Pod, in ruleInput) (verdict, string)

var podRules = []podRule{finished, stuckTerminating, mirror, daemonSet, doNotDisrupt, gangMember, bare, localStorage, pdbAllowsNone}

// judge applies the rules to one pod.
func judge(p *corev1.Pod, in ruleInput) (verdict, string) {
	for _, r := range podRules {
		if v, why := r(p, in); v != evict {
			return v, why
		}
	}
	return evict, ""
}

func finished(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return skip, ""
	}
	return evict, ""
}

// stuckTerminatingAfter is how long past its deletion deadline (which includes its grace period)
// a terminating pod may linger before a drain stops waiting for it: its kubelet is gone or
// wedged, and the node going away cannot hurt it further.
const stuckTerminatingAfter = time.Minute

func stuckTerminating(p *corev1.Pod, in ruleInput) (verdict, string) {
	if p.DeletionTimestamp != nil && in.now.Sub(p.DeletionTimestamp.Time) > stuckTerminatingAfter {
		return skip, ""
	}
	return evict, ""
}

func mirror(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if _, ok := p.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return skip, ""
	}
	return evict, ""
}

func daemonSet(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if c := metav1.GetControllerOf(p); c != nil && c.Kind == "DaemonSet" {
		return skip, ""
	}
	return evict, ""
}

func doNotDisrupt(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if p.Annotations[v1alpha1.AnnotationDoNotDisrupt] == "true" {
		return block, fmt.Sprintf("pod %s/%s is annotated %s", p.Namespace, p.Name, v1alpha1.AnnotationDoNotDisrupt)
	}
	return evict, ""
}

// gangMember keeps a gang's pods (a Coscheduling PodGroup's) where they run. Evicted, a member
// leaves its siblings short of their gang (a training job loses its step), and its new pod waits
// at Permit for siblings that are not coming, holding a node; moving the whole gang restarts every
// member, a disruption nobody asked of a consolidation. Tailor moves no running gang; EC2's
// interruptions, which no rule stops, excepted.
func gangMember(p *corev1.Pod, in ruleInput) (verdict, string) {
	if g := p.Labels[schedv1alpha1.PodGroupLabel]; g != "" && in.gangs {
		return block, fmt.Sprintf("pod %s/%s belongs to gang %s (a Coscheduling PodGroup), which Tailor does not split or restart", p.Namespace, p.Name, g)
	}
	return evict, ""
}

func bare(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if metav1.GetControllerOf(p) == nil {
		return block, fmt.Sprintf("pod %s/%s has no controller to recreate it", p.Namespace, p.Name)
	}
	return evict, ""
}

func localStorage(p *corev1.Pod, _ ruleInput) (verdict, string) {
	if p.Annotations[v1alpha1.AnnotationSafeToEvict] == "true" || p.Annotations["cluster-autoscaler.kubernetes.io/safe-to-evict"] == "true" {
		return evict, ""
	}
	for _, v := range p.Spec.Volumes {
		if v.HostPath != nil || v.EmptyDir != nil && v.EmptyDir.Medium != corev1.StorageMediumMemory {
			return block, fmt.Sprintf("pod %s/%s keeps data in local volume %s (annotate it %s: \"true\" if that is fine to lose)", p.Namespace, p.Name, v.Name, v1alpha1.AnnotationSafeToEvict)
		}
	}
	return evict, ""
}

func pdbAllowsNone(p *corev1.Pod, in ruleInput) (verdict, string) {
	for _, pdb := range in.pdbs {
		if pdb.Namespace != p.Namespace || pdb.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
			continue
		}
		if pdb.Status.DisruptionsAllowed < 1 {
			return block, fmt.Sprintf("PodDisruptionBudget %s/%s allows no disruption of pod %s now", pdb.Namespace, pdb.Name, p.Name)
		}
	}
	return evict, ""
}
