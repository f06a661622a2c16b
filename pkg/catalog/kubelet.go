package catalog

import (
	"maps"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Eviction signals whose hard thresholds come out of a node's allocatable.
const (
	SignalMemoryAvailable = "memory.available"
	SignalNodefsAvailable = "nodefs.available"
)

// DefaultEvictionHard are the EKS AMIs' hard eviction thresholds (nodeadm's and Bottlerocket's).
var DefaultEvictionHard = map[string]string{
	SignalMemoryAvailable: "100Mi",
	SignalNodefsAvailable: "10%",
	"nodefs.inodesFree":   "5%",
}

// KubeletConfig is what a node's kubelet runs with, as far as its capacity and allocatable go:
// the launch writes it into the node's user data and the planner counts with it, so both agree.
type KubeletConfig struct {
	MaxPods int64
	// KubeReserved has cpu, memory and ephemeral-storage (and pid if the pool sets it).
	KubeReserved   corev1.ResourceList
	SystemReserved corev1.ResourceList
	EvictionHard   map[string]string
}

// KubeletFor is the kubelet configuration of a node of the type in a pool with settings k: the
// pool's own values where it sets them, the EKS AMI's otherwise.
func KubeletFor(it *cloud.InstanceType, k *config.Kubelet) KubeletConfig {
	maxPods := MaxPodsFor(it, k)
	reserved := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(KubeReservedCPUMillis(it.VCPUs), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(KubeReservedMemoryMiB(maxPods)<<20, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(reservedEphemeralGiB<<30, resource.BinarySI),
	}
	maps.Copy(reserved, k.KubeReserved)
	eviction := maps.Clone(DefaultEvictionHard)
	maps.Copy(eviction, k.EvictionHard)
	return KubeletConfig{MaxPods: maxPods, KubeReserved: reserved, SystemReserved: maps.Clone(k.SystemReserved), EvictionHard: eviction}
}

// DefaultKubelet is the kubelet configuration of a node of the type in a pool without settings.
func DefaultKubelet(it *cloud.InstanceType) KubeletConfig { return KubeletFor(it, &config.Kubelet{}) }

// MaxPodsFor is the pod limit of a node of the type: the pool's maxPods, or one derived from the
// type's network interfaces by its policy, then capped at podsPerCore per vCPU.
func MaxPodsFor(it *cloud.InstanceType, k *config.Kubelet) int64 {
	n := int64(k.MaxPods)
	switch {
	case n > 0:
	case k.MaxPodsPolicy == config.MaxPodsPrefixDelegation:
		n = prefixDelegationMaxPods(it)
	default:
		n = it.MaxPods()
	}
	if k.PodsPerCore > 0 && it.VCPUs > 0 {
		n = min(n, int64(k.PodsPerCore)*it.VCPUs)
	}
	return n
}

// prefixDelegationMaxPods is the EKS max-pods calculator's figure for the VPC CNI with prefix
// delegation: every secondary address slot holds a /28 prefix (16 pods), capped at 110 pods
// below 30 vCPUs and 250 from 30 up.
func prefixDelegationMaxPods(it *cloud.InstanceType) int64 {
	limit := int64(110)
	if it.VCPUs >= 30 {
		limit = 250
	}
	if it.MaxENIs <= 0 || it.IPv4PerENI <= 1 {
		return limit
	}
	return min(limit, it.MaxENIs*(it.IPv4PerENI-1)*16+2)
}

// CapacityWith is what the kubelet of a node of the type reports as capacity, running with kc
// on storage of that many bytes (see Storage).
func CapacityWith(it *cloud.InstanceType, kc KubeletConfig, storage int64) corev1.ResourceList {
	memMiB := it.MemoryMiB - int64(math.Ceil(float64(it.MemoryMiB)*vmMemoryOverheadPercent))
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewQuantity(it.VCPUs, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(memMiB*1024*1024, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(kc.MaxPods, resource.DecimalSI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(storage, resource.BinarySI),
	}
	if it.GPUCount > 0 && it.GPUManufacturer == "NVIDIA" {
		rl[ResourceNvidiaGPU] = *resource.NewQuantity(it.GPUCount, resource.DecimalSI)
	}
	return rl
}

// AllocatableWith is capacity less kube-reserved, system-reserved and the hard eviction
// thresholds of memory and the node's filesystem, as the kubelet computes it.
func AllocatableWith(it *cloud.InstanceType, kc KubeletConfig, storage int64) corev1.ResourceList {
	capacity := CapacityWith(it, kc, storage)
	rl := maps.Clone(capacity)
	take := func(name corev1.ResourceName, q resource.Quantity) {
		v := rl[name]
		v.Sub(q)
		rl[name] = v
	}
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		for _, reserved := range []corev1.ResourceList{kc.KubeReserved, kc.SystemReserved} {
			if q, ok := reserved[name]; ok {
				take(name, q)
			}
		}
	}
	take(corev1.ResourceMemory, threshold(capacity[corev1.ResourceMemory], kc.EvictionHard[SignalMemoryAvailable]))
	take(corev1.ResourceEphemeralStorage, threshold(capacity[corev1.ResourceEphemeralStorage], kc.EvictionHard[SignalNodefsAvailable]))
	for name, v := range rl {
		if v.Sign() < 0 {
			rl[name] = resource.Quantity{Format: v.Format}
		}
	}
	return rl
}

// threshold is an eviction threshold (a quantity, or a percentage of the capacity, rounded down
// to a whole byte as the kubelet does) in bytes; one that does not parse (validation refused it)
// is none.
func threshold(capacity resource.Quantity, v string) resource.Quantity {
	t, err := config.ParseThreshold(v)
	switch {
	case v == "" || err != nil:
		return resource.Quantity{}
	case t.Quantity != nil:
		return *t.Quantity
	}
	return *resource.NewQuantity(int64(float64(capacity.Value())*t.Percent/100), resource.BinarySI)
}

// VolumeGiB is the size of the volume a pool's nodes keep images and pods' ephemeral storage on:
// the root volume (/dev/xvda) for AL2023 and custom images, the data volume (/dev/xvdb) for
// Bottlerocket, as the pool's block device mappings size it (DefaultRootVolumeGiB when they
// leave it out, which for a custom image is a guess until a node of the type registers).
func VolumeGiB(pool *config.Pool) int64 {
	family := pool.ImageFamily
	if family == "" {
		family = config.DefaultFamily(pool.AMI)
	}
	device := DataDevice(family)
	for _, b := range pool.BlockDeviceMappings {
		if b.DeviceName == device {
			return b.VolumeSize.Value() >> 30
		}
	}
	return DefaultRootVolumeGiB
}

// Storage is the size in bytes of the storage a pool's node of the type keeps pods' ephemeral
// storage on: the instance store volumes striped, with the RAID0 policy on a type that has them;
// else the volume VolumeGiB sizes.
func Storage(pool *config.Pool, it *cloud.InstanceType) int64 {
	if pool.InstanceStorePolicy == config.InstanceStoreRAID0 && it.InstanceStorageGB > 0 {
		return InstanceStoreBytes(it)
	}
	return VolumeGiB(pool) << 30
}

// InstanceStoreBytes is the size of the type's instance store volumes together (EC2 gives GB).
func InstanceStoreBytes(it *cloud.InstanceType) int64 { return it.InstanceStorageGB * 1_000_000_000 }

// DataDevice is the device of the volume an image family keeps images and pods' storage on:
// Bottlerocket's data volume, the root volume of the others.
func DataDevice(family string) string {
	if family == config.FamilyBottlerocket {
		return "/dev/xvdb"
	}
	return "/dev/xvda"
}
