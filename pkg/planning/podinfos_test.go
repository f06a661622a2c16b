package planning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPodInfosKeepsAnAskedPodAcrossRotates: a pod object asked for in every round keeps its
// PodInfo; one not asked for during a round is made anew after the next Rotate; another object
// of the same pod (an update) gets its own.
func TestPodInfosKeepsAnAskedPodAcrossRotates(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}
	}
	kept, dropped := pod("kept"), pod("dropped")
	infos := NewPodInfos()
	first, firstDropped := infos.Get(kept), infos.Get(dropped)
	if first == nil || first.Pod != kept {
		t.Fatalf("Get(kept) = %v, want a PodInfo of the object", first)
	}
	if infos.Get(kept) != first {
		t.Errorf("asked twice in a round: two PodInfos")
	}
	infos.Rotate()
	if infos.Get(kept) != first {
		t.Errorf("asked in the next round: a new PodInfo")
	}
	infos.Rotate() // dropped was not asked for during the round that ends
	infos.Rotate()
	if infos.Get(kept) == first {
		t.Errorf("kept was not asked for during a whole round, yet its PodInfo stayed")
	}
	if infos.Get(dropped) == firstDropped {
		t.Errorf("dropped was not asked for during a whole round, yet its PodInfo stayed")
	}
	if updated := kept.DeepCopy(); infos.Get(updated).Pod != updated {
		t.Errorf("another object of the same pod shares the first object's PodInfo")
	}
}

// TestNewClusterPlacesThePodInfosGiven: a Cluster built with PodInfos holds the PodInfo they
// hand out, so the questions that move a pod place the very PodInfo its node holds.
func TestNewClusterPlacesThePodInfosGiven(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "p"}, Spec: corev1.PodSpec{NodeName: "a"}}
	infos := NewPodInfos()
	cl := NewCluster([]*corev1.Node{node}, []*corev1.Pod{p}, nil, infos)
	got := cl.NodeInfos()[0].GetPods()
	if len(got) != 1 || got[0] != infos.Get(p) {
		t.Errorf("the node holds %v, want the PodInfos' %v", got, infos.Get(p))
	}
}
