package consolidation

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A node is awaited while a pod its claim was launched for is still pending, for as long as a
// scale-up lasts; a claim without a node yet, or whose pods all went elsewhere, marks none.
func TestAwaitedNodes(t *testing.T) {
	claim := func(name, node string, pods ...string) *v1alpha1.Claim {
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: v1alpha1.ClaimStatus{NodeName: node}}
		for _, p := range pods {
			cl.Spec.Pods = append(cl.Spec.Pods, v1alpha1.PodRef{Namespace: "ns", Name: p, UID: p})
		}
		return cl
	}
	now := time.Now()
	pending := func(names ...string) []*corev1.Pod {
		var out []*corev1.Pod
		for _, n := range names {
			out = append(out, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: n, UID: types.UID(n),
				CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}})
		}
		return out
	}
	old := pending("web-1")
	old[0].CreationTimestamp = metav1.NewTime(now.Add(-recentPending - time.Second))
	claims := []*v1alpha1.Claim{claim("a", "node-a", "web-1", "web-2"), claim("b", "node-b", "web-3"), claim("c", "", "web-4")}
	for _, tt := range []struct {
		name    string
		pending []*corev1.Pod
		want    []string
	}{
		{"nothing pending", nil, nil},
		{"one of a's pods pending", pending("web-2"), []string{"node-a"}},
		{"pods of a and b pending", pending("web-1", "web-3"), []string{"node-a", "node-b"}},
		{"a pod of a claim without a node", pending("web-4"), nil},
		{"a pod no claim was launched for", pending("other"), nil},
		{"a pod pending longer than a scale-up lasts", old, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for n := range awaitedNodes(claims, tt.pending, now) {
				got = append(got, n)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("awaited nodes %v, want %v", got, tt.want)
			}
		})
	}
}
