package consolidation

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tailor-eks/tailor/apis/config"
)

func TestAllowed(t *testing.T) {
	monday9 := time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC)
	sunday := time.Date(2026, 11, 29, 9, 30, 0, 0, time.UTC)
	workHoursFrozen := config.Budget{Nodes: "0", Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}}
	tests := []struct {
		name    string
		budgets []config.Budget
		nodes   int
		now     time.Time
		want    int
	}{
		{"count", []config.Budget{{Nodes: "2"}}, 10, sunday, 2},
		{"percent rounds up", []config.Budget{{Nodes: "10%"}}, 3, sunday, 1},
		{"zero percent blocks", []config.Budget{{Nodes: "0%"}}, 30, sunday, 0},
		{"strictest wins", []config.Budget{{Nodes: "50%"}, {Nodes: "3"}}, 20, sunday, 3},
		{"window open", []config.Budget{{Nodes: "5"}, workHoursFrozen}, 20, monday9, 0},
		{"window closed", []config.Budget{{Nodes: "5"}, workHoursFrozen}, 20, sunday, 5},
		{"window ended", []config.Budget{{Nodes: "5"}, workHoursFrozen}, 20, monday9.Add(9 * time.Hour), 5},
		{"no budgets", nil, 7, sunday, 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := allowed(&config.Disruption{Budgets: tc.budgets}, tc.nodes, tc.now); got != tc.want {
				t.Errorf("allowed = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestJudge(t *testing.T) {
	judgedAt := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptrTrue()}}
	}
	pod := func(mutate func(p *corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"app": "a"}, OwnerReferences: owned("ReplicaSet")}}
		mutate(p)
		return p
	}
	pdb := func(allowed int32) *policyv1.PodDisruptionBudget {
		zero := intstr.FromInt32(0)
		return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b"},
			Spec:   policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}},
			Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed}}
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		pdbs []*policyv1.PodDisruptionBudget
		want verdict
	}{
		{"replica is evicted", pod(func(*corev1.Pod) {}), nil, evict},
		{"daemon pod stays", pod(func(p *corev1.Pod) { p.OwnerReferences = owned("DaemonSet") }), nil, skip},
		{"mirror pod stays", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "x"} }), nil, skip},
		{"finished pod stays", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), nil, skip},
		{"do-not-disrupt blocks", pod(func(p *corev1.Pod) { p.Annotations = map[string]string{"tailor.dev/do-not-disrupt": "true"} }), nil, block},
		{"bare pod blocks", pod(func(p *corev1.Pod) { p.OwnerReferences = nil }), nil, block},
		{"gang member blocks", pod(func(p *corev1.Pod) { p.Labels["scheduling.x-k8s.io/pod-group"] = "train" }), nil, block},
		{"emptyDir blocks", pod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), nil, block},
		{"emptyDir marked safe", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
			p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), nil, evict},
		{"memory emptyDir is fine", pod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory}}}}
		}), nil, evict},
		{"PDB at zero blocks", pod(func(*corev1.Pod) {}), []*policyv1.PodDisruptionBudget{pdb(0)}, block},
		{"PDB with room", pod(func(*corev1.Pod) {}), []*policyv1.PodDisruptionBudget{pdb(1)}, evict},
		{"terminating a while is waited for", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: judgedAt.Add(-stuckTerminatingAfter + time.Second)}
		}), nil, evict},
		{"terminating past the limit stays", pod(func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: judgedAt.Add(-stuckTerminatingAfter - time.Second)}
		}), nil, skip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got, why := judge(tc.pod, ruleInput{pdbs: tc.pdbs, now: judgedAt, gangs: true}); got != tc.want || (got == block) != (why != "") {
				t.Errorf("judge = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

// Without Coscheduling in the profile, a pod-group label makes no gang: the pod is evicted as any.
func TestJudgeGangsOnlyWithCoscheduling(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"scheduling.x-k8s.io/pod-group": "train"},
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "x", Controller: ptrTrue()}}}}
	if v, why := judge(p, ruleInput{now: time.Now()}); v != evict {
		t.Errorf("judge = %v (%q), want evict", v, why)
	}
}

func ptrTrue() *bool { b := true; return &b }
