package provisioning

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// The claims with the most pods waiting launch first, those kept only for pods still to come
// last; equals keep the plan's order, and claims not recorded are left out.
func TestWaitedForFirst(t *testing.T) {
	claim := func(name string, pods int) *v1alpha1.Claim {
		c := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for range pods {
			c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{})
		}
		return c
	}
	got := waitedForFirst([]*v1alpha1.Claim{claim("expected-1", 0), claim("two", 2), nil, claim("one-a", 1), claim("expected-2", 0), claim("one-b", 1)})
	var names []string
	for _, c := range got {
		names = append(names, c.Name)
	}
	if want := []string{"two", "one-a", "one-b", "expected-1", "expected-2"}; !slices.Equal(names, want) {
		t.Errorf("launch order %v, want %v", names, want)
	}
}
