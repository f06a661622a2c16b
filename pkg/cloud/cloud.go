// Package cloud is the narrow interface between Tailor's planning code and a cloud's compute API.
// Everything above this package speaks in instance types, offerings, subnets and instances; only
// the implementation (pkg/cloud/ec2) knows about EC2 requests, pagination and retries.
package cloud

import (
	"context"
	"fmt"
	"time"

	"github.com/tailor-eks/tailor/apis/config"
)

// CapacityType is how an instance is bought.
type CapacityType string

const (
	OnDemand CapacityType = "on-demand"
	Spot     CapacityType = "spot"
	// Reserved is capacity in an On-Demand Capacity Reservation or a Capacity Block for ML
	// that the account has already paid for.
	Reserved CapacityType = "reserved"
)

// InstanceType is one launchable machine shape with everything the planner and the allocatable
// model need. Offerings say where and how it can be bought, and at what price.
type InstanceType struct {
	Name            string
	Arch            string // Kubernetes spelling: amd64 or arm64
	VCPUs           int64
	MemoryMiB       int64 // as DescribeInstanceTypes reports it, before VM overhead
	GPUCount        int64
	GPUName         string
	GPUManufacturer string
	GPUMemoryMiB    int64 // total over all GPUs
	// MaxENIs and IPv4PerENI are what the EKS-optimized AMI uses to compute max pods.
	MaxENIs    int64
	IPv4PerENI int64
	BareMetal  bool
	Hypervisor string
	// InstanceStorageGB is the total size of its instance store volumes, in GB (10^9 bytes, as
	// EC2 gives it); 0 for types without.
	InstanceStorageGB int64
	Offerings         []Offering
}

// MaxPods is the EKS-optimized AMI's pod limit for the type: every ENI but its primary address
// can hold a pod IP, plus two host-network pods (110 when the ENI facts are unknown). The launch
// writes it into the node's bootstrap configuration and the allocatable model counts with it,
// so both always agree.
func (it *InstanceType) MaxPods() int64 {
	if it.MaxENIs <= 0 || it.IPv4PerENI <= 1 {
		return 110
	}
	return it.MaxENIs*(it.IPv4PerENI-1) + 2
}

// Offering is one (zone, capacity type) in which a type can be launched, with its hourly price.
type Offering struct {
	Zone         string
	CapacityType CapacityType
	PricePerHour float64
	// Reservation is the capacity reservation a reserved offering launches into.
	Reservation *CapacityReservation
}

// CapacityBlockDrainLead is how long before a Capacity Block ends its nodes are drained: EC2
// warns 40 minutes before the end and begins reclaiming the instances 10 minutes later.
const CapacityBlockDrainLead = 40 * time.Minute

// CapacityReservation is an active On-Demand Capacity Reservation or Capacity Block: instances of
// one type in one zone, paid for whether used or not.
type CapacityReservation struct {
	ID           string
	InstanceType string
	Zone         string
	// Available is how many more instances it takes now.
	Available int64
	// CapacityBlock is a Capacity Block for ML, whose instances EC2 reclaims as it ends.
	CapacityBlock bool
	// EndsAt is when it ends (zero: it does not).
	EndsAt time.Time
}

// Subnet is a launchable subnet.
type Subnet struct {
	ID           string
	Zone         string
	AvailableIPs int64
}

// Selector picks subnets, security groups or images: by IDs, or by tags (every tag must match;
// the value "*" matches any value of that key). IDs and tags may not both be set.
type Selector struct {
	IDs  []string
	Tags map[string]string
}

// LaunchRequest asks for exactly one instance from a set of interchangeable overrides.
type LaunchRequest struct {
	// ClientToken makes the launch idempotent: a retry with the same token returns the same
	// instance instead of launching another.
	ClientToken  string
	CapacityType CapacityType
	// Overrides are the acceptable (type, subnet) pairs, most preferred first.
	Overrides []Override
	// Image is an explicit AMI ID (ami-...) or an alias resolved through SSM (al2023, bottlerocket).
	Image string
	// ImageID, when set, is the AMI that ResolveImage gave for Image earlier: the launch uses it
	// as it is, and Image only says how the node bootstraps. A launch resumed with the same
	// client token must send the request it sent first, whatever the alias resolves to now.
	ImageID          string
	InstanceProfile  string
	SecurityGroupIDs []string
	// NodeLabels and NodeTaints are passed to the kubelet through user data so the node registers
	// with them.
	NodeLabels map[string]string
	NodeTaints []Taint
	// Tags go on the instance, its volumes and the fleet request.
	Tags map[string]string
	// TemplateTags go on the launch templates the launch uses and, through them, on the
	// instance's network interfaces (and its spot request): they must be the same for every
	// launch of a pool, never per claim, or every claim gets a template of its own. The provider
	// adds its cluster ownership tags to them.
	TemplateTags map[string]string
	// Settings are the pool's launch settings; the zero value is the provider's defaults.
	Settings LaunchSettings
	// Reservation, for CapacityType Reserved, is the reservation the instance launches into
	// (the overrides are of its type and zone).
	Reservation *CapacityReservation
}

// LaunchSettings are how a pool's instances are launched beyond their image and network.
type LaunchSettings struct {
	// BlockDevices replace the image family's volumes when set.
	BlockDevices []BlockDevice
	// HTTPTokens ("required" or "optional"; "" is required), HopLimit (0 is 1) and
	// IMDSIPv6 are the instance metadata service's settings.
	HTTPTokens string
	HopLimit   int32
	IMDSIPv6   bool
	// DetailedMonitoring turns on 1-minute CloudWatch monitoring.
	DetailedMonitoring bool
	// Kubelet are the pool's kubelet settings, written into the user data.
	Kubelet config.Kubelet
	// ImageFamily is how nodes of an image ID bootstrap (al2023, bottlerocket, custom); ""
	// is the image's own family (an alias's, al2023 for an ID).
	ImageFamily string
	// UserData is the pool's own user data, merged with the provider's bootstrap.
	UserData string
	// AssociatePublicIP, when set, gives the instances a public IPv4 address or none.
	AssociatePublicIP *bool
	// InstanceStoreRAID0 stripes the instance store volumes for the kubelet and containers.
	InstanceStoreRAID0 bool
}

// BlockDevice is one EBS volume.
type BlockDevice struct {
	DeviceName          string
	SizeGiB             int32
	VolumeType          string
	IOPS, Throughput    int32
	Encrypted           bool
	KMSKeyID            string
	DeleteOnTermination bool
}

// LaunchTemplate is a launch template the provider created for this cluster.
type LaunchTemplate struct {
	ID      string
	Name    string
	Created time.Time
	Tags    map[string]string
}

// Taint is a node taint in kubelet flag form.
type Taint struct {
	Key, Value, Effect string
}

// Override is one acceptable (instance type, subnet) pair of a launch.
type Override struct {
	InstanceType string
	SubnetID     string
}

// LaunchResult holds the launched instance (nil if none) and the per-override failures the
// cloud reported, so the caller can mark those offerings unavailable.
type LaunchResult struct {
	Instance *Instance
	Errors   []OfferingError
}

// OfferingError is a failure of one override, such as InsufficientInstanceCapacity.
type OfferingError struct {
	InstanceType string
	Zone         string
	SubnetID     string
	Code         string
	Message      string
}

func (e OfferingError) Error() string {
	return fmt.Sprintf("%s in %s: %s: %s", e.InstanceType, e.Zone, e.Code, e.Message)
}

// Instance states, as EC2 names them.
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
	StateStopping     = "stopping"
	StateStopped      = "stopped"
)

// Instance is a launched machine.
type Instance struct {
	ID             string
	Type           string
	Zone           string
	SubnetID       string
	ImageID        string
	PrivateDNSName string
	PrivateIP      string
	State          string
	CapacityType   CapacityType
	// CapacityReservationID is the reservation the instance runs in (CapacityType Reserved).
	CapacityReservationID string
	LaunchTime            time.Time
	Tags                  map[string]string
}

// ProviderID is the Node spec.providerID the kubelet (and cloud provider) sets for this instance.
func (i *Instance) ProviderID() string { return fmt.Sprintf("aws:///%s/%s", i.Zone, i.ID) }

// Provider is everything Tailor needs from a cloud.
type Provider interface {
	// InstanceTypes lists the launchable types of the region with their offerings and prices.
	InstanceTypes(ctx context.Context) ([]InstanceType, error)
	// InstanceType is one type of that list (ok false if it has none of that name), for callers
	// that need one: the list is a copy.
	InstanceType(ctx context.Context, name string) (it InstanceType, ok bool, err error)
	// Subnets returns the subnets the selector picks.
	Subnets(ctx context.Context, sel Selector) ([]Subnet, error)
	// SecurityGroups returns the IDs of the security groups the selector picks.
	SecurityGroups(ctx context.Context, sel Selector) ([]string, error)
	// ResolveImageSelector returns the newest image the selector picks (by IDs, or this account's
	// images with the tags) for the instance types' architecture.
	ResolveImageSelector(ctx context.Context, sel Selector, instanceTypes []string) (string, error)
	// CapacityReservations returns the active capacity reservations the selector picks (by IDs
	// or tags) that take instances this account launches into them by target.
	CapacityReservations(ctx context.Context, sel Selector) ([]CapacityReservation, error)
	// ResolveImage returns the AMI ID a launch of the instance types with image (an AMI ID or an
	// alias, as LaunchRequest.Image) would use now.
	ResolveImage(ctx context.Context, image string, instanceTypes []string) (string, error)
	// Launch starts one instance. An error means the request itself failed (and may be retried
	// with the same ClientToken), of the ErrorKind the provider gave it; a result may come with
	// it, whose Errors are offerings found without capacity meanwhile. A nil Instance with Errors
	// and no error means no override had capacity.
	Launch(ctx context.Context, req LaunchRequest) (*LaunchResult, error)
	// Instances lists the non-terminated instances carrying all of the given tags.
	Instances(ctx context.Context, tags map[string]string) ([]Instance, error)
	// Terminate terminates the instances; already terminated or unknown IDs are not an error.
	Terminate(ctx context.Context, ids ...string) error
	// LaunchTemplates lists the launch templates the provider created for this cluster that carry
	// all of the given tags (a "*" value matches any value of the key).
	LaunchTemplates(ctx context.Context, tags map[string]string) ([]LaunchTemplate, error)
	// DeleteLaunchTemplate deletes one of them; an unknown ID is not an error.
	DeleteLaunchTemplate(ctx context.Context, id string) error
}
