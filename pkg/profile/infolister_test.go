package profile

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// TestInfoListerAnswersAsTheSnapshot: over the same nodes and pods, the lister of a caller's
// NodeInfos answers every question the plugins ask as kube-scheduler's snapshot does, and sees
// a pod the caller adds afterwards.
func TestInfoListerAnswersAsTheSnapshot(t *testing.T) {
	node := func(name string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}}}
	}
	pod := func(name, nodeName string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{"app": name}},
			Spec: corev1.PodSpec{NodeName: nodeName}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	term := []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}
	affinity := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}
	}
	antiAffinity := func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: term}}
	}
	claim := func(p *corev1.Pod) {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-0"}}}}
	}
	nodes := []*corev1.Node{node("a"), node("b"), node("c")}
	pods := []*corev1.Pod{pod("plain", "a", nil), pod("near", "b", affinity), pod("apart", "c", antiAffinity), pod("stateful", "a", claim)}

	snapshot := cache.NewSnapshot(pods, nodes)
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(n)
		for _, p := range pods {
			if p.Spec.NodeName == n.Name {
				ni.AddPod(p)
			}
		}
		infos[i] = ni
	}
	lister := newInfoLister(infos)

	names := func(list []fwk.NodeInfo, err error) []string {
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ni := range list {
			out = append(out, ni.Node().Name)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		question       string
		lister, cached []string
	}{
		{"List", names(lister.List()), names(snapshot.NodeInfos().List())},
		{"HavePodsWithAffinityList", names(lister.HavePodsWithAffinityList()), names(snapshot.NodeInfos().HavePodsWithAffinityList())},
		{"HavePodsWithRequiredAntiAffinityList", names(lister.HavePodsWithRequiredAntiAffinityList()),
			names(snapshot.NodeInfos().HavePodsWithRequiredAntiAffinityList())},
	} {
		if !slices.Equal(tc.lister, tc.cached) || len(tc.cached) == 0 {
			t.Errorf("%s: lister %v, snapshot %v", tc.question, tc.lister, tc.cached)
		}
	}
	for _, name := range []string{"a", "gone"} {
		got, gotErr := lister.Get(name)
		want, wantErr := snapshot.NodeInfos().Get(name)
		if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() ||
			gotErr == nil && got.Node().Name != want.Node().Name {
			t.Errorf("Get(%q): lister %v %v, snapshot %v %v", name, got, gotErr, want, wantErr)
		}
	}
	for _, key := range []string{"ns/data-0", "ns/data-1"} {
		if got, want := lister.IsPVCUsedByPods(key), snapshot.StorageInfos().IsPVCUsedByPods(key); got != want {
			t.Errorf("IsPVCUsedByPods(%q): lister %v, snapshot %v", key, got, want)
		}
	}

	if slices.Contains(names(lister.HavePodsWithAffinityList()), "a") {
		t.Fatal("a runs no pod with affinity yet")
	}
	infos[0].(*framework.NodeInfo).AddPod(pod("later", "a", affinity))
	if got := names(lister.HavePodsWithAffinityList()); !slices.Contains(got, "a") {
		t.Errorf("after a pod with affinity is added to a: nodes with affinity pods %v, want a among them", got)
	}
}
