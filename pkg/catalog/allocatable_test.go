package catalog

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// The expected values are worked by hand from the EKS AMI's formulas (see allocatable.go):
//
//	m5.large     2 vCPU, 8192 MiB, 3 ENIs × 10 IPs: pods 3×9+2=29; cpu 2000−(60+10)=1930m;
//	             mem 8192−ceil(614.4)=7577 MiB capacity, −(11×29+255)−100=6903 MiB.
//	c7g.xlarge   4 vCPU, 8192 MiB, 4 × 15: pods 58; cpu 4000−80=3920m; mem 7577−(893+100)=6584 MiB.
//	p4d.24xlarge 96 vCPU, 1179648 MiB, 15 × 50: pods 737; cpu 96000−(80+92×2.5)=95690m;
//	             mem 1179648−88474=1091174 MiB capacity, −(8362+100)=1082712 MiB; 8 GPUs.
//	t3.micro     2 vCPU, 1024 MiB, 2 × 2: pods 4; cpu 1930m; mem 1024−77=947, −(299+100)=548 MiB.
//
// Ephemeral storage is the 20 GiB root volume less 1 GiB reserved and the 10% nodefs threshold.
func TestAllocatable(t *testing.T) {
	tests := []struct {
		it                     cloud.InstanceType
		pods                   int64
		cpu, memory, capMemory string
		gpus                   int64
	}{
		{cloud.InstanceType{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}, 29, "1930m", "6903Mi", "7577Mi", 0},
		{cloud.InstanceType{Name: "c7g.xlarge", Arch: "arm64", VCPUs: 4, MemoryMiB: 8192, MaxENIs: 4, IPv4PerENI: 15}, 58, "3920m", "6584Mi", "7577Mi", 0},
		{cloud.InstanceType{Name: "p4d.24xlarge", Arch: "amd64", VCPUs: 96, MemoryMiB: 1179648, MaxENIs: 15, IPv4PerENI: 50, GPUCount: 8, GPUManufacturer: "NVIDIA", GPUName: "A100"}, 737, "95690m", "1082712Mi", "1091174Mi", 8},
		{cloud.InstanceType{Name: "t3.micro", Arch: "amd64", VCPUs: 2, MemoryMiB: 1024, MaxENIs: 2, IPv4PerENI: 2}, 4, "1930m", "548Mi", "947Mi", 0},
	}
	for _, tc := range tests {
		t.Run(tc.it.Name, func(t *testing.T) {
			capacity, alloc := Capacity(&tc.it), Allocatable(&tc.it)
			check := func(what string, rl corev1.ResourceList, name corev1.ResourceName, want string) {
				t.Helper()
				got := rl[name]
				if got.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s %s = %s, want %s", what, name, got.String(), want)
				}
			}
			if got := DefaultKubelet(&tc.it).MaxPods; got != tc.pods {
				t.Errorf("MaxPods = %d, want %d", got, tc.pods)
			}
			check("allocatable", alloc, corev1.ResourceCPU, tc.cpu)
			check("allocatable", alloc, corev1.ResourceMemory, tc.memory)
			check("capacity", capacity, corev1.ResourceMemory, tc.capMemory)
			check("allocatable", alloc, corev1.ResourceEphemeralStorage, "17Gi")
			gpus := alloc[ResourceNvidiaGPU]
			if gpus.Value() != tc.gpus {
				t.Errorf("gpus = %d, want %d", gpus.Value(), tc.gpus)
			}
		})
	}
}

func TestLabels(t *testing.T) {
	tests := []struct {
		name, category, generation, family, size string
	}{
		{"m5.large", "m", "5", "m5", "large"},
		{"c7gn.16xlarge", "c", "7", "c7gn", "16xlarge"},
		{"inf2.xlarge", "inf", "2", "inf2", "xlarge"},
		{"m7i-flex.large", "m", "7", "m7i-flex", "large"},
		{"u-6tb1.metal", "u", "", "u-6tb1", "metal"},
	}
	for _, tc := range tests {
		l := Labels(&cloud.InstanceType{Name: tc.name, Arch: "amd64", VCPUs: 2, MemoryMiB: 1024})
		if l["tailor.dev/instance-category"] != tc.category || l["tailor.dev/instance-generation"] != tc.generation ||
			l["tailor.dev/instance-family"] != tc.family || l["tailor.dev/instance-size"] != tc.size {
			t.Errorf("%s: labels %v", tc.name, l)
		}
	}
}
