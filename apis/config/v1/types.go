package v1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// TailorArgs configures the Tailor plugin of one scheduler profile.
type TailorArgs struct {
	metav1.TypeMeta `json:",inline"`

	// ClusterName is the EKS cluster's name. Required.
	ClusterName string `json:"clusterName"`
	// Region is the AWS region; empty means the SDK's default chain (AWS_REGION or
	// AWS_DEFAULT_REGION, then the shared config's profile; the SDK does not ask instance
	// metadata).
	Region string `json:"region,omitempty"`
	// KubernetesVersion ("1.34") picks the EKS-optimized AMI behind the image aliases. Empty, the
	// default, follows the control plane's minor version, read at start and every 10 minutes.
	KubernetesVersion *string `json:"kubernetesVersion,omitempty"`
	// ClusterEndpoint is the API server URL nodes join (https://...). Empty means the endpoint
	// eks:DescribeCluster reports at start.
	ClusterEndpoint string `json:"clusterEndpoint,omitempty"`
	// ClusterCABundle is the cluster's certificate authority, base64-encoded PEM as
	// DescribeCluster reports it. Empty means DescribeCluster's.
	ClusterCABundle string `json:"clusterCABundle,omitempty"`
	// ServiceCIDR is the cluster's service IP range (nodes derive the cluster DNS address from
	// it). Empty means DescribeCluster's.
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
	// IPFamily of the cluster, ipv4 or ipv6. Empty means DescribeCluster's.
	IPFamily string `json:"ipFamily,omitempty"`
	// Pools are the kinds of capacity Tailor may launch. At least one.
	Pools []Pool `json:"pools"`
	// BatchIdleDuration is how long the batcher waits for another failed pod. Defaults to 100ms.
	BatchIdleDuration *metav1.Duration `json:"batchIdleDuration,omitempty"`
	// BatchMaxDuration caps how long a batch may keep growing. Defaults to 1s.
	BatchMaxDuration *metav1.Duration `json:"batchMaxDuration,omitempty"`
	// RegistrationTimeout is how long an instance may take to register. Defaults to 15m.
	RegistrationTimeout *metav1.Duration `json:"registrationTimeout,omitempty"`
	// ConsolidationInterval is how often the consolidation loop looks for capacity to give
	// back (it also looks soon after pods leave). Defaults to 15s.
	ConsolidationInterval *metav1.Duration `json:"consolidationInterval,omitempty"`
	// ConsolidationMinSavingsPercent is how much cheaper (0–90 %) a replacement must be than
	// the nodes it replaces: no churn for pennies. Defaults to 10.
	ConsolidationMinSavingsPercent *int32 `json:"consolidationMinSavingsPercent,omitempty"`
	// InterruptionQueue is the SQS queue, by name (tailor-prod) or URL
	// (https://sqs.us-east-1.amazonaws.com/123456789012/tailor-prod), that EventBridge rules send
	// EC2 spot interruption warnings, rebalance recommendations, instance state changes and AWS
	// Health scheduled changes to. Tailor then replaces and drains a node before EC2 takes it
	// away. Empty (the default) turns interruption handling off.
	InterruptionQueue string `json:"interruptionQueue,omitempty"`
	// GangZonePolicy says where a gang's (a Coscheduling PodGroup's) new nodes go: SameZone puts
	// them in one zone, so its members talk without crossing zones, unless the pods' own
	// constraints spread them; AnyZone plans them as any other pods. Defaults to SameZone.
	GangZonePolicy *string `json:"gangZonePolicy,omitempty"`
	// RebalanceRecommendations says what an EC2 rebalance recommendation (a spot instance at
	// elevated risk of interruption; they come early, in bursts, often for instances never
	// interrupted) does to the node: Advisory, the default, emits a RebalanceRecommended event on
	// the node and counts it, nothing else; Replace renews the node as if it had drifted: within
	// its pool's disruption budgets, never while the cluster scales up, never evicting
	// do-not-disrupt pods, replacements first. Needs interruptionQueue.
	RebalanceRecommendations *string `json:"rebalanceRecommendations,omitempty"`
}

// Pool is one kind of capacity.
type Pool struct {
	// Name identifies the pool in labels, tags and claims. Required, a DNS label.
	Name string `json:"name"`
	// Weight orders pools (0–100): a pod goes to the highest-weight pool that can hold it.
	Weight *int32 `json:"weight,omitempty"`
	// Requirements over well-known and Tailor labels (In, NotIn, Exists, DoesNotExist, Gt, Lt).
	Requirements []Requirement `json:"requirements,omitempty"`
	// CapacityTypes the pool may buy: on-demand, spot, reserved. Defaults to [on-demand].
	// Reserved capacity (the reservations capacityReservationSelector picks) is planned first,
	// its cost being paid already, as far as the reservations have instances free; then the
	// pool's other capacity types.
	CapacityTypes []string `json:"capacityTypes,omitempty"`
	// CapacityReservationSelector picks the active On-Demand Capacity Reservations and Capacity
	// Blocks for ML the pool's reserved capacity launches into: {ids: [cr-…]} or {tags: {…}}.
	// Required with the reserved capacity type. Nodes in a Capacity Block are drained before EC2
	// reclaims its instances, from 40 minutes before it ends.
	CapacityReservationSelector Selector `json:"capacityReservationSelector,omitempty"`
	// Zones restricts the pool to these availability zones. Empty means every selected subnet's zone.
	Zones []string `json:"zones,omitempty"`
	// SubnetSelector picks subnets. Defaults to tags {tailor.dev/discovery: <clusterName>}.
	SubnetSelector Selector `json:"subnetSelector,omitempty"`
	// SecurityGroupSelector picks security groups. Defaults to tags {tailor.dev/discovery: <clusterName>}.
	SecurityGroupSelector Selector `json:"securityGroupSelector,omitempty"`
	// AMI is an alias resolved through SSM (al2023) or an image ID (ami-...). Defaults to al2023.
	AMI *string `json:"ami,omitempty"`
	// AMISelector picks the nodes' image instead of ami: {ids: [ami-…]} or {tags: {k: v}} (this
	// account's images with every tag; "*" matches any value). Each launch uses the newest
	// available image of the node's architecture it picks, and nodes launched from an older one
	// are renewed within the pool's disruption budgets. Give the imageFamily it bootstraps with
	// (default al2023).
	AMISelector Selector `json:"amiSelector,omitempty"`
	// ImageFamily is how the nodes bootstrap, which decides Tailor's user data: al2023
	// (nodeadm's NodeConfig), bottlerocket (TOML settings) or custom (the pool's userData alone:
	// the image must join the cluster by itself; Tailor labels and taints the node when it
	// registers). Defaults to the alias's family, and to al2023 for an image ID.
	ImageFamily *string `json:"imageFamily,omitempty"`
	// UserData is the pool's own user data, merged with Tailor's. al2023: MIME parts (or one
	// shell script or NodeConfig) that go before Tailor's NodeConfig, so nodeadm merges
	// Tailor's last and the cluster, pod limit and reservations the planner counted with win;
	// bottlerocket: TOML settings, under Tailor's where both set a key; custom: the whole user
	// data. At most 12 KiB: EC2 takes 16 KiB in all.
	UserData *string `json:"userData,omitempty"`
	// AssociatePublicIPAddress gives the instances a public IPv4 address (true) or none (false)
	// whatever the subnet's setting; unset follows the subnet.
	AssociatePublicIPAddress *bool `json:"associatePublicIPAddress,omitempty"`
	// InstanceProfile is the IAM instance profile name of the nodes.
	InstanceProfile string `json:"instanceProfile,omitempty"`
	// Labels are put on every node of the pool.
	Labels map[string]string `json:"labels,omitempty"`
	// Taints are put on every node of the pool.
	Taints []corev1.Taint `json:"taints,omitempty"`
	// StartupTaints are put on nodes at registration and removed by another agent.
	StartupTaints []corev1.Taint `json:"startupTaints,omitempty"`
	// BlockDeviceMappings replace the image family's volumes (AL2023: a 20 GiB gp3 root on
	// /dev/xvda; Bottlerocket: a 4 GiB OS volume on /dev/xvda and a 20 GiB data volume on
	// /dev/xvdb). Empty keeps them.
	BlockDeviceMappings []BlockDeviceMapping `json:"blockDeviceMappings,omitempty"`
	// MetadataOptions are the instances' IMDS settings. Defaults: httpTokens required,
	// httpPutResponseHopLimit 1, no IPv6 endpoint.
	MetadataOptions MetadataOptions `json:"metadataOptions,omitempty"`
	// Tags go on the instances, their volumes and network interfaces, and the pool's launch
	// templates. Keys Tailor or EKS use (kubernetes.io/cluster/*, tailor.dev/*, eks:*, aws:*)
	// are refused.
	Tags map[string]string `json:"tags,omitempty"`
	// DetailedMonitoring turns on CloudWatch detailed (1-minute) monitoring of the instances.
	DetailedMonitoring bool `json:"detailedMonitoring,omitempty"`
	// InstanceStorePolicy RAID0 stripes the instance store volumes of types that have them (NVMe
	// SSDs: i4i, m6id, c6gd, …) into one array and puts the kubelet's and the container
	// runtime's storage on it, so pods' ephemeral storage is the instance store's size, which
	// the planner counts with. Unset, the instance store is left alone.
	InstanceStorePolicy string `json:"instanceStorePolicy,omitempty"`
	// Kubelet configures the nodes' kubelets (written into their user data); the planner counts
	// with the allocatable these settings give.
	Kubelet Kubelet `json:"kubelet,omitempty"`
	// Limits caps the total cpu and memory of the pool's nodes.
	Limits corev1.ResourceList `json:"limits,omitempty"`
	// Disruption says when Tailor may take the pool's nodes away.
	Disruption Disruption `json:"disruption,omitempty"`
}

// Requirement is a node selector requirement over well-known and Tailor labels.
type Requirement struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	// MinValues is how many distinct values of the key the instance types a claim offers EC2
	// must span (1-50): "instance-family" with minValues 3 keeps a spot claim flexible across
	// three families. A claim that cannot meet it is not made, and an event says why.
	MinValues *int32 `json:"minValues,omitempty"`
}

// Kubelet is the kubelet configuration of a pool's nodes. Unset fields keep the image's defaults.
type Kubelet struct {
	// MaxPods caps the pods of a node (1-1000). Unset, it is derived by MaxPodsPolicy.
	MaxPods *int32 `json:"maxPods,omitempty"`
	// MaxPodsPolicy derives the pod limit from the instance type's network interfaces when
	// MaxPods is unset: ENI (default; ENIs × (IPv4 addresses per ENI − 1) + 2, what the EKS AMIs
	// use) or PrefixDelegation (the VPC CNI with ENABLE_PREFIX_DELEGATION: ENIs × (IPv4 addresses
	// per ENI − 1) × 16 + 2, at most 110 below 30 vCPUs and 250 from 30 up, as EKS recommends).
	MaxPodsPolicy *string `json:"maxPodsPolicy,omitempty"`
	// PodsPerCore caps the pods of a node at this many per vCPU (0: no cap).
	PodsPerCore int32 `json:"podsPerCore,omitempty"`
	// SystemReserved and KubeReserved (cpu, memory, ephemeral-storage) replace the image's
	// reservation of the resources they name; the others keep it. The EKS AMIs reserve no
	// system resources and, for kube: CPU by core count and 11 MiB per pod + 255 MiB memory.
	SystemReserved corev1.ResourceList `json:"systemReserved,omitempty"`
	KubeReserved   corev1.ResourceList `json:"kubeReserved,omitempty"`
	// EvictionHard and EvictionSoft map eviction signals (memory.available, nodefs.available,
	// nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available) to thresholds, a
	// quantity ("500Mi") or a percentage ("10%"). EvictionHard overrides the EKS AMI's hard
	// thresholds (memory.available 100Mi, nodefs.available 10%, nodefs.inodesFree 5%) signal by
	// signal. Every soft threshold needs a grace period.
	EvictionHard            map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft            map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	// EvictionMaxPodGracePeriod (seconds) caps the termination grace period of pods evicted when
	// a soft threshold is met.
	EvictionMaxPodGracePeriod int32 `json:"evictionMaxPodGracePeriod,omitempty"`
	// ClusterDNS are the DNS server addresses pods are given. Empty: the cluster DNS service's
	// address, from the service CIDR.
	ClusterDNS []string `json:"clusterDNS,omitempty"`
}

// BlockDeviceMapping is one EBS volume of a pool's instances.
type BlockDeviceMapping struct {
	// DeviceName is the device, such as /dev/xvda (the root of AL2023 and Bottlerocket's OS
	// volume) or /dev/xvdb (Bottlerocket's data volume, where images and pods live).
	DeviceName string `json:"deviceName"`
	// VolumeSize is the volume's size, a quantity such as 100Gi (whole GiB, at most 64Ti).
	VolumeSize resource.Quantity `json:"volumeSize"`
	// VolumeType is gp3 (default), gp2, io1, io2, st1, sc1 or standard.
	VolumeType *string `json:"volumeType,omitempty"`
	// IOPS (gp3, io1, io2) and Throughput in MiB/s (gp3); 0 leaves EC2's default.
	IOPS       int32 `json:"iops,omitempty"`
	Throughput int32 `json:"throughput,omitempty"`
	// Encrypted defaults to true; KMSKeyID (an ARN) defaults to the account's EBS key.
	Encrypted *bool  `json:"encrypted,omitempty"`
	KMSKeyID  string `json:"kmsKeyID,omitempty"`
	// DeleteOnTermination defaults to true.
	DeleteOnTermination *bool `json:"deleteOnTermination,omitempty"`
}

// MetadataOptions are IMDS settings.
type MetadataOptions struct {
	// HTTPTokens is required (IMDSv2 only, the default) or optional.
	HTTPTokens *string `json:"httpTokens,omitempty"`
	// HTTPPutResponseHopLimit (1-64, default 1) is how far IMDS answers reach: 1 keeps pods on
	// the node's network from the node role's credentials; 2 lets them reach it.
	HTTPPutResponseHopLimit *int32 `json:"httpPutResponseHopLimit,omitempty"`
	// HTTPProtocolIPv6 enables IMDS's IPv6 endpoint (default false).
	HTTPProtocolIPv6 bool `json:"httpProtocolIPv6,omitempty"`
}

// Disruption says when Tailor may take a pool's nodes away.
type Disruption struct {
	// ConsolidationPolicy is WhenEmpty (remove nodes without pods) or WhenEmptyOrUnderutilized
	// (also remove or replace nodes whose pods fit elsewhere or on cheaper capacity). Defaults
	// to WhenEmptyOrUnderutilized.
	ConsolidationPolicy string `json:"consolidationPolicy,omitempty"`
	// ConsolidateAfter is how long a node must go without a pod arriving or leaving before it
	// is considered. Defaults to 30s.
	ConsolidateAfter *metav1.Duration `json:"consolidateAfter,omitempty"`
	// ExpireAfter replaces nodes older than this; empty or 0 means never.
	ExpireAfter *metav1.Duration `json:"expireAfter,omitempty"`
	// Budgets cap how many of the pool's nodes may be disrupted at once; the strictest active
	// budget applies. Defaults to [{nodes: "10%"}].
	Budgets []Budget `json:"budgets,omitempty"`
}

// Budget caps disruption, always or during a scheduled window.
type Budget struct {
	// Nodes is a count ("2") or a percentage of the pool's nodes ("20%", rounded up); "0"
	// blocks disruption.
	Nodes string `json:"nodes"`
	// Schedule (cron, UTC: "0 9 * * 1-5", or @daily, ...) starts a window of Duration in which
	// the budget applies; both or neither.
	Schedule string           `json:"schedule,omitempty"`
	Duration *metav1.Duration `json:"duration,omitempty"`
}

// Selector picks EC2 resources by IDs or by tags (value "*" means any value); not both.
type Selector struct {
	IDs  []string          `json:"ids,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}
