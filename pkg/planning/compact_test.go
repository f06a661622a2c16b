package planning

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCompactKeepsConstraints plans batches in which hostname anti-affinity forces nodes with
// room to spare, beside plain, zone-spread and zone-affinity pods that compact may move into that
// room, and pods it must not move (labelled like a hostname-spread workload, or kept away from
// the plain pods by their own anti-affinity). Every plan must pass the scheduler's real filters
// (verifyPlan), compaction must happen, and it must never make a plan dearer.
func TestCompactKeepsConstraints(t *testing.T) {
	fw := offline(t)
	pl := testPlanner(t)
	plain := &Planner{Templates: pl.Templates, noCompact: true}
	r := rand.New(rand.NewSource(3))
	moved := 0
	for b := 0; b < 60; b++ {
		fw.SetSnapshot(nil, nil)
		pods := compactBatch(r, b)
		for _, p := range pods {
			p.Filter = filterFor(t, p.Pod)
		}
		plan := pl.Plan(context.Background(), pods)
		verifyPlan(t, fw, b, pods, plan)
		if len(plan.Unschedulable) > 0 {
			t.Errorf("batch %d: %s unschedulable: %s", b, plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
		}
		moved += plan.moved
		fw.SetSnapshot(nil, nil)
		for _, p := range pods {
			p.Filter = filterFor(t, p.Pod)
		}
		if before := plain.Plan(context.Background(), pods); plan.PricePerHour() > before.PricePerHour()+1e-9 {
			t.Errorf("batch %d: compacted plan $%.4f/h dearer than without ($%.4f/h)", b, plan.PricePerHour(), before.PricePerHour())
		}
		if t.Failed() {
			t.Fatalf("batch %d failed; seed 3", b)
		}
	}
	if moved == 0 {
		t.Fatal("compact moved no pod: the batches do not exercise it")
	}
	t.Logf("%d pods moved", moved)
}

// compactBatch makes one batch: hostname anti-affinity pods (1–1.5 cpu), a hostname-spread
// workload, plain, zone-spread and zone-affinity pods (100m–500m), canaries labelled like the
// hostname-spread workload, and pods that keep away from the plain ones by hostname.
func compactBatch(r *rand.Rand, b int) []*Pod {
	var pods []*Pod
	add := func(app string, labels map[string]string, n int, cpuMin, cpuSpan int64, mutate func(*corev1.Pod)) {
		for i := 0; i < n; i++ {
			name := fmt.Sprintf("c%d-%s-%d-%d", b, app, len(labels), i)
			l := map[string]string{"app": app, "batch": fmt.Sprint(b)}
			for k, v := range labels {
				l[k] = v
			}
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: l},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(cpuMin+r.Int63n(cpuSpan), resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity((128+r.Int63n(1024))<<20, resource.BinarySI),
				}}}}},
			}
			if mutate != nil {
				mutate(p)
			}
			pods = append(pods, NewPod(p, nil))
		}
	}
	self := func(app string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": app, "batch": fmt.Sprint(b)}}
	}
	add("anti", nil, 2+r.Intn(6), 1000, 500, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self("anti")}}}}
	})
	add("hostspread", nil, r.Intn(3), 100, 400, func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self("hostspread")}}
	})
	add("plain", nil, 4+r.Intn(16), 100, 300, nil)
	add("zonespread", nil, r.Intn(6), 100, 400, func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self("zonespread")}}
	})
	add("zoneaffinity", nil, r.Intn(5), 100, 400, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: self("zoneaffinity")}}}}
	})
	// Counted by the hostname spread, though plain themselves.
	add("hostspread", map[string]string{"canary": "true"}, r.Intn(3), 100, 400, nil)
	add("awayfromplain", nil, r.Intn(3), 100, 400, func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self("plain")}}}}
	})
	return pods
}

// TestCompactLeavesWhatItMustNotMove: compact must not move a pod onto a node whose pods keep
// away from it, nor move a pod a hostname spread counts.
func TestCompactLeavesWhatItMustNotMove(t *testing.T) {
	fw := offline(t)
	pl := testPlanner(t)
	mk := func(name, cpu string, labels map[string]string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(name), Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	awayFrom := func(app string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}}}}
		}
	}
	spread := func(p *corev1.Pod) {
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}}}}
	}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
	}{
		{"pods that keep away from it", []*corev1.Pod{
			mk("plain", "200m", map[string]string{"app": "plain"}, nil),
			mk("away", "1200m", map[string]string{"app": "away"}, awayFrom("plain")),
		}},
		{"a pod a hostname spread counts", []*corev1.Pod{
			mk("big", "1500m", map[string]string{"app": "big"}, nil),
			mk("canary", "200m", map[string]string{"app": "spread"}, nil),
			mk("spread-0", "1200m", map[string]string{"app": "spread"}, spread),
			mk("spread-1", "1200m", map[string]string{"app": "spread"}, spread),
			mk("spread-2", "1200m", map[string]string{"app": "spread"}, spread),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fw.SetSnapshot(nil, nil)
			var pods []*Pod
			for _, p := range tc.pods {
				pods = append(pods, NewPod(p, filterFor(t, p)))
			}
			plan := pl.Plan(context.Background(), pods)
			verifyPlan(t, fw, 0, pods, plan)
			if len(plan.Unschedulable) > 0 {
				t.Errorf("%s unschedulable: %s", plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
			}
		})
	}
}
