package ec2sim

import (
	"encoding/base64"
	"fmt"
	"maps"
	"math/bits"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// DiscoveryTagKey is the tag the simulator puts on its subnets and cluster security group, with
// the cluster name as value, so a configuration can select them.
const DiscoveryTagKey = "tailor.dev/discovery"

func clusterTagKey(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// subnet is a simulated subnet with its IP allocator.
type subnet struct {
	id, zone, zoneID, vpcID string
	cidr                    netip.Prefix
	size                    uint32 // addresses in the CIDR
	next                    uint32 // next offset to try
	used                    map[uint32]string
	tags                    map[string]string
}

// available is the number of free addresses: EC2 reserves the first four and the last.
func (sn *subnet) available() int64 {
	return int64(sn.size) - 5 - int64(len(sn.used))
}

// allocate returns a free address for the instance, or false when the subnet is full.
func (sn *subnet) allocate(instanceID string) (netip.Addr, uint32, bool) {
	if sn.available() <= 0 {
		return netip.Addr{}, 0, false
	}
	for range sn.size {
		off := sn.next
		sn.next++
		if sn.next >= sn.size-1 {
			sn.next = 4
		}
		if off < 4 || off >= sn.size-1 {
			continue
		}
		if _, taken := sn.used[off]; taken {
			continue
		}
		sn.used[off] = instanceID
		return addrAt(sn.cidr, off), off, true
	}
	return netip.Addr{}, 0, false
}

func addrAt(p netip.Prefix, off uint32) netip.Addr {
	b := p.Masked().Addr().As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += off
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

type securityGroup struct {
	id, name, description, vpcID string
	tags                         map[string]string
}

type image struct {
	id, name, description string
	arch                  ec2types.ArchitectureType
	created               time.Time
	tags                  map[string]string
	// owner is the account that owns it: "" for Amazon's (the EKS AMIs).
	owner string
}

// AddImage registers an image of the account (owned by Options.AccountID, private), as a team
// that builds its own AMIs has: DescribeImages with Owner self and tag filters finds it, and
// launches may use it. It returns the image's ID.
func (s *Sim) AddImage(name, arch string, created time.Time, tags map[string]string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := fmt.Sprintf("ami-0%016x", hash64(s.opts.Region+"|own|"+name))
	im := &image{id: id, name: name, description: name, arch: ec2types.ArchitectureType(arch), created: created,
		tags: maps.Clone(tags), owner: s.opts.AccountID}
	if im.tags == nil {
		im.tags = map[string]string{}
	}
	s.images = append(s.images, im)
	s.imageByID[id] = im
	return id
}

type launchTemplate struct {
	id, name         string
	created          time.Time
	imageID          string
	instanceType     string
	profileName      string
	profileArn       string
	securityGroupIDs []string
	userData         string // base64, as sent
	instanceTags     map[string]string
	// launchTags are the template's TagSpecifications by resource type (instance, volume,
	// network-interface, spot-instances-request): what a launch from it tags.
	launchTags  map[string]map[string]string
	tags        map[string]string
	data        url.Values
	clientToken string
	// crTarget, crPreference and marketType are the template's
	// CapacityReservationSpecification and InstanceMarketOptions.MarketType (readReservationSpec).
	crTarget, crPreference, marketType string
}

func (lt *launchTemplate) export() LaunchTemplate {
	ud, _ := base64.StdEncoding.DecodeString(lt.userData)
	profile := lt.profileName
	if profile == "" {
		profile = lt.profileArn
	}
	return LaunchTemplate{
		ID: lt.id, Name: lt.name, ImageID: lt.imageID, InstanceType: lt.instanceType,
		InstanceProfile: profile, SecurityGroupIDs: slices.Clone(lt.securityGroupIDs),
		UserData: string(ud), Tags: maps.Clone(lt.tags), Data: cloneValues(lt.data),
	}
}

func (lt *launchTemplate) sdk(owner string) ec2types.LaunchTemplate {
	return ec2types.LaunchTemplate{
		CreateTime:           aws.Time(lt.created),
		CreatedBy:            aws.String(fmt.Sprintf("arn:aws:iam::%s:root", owner)),
		DefaultVersionNumber: aws.Int64(1),
		LatestVersionNumber:  aws.Int64(1),
		LaunchTemplateId:     aws.String(lt.id),
		LaunchTemplateName:   aws.String(lt.name),
		Tags:                 sdkTags(lt.tags),
	}
}

type fleetRecord struct {
	hash string
	out  any
}

// instance is a simulated instance. Its state is a function of the clock.
type instance struct {
	id, instanceType, subnetID, zone, vpcID, imageID string
	privateIP                                        string
	ipOffset                                         uint32
	reservationID, fleetID, clientToken              string
	spotRequestID                                    string
	arch                                             ec2types.ArchitectureType
	capacityType                                     cloud.CapacityType
	profileArn                                       string
	groups                                           []ec2types.GroupIdentifier
	launched                                         time.Time
	launchSeq                                        uint64        // launch order, for DescribeInstances' pages
	pendingFor                                       time.Duration // fixed at launch
	terminating                                      time.Time     // zero until TerminateInstances
	released                                         bool          // IP returned to the subnet
	tags                                             map[string]string
	// userData is the launch template's, base64 as sent: EC2 keeps it with the instance, so
	// deleting the template later does not change what the instance booted with.
	userData string
	// volumes are the sizes (GiB) of the EBS volumes the template mapped, by device: what the
	// instance's disks are, whatever becomes of the template.
	volumes map[string]int64
	// reservation is the capacity reservation the instance runs in (nil for none); targeted
	// whether its template named it; reservationPref the template's CapacityReservationPreference
	// (open by default). reclaimed is when EC2 began terminating it at the end of its Capacity
	// Block (zero if it did not).
	reservation     *capacityReservation
	targeted        bool
	reservationPref string
	reclaimed       time.Time
}

// State codes as EC2 numbers them.
var stateCodes = map[string]int32{
	cloud.StatePending: 0, cloud.StateRunning: 16, cloud.StateShuttingDown: 32,
	cloud.StateTerminated: 48, cloud.StateStopping: 64, cloud.StateStopped: 80,
}

// shutdownAt is when the instance began shutting down: asked by TerminateInstances or reclaimed
// at the end of its Capacity Block, whichever came first (zero if neither).
func (in *instance) shutdownAt() time.Time {
	if in.terminating.IsZero() || (!in.reclaimed.IsZero() && in.reclaimed.Before(in.terminating)) {
		return in.reclaimed
	}
	return in.terminating
}

func (in *instance) state(now time.Time, o Options) string {
	if t := in.shutdownAt(); !t.IsZero() {
		if now.Before(t.Add(o.ShuttingDownFor)) {
			return cloud.StateShuttingDown
		}
		return cloud.StateTerminated
	}
	if now.Before(in.launched.Add(in.pendingFor)) {
		return cloud.StatePending
	}
	return cloud.StateRunning
}

// terminatedAt is when the instance reached terminated (zero if it has not).
func (in *instance) terminatedAt(o Options) time.Time {
	t := in.shutdownAt()
	if t.IsZero() {
		return time.Time{}
	}
	return t.Add(o.ShuttingDownFor)
}

func (in *instance) dnsName(region string) string {
	host := "ip-" + strings.ReplaceAll(in.privateIP, ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}

func (in *instance) cloud(now time.Time, o Options) cloud.Instance {
	st := in.state(now, o)
	out := cloud.Instance{
		ID: in.id, Type: in.instanceType, Zone: in.zone, SubnetID: in.subnetID, ImageID: in.imageID,
		PrivateDNSName: in.dnsName(o.Region), PrivateIP: in.privateIP, State: st,
		CapacityType: in.capacityType, LaunchTime: in.launched, Tags: maps.Clone(in.tags),
	}
	if st == cloud.StateTerminated {
		out.PrivateDNSName, out.PrivateIP, out.SubnetID = "", "", ""
	}
	return out
}

func (s *Sim) sdkInstance(in *instance, now time.Time) ec2types.Instance {
	st := in.state(now, s.opts)
	info := s.types[in.instanceType]
	out := ec2types.Instance{
		AmiLaunchIndex:          aws.Int32(0),
		Architecture:            ec2types.ArchitectureValues(in.arch),
		BootMode:                ec2types.BootModeValuesUefiPreferred,
		CurrentInstanceBootMode: ec2types.InstanceBootModeValuesUefi,
		ClientToken:             aws.String(in.clientToken),
		EbsOptimized:            aws.Bool(true),
		EnaSupport:              aws.Bool(true),
		Hypervisor:              ec2types.HypervisorTypeXen,
		ImageId:                 aws.String(in.imageID),
		InstanceId:              aws.String(in.id),
		InstanceType:            ec2types.InstanceType(in.instanceType),
		LaunchTime:              aws.Time(in.launched),
		Monitoring:              &ec2types.Monitoring{State: ec2types.MonitoringStateDisabled},
		Placement: &ec2types.Placement{
			AvailabilityZone:   aws.String(in.zone),
			AvailabilityZoneId: aws.String(s.zoneIDs[in.zone]),
			GroupName:          aws.String(""),
			Tenancy:            ec2types.TenancyDefault,
		},
		PlatformDetails:          aws.String("Linux/UNIX"),
		PrivateDnsName:           aws.String(in.dnsName(s.opts.Region)),
		PrivateIpAddress:         aws.String(in.privateIP),
		PublicDnsName:            aws.String(""),
		RootDeviceName:           aws.String("/dev/xvda"),
		RootDeviceType:           ec2types.DeviceTypeEbs,
		SecurityGroups:           slices.Clone(in.groups),
		SourceDestCheck:          aws.Bool(true),
		State:                    &ec2types.InstanceState{Code: aws.Int32(stateCodes[st]), Name: ec2types.InstanceStateName(st)},
		StateTransitionReason:    aws.String(""),
		SubnetId:                 aws.String(in.subnetID),
		Tags:                     sdkTags(in.tags),
		UsageOperation:           aws.String("RunInstances"),
		UsageOperationUpdateTime: aws.Time(in.launched),
		VirtualizationType:       ec2types.VirtualizationTypeHvm,
		VpcId:                    aws.String(in.vpcID),
	}
	if info.VCpuInfo != nil {
		out.CpuOptions = &ec2types.CpuOptions{CoreCount: info.VCpuInfo.DefaultCores, ThreadsPerCore: info.VCpuInfo.DefaultThreadsPerCore}
	}
	if in.profileArn != "" {
		out.IamInstanceProfile = &ec2types.IamInstanceProfile{Arn: aws.String(in.profileArn), Id: aws.String("AIPA" + strings.ToUpper(in.id[2:]))}
	}
	if in.capacityType == cloud.Spot {
		out.InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
		out.SpotInstanceRequestId = aws.String(in.spotRequestID)
	}
	sdkReservationFields(in, &out)
	if st != cloud.StateTerminated {
		out.NetworkInterfaces = []ec2types.InstanceNetworkInterface{{
			NetworkInterfaceId: aws.String("eni-" + in.id[2:]),
			PrivateIpAddress:   aws.String(in.privateIP),
			PrivateDnsName:     aws.String(in.dnsName(s.opts.Region)),
			SubnetId:           aws.String(in.subnetID),
			VpcId:              aws.String(in.vpcID),
			Status:             ec2types.NetworkInterfaceStatusInUse,
			Groups:             slices.Clone(in.groups),
			Attachment: &ec2types.InstanceNetworkInterfaceAttachment{
				AttachmentId: aws.String("eni-attach-" + in.id[2:]), DeviceIndex: aws.Int32(0),
				NetworkCardIndex: aws.Int32(0), AttachTime: aws.Time(in.launched),
				DeleteOnTermination: aws.Bool(true), Status: ec2types.AttachmentStatusAttached,
			},
			OwnerId:         aws.String(s.opts.AccountID),
			SourceDestCheck: aws.Bool(true),
			InterfaceType:   aws.String("interface"),
		}}
		out.BlockDeviceMappings = []ec2types.InstanceBlockDeviceMapping{{
			DeviceName: aws.String("/dev/xvda"),
			Ebs: &ec2types.EbsInstanceBlockDevice{
				AttachTime: aws.Time(in.launched), DeleteOnTermination: aws.Bool(true),
				Status: ec2types.AttachmentStatusAttached, VolumeId: aws.String("vol-" + in.id[2:]),
			},
		}}
	}
	switch st {
	case cloud.StateShuttingDown, cloud.StateTerminated:
		if t := in.shutdownAt(); t.Equal(in.reclaimed) {
			out.StateReason = &ec2types.StateReason{Code: aws.String("Server.ScheduledStop"), Message: aws.String("Server.ScheduledStop: The Capacity Block reservation is ending")}
			out.StateTransitionReason = aws.String(fmt.Sprintf("Service initiated (%s)", t.UTC().Format("2006-01-02 15:04:05 MST")))
			break
		}
		out.StateReason = &ec2types.StateReason{Code: aws.String("Client.UserInitiatedShutdown"), Message: aws.String("Client.UserInitiatedShutdown: User initiated shutdown")}
		out.StateTransitionReason = aws.String(fmt.Sprintf("User initiated (%s)", in.terminating.UTC().Format("2006-01-02 15:04:05 MST")))
	case cloud.StatePending:
		out.StateReason = &ec2types.StateReason{Code: aws.String("pending"), Message: aws.String("pending")}
	}
	if st == cloud.StateTerminated {
		out.PrivateDnsName = aws.String("")
		out.PrivateIpAddress = nil
		out.SubnetId = nil
		out.VpcId = nil
	}
	return out
}

func sdkTags(m map[string]string) []ec2types.Tag {
	if len(m) == 0 {
		return nil
	}
	out := make([]ec2types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// sweep does what the clock's passing makes EC2 do to Capacity Blocks (advanceCapacityBlocks),
// releases the addresses of terminated instances and forgets those terminated longer than
// Options.TerminatedVisibleFor. Callers hold s.mu.
func (s *Sim) sweep() {
	s.advanceCapacityBlocks()
	now := s.clock.Now()
	kept := s.instances[:0]
	for _, in := range s.instances {
		if t := in.terminatedAt(s.opts); !t.IsZero() && !now.Before(t) {
			if !in.released {
				if sn := s.subnetByID[in.subnetID]; sn != nil && sn.used[in.ipOffset] == in.id {
					delete(sn.used, in.ipOffset)
				}
				in.released = true
			}
			if !now.Before(t.Add(s.opts.TerminatedVisibleFor)) {
				delete(s.instanceByID, in.id)
				continue
			}
		}
		kept = append(kept, in)
	}
	clear(s.instances[len(kept):])
	s.instances = kept
}

func (s *Sim) buildNetwork() {
	s.vpcID = s.newID("vpc")
	n := len(s.opts.Zones) * s.opts.SubnetsPerZone
	prefixLen := 20
	if n > 16 {
		prefixLen = 16 + bits.Len(uint(n-1))
	}
	size := uint32(1) << (32 - prefixLen)
	cluster := s.opts.ClusterName
	i := 0
	for _, zone := range s.opts.Zones {
		for k := range s.opts.SubnetsPerZone {
			base := netip.AddrFrom4([4]byte{10, 0, 0, 0})
			cidr := netip.PrefixFrom(addrAt(netip.PrefixFrom(base, 16), uint32(i)*size), prefixLen)
			sn := &subnet{
				id: s.newID("subnet"), zone: zone, zoneID: s.zoneIDs[zone], vpcID: s.vpcID,
				cidr: cidr, size: size, next: 4, used: map[uint32]string{},
				tags: map[string]string{
					"Name":                            fmt.Sprintf("%s-private-%s-%d", cluster, zone, k+1),
					clusterTagKey(cluster):            "shared",
					DiscoveryTagKey:                   cluster,
					"kubernetes.io/role/internal-elb": "1",
				},
			}
			s.subnets = append(s.subnets, sn)
			s.subnetByID[sn.id] = sn
			i++
		}
	}
	s.groups = []*securityGroup{
		{
			id: s.newID("sg"), name: "eks-cluster-sg-" + cluster, vpcID: s.vpcID,
			description: "EKS created security group applied to ENI that is attached to EKS Control Plane master nodes, as well as any managed workloads.",
			tags: map[string]string{
				"Name":                 "eks-cluster-sg-" + cluster,
				clusterTagKey(cluster): "shared",
				DiscoveryTagKey:        cluster,
			},
		},
		{id: s.newID("sg"), name: "default", description: "default VPC security group", vpcID: s.vpcID, tags: map[string]string{}},
	}
}

// Image families the simulator serves through SSM.
var (
	al2023Param      = regexp.MustCompile(`^/aws/service/eks/optimized-ami/(1\.[0-9]{1,2})/amazon-linux-2023/(x86_64|arm64)/(standard|nvidia|neuron)/recommended/image_id$`)
	bottlerocketParm = regexp.MustCompile(`^/aws/service/bottlerocket/aws-k8s-(1\.[0-9]{1,2})(-nvidia)?/(x86_64|arm64)/latest/image_id$`)
)

func (s *Sim) buildImages() {
	for minor := 28; minor <= 36; minor++ {
		v := fmt.Sprintf("1.%d", minor)
		for _, arch := range []string{"x86_64", "arm64"} {
			for _, variant := range []string{"standard", "nvidia", "neuron"} {
				s.resolveParameter(fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", v, arch, variant))
			}
			for _, flavour := range []string{"", "-nvidia"} {
				s.resolveParameter(fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/latest/image_id", v, flavour, arch))
			}
		}
	}
}

// resolveParameter returns the value of an SSM parameter, creating the image an AMI alias
// parameter names on first use. Callers hold s.mu (or are in New).
func (s *Sim) resolveParameter(name string) (string, bool) {
	if v, ok := s.ssmParams[name]; ok {
		return v, true
	}
	var imgName, desc, arch string
	if m := al2023Param.FindStringSubmatch(name); m != nil {
		arch = m[2]
		imgName = fmt.Sprintf("amazon-eks-node-al2023-%s-%s-%s-v20260101", m[2], m[3], m[1])
		desc = fmt.Sprintf("EKS-optimized Kubernetes node based on Amazon Linux 2023, (k8s: %s, containerd: 2.1.*) (simulated)", m[1])
	} else if m := bottlerocketParm.FindStringSubmatch(name); m != nil {
		arch = m[3]
		imgName = fmt.Sprintf("bottlerocket-aws-k8s-%s%s-%s-v1.40.0-simulated", m[1], m[2], m[3])
		desc = "bottlerocket (simulated)"
	} else {
		return "", false
	}
	id := fmt.Sprintf("ami-0%016x", hash64(s.opts.Region+"|"+name))
	s.images = append(s.images, &image{
		id: id, name: imgName, description: desc, arch: ec2types.ArchitectureType(arch),
		created: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), tags: map[string]string{},
	})
	s.imageByID[id] = s.images[len(s.images)-1]
	s.ssmParams[name] = id
	return id, true
}

// ReleaseImage publishes a newer image behind an AMI alias parameter, as AWS does with each
// EKS AMI release, and returns its ID: launches that resolve the alias from now on get it.
func (s *Sim) ReleaseImage(param string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.resolveParameter(param)
	if !ok {
		return "", fmt.Errorf("ec2sim: %s is not an image alias parameter", param)
	}
	next := *s.imageByID[old]
	next.id = fmt.Sprintf("ami-0%016x", hash64(s.opts.Region+"|"+param+"|after|"+old))
	next.name += "-next"
	next.created = next.created.Add(24 * time.Hour)
	next.tags = map[string]string{}
	s.images = append(s.images, &next)
	s.imageByID[next.id] = &next
	s.ssmParams[param] = next.id
	return next.id, nil
}

func (s *Sim) sdkImage(im *image) ec2types.Image {
	out := ec2types.Image{
		Architecture: ec2types.ArchitectureValues(im.arch),
		BlockDeviceMappings: []ec2types.BlockDeviceMapping{{
			DeviceName: aws.String("/dev/xvda"),
			Ebs: &ec2types.EbsBlockDevice{
				DeleteOnTermination: aws.Bool(true), Encrypted: aws.Bool(false),
				SnapshotId: aws.String("snap-" + im.id[4:]), VolumeSize: aws.Int32(20), VolumeType: ec2types.VolumeTypeGp3,
			},
		}},
		BootMode:           ec2types.BootModeValuesUefiPreferred,
		CreationDate:       aws.String(im.created.Format(timeFormat)),
		DeprecationTime:    aws.String(im.created.AddDate(2, 0, 0).Format(timeFormat)),
		Description:        aws.String(im.description),
		EnaSupport:         aws.Bool(true),
		Hypervisor:         ec2types.HypervisorTypeXen,
		ImageId:            aws.String(im.id),
		ImageLocation:      aws.String("amazon/" + im.name),
		ImageOwnerAlias:    aws.String("amazon"),
		ImageType:          ec2types.ImageTypeValuesMachine,
		Name:               aws.String(im.name),
		OwnerId:            aws.String("602401143452"),
		PlatformDetails:    aws.String("Linux/UNIX"),
		Public:             aws.Bool(true),
		RootDeviceName:     aws.String("/dev/xvda"),
		RootDeviceType:     ec2types.DeviceTypeEbs,
		SriovNetSupport:    aws.String("simple"),
		State:              ec2types.ImageStateAvailable,
		Tags:               sdkTags(im.tags),
		UsageOperation:     aws.String("RunInstances"),
		VirtualizationType: ec2types.VirtualizationTypeHvm,
	}
	if im.owner != "" {
		out.ImageLocation, out.ImageOwnerAlias, out.OwnerId, out.Public = aws.String(im.owner+"/"+im.name), nil, aws.String(im.owner), aws.Bool(false)
	}
	return out
}
