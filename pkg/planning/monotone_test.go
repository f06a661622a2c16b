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

// TestMoreTypesNeverDearer plans random workloads over a random set of the real catalog's types
// and over a superset of it: the superset's plan must never cost more. The planner is a
// heuristic, so this is a statement about these seeded trials, not a proof; what makes it hold
// is repack, which packs the nodes of a plan again exactly wherever the pods are few enough
// (measured: 0 of 200 here, and 0 of 1000 with seeds 11 and 12; before repack 1 of 200, +0.15%,
// and 5 of 1000, worst +6.2%; 4 of 200 and +4.9% before nodes were finished on excluded types,
// gathered and transferred between; 9 of 60 with a worst of +1030% before Plan kept the
// cheapest of several plans and merged nodes).
func TestMoreTypesNeverDearer(t *testing.T) {
	all := everyTypeTemplates(t)
	var names []string
	seen := map[string]bool{}
	for _, tm := range all {
		if !seen[tm.Type.Name] {
			seen[tm.Type.Name] = true
			names = append(names, tm.Type.Name)
		}
	}
	only := func(set map[string]bool) []*Template {
		var out []*Template
		for _, tm := range all {
			if set[tm.Type.Name] {
				out = append(out, tm)
			}
		}
		return out
	}
	r := rand.New(rand.NewSource(11))
	dearer, worst := 0, 0.0
	const trials = 200
	for trial := 0; trial < trials; trial++ {
		sub := map[string]bool{}
		for len(sub) < 10+r.Intn(30) {
			sub[names[r.Intn(len(names))]] = true
		}
		super := map[string]bool{}
		for n := range sub {
			super[n] = true
		}
		for len(super) < len(sub)+5+r.Intn(60) {
			super[names[r.Intn(len(names))]] = true
		}
		pods := randomMix(t, r, trial)
		small := (&Planner{Templates: only(sub)}).Plan(context.Background(), pods)
		offline(t).SetSnapshot(nil, nil)
		for _, p := range pods {
			p.Filter = filterFor(t, p.Pod)
		}
		big := (&Planner{Templates: only(super)}).Plan(context.Background(), pods)
		if len(big.Unschedulable) > len(small.Unschedulable) {
			t.Errorf("trial %d: %d pods unschedulable with more types, %d with fewer", trial, len(big.Unschedulable), len(small.Unschedulable))
		}
		if len(small.Unschedulable) > 0 {
			continue
		}
		if over := big.PricePerHour()/small.PricePerHour() - 1; over > 1e-9 {
			dearer++
			worst = max(worst, over)
			t.Logf("trial %d: $%.4f/h with %d types, $%.4f/h with %d of them (+%.1f%%)", trial, big.PricePerHour(), len(super), small.PricePerHour(), len(sub), 100*over)
		}
	}
	t.Logf("%d of %d trials dearer with more types, worst +%.2f%%", dearer, trials, 100*worst)
	if dearer > 0 {
		t.Errorf("%d of %d trials dearer with more types, worst +%.2f%%", dearer, trials, 100*worst)
	}
}

// randomMix makes 1–4 workloads of 1–40 pods, each of one shape (cpu 250m–16, memory per cpu
// 1–8 GiB), with their PreFilter states.
func randomMix(t *testing.T, r *rand.Rand, trial int) []*Pod {
	offline(t).SetSnapshot(nil, nil)
	var pods []*Pod
	for g := 0; g < 1+r.Intn(4); g++ {
		cpu := []int64{250, 500, 1000, 2000, 4000, 8000, 16000}[r.Intn(7)]
		mem := cpu * (1 + r.Int63n(8)) << 20 * 1024 / 1000
		app := fmt.Sprintf("t%d-g%d", trial, g)
		for i := 0; i < 1+r.Intn(40); i++ {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("%s-%d", app, i), UID: types.UID(fmt.Sprintf("%s-%d", app, i)), Labels: map[string]string{"app": app}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: *resource.NewMilliQuantity(cpu, resource.DecimalSI), corev1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
				}}}}},
			}
			pods = append(pods, NewPod(p, filterFor(t, p)))
		}
	}
	return pods
}
