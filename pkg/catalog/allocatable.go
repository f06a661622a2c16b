// Package catalog turns the cloud's instance types into what the scheduler will see on a node of
// that type: capacity, allocatable and labels. The numbers follow the EKS-optimized AMI so that a
// plan never counts on room the kubelet will not offer.
package catalog

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

const (
	// vmMemoryOverheadPercent is the share of the advertised memory the hypervisor and firmware
	// keep; a node reports that much less than DescribeInstanceTypes says.
	vmMemoryOverheadPercent = 0.075
	// DefaultRootVolumeGiB is the root EBS volume Tailor gives nodes, which is their ephemeral storage.
	DefaultRootVolumeGiB = 20

	evictionMemoryMiB     = 100
	evictionNodefsPercent = 10
	reservedEphemeralGiB  = 1

	// ResourceNvidiaGPU is the extended resource the NVIDIA device plugin advertises.
	ResourceNvidiaGPU corev1.ResourceName = "nvidia.com/gpu"
)

// MaxPods is the pod limit a node of the type bootstraps with (cloud.InstanceType.MaxPods).
func MaxPods(it *cloud.InstanceType) int64 { return it.MaxPods() }

// Capacity is what the kubelet reports as node capacity.
func Capacity(it *cloud.InstanceType) corev1.ResourceList { return CapacityFor(it, MaxPods(it)) }

// CapacityFor is the capacity of a node of the type whose kubelet runs with maxPods.
func CapacityFor(it *cloud.InstanceType, maxPods int64) corev1.ResourceList {
	memMiB := it.MemoryMiB - int64(math.Ceil(float64(it.MemoryMiB)*vmMemoryOverheadPercent))
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(it.VCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(DefaultRootVolumeGiB<<30, resource.BinarySI),
	}
	if it.GPUCount > 0 && it.GPUManufacturer == "NVIDIA" {
		rl[ResourceNvidiaGPU] = *resource.NewQuantity(it.GPUCount, resource.DecimalSI)
	}
	return rl
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

// Allocatable is capacity less kube-reserved and the eviction thresholds.
func Allocatable(it *cloud.InstanceType) corev1.ResourceList { return AllocatableFor(it, MaxPods(it)) }

// AllocatableFor is the allocatable of a node of the type whose kubelet runs with maxPods:
// kube-reserved memory grows with the pod limit.
func AllocatableFor(it *cloud.InstanceType, maxPods int64) corev1.ResourceList {
	rl := CapacityFor(it, maxPods)
	sub := func(name corev1.ResourceName, q resource.Quantity) {
		v := rl[name]
		v.Sub(q)
		if v.Sign() < 0 {
			v = resource.Quantity{}
		}
		rl[name] = v
	}
	sub(corev1.ResourceCPU, *resource.NewMilliQuantity(KubeReservedCPUMillis(it.VCPUs), resource.DecimalSI))
	sub(corev1.ResourceMemory, *resource.NewQuantity((KubeReservedMemoryMiB(maxPods)+evictionMemoryMiB)<<20, resource.BinarySI))
	eph := rl[corev1.ResourceEphemeralStorage]
	nodefs := eph.Value() * evictionNodefsPercent / 100
	sub(corev1.ResourceEphemeralStorage, *resource.NewQuantity(reservedEphemeralGiB<<30+nodefs, resource.BinarySI))
	return rl
}
