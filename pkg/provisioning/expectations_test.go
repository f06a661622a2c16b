package provisioning

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// listString is a resource list as "name=quantity" in name order.
func listString(l corev1.ResourceList) string {
	names := make([]string, 0, len(l))
	for n := range l {
		names = append(names, string(n))
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		q := l[corev1.ResourceName(n)]
		parts = append(parts, n+"="+q.String())
	}
	return strings.Join(parts, " ")
}

func TestExpectations(t *testing.T) {
	now := time.Now()
	clk := clocktesting.NewFakePassiveClock(now)
	e := &Expectations{Clock: clk}
	claim := func(name string, made time.Time, expected ...v1alpha1.ExpectedPods) *v1alpha1.Claim {
		return &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(made)}, Spec: v1alpha1.ClaimSpec{ExpectedPods: expected}}
	}
	web := v1alpha1.ExpectedPods{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "web", Count: 3,
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("512Mi")}}
	cache := v1alpha1.ExpectedPods{Kind: "ReplicaSet", Namespace: "ns", Name: "cache", UID: "cache", Count: 1,
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("8Gi")}}
	if e.Any() {
		t.Fatal("no claim yet, but Any")
	}
	e.Follow(claim("for-web", now, web))
	e.Follow(claim("for-both", now, web, cache))
	e.Follow(claim("old", now.Add(-time.Hour), cache))
	e.Follow(claim("plain", now))
	if !e.Any() {
		t.Fatal("claims with expected pods, but not Any")
	}
	on := func(counts map[types.UID]int) func(types.UID) int { return func(w types.UID) int { return counts[w] } }
	tests := []struct {
		name     string
		claim    string
		workload types.UID
		onNode   map[types.UID]int
		want     int64
	}{
		{"a pod of the workload planned here", "for-web", "web", nil, 100},
		{"the workload's pods are all here", "for-web", "web", map[types.UID]int{"web": 3}, 50},
		{"another workload's pod on a node planned for web", "for-web", "api", nil, 0},
		{"a bare pod on a node planned for web", "for-web", "", nil, 0},
		{"cache's pod where web and cache are planned", "for-both", "cache", map[types.UID]int{"web": 3}, 100},
		{"web's pod where only cache still has room", "for-both", "web", map[types.UID]int{"web": 3}, 0},
		{"expectations too old to stand", "old", "api", nil, 50},
		{"a claim without expectations", "plain", "api", nil, 50},
		{"a node that is no claim's", "", "web", nil, 50},
	}
	for _, tc := range tests {
		if got := e.Preference(tc.claim, tc.workload, on(tc.onNode), 100); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	reserved := []struct {
		name     string
		claim    string
		workload types.UID
		onNode   map[types.UID]int
		want     string
	}{
		{"web's own room is not reserved from it", "for-web", "web", nil, ""},
		{"web's room still to come, kept from others", "for-web", "api", map[types.UID]int{"web": 1}, "cpu=500m memory=1Gi pods=2"},
		{"room for web and cache", "for-both", "api", nil, "cpu=1750m memory=9728Mi pods=4"},
		{"web's pods all here: cache's room only", "for-both", "web", map[types.UID]int{"web": 3}, "cpu=1 memory=8Gi pods=1"},
		{"a claim without expectations", "plain", "api", nil, ""},
		{"expectations too old to stand", "old", "api", nil, ""},
	}
	for _, tc := range reserved {
		if got := listString(e.Reserved(tc.claim, tc.workload, on(tc.onNode))); got != tc.want {
			t.Errorf("reserved, %s: %q, want %q", tc.name, got, tc.want)
		}
	}
	// A workload with nothing left to place keeps no room.
	e.Waiting = func(x v1alpha1.ExpectedPods) bool { return x.UID != "web" }
	if got := listString(e.Reserved("for-both", "api", on(nil))); got != "cpu=1 memory=8Gi pods=1" {
		t.Errorf("web placed all its pods, yet %q is reserved", got)
	}
	e.Forget("for-web")
	e.Follow(claim("for-both", now))
	e.Forget("old")
	if e.Any() {
		t.Errorf("every claim forgotten or without expectations, but Any")
	}
}

// Another workload's pod does not fit into the room kept on a node for web's pods still to come;
// web's own pods and DaemonSet pods do.
func TestExpectationsRefusal(t *testing.T) {
	e := &Expectations{}
	e.Follow(&v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "for-web", CreationTimestamp: metav1.Now()}, Spec: v1alpha1.ClaimSpec{
		ExpectedPods: []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "web", Count: 6,
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}})
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha1.LabelClaim: "for-web"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"),
			corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("58")}}}
	pod := func(name, kind, owner, cpu string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}
		}
		return p
	}
	// Two of web's six pods run: four still to come keep 2 cpu of the 3 left.
	ni := framework.NewNodeInfo(pod("web-1", "ReplicaSet", "web", "500m"), pod("web-2", "ReplicaSet", "web", "500m"))
	ni.SetNode(node)
	tests := []struct {
		pod  *corev1.Pod
		want string
	}{
		{pod("api-1", "ReplicaSet", "api", "1"), ""},
		{pod("api-2", "ReplicaSet", "api", "1500m"), "the node's free cpu is kept for pods still to come it was launched for"},
		{pod("web-3", "ReplicaSet", "web", "500m"), ""},
		{pod("agent", "DaemonSet", "agent", "2"), ""},
	}
	for _, tc := range tests {
		if got := e.Refusal(tc.pod, ni); got != tc.want {
			t.Errorf("%s: refusal %q, want %q", tc.pod.Name, got, tc.want)
		}
	}
	if got := e.Score(pod("web-3", "ReplicaSet", "web", "500m"), ni, 100); got != 100 {
		t.Errorf("web's pod scores %d on its node, want 100", got)
	}
}

// A node keeps the room its plan counted for a DaemonSet's pod until the pod is there: the
// DaemonSet controller creates it only once the node has registered, after the scheduler may
// have filled the node.
func TestExpectationsKeepRoomForDaemons(t *testing.T) {
	agent := v1alpha1.DaemonPod{Namespace: "ns", Name: "agent", UID: "agent",
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{v1alpha1.LabelClaim: "c"}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1930m"),
			corev1.ResourceMemory: resource.MustParse("3114Mi"), corev1.ResourcePods: resource.MustParse("29")}}}
	pod := func(name, kind, owner, memory string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
			OwnerReferences: []metav1.OwnerReference{{Kind: kind, Name: owner, UID: types.UID(owner), Controller: ptr.To(true)}}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse(memory)}}}}}}
		return p
	}
	// Five of web's pods fill 2560Mi of 3114Mi.
	var webs []*corev1.Pod
	for i := range 5 {
		webs = append(webs, pod(fmt.Sprintf("web-%d", i), "ReplicaSet", "web", "512Mi"))
	}
	tests := []struct {
		name      string
		withAgent bool
		dsGone    bool
		pod       *corev1.Pod
		want      string
	}{
		{"another web pod would take the agent's room", false, false, pod("web-5", "ReplicaSet", "web", "512Mi"), "the node's free memory is kept for pods still to come it was launched for"},
		{"a smaller pod leaves the agent its room", false, false, pod("small", "ReplicaSet", "small", "256Mi"), ""},
		{"the agent's own pod", false, false, pod("agent-x", "DaemonSet", "agent", "128Mi"), ""},
		{"the agent's pod is there: nothing kept", true, false, pod("small", "ReplicaSet", "small", "256Mi"), ""},
		{"the DaemonSet is gone: nothing kept", false, true, pod("web-5", "ReplicaSet", "web", "512Mi"), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := &Expectations{DaemonSetExists: func(v1alpha1.DaemonPod) bool { return !tc.dsGone }}
			e.Follow(&v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "c", CreationTimestamp: metav1.Now()},
				Spec: v1alpha1.ClaimSpec{Daemons: []v1alpha1.DaemonPod{agent}}})
			pods := slices.Clone(webs)
			if tc.withAgent {
				pods = append(pods, pod("agent-x", "DaemonSet", "agent", "128Mi"))
			}
			ni := framework.NewNodeInfo(pods...)
			ni.SetNode(node)
			if got := e.Refusal(tc.pod, ni); got != tc.want {
				t.Errorf("refusal %q, want %q", got, tc.want)
			}
			// Room kept for a DaemonSet's pod plans the node for nobody else.
			if got := e.Score(tc.pod, ni, 100); got != 50 {
				t.Errorf("score %d, want 50", got)
			}
		})
	}
}
