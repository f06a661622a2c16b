package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TailorArgs configures the Tailor plugin of one scheduler profile: which cluster it provisions
// for and the pools of capacity it may launch.
type TailorArgs struct {
	metav1.TypeMeta

	// ClusterName is the EKS cluster's name. It scopes ownership tags, discovery tags and names.
	ClusterName string
	// Region is the AWS region. Empty means the SDK's default chain (AWS_REGION or
	// AWS_DEFAULT_REGION, then the shared config's profile).
	Region string
	// KubernetesVersion picks the EKS-optimized AMI for aliases such as al2023 (e.g. "1.34");
	// empty follows the control plane's minor version.
	KubernetesVersion string
	// ClusterEndpoint, ClusterCABundle (base64 PEM), ServiceCIDR and IPFamily are what nodes
	// need to join; empty ones are read from eks:DescribeCluster when Tailor starts.
	ClusterEndpoint string
	ClusterCABundle string
	ServiceCIDR     string
	IPFamily        string
	// Pools are the kinds of capacity Tailor may launch.
	Pools []Pool
	// BatchIdleDuration is how long the batcher waits for another failed pod before it plans.
	BatchIdleDuration metav1.Duration
	// BatchMaxDuration caps how long a batch may keep growing.
	BatchMaxDuration metav1.Duration
	// RegistrationTimeout is how long a launched instance may take to register its Node before
	// Tailor terminates it and plans its pods again.
	RegistrationTimeout metav1.Duration
	// ConsolidationInterval is how often the consolidation loop looks for capacity to give back.
	ConsolidationInterval metav1.Duration
	// ConsolidationMinSavingsPercent is how much cheaper a replacement must be than what it
	// replaces.
	ConsolidationMinSavingsPercent int32
	// InterruptionQueue is the SQS queue (name or URL) EventBridge sends the cluster's EC2 spot
	// interruption, rebalance, state-change and AWS Health events to. Empty turns interruption
	// handling off.
	InterruptionQueue string
	// GangZonePolicy says where a gang's (a Coscheduling PodGroup's) new nodes go: SameZone
	// puts them in one zone unless the gang's pods' own constraints spread them; AnyZone plans
	// them as any other pods.
	GangZonePolicy string
	// RebalanceRecommendations says what an EC2 rebalance recommendation for a spot node does:
	// Advisory (an event and a metric, nothing else) or Replace (the node is renewed, within its
	// pool's disruption budgets and never evicting do-not-disrupt pods, as a drifted node is).
	RebalanceRecommendations string
}

// InstanceStoreRAID0 is the instance store policy that stripes the instance store volumes.
const InstanceStoreRAID0 = "RAID0"

// Image families (Pool.ImageFamily).
const (
	FamilyAL2023       = "al2023"
	FamilyBottlerocket = "bottlerocket"
	FamilyCustom       = "custom"
)

// Gang zone policies (TailorArgs.GangZonePolicy).
const (
	GangSameZone = "SameZone"
	GangAnyZone  = "AnyZone"
)

// What rebalance recommendations do (TailorArgs.RebalanceRecommendations).
const (
	RebalanceAdvisory = "Advisory"
	RebalanceReplace  = "Replace"
)

// Pool is one kind of capacity: where it may run, what it may be, and how its nodes look.
type Pool struct {
	// Name identifies the pool in labels, tags and claims.
	Name string
	// Weight orders pools: a pod goes to the highest-weight pool that can hold it, even if a
	// lower-weight pool is cheaper.
	Weight int32
	// Requirements restrict instance types and offerings by well-known and Tailor labels.
	Requirements []Requirement
	// CapacityTypes the pool may buy: on-demand, spot, reserved.
	CapacityTypes []string
	// CapacityReservationSelector picks the capacity reservations (On-Demand Capacity
	// Reservations, Capacity Blocks) reserved capacity launches into.
	CapacityReservationSelector Selector
	// Zones restricts the pool to these availability zones. Empty means every zone with a subnet.
	Zones []string
	// SubnetSelector picks the subnets instances launch into.
	SubnetSelector Selector
	// SecurityGroupSelector picks the security groups of the instances.
	SecurityGroupSelector Selector
	// AMI is an alias resolved through SSM (al2023) or an explicit image ID (ami-...).
	AMI string
	// AMISelector picks the image by ID or tags instead of AMI (which is then empty): the newest
	// matching image of the node's architecture.
	AMISelector Selector
	// ImageFamily is how the nodes bootstrap: al2023 (nodeadm), bottlerocket (TOML settings) or
	// custom (UserData alone).
	ImageFamily string
	// UserData is the pool's own user data, merged with Tailor's by the image family's rules.
	UserData string
	// AssociatePublicIPAddress, when set, overrides the subnet's public IPv4 setting.
	AssociatePublicIPAddress *bool
	// InstanceProfile is the IAM instance profile name of the nodes.
	InstanceProfile string
	// Labels are put on every node of the pool.
	Labels map[string]string
	// Taints are put on every node of the pool; only pods tolerating them land there.
	Taints []corev1.Taint
	// StartupTaints are put on nodes at registration and expected to be removed by another agent
	// (a CNI, a GPU operator); Tailor plans as if they were absent.
	StartupTaints []corev1.Taint
	// BlockDeviceMappings replace the image family's volumes (AL2023: a 20 GiB gp3 root,
	// Bottlerocket: a 4 GiB OS and a 20 GiB data volume); empty keeps them.
	BlockDeviceMappings []BlockDeviceMapping
	// MetadataOptions are the instances' IMDS settings (default: IMDSv2 only, one hop).
	MetadataOptions MetadataOptions
	// Tags go on the instances, their volumes and network interfaces, and the launch templates;
	// they never override Tailor's own.
	Tags map[string]string
	// DetailedMonitoring turns on CloudWatch detailed (1-minute) monitoring.
	DetailedMonitoring bool
	// InstanceStorePolicy RAID0 puts the kubelet and container storage on the instance store
	// volumes, striped, on types that have them.
	InstanceStorePolicy string
	// Kubelet configures the nodes' kubelets; the planner counts with the allocatable it gives.
	Kubelet Kubelet
	// Limits caps the total resources (cpu, memory) of the pool's nodes, in flight or running.
	Limits corev1.ResourceList
	// Disruption says when Tailor may take the pool's nodes away.
	Disruption Disruption
}

// Requirement is a node selector requirement with, optionally, how many distinct values of its
// key the instance types a claim offers EC2 must span.
type Requirement struct {
	corev1.NodeSelectorRequirement
	// MinValues (0: no minimum) is the number of distinct values of Key among a claim's types.
	MinValues int32
}

// Kubelet is the kubelet configuration of a pool's nodes. Zero values leave the image's defaults.
type Kubelet struct {
	// MaxPods caps the pods of a node; 0 derives it by MaxPodsPolicy.
	MaxPods int32
	// MaxPodsPolicy derives the pod limit from the type's network interfaces: ENI (one pod per
	// secondary IPv4 address) or PrefixDelegation (VPC CNI prefix delegation: /28 prefixes).
	MaxPodsPolicy string
	// PodsPerCore caps the pods of a node at this many per vCPU (0: no cap).
	PodsPerCore int32
	// SystemReserved and KubeReserved (cpu, memory, ephemeral-storage) replace the image's
	// reservations of those resources.
	SystemReserved corev1.ResourceList
	KubeReserved   corev1.ResourceList
	// EvictionHard and EvictionSoft map eviction signals (memory.available, nodefs.available,
	// nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available) to thresholds (a
	// quantity or a percentage); EvictionHard overrides the image's hard thresholds signal by
	// signal.
	EvictionHard            map[string]string
	EvictionSoft            map[string]string
	EvictionSoftGracePeriod map[string]metav1.Duration
	// EvictionMaxPodGracePeriod (seconds) caps the grace period of pods evicted by a soft threshold.
	EvictionMaxPodGracePeriod int32
	// ClusterDNS are the DNS server addresses pods are given (empty: the cluster's DNS service).
	ClusterDNS []string
}

// Max pods policies (Kubelet.MaxPodsPolicy).
const (
	MaxPodsENI              = "ENI"
	MaxPodsPrefixDelegation = "PrefixDelegation"
)

// Empty says whether the settings are all the image's defaults.
func (k *Kubelet) Empty() bool {
	return k.MaxPods == 0 && (k.MaxPodsPolicy == "" || k.MaxPodsPolicy == MaxPodsENI) && k.PodsPerCore == 0 &&
		len(k.SystemReserved) == 0 && len(k.KubeReserved) == 0 && len(k.EvictionHard) == 0 &&
		len(k.EvictionSoft) == 0 && len(k.EvictionSoftGracePeriod) == 0 && k.EvictionMaxPodGracePeriod == 0 &&
		len(k.ClusterDNS) == 0
}

// BlockDeviceMapping is one EBS volume of the pool's instances.
type BlockDeviceMapping struct {
	// DeviceName is the device (/dev/xvda is the root of AL2023 and Bottlerocket's OS volume).
	DeviceName string
	// VolumeSize is the size (a quantity: 100Gi).
	VolumeSize resource.Quantity
	// VolumeType is gp3, gp2, io1, io2, st1, sc1 or standard.
	VolumeType string
	// IOPS and Throughput (MiB/s) are for the types that take them (0: the type's default).
	IOPS       int32
	Throughput int32
	// Encrypted and KMSKeyID ("": the account's EBS key).
	Encrypted bool
	KMSKeyID  string
	// DeleteOnTermination deletes the volume with the instance.
	DeleteOnTermination bool
}

// MetadataOptions are IMDS settings.
type MetadataOptions struct {
	// HTTPTokens is required (IMDSv2 only) or optional.
	HTTPTokens string
	// HTTPPutResponseHopLimit is how far IMDS answers reach (1: not from pods on the node's
	// network; 2: pods too).
	HTTPPutResponseHopLimit int32
	// HTTPProtocolIPv6 enables IMDS's IPv6 endpoint.
	HTTPProtocolIPv6 bool
}

// Consolidation policies.
const (
	WhenEmpty                = "WhenEmpty"
	WhenEmptyOrUnderutilized = "WhenEmptyOrUnderutilized"
)

// Disruption says when Tailor may take a pool's nodes away.
type Disruption struct {
	// ConsolidationPolicy is WhenEmpty or WhenEmptyOrUnderutilized.
	ConsolidationPolicy string
	// ConsolidateAfter is how long a node must go without a pod arriving or leaving before it is
	// considered.
	ConsolidateAfter metav1.Duration
	// ExpireAfter replaces nodes older than this; 0 means never.
	ExpireAfter metav1.Duration
	// Budgets cap how many of the pool's nodes may be disrupted at once.
	Budgets []Budget
}

// Budget caps disruption, always or in a scheduled window.
type Budget struct {
	// Nodes is a count ("2") or a percentage of the pool's nodes ("20%", rounded up).
	Nodes string
	// Schedule (cron, UTC) starts a window of Duration in which the budget applies; empty means
	// always.
	Schedule string
	Duration metav1.Duration
}

// Selector picks EC2 resources by ID or by tags (value "*" means any value).
type Selector struct {
	IDs  []string
	Tags map[string]string
}

// LaunchHash fingerprints what a pool's nodes are launched with (requirements, capacity types,
// zones, network, image, instance profile, labels, taints), not how they are chosen or kept
// (weight, limits, disruption). A node launched under another fingerprint has drifted.
func (p *Pool) LaunchHash() string {
	// minValues says how flexible a claim is, and the reservation selector where reserved
	// capacity comes from, not what a node is: changing either drifts nothing.
	var reqs []corev1.NodeSelectorRequirement // nil stays nil: "null", as before
	if p.Requirements != nil {
		reqs = make([]corev1.NodeSelectorRequirement, len(p.Requirements))
	}
	for i, r := range p.Requirements {
		reqs[i] = r.NodeSelectorRequirement
	}
	parts := []any{reqs, p.CapacityTypes, p.Zones, p.SubnetSelector, p.SecurityGroupSelector,
		p.AMI, p.InstanceProfile, p.Labels, p.Taints, p.StartupTaints}
	// Launch settings added later hash only when set, so a pool without them keeps the
	// fingerprint its nodes launched under (and does not drift on upgrade).
	defaultIMDS := p.MetadataOptions == (MetadataOptions{}) || p.MetadataOptions == (MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 1})
	if len(p.BlockDeviceMappings) > 0 || !defaultIMDS || len(p.Tags) > 0 || p.DetailedMonitoring {
		parts = append(parts, p.BlockDeviceMappings, p.MetadataOptions, p.Tags, p.DetailedMonitoring)
	}
	if !p.Kubelet.Empty() {
		parts = append(parts, p.Kubelet)
	}
	if (p.ImageFamily != "" && p.ImageFamily != DefaultFamily(p.AMI)) || p.UserData != "" || p.AssociatePublicIPAddress != nil {
		parts = append(parts, p.ImageFamily, p.UserData, p.AssociatePublicIPAddress)
	}
	if p.InstanceStorePolicy != "" {
		parts = append(parts, p.InstanceStorePolicy)
	}
	if len(p.AMISelector.IDs) > 0 || len(p.AMISelector.Tags) > 0 {
		parts = append(parts, p.AMISelector)
	}
	b, _ := json.Marshal(parts)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// DefaultFamily is the image family of an AMI setting: the alias's, al2023 for an image ID.
func DefaultFamily(ami string) string {
	if ami == FamilyBottlerocket {
		return FamilyBottlerocket
	}
	return FamilyAL2023
}

// Pool returns the pool of that name, or nil.
func (a *TailorArgs) Pool(name string) *Pool {
	for i := range a.Pools {
		if a.Pools[i].Name == name {
			return &a.Pools[i]
		}
	}
	return nil
}
