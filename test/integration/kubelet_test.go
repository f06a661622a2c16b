package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// A pool's kubelet settings and volume reach the node through its user data, and the node the
// agent registers from that user data (after nodeadm's own checks, or Bottlerocket's TOML
// decoder) has exactly the allocatable the planner counted with for its type. The pod asks for
// more disk than the default 20 GiB volume has, so it runs only if the pool's 60 GiB reached
// both the planner and the node.
func TestKubeletSettingsReachTheNode(t *testing.T) {
	kubelet := config.Kubelet{MaxPods: 40, MaxPodsPolicy: config.MaxPodsENI, PodsPerCore: 8,
		SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("150m"), corev1.ResourceMemory: resource.MustParse("300Mi")},
		KubeReserved:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("700Mi")},
		EvictionHard:   map[string]string{"memory.available": "3%", "nodefs.available": "5Gi"},
		EvictionSoft:   map[string]string{"memory.available": "5%"}, EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod: 30}
	args := map[string]any{
		"maxPods": 40, "podsPerCore": 8,
		"systemReserved": map[string]any{"cpu": "150m", "memory": "300Mi"}, "kubeReserved": map[string]any{"memory": "700Mi"},
		"evictionHard": map[string]any{"memory.available": "3%", "nodefs.available": "5Gi"},
		"evictionSoft": map[string]any{"memory.available": "5%"}, "evictionSoftGracePeriod": map[string]any{"memory.available": "1m30s"},
		"evictionMaxPodGracePeriod": 30,
	}
	for _, tc := range []struct{ ami, device string }{{"al2023", "/dev/xvda"}, {"bottlerocket", "/dev/xvdb"}} {
		t.Run(tc.ami, func(t *testing.T) {
			volumes := []any{map[string]any{"deviceName": tc.device, "volumeSize": "60Gi"}}
			bdm := []config.BlockDeviceMapping{{DeviceName: tc.device, VolumeSize: resource.MustParse("60Gi")}}
			if tc.ami == "bottlerocket" {
				volumes = append([]any{map[string]any{"deviceName": "/dev/xvda", "volumeSize": "4Gi"}}, volumes...)
			}
			restartScheduler(t, func(a map[string]any) {
				pool := a["pools"].([]any)[0].(map[string]any)
				pool["ami"], pool["kubelet"], pool["blockDeviceMappings"] = tc.ami, args, volumes
			})
			ns := newNamespace(t)
			createPod(t, ns, "big-disk", "500m", "512Mi", func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("40Gi")
			})
			pods := waitRunning(t, ns, 1)
			node := getNode(t, pods[0].Spec.NodeName)
			if _, refused := world.Agent.Rejected()[lifecycle.InstanceID(node.Spec.ProviderID)]; refused {
				t.Fatalf("instance of node %s was refused at bootstrap", node.Name)
			}
			it := instanceTypes(t)[node.Labels[corev1.LabelInstanceTypeStable]]
			pool := config.Pool{AMI: tc.ami, Kubelet: kubelet, BlockDeviceMappings: bdm}
			want := catalog.AllocatableWith(it, catalog.KubeletFor(it, &pool.Kubelet), catalog.Storage(&pool, it))
			for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
				got, w := node.Status.Allocatable[name], want[name]
				if got.Cmp(w) != 0 {
					t.Errorf("node %s (%s) allocatable %s = %s, the planner counted %s", node.Name, it.Name, name, got.String(), w.String())
				}
			}
			if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Value() != min(40, 8*it.VCPUs) {
				t.Errorf("node %s pods capacity %s, want min(40, 8 × %d vCPUs)", node.Name, pods.String(), it.VCPUs)
			}
		})
	}
}

// A pool's own user data is merged with Tailor's, and the node still bootstraps from the result
// (nodeadm's checks, Bottlerocket's decoder): the pool's script runs before Tailor's NodeConfig on
// AL2023; the pool's settings sit beside Tailor's on Bottlerocket, whose own win.
func TestPoolUserDataMerges(t *testing.T) {
	for _, tc := range []struct{ ami, userData, want string }{
		{"al2023", "#!/bin/bash\necho tuned > /etc/pool-marker\n", "echo tuned > /etc/pool-marker"},
		{"bottlerocket", "[settings.kernel]\nlockdown = \"integrity\"\n[settings.kubernetes]\nmax-pods = 3\n", "lockdown = \"integrity\""},
	} {
		t.Run(tc.ami, func(t *testing.T) {
			restartScheduler(t, func(a map[string]any) {
				pool := a["pools"].([]any)[0].(map[string]any)
				pool["ami"], pool["userData"] = tc.ami, tc.userData
			})
			ns := newNamespace(t)
			createPod(t, ns, "merged", "500m", "512Mi")
			pods := waitRunning(t, ns, 1)
			node := getNode(t, pods[0].Spec.NodeName)
			id := lifecycle.InstanceID(node.Spec.ProviderID)
			ud, _ := world.Sim.UserData(id)
			if !strings.Contains(ud, tc.want) {
				t.Errorf("user data of %s lacks the pool's %q:\n%s", id, tc.want, ud)
			}
			if _, refused := world.Agent.Rejected()[id]; refused {
				t.Fatalf("instance %s was refused at bootstrap", id)
			}
			if pods := node.Status.Capacity[corev1.ResourcePods]; pods.Value() == 3 {
				t.Errorf("the pool's max-pods won over Tailor's")
			}
		})
	}
}

// With instanceStorePolicy RAID0 a node's pods get the instance store as ephemeral storage: a
// pod asking for more than the root volume has runs on an m5d.large (75 GB of NVMe), whose
// registered allocatable is what the planner counted, on either image family.
func TestInstanceStoreRAID0(t *testing.T) {
	for _, ami := range []string{"al2023", "bottlerocket"} {
		t.Run(ami, func(t *testing.T) {
			restartScheduler(t, func(a map[string]any) {
				pool := a["pools"].([]any)[0].(map[string]any)
				pool["ami"], pool["instanceStorePolicy"] = ami, "RAID0"
			})
			ns := newNamespace(t)
			createPod(t, ns, "scratch", "500m", "512Mi", withNodeSelector(corev1.LabelInstanceTypeStable, "m5d.large"), func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("50Gi")
			})
			pods := waitRunning(t, ns, 1)
			node := getNode(t, pods[0].Spec.NodeName)
			id := lifecycle.InstanceID(node.Spec.ProviderID)
			if _, refused := world.Agent.Rejected()[id]; refused {
				t.Fatalf("instance %s was refused at bootstrap", id)
			}
			ud, _ := world.Sim.UserData(id)
			if !strings.Contains(ud, "RAID0") && !strings.Contains(ud, "ephemeral-storage") {
				t.Errorf("user data of %s does not stripe the instance store:\n%s", id, ud)
			}
			it := instanceTypes(t)["m5d.large"]
			pool := config.Pool{AMI: ami, InstanceStorePolicy: config.InstanceStoreRAID0}
			want := catalog.AllocatableWith(it, catalog.KubeletFor(it, &pool.Kubelet), catalog.Storage(&pool, it))
			got, w := node.Status.Allocatable[corev1.ResourceEphemeralStorage], want[corev1.ResourceEphemeralStorage]
			if got.Cmp(w) != 0 {
				t.Errorf("node %s ephemeral storage %s, the planner counted %s", node.Name, got.String(), w.String())
			}
		})
	}
}
