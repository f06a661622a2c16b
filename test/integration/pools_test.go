package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// Pods that tolerate the spot pool's taint go to that pool (its weight is higher) and run on
// spot; pods that do not tolerate it stay in the general pool on on-demand.
func TestSpotPoolTaintAndWeight(t *testing.T) {
	ns := newNamespace(t)
	createPod(t, ns, "tolerant", "500m", "1Gi", withToleration("tailor.dev/spot", "true"))
	createPod(t, ns, "plain", "500m", "1Gi")
	pods := waitRunning(t, ns, 2)
	for _, p := range pods {
		node := getNode(t, p.Spec.NodeName)
		pool, ct := node.Labels[v1alpha1.LabelPool], node.Labels[v1alpha1.LabelCapacityType]
		switch p.Name {
		case "tolerant":
			if pool != "spot" || ct != "spot" || node.Labels["workload-class"] != "interruptible" {
				t.Errorf("tolerant pod on pool %q capacity %q labels %v, want the spot pool", pool, ct, node.Labels)
			}
			if !hasTaint(node, "tailor.dev/spot") {
				t.Errorf("spot node %s lacks the pool's taint: %v", node.Name, node.Spec.Taints)
			}
		case "plain":
			if pool != "general" || ct != "on-demand" {
				t.Errorf("plain pod on pool %q capacity %q, want general on-demand", pool, ct)
			}
		}
	}
}

// A top-weight pool whose limit leaves room for none of its types hands its pods to the next
// pool by weight in the same batch, and says so on the pod; nothing is claimed in the full pool.
func TestFullPoolHandsItsPodsToTheNextByWeight(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		for _, p := range args["pools"].([]any) {
			if pool := p.(map[string]any); pool["name"] == "spot" {
				pool["limits"] = map[string]any{"cpu": "500m"} // less than any type has
			}
		}
	})
	ns := newNamespace(t)
	createPod(t, ns, "tolerant", "500m", "1Gi", withToleration("tailor.dev/spot", "true"))
	pods := waitRunning(t, ns, 1)
	if pool := getNode(t, pods[0].Spec.NodeName).Labels[v1alpha1.LabelPool]; pool != "general" {
		t.Errorf("the spot-tolerant pod runs in pool %q, want general, next by weight to the full spot pool", pool)
	}
	if msg := waitEvent(t, ns, "tolerant", "PoolAtLimit"); !strings.Contains(msg, "pool spot is at its cpu limit") {
		t.Errorf("event %q does not name the spot pool's cpu limit", msg)
	}
	for _, c := range listClaims(t) {
		if c.Spec.Pool == "spot" {
			t.Errorf("claim %s in the full spot pool", c.Name)
		}
	}
}

// Six replicas that may not share a host get six nodes, planned in one batch.
func TestHostnameAntiAffinity(t *testing.T) {
	ns := newNamespace(t)
	spec := podSpec("250m", "256Mi")
	spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	createDeployment(t, ns, "spread", 6, spec)
	pods := waitRunning(t, ns, 6)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(nodes) != 6 {
		t.Errorf("6 anti-affine pods on %d nodes", len(nodes))
	}
	if cls := listClaims(t); len(cls) != 6 {
		t.Errorf("%d claims for 6 anti-affine pods, want 6 (no extra launch)", len(cls))
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key {
			return true
		}
	}
	return false
}

// A pod asking for a GPU gets a GPU type from the GPU pool, and the node offers the GPU.
func TestGPUPod(t *testing.T) {
	ns := newNamespace(t)
	createPod(t, ns, "trainer", "2", "8Gi", withToleration("nvidia.com/gpu", "true"), func(p *corev1.Pod) {
		gpu := resource.MustParse("1")
		p.Spec.Containers[0].Resources.Requests["nvidia.com/gpu"] = gpu
		p.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"nvidia.com/gpu": gpu}
	})
	pods := waitRunning(t, ns, 1)
	node := getNode(t, pods[0].Spec.NodeName)
	it := instanceTypes(t)[node.Labels[corev1.LabelInstanceTypeStable]]
	if it == nil || it.GPUCount < 1 || node.Labels[v1alpha1.LabelPool] != "gpu" {
		t.Fatalf("pod runs on %s in pool %q, want a GPU type from the gpu pool", node.Labels[corev1.LabelInstanceTypeStable], node.Labels[v1alpha1.LabelPool])
	}
	if gpus := node.Status.Allocatable["nvidia.com/gpu"]; gpus.Value() < 1 {
		t.Errorf("node %s offers %s nvidia.com/gpu", node.Name, gpus.String())
	}
}

// Nine replicas spread over zones with maxSkew 1 land three per zone: the planner counts the
// three zones the pools reach as domains before any node is in them.
func TestZoneSpread(t *testing.T) {
	ns := newNamespace(t)
	spec := podSpec("250m", "256Mi")
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "zonal"}},
	}}
	createDeployment(t, ns, "zonal", 9, spec)
	pods := waitRunning(t, ns, 9)
	perZone := map[string]int{}
	for _, p := range pods {
		perZone[getNode(t, p.Spec.NodeName).Labels[corev1.LabelTopologyZone]]++
	}
	if len(perZone) != 3 {
		t.Fatalf("pods per zone %v, want three zones", perZone)
	}
	for z, n := range perZone {
		if n != 3 {
			t.Errorf("pods per zone %v: %s has %d, want 3/3/3", perZone, z, n)
		}
	}
}

// At its cpu limit a pool launches nothing more, and the pod that would need more is told why.
func TestPoolLimit(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		pools := args["pools"].([]any)
		pools[0].(map[string]any)["limits"] = map[string]any{"cpu": "3"}
	})
	ns := newNamespace(t)
	createPod(t, ns, "first", "1500m", "1Gi")
	waitRunning(t, ns, 1)
	createPod(t, ns, "second", "1500m", "1Gi")
	msg := waitEvent(t, ns, "second", "ProvisioningFailed")
	if !strings.Contains(msg, "pool general is at its cpu limit") {
		t.Errorf("event %q does not name the pool's cpu limit", msg)
	}
	if cls := listClaims(t); len(cls) != 1 {
		t.Errorf("%d claims, want only the first pod's", len(cls))
	}
}
