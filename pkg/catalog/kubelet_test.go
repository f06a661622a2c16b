package catalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestMaxPodsFor(t *testing.T) {
	m5large := cloud.InstanceType{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	m5xl16 := cloud.InstanceType{Name: "m5.16xlarge", VCPUs: 64, MemoryMiB: 262144, MaxENIs: 15, IPv4PerENI: 50}
	t3nano := cloud.InstanceType{Name: "t3.nano", VCPUs: 2, MemoryMiB: 512, MaxENIs: 2, IPv4PerENI: 2}
	unknown := cloud.InstanceType{Name: "x.large", VCPUs: 32}
	tests := []struct {
		name string
		it   cloud.InstanceType
		k    config.Kubelet
		want int64
	}{
		{"ENI default", m5large, config.Kubelet{}, 29},
		{"set", m5large, config.Kubelet{MaxPods: 110}, 110},
		// 3 × 9 × 16 + 2 = 434, capped at 110 below 30 vCPUs.
		{"prefix delegation small", m5large, config.Kubelet{MaxPodsPolicy: config.MaxPodsPrefixDelegation}, 110},
		// 15 × 49 × 16 + 2 = 11762, capped at 250 from 30 vCPUs.
		{"prefix delegation large", m5xl16, config.Kubelet{MaxPodsPolicy: config.MaxPodsPrefixDelegation}, 250},
		// 2 × 1 × 16 + 2 = 34, under the cap.
		{"prefix delegation few slots", t3nano, config.Kubelet{MaxPodsPolicy: config.MaxPodsPrefixDelegation}, 34},
		{"prefix delegation without ENI facts", unknown, config.Kubelet{MaxPodsPolicy: config.MaxPodsPrefixDelegation}, 250},
		{"set wins over the policy", m5large, config.Kubelet{MaxPods: 50, MaxPodsPolicy: config.MaxPodsPrefixDelegation}, 50},
		{"pods per core caps", m5large, config.Kubelet{PodsPerCore: 10}, 20},
		{"pods per core above the limit", m5large, config.Kubelet{PodsPerCore: 20}, 29},
		{"pods per core caps a set limit", m5xl16, config.Kubelet{MaxPods: 250, PodsPerCore: 2}, 128},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MaxPodsFor(&tc.it, &tc.k); got != tc.want {
				t.Errorf("MaxPodsFor = %d, want %d", got, tc.want)
			}
		})
	}
}

// The figures for m5.large (2 vCPU, 8192 MiB: 7577 MiB capacity) on a 20 GiB volume, by hand:
// the EKS AMI reserves 70m CPU, 11 × pods + 255 MiB memory and 1 GiB disk, and evicts below
// 100 MiB memory and 10% of the disk.
func TestAllocatableWith(t *testing.T) {
	m5large := cloud.InstanceType{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	q := resource.MustParse
	tests := []struct {
		name               string
		k                  config.Kubelet
		volumeGiB          int64
		pods               int64
		cpu, memory, ephem string
		capEphem           string
	}{
		{name: "defaults", volumeGiB: 20, pods: 29, cpu: "1930m", memory: "6903Mi", ephem: "17Gi", capEphem: "20Gi"},
		// 7577 − (11 × 110 + 255) − 100 = 6012 MiB.
		{name: "more pods reserve more memory", k: config.Kubelet{MaxPods: 110}, volumeGiB: 20, pods: 110, cpu: "1930m", memory: "6012Mi", ephem: "17Gi", capEphem: "20Gi"},
		// 2000 − 500 − 100 = 1400m; 7577 − 1024 − 200 − 100 = 6253 MiB; 100 − 5 − 1 − 10 = 84 GiB.
		{name: "reserved replace and add", k: config.Kubelet{
			KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: q("500m"), corev1.ResourceMemory: q("1Gi"), corev1.ResourceEphemeralStorage: q("5Gi")},
			SystemReserved: corev1.ResourceList{corev1.ResourceCPU: q("100m"), corev1.ResourceMemory: q("200Mi"), corev1.ResourceEphemeralStorage: q("1Gi")},
		}, volumeGiB: 100, pods: 29, cpu: "1400m", memory: "6253Mi", ephem: "84Gi", capEphem: "100Gi"},
		// 7577 − 574 − 500 = 6503 MiB; 50 − 1 − 2 = 47 GiB.
		{name: "eviction thresholds by quantity", k: config.Kubelet{EvictionHard: map[string]string{"memory.available": "500Mi", "nodefs.available": "2Gi"}},
			volumeGiB: 50, pods: 29, cpu: "1930m", memory: "6503Mi", ephem: "47Gi", capEphem: "50Gi"},
		// 10% of 7577 MiB (7945060352 bytes) is 794506035 bytes: 7945060352 − 574 MiB − 794506035
		// = 6548671693 bytes; nodefs keeps its 10%.
		{name: "eviction threshold by percentage", k: config.Kubelet{EvictionHard: map[string]string{"memory.available": "10%"}},
			volumeGiB: 20, pods: 29, cpu: "1930m", memory: "6548671693", ephem: "17Gi", capEphem: "20Gi"},
		{name: "reservations beyond the node leave nothing", k: config.Kubelet{KubeReserved: corev1.ResourceList{corev1.ResourceCPU: q("3")}},
			volumeGiB: 20, pods: 29, cpu: "0", memory: "6903Mi", ephem: "17Gi", capEphem: "20Gi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kc := KubeletFor(&m5large, &tc.k)
			capacity, alloc := CapacityWith(&m5large, kc, tc.volumeGiB<<30), AllocatableWith(&m5large, kc, tc.volumeGiB<<30)
			check := func(what string, rl corev1.ResourceList, name corev1.ResourceName, want string) {
				t.Helper()
				if got := rl[name]; got.Cmp(q(want)) != 0 {
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			check("capacity", capacity, corev1.ResourcePods, resource.NewQuantity(tc.pods, resource.DecimalSI).String())
			check("capacity", capacity, corev1.ResourceEphemeralStorage, tc.capEphem)
			check("allocatable", alloc, corev1.ResourceCPU, tc.cpu)
			check("allocatable", alloc, corev1.ResourceMemory, tc.memory)
			check("allocatable", alloc, corev1.ResourceEphemeralStorage, tc.ephem)
		})
	}
}

func TestVolumeGiB(t *testing.T) {
	dev := func(name, size string) config.BlockDeviceMapping {
		return config.BlockDeviceMapping{DeviceName: name, VolumeSize: resource.MustParse(size)}
	}
	tests := []struct {
		name string
		pool config.Pool
		want int64
	}{
		{"AL2023 default", config.Pool{AMI: "al2023"}, 20},
		{"AL2023 root", config.Pool{AMI: "al2023", BlockDeviceMappings: []config.BlockDeviceMapping{dev("/dev/xvda", "100Gi")}}, 100},
		{"image ID bootstraps like AL2023", config.Pool{AMI: "ami-0123456789abcdef0", BlockDeviceMappings: []config.BlockDeviceMapping{dev("/dev/xvda", "80Gi")}}, 80},
		{"Bottlerocket data volume", config.Pool{AMI: "bottlerocket", BlockDeviceMappings: []config.BlockDeviceMapping{dev("/dev/xvda", "4Gi"), dev("/dev/xvdb", "200Gi")}}, 200},
		{"image ID of the Bottlerocket family", config.Pool{AMI: "ami-0123456789abcdef0", ImageFamily: "bottlerocket", BlockDeviceMappings: []config.BlockDeviceMapping{dev("/dev/xvdb", "50Gi")}}, 50},
		{"Bottlerocket without a data volume mapping", config.Pool{AMI: "bottlerocket", BlockDeviceMappings: []config.BlockDeviceMapping{dev("/dev/xvda", "8Gi")}}, 20},
	}
	for _, tc := range tests {
		if got := VolumeGiB(&tc.pool); got != tc.want {
			t.Errorf("%s: VolumeGiB = %d, want %d", tc.name, got, tc.want)
		}
	}
}

// With the RAID0 policy a type's instance store is the node's storage; a type without one, or a
// pool without the policy, keeps its volume.
func TestStorage(t *testing.T) {
	m5d := cloud.InstanceType{Name: "m5d.large", InstanceStorageGB: 75}
	m5 := cloud.InstanceType{Name: "m5.large"}
	raid := config.Pool{AMI: "al2023", InstanceStorePolicy: config.InstanceStoreRAID0}
	plain := config.Pool{AMI: "al2023"}
	for _, tc := range []struct {
		name string
		pool config.Pool
		it   cloud.InstanceType
		want int64
	}{
		{"RAID0 on an instance store", raid, m5d, 75_000_000_000},
		{"RAID0 without an instance store", raid, m5, 20 << 30},
		{"no policy", plain, m5d, 20 << 30},
	} {
		if got := Storage(&tc.pool, &tc.it); got != tc.want {
			t.Errorf("%s: Storage = %d, want %d", tc.name, got, tc.want)
		}
	}
}
