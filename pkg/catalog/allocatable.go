// Package catalog turns the cloud's instance types into what the scheduler will see on a node of
// that type: capacity, allocatable and labels. The numbers follow the EKS-optimized AMI so that a
// plan never counts on room the kubelet will not offer.
package catalog

import (
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

const (
	// vmMemoryOverheadPercent is the share of the advertised memory the hypervisor and firmware
	// keep; a node reports that much less than DescribeInstanceTypes says.
	vmMemoryOverheadPercent = 0.075
	// DefaultRootVolumeGiB is the root EBS volume Tailor gives nodes, which is their ephemeral storage.
	DefaultRootVolumeGiB = 20

	reservedEphemeralGiB = 1

	// ResourceNvidiaGPU is the extended resource the NVIDIA device plugin advertises.
	ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"
)

// Capacity is what the kubelet reports as node capacity on a node of a pool without settings.
func Capacity(it *cloud.InstanceType) corev1.ResourceList {
	return CapacityWith(it, DefaultKubelet(it), DefaultRootVolumeGiB<<30)
}

// KubeReservedCPUMillis is the CPU the EKS AMI reserves for system daemons: 6% of the first core,
// 1% of the second, 0.5% of the third and fourth, 0.25% of every further core.
func KubeReservedCPUMillis(vcpus int64) int64 {
	var m float64
	for core := int64(1); core <= vcpus; core++ {
		switch {
		case core == 1:
			m += 60
		case core == 2:
			m += 10
		case core <= 4:
			m += 5
		default:
			m += 2.5
		}
	}
	return int64(math.Ceil(m))
}

// KubeReservedMemoryMiB is the memory the EKS AMI reserves: 11 MiB per pod plus 255 MiB.
func KubeReservedMemoryMiB(maxPods int64) int64 { return 11*maxPods + 255 }

// Allocatable is the allocatable of a node of a pool without settings.
func Allocatable(it *cloud.InstanceType) corev1.ResourceList {
	return AllocatableWith(it, DefaultKubelet(it), DefaultRootVolumeGiB<<30)
}
