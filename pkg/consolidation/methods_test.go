package consolidation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// Which methods want a node depends only on what the node is; the methods of different steps
// never want the same node (but delete, merge and replace, which share theirs).
func TestMethodsWant(t *testing.T) {
	w := newWorld(t)
	interrupted := annotated(v1alpha1.AnnotationInterrupted, InterruptionSpot)
	const underutilized = "delete merge replace"
	for _, tc := range []struct {
		name string
		pool func(w *world)
		node *ownedNode
		pods []*corev1.Pod
		// sinceScaleUp is how long ago the cluster last scaled up (0: long ago).
		sinceScaleUp time.Duration
		wants        string
	}{
		{name: "idle and empty", node: w.node("a", "m6g.xlarge"), pods: pods(w.pod("ds", "a", "1", ownedBy("DaemonSet"))), wants: "empty"},
		{name: "busy and empty", node: w.node("a", "m6g.xlarge", busy)},
		{name: "drifted and empty", node: w.node("a", "m6g.xlarge", drifted), wants: "renew"},
		{name: "expired, busy, with a pod", pool: expiring, node: w.node("a", "m6g.xlarge", busy), pods: pods(w.pod("p", "a", "1")), wants: "renew"},
		{name: "drifted and interrupted", node: w.node("a", "m6g.xlarge", drifted, interrupted), wants: "interruption"},
		{name: "interrupted and busy", node: w.node("a", "m6g.xlarge", busy, interrupted), pods: pods(w.pod("p", "a", "1")), wants: "interruption"},
		{name: "idle with a pod", node: w.node("a", "m6g.xlarge"), pods: pods(w.pod("p", "a", "1")), wants: underutilized},
		{name: "idle with a pod, pool consolidated when empty", pool: whenEmpty, node: w.node("a", "m6g.xlarge"), pods: pods(w.pod("p", "a", "1"))},
		{name: "idle with a pod, just after a scale-up", node: w.node("a", "m6g.xlarge"), pods: pods(w.pod("p", "a", "1")), sinceScaleUp: time.Second},
		{name: "idle with a pod, consolidateAfter past a scale-up", node: w.node("a", "m6g.xlarge"), pods: pods(w.pod("p", "a", "1")), sinceScaleUp: time.Minute, wants: underutilized},
		{name: "idle and empty, just after a scale-up", node: w.node("a", "m6g.xlarge"), sinceScaleUp: time.Second, wants: "empty"},
		{name: "busy with a pod", node: w.node("a", "m6g.xlarge", createdAgo(time.Minute), busy), pods: pods(w.pod("p", "a", "1"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := *w.pool
			defer func() { *w.pool = saved }()
			if tc.pool != nil {
				tc.pool(w)
			}
			s := w.snapshot(1, nodes(tc.node), tc.pods...)
			if tc.sinceScaleUp > 0 {
				s.scaledUpAt = w.now.Add(-tc.sinceScaleUp)
			}
			cs, _ := candidates(s)
			var got []string
			for _, step := range steps {
				for _, m := range step {
					if len(wanted(m, s, cs)) > 0 {
						got = append(got, strings.TrimSuffix(strings.TrimPrefix(fmt.Sprintf("%T", m), "consolidation."), "Method"))
					}
				}
			}
			if g := strings.Join(got, " "); g != tc.wants {
				t.Errorf("wanted by %q, want %q", g, tc.wants)
			}
		})
	}
}
