package planning

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// m5LargeIn1a is the test planner's m5.large template in us-east-1a.
func m5LargeIn1a(t *testing.T) *Template {
	for _, tm := range testPlanner(t).Templates {
		if tm.Type.Name == "m5.large" && tm.Offering.Zone == "us-east-1a" {
			return tm
		}
	}
	t.Fatal("no m5.large template in us-east-1a")
	return nil
}

func TestRepack(t *testing.T) {
	pl := testPlanner(t)
	large := m5LargeIn1a(t)
	nodeA, nodeB := nodeNamed(large, "a"), nodeNamed(large, "b")
	bind := func(p *Pod, node string) *Pod { p.Pod.Spec.NodeName = node; return p }
	antiX := func(p *Pod) *Pod {
		p.Pod.Labels = map[string]string{"app": "y"}
		p.Pod.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			TopologyKey: corev1.LabelHostname, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}}}}}
		return p
	}
	tests := []struct {
		name      string
		onA, onB  []*Pod
		templates bool
		wantMoves int
		wantNew   int
	}{
		{name: "b's pod fits beside a's", onA: []*Pod{pod(t, "x", "1", "1Gi", nil)}, onB: []*Pod{pod(t, "y", "500m", "1Gi", nil)}, wantMoves: 1},
		{name: "too big for a's room, no templates", onA: []*Pod{pod(t, "x", "1500m", "1Gi", nil)}, onB: []*Pod{pod(t, "y", "500m", "1Gi", nil)}},
		{name: "too big for a's room, a new node", onA: []*Pod{pod(t, "x", "1500m", "1Gi", nil)}, onB: []*Pod{pod(t, "y", "500m", "1Gi", nil)}, templates: true, wantNew: 1},
		{name: "anti-affinity keeps it off a", onA: []*Pod{pod(t, "x", "100m", "128Mi", nil)}, onB: []*Pod{pod(t, "y", "100m", "128Mi", nil)}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if i == 3 {
				tc.onA[0].Pod.Labels = map[string]string{"app": "x"}
				tc.onB[0] = antiX(tc.onB[0])
			}
			var all []*corev1.Pod
			for _, p := range tc.onA {
				all = append(all, bind(p, "a").Pod)
			}
			for _, p := range tc.onB {
				all = append(all, bind(p, "b").Pod)
			}
			// The pods' states come from PreFilter against the cluster as it runs.
			fw := offline(t)
			fw.SetSnapshot([]*corev1.Node{nodeA, nodeB}, all)
			defer fw.SetSnapshot(nil, nil)
			// The question is asked of unbound copies: a bound pod fits only its own node.
			var moving []*Pod
			for _, p := range tc.onB {
				c := p.Pod.DeepCopy()
				c.Spec.NodeName = ""
				moving = append(moving, NewPod(c, filterFor(t, c)))
			}
			cl := NewCluster([]*corev1.Node{nodeA, nodeB}, all, nil, nil)
			planner := &Planner{}
			if tc.templates {
				planner = pl
			}
			before := len(cl.byName["a"].info.Pods)
			got := planner.Repack(context.Background(), cl, []string{"b"}, moving)
			if len(got.Moves) != tc.wantMoves || len(got.Nodes) != tc.wantNew || len(got.Moves)+len(got.Nodes) == 0 && len(got.Unschedulable) != len(tc.onB) {
				t.Errorf("moves %v, new nodes %d, unschedulable %v", got.Moves, len(got.Nodes), got.Unschedulable)
			}
			if after := len(cl.byName["a"].info.Pods); after != before {
				t.Errorf("node a holds %d pods after the question, %d before: the cluster must not change", after, before)
			}
		})
	}
}

// templateFilters counts the Filter calls made on template nodes.
type templateFilters struct {
	framework.PluginsRunner
	calls int
}

func (c *templateFilters) RunFilterPlugins(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, node fwk.NodeInfo) *fwk.Status {
	if node.Node().Name == TemplateNodeName {
		c.calls++
	}
	return c.PluginsRunner.RunFilterPlugins(ctx, state, pod, node)
}

// A class's verdicts on the templates are asked once per Cluster: consolidation asks many
// questions of one pass's cluster, and each would otherwise run the Filter plugins on every
// template again. A new Cluster (a new snapshot, so new PreFilter states) asks again.
func TestRepackAsksTheTemplatesOncePerCluster(t *testing.T) {
	pl := testPlanner(t)
	var large *Template
	for _, tm := range pl.Templates {
		if tm.Type.Name == "m5.large" && tm.Offering.Zone == "us-east-1a" {
			large = tm
		}
	}
	nodes := []*corev1.Node{nodeNamed(large, "a")}
	counter := &templateFilters{}
	// Too big for a's room: each question opens a new node.
	moving := func(name string) []*Pod {
		p := pod(t, name, "3", "6Gi", nil)
		counter.PluginsRunner = p.Filter.Plugins
		p.Filter.Plugins = counter
		return []*Pod{p}
	}
	asked := func(cl *Cluster, name string) int {
		before := counter.calls
		if r := pl.Repack(context.Background(), cl, nil, moving(name)); len(r.Nodes) != 1 {
			t.Fatalf("%s: %d new nodes, want 1", name, len(r.Nodes))
		}
		return counter.calls - before
	}
	cl := NewCluster(nodes, nil, nil, nil)
	if first := asked(cl, "first"); first < len(pl.Templates) {
		t.Fatalf("the first question filtered %d templates, fewer than the %d there are", first, len(pl.Templates))
	}
	if again := asked(cl, "again"); again >= len(pl.Templates) {
		t.Errorf("a second question of the same cluster filtered %d templates again", again)
	}
	if fresh := asked(NewCluster(nodes, nil, nil, nil), "fresh"); fresh < len(pl.Templates) {
		t.Errorf("a new cluster's question filtered %d templates, fewer than the %d there are", fresh, len(pl.Templates))
	}
}

// Fits asks for room and for the Filter plugins' leave, on the node as it is.
func TestClusterFits(t *testing.T) {
	large := m5LargeIn1a(t)
	running := pod(t, "running", "1", "1Gi", nil)
	running.Pod.Spec.NodeName = "a"
	closedPod := pod(t, "closed-running", "1", "1Gi", nil)
	closedPod.Pod.Spec.NodeName = "closed"
	cl := NewCluster([]*corev1.Node{nodeNamed(large, "a"), nodeNamed(large, "closed")}, []*corev1.Pod{running.Pod, closedPod.Pod},
		func(n *corev1.Node) bool { return n.Name != "closed" }, nil)
	// A node closed to pods still counts for the plugins, with its pods.
	if infos := cl.NodeInfos(); len(infos) != 2 || infos[1].Node().Name != "closed" || len(infos[1].GetPods()) != 1 {
		t.Fatalf("NodeInfos: %d, want both nodes, the closed one with its pod", len(infos))
	}
	for _, tt := range []struct {
		name string
		pod  *Pod
		node string
		want bool
	}{
		{"room left", pod(t, "small", "500m", "1Gi", nil), "a", true},
		{"more cpu than is left", pod(t, "big", "1500m", "1Gi", nil), "a", false},
		{"a node selector the node does not match", pod(t, "arm", "100m", "128Mi", map[string]string{corev1.LabelArchStable: "arm64"}), "a", false},
		{"a node not in the cluster", pod(t, "small", "100m", "128Mi", nil), "z", false},
		{"a node closed to pods", pod(t, "small", "100m", "128Mi", nil), "closed", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cl.Fits(context.Background(), tt.pod, tt.node); got != tt.want {
				t.Errorf("Fits = %v, want %v", got, tt.want)
			}
		})
	}
}

// Replicas of one template are alike; other requests, or other constraints (a DaemonSet's pods,
// each pinned to its node), are not.
func TestAlike(t *testing.T) {
	pinned := func(name, node string) *Pod {
		return pod(t, name, "100m", "128Mi", map[string]string{corev1.LabelHostname: node})
	}
	for _, tt := range []struct {
		name string
		pods []*Pod
		want []string
	}{
		{"replicas", []*Pod{pod(t, "web-1", "250m", "512Mi", nil), pod(t, "web-2", "250m", "512Mi", nil)}, []string{"web-1"}},
		{"other requests", []*Pod{pod(t, "web-1", "250m", "512Mi", nil), pod(t, "web-2", "500m", "512Mi", nil)}, []string{"web-1", "web-2"}},
		{"pinned to nodes", []*Pod{pinned("ds-a", "a"), pinned("ds-b", "b"), pinned("ds-a2", "a")}, []string{"ds-a", "ds-b"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// The first pod of each alike set.
			var got []string
			seen := map[AlikeKey]bool{}
			for _, p := range tt.pods {
				if k := Alike(p); !seen[k] {
					seen[k] = true
					got = append(got, p.Pod.Name)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("first of each alike set = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestRequestedSumsAsPodRequests: a cluster node's room is what its NodeInfo sums, and that is the
// pods' effective requests (init containers, overhead and extended resources included) in the
// planner's milli-units, as adding up each pod's own vector gives.
func TestRequestedSumsAsPodRequests(t *testing.T) {
	rl := func(kv ...string) corev1.ResourceList {
		out := corev1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return out
	}
	container := func(req corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: "c", Resources: corev1.ResourceRequirements{Requests: req, Limits: req}}
	}
	tests := []struct {
		name string
		pods []corev1.PodSpec
	}{
		{name: "no pods"},
		{name: "cpu and memory", pods: []corev1.PodSpec{
			{Containers: []corev1.Container{container(rl("cpu", "250m", "memory", "512Mi"))}},
			{Containers: []corev1.Container{container(rl("cpu", "1", "memory", "2Gi")), container(rl("cpu", "100m"))}},
		}},
		{name: "an init container larger than the containers, and overhead", pods: []corev1.PodSpec{{
			InitContainers: []corev1.Container{container(rl("cpu", "2", "memory", "1Gi"))},
			Containers:     []corev1.Container{container(rl("cpu", "500m", "memory", "3Gi"))},
			Overhead:       rl("cpu", "100m", "memory", "64Mi"),
		}}},
		{name: "extended resources and storage", pods: []corev1.PodSpec{
			{Containers: []corev1.Container{container(rl("nvidia.com/gpu", "2", "ephemeral-storage", "10Gi", "cpu", "4"))}},
			{Containers: []corev1.Container{container(rl("nvidia.com/gpu", "1", "hugepages-2Mi", "64Mi"))}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
			var pods []*corev1.Pod
			d := newDims()
			var want vec
			for i, spec := range tc.pods {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(rune('a' + i)), Namespace: "default"}, Spec: spec}
				p.Spec.NodeName = "n"
				pods = append(pods, p)
				want = want.add(d.vec(NewPod(p, nil).Requests, true))
			}
			cl := NewCluster([]*corev1.Node{node}, pods, nil, nil)
			got := cl.byName["n"].used
			for _, name := range append(slices.Clone(d.names), cl.dims.names...) {
				if w, g := amount(d, want, name), amount(cl.dims, got, name); w != g {
					t.Errorf("%s: the cluster counts %d milli-units, the pods' own requests %d", name, g, w)
				}
			}
		})
	}
}

// amount is v's entry for name; a vector made before the dimension was added has none (zero).
func amount(d *dims, v vec, name corev1.ResourceName) int64 {
	if i, ok := d.index[name]; ok && i < len(v) {
		return v[i]
	}
	return 0
}

// TestRepackQuestionsDoNotLeak: a cluster reuses its nodes from question to question, so each
// question must start from the cluster as it runs: a pod placed on a node by one question takes
// no room in the next, and a node the last question removed is open again.
func TestRepackQuestionsDoNotLeak(t *testing.T) {
	large := m5LargeIn1a(t)
	nodeA, nodeB, nodeC := nodeNamed(large, "a"), nodeNamed(large, "b"), nodeNamed(large, "c")
	// a runs a pod taking most of a node's cpu, b one leaving no room for any other, c a small one.
	onA, onB, onC := pod(t, "x", "1200m", "1Gi", nil), pod(t, "y", "1800m", "1Gi", nil), pod(t, "z", "300m", "1Gi", nil)
	onA.Pod.Spec.NodeName, onB.Pod.Spec.NodeName, onC.Pod.Spec.NodeName = "a", "b", "c"
	all := []*corev1.Pod{onA.Pod, onB.Pod, onC.Pod}
	fw := offline(t)
	fw.SetSnapshot([]*corev1.Node{nodeA, nodeB, nodeC}, all)
	defer fw.SetSnapshot(nil, nil)
	moving := func(p *Pod) []*Pod {
		c := p.Pod.DeepCopy()
		c.Spec.NodeName = ""
		return []*Pod{NewPod(c, filterFor(t, c))}
	}
	cl := NewCluster([]*corev1.Node{nodeA, nodeB, nodeC}, all, nil, nil)
	for i, q := range []struct {
		remove string
		pod    *Pod
		// want is the node the pod moves to ("": nowhere).
		want string
	}{
		{remove: "a", pod: onA, want: "c"},
		// c took a's pod in the last question only: it has room for it again.
		{remove: "a", pod: onA, want: "c"},
		// a, removed in the last question, is open again: c's pod goes there (b has no room).
		{remove: "c", pod: onC, want: "a"},
		// and the trial pod it took there is gone again.
		{remove: "a", pod: onA, want: "c"},
	} {
		r := (&Planner{}).Repack(context.Background(), cl, []string{q.remove}, moving(q.pod))
		got := ""
		for _, node := range r.Moves {
			got = node
		}
		if got != q.want {
			t.Errorf("question %d (without %s): %s's pod moves to %q, want %q", i, q.remove, q.remove, got, q.want)
		}
	}
}
