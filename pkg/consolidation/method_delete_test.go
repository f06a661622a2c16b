package consolidation

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestDeleteMethod(t *testing.T) {
	w := newWorld(t)
	w.run(t, []decisionCase{
		{name: "the most expensive node whose pods fit elsewhere", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge"), w.node("c", "m6g.xlarge")),
					pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"), w.pod("p3", "c", "1"))
			},
			want: "delete b (1 pods, 0 new)"},
		{name: "the expensive node's pods fit nowhere: the next one", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge")), pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "5"))
			},
			want: "delete a (1 pods, 0 new)"},
		{name: "pods that fit nowhere launch nothing here", budget: 5,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge")), pods(w.pod("p", "a", "1"))
			}},
		{name: "no budget", budget: 0,
			build: func(w *world) ([]*ownedNode, []*corev1.Pod) {
				return nodes(w.node("a", "m6g.xlarge"), w.node("b", "m6g.2xlarge")), pods(w.pod("p1", "a", "1"), w.pod("p2", "b", "1"))
			}},
	}, w.only(deleteMethod{}))
}

// Replace's rotation walks byPrice's order pass after pass, so nodes of one price keep one
// order whatever order the caches list them in.
func TestByPriceBreaksTiesByName(t *testing.T) {
	w := newWorld(t)
	c := func(name, typ string) *candidate { return &candidate{ownedNode: w.node(name, typ)} }
	got := byPrice([]*candidate{c("c", "m6g.xlarge"), c("a", "m6g.xlarge"), c("z", "m6g.2xlarge"), c("b", "m6g.xlarge")})
	var names []string
	for _, x := range got {
		names = append(names, x.node.Name)
	}
	if want := []string{"z", "a", "b", "c"}; !slices.Equal(names, want) {
		t.Errorf("byPrice order %v, want %v", names, want)
	}
}
