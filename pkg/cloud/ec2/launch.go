package ec2

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Allocation strategies of the one-instance fleets: the cheapest override for on-demand; for
// spot, the cheapest among the pools least likely to be interrupted.
const (
	onDemandStrategy = ec2types.FleetOnDemandAllocationStrategyLowestPrice
	spotStrategy     = ec2types.SpotAllocationStrategyPriceCapacityOptimized
)

// Launch starts one instance from the overrides (see cloud.Provider). Its errors carry their
// cloud.ErrorKind (see classify).
//
// Image is an AMI ID or an alias: "al2023" (the EKS-optimized Amazon Linux 2023 AMI, the nvidia
// variant when every override type has NVIDIA GPUs) or "bottlerocket", resolved through SSM for
// Options.KubernetesVersion and the architecture of the override types (which must not mix
// architectures). An explicit AMI is assumed to bootstrap with nodeadm like AL2023.
func (p *Provider) Launch(ctx context.Context, req cloud.LaunchRequest) (*cloud.LaunchResult, error) {
	res, err := p.launch(ctx, req)
	return res, classify(err)
}

func (p *Provider) launch(ctx context.Context, req cloud.LaunchRequest) (*cloud.LaunchResult, error) {
	names, err := checkLaunch(req)
	if err != nil {
		return nil, err
	}
	types, err := p.launchTypes(ctx, names)
	if err != nil {
		return nil, err
	}
	imageID, family, err := p.launchImage(ctx, req, types)
	if err != nil {
		return nil, err
	}
	if req.Settings.ImageFamily != "" {
		family = req.Settings.ImageFamily // chosen for an image ID; an alias's is its own
	}
	// Every resource the launch creates carries the cluster's ownership tags from its creation:
	// the controller's IAM policy allows the create calls only with them, and terminations and
	// deletions only of resources that have them.
	templateTags := p.ownedTags(req.TemplateTags)
	resourceTags := p.ownedTags(req.TemplateTags, req.Tags)
	tmpls, overrideGroup, err := p.launchTemplates(req, types, imageID, family, templateTags)
	if err != nil {
		return nil, err
	}
	zones, err := p.subnetZones(ctx, req.Overrides)
	if err != nil {
		return nil, err
	}
	out, err := p.createFleet(ctx, tmpls, fleetInput(req, len(tmpls), overrideGroup, zones, resourceTags))
	if apiErrorCode(err) == "IdempotentParameterMismatch" {
		return p.adopt(ctx, req, err)
	}
	if err != nil {
		return nil, err
	}
	return p.launchResult(ctx, req, out, zones, imageID, resourceTags)
}

// checkLaunch refuses a request no fleet could be made of and returns its overrides' types.
func checkLaunch(req cloud.LaunchRequest) ([]string, error) {
	if len(req.Overrides) == 0 {
		return nil, errors.New("ec2: launch without overrides")
	}
	if req.CapacityType == cloud.Reserved && (req.Reservation == nil || req.Reservation.ID == "") {
		return nil, errors.New("ec2: launch: reserved capacity without a reservation")
	}
	if req.CapacityType != cloud.OnDemand && req.CapacityType != cloud.Spot && req.CapacityType != cloud.Reserved {
		return nil, fmt.Errorf("ec2: launch: unknown capacity type %q", req.CapacityType)
	}
	names := make([]string, len(req.Overrides))
	for i, o := range req.Overrides {
		if o.InstanceType == "" || o.SubnetID == "" {
			return nil, fmt.Errorf("ec2: launch: override %+v lacks an instance type or subnet", o)
		}
		names[i] = o.InstanceType
	}
	return names, nil
}

// launchImage is the AMI the launch uses and its family: the one resolved for an earlier
// attempt of this launch (see cloud.LaunchRequest), or else the image's lookup for types.
func (p *Provider) launchImage(ctx context.Context, req cloud.LaunchRequest, types []cloud.InstanceType) (imageID, family string, err error) {
	if req.ImageID == "" {
		return p.resolveImage(ctx, req.Image, types)
	}
	if !strings.HasPrefix(req.ImageID, "ami-") {
		return "", "", fmt.Errorf("ec2: launch: image ID %q is no AMI ID (ami-…)", req.ImageID)
	}
	if req.Settings.ImageFamily != "" {
		return req.ImageID, req.Settings.ImageFamily, nil // an image a selector picked has no alias
	}
	family, err = imageFamily(req.Image)
	return req.ImageID, family, err
}

// launchTemplates are the launch's templates, one per distinct user data (the kubelet's maxPods
// and reservations are in it, and a node must register with its own type's, which the planner
// counted on), and the template of each override, by index.
func (p *Provider) launchTemplates(req cloud.LaunchRequest, types []cloud.InstanceType, imageID, family string, tags map[string]string) ([]templateSpec, []int, error) {
	var tmpls []templateSpec
	groupOf := map[string]int{}
	overrideGroup := make([]int, len(req.Overrides))
	for i := range req.Overrides {
		nb := nodeBootstrap{labels: req.NodeLabels, taints: req.NodeTaints, kubelet: kubeletFor(&types[i], &req.Settings.Kubelet, req.Settings.UserData != ""),
			userData: req.Settings.UserData, raid0: req.Settings.InstanceStoreRAID0 && types[i].InstanceStorageGB > 0}
		userData, err := p.userData(family, nb)
		if err != nil {
			return nil, nil, err
		}
		g, ok := groupOf[userData]
		if !ok {
			g = len(tmpls)
			groupOf[userData] = g
			tmpls = append(tmpls, templateSpec{
				family: family, imageID: imageID, profile: req.InstanceProfile,
				securityGroups: slices.Compact(slices.Sorted(slices.Values(req.SecurityGroupIDs))), userData: userData,
				capacityType: req.CapacityType, tags: tags, settings: req.Settings, reservation: req.Reservation,
			})
		}
		overrideGroup[i] = g
	}
	return tmpls, overrideGroup, nil
}

// fleetInput is the instant fleet of one instance over the request's overrides, each under the
// template overrideGroup gives it; createFleet fills in each config's template (ID and version)
// once it exists.
func fleetInput(req cloud.LaunchRequest, templates int, overrideGroup []int, zones, tags map[string]string) *ec2.CreateFleetInput {
	input := &ec2.CreateFleetInput{
		Type:        ec2types.FleetTypeInstant,
		ClientToken: clientToken(req.ClientToken),
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity:       aws.Int32(1),
			DefaultTargetCapacityType: fleetCapacityType(req),
		},
		TagSpecifications: fleetTags(tags),
	}
	switch fleetCapacityType(req) {
	case ec2types.DefaultTargetCapacityTypeSpot:
		input.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: spotStrategy}
	case ec2types.DefaultTargetCapacityTypeOnDemand:
		input.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: onDemandStrategy}
	}
	configs := make([]ec2types.FleetLaunchTemplateConfigRequest, templates)
	for i, o := range req.Overrides {
		g := overrideGroup[i]
		configs[g].Overrides = append(configs[g].Overrides, ec2types.FleetLaunchTemplateOverridesRequest{
			InstanceType:     ec2types.InstanceType(o.InstanceType),
			SubnetId:         aws.String(o.SubnetID),
			AvailabilityZone: aws.String(zones[o.SubnetID]),
		})
	}
	input.LaunchTemplateConfigs = configs
	return input
}

// launchResult reads CreateFleet's answer: the instance it launched, if any, and the errors of
// the offerings that had no capacity (capacityCodes). Any other error a fleet reports on its
// overrides (an account quota, a configuration or permission refusal) is no offering's failure:
// it is the launch's error when nothing was launched, which comes with the result: the offerings
// found without capacity beside the refusal are still to be left out.
func (p *Provider) launchResult(ctx context.Context, req cloud.LaunchRequest, out *ec2.CreateFleetOutput, zones map[string]string, imageID string, tags map[string]string) (*cloud.LaunchResult, error) {
	res := &cloud.LaunchResult{}
	var refusals []cloud.OfferingError
	for _, e := range out.Errors {
		oe := cloud.OfferingError{Code: aws.ToString(e.ErrorCode), Message: aws.ToString(e.ErrorMessage)}
		if lo := e.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			oe.InstanceType = string(lo.Overrides.InstanceType)
			oe.SubnetID = aws.ToString(lo.Overrides.SubnetId)
			oe.Zone = aws.ToString(lo.Overrides.AvailabilityZone)
			if oe.Zone == "" {
				oe.Zone = zones[oe.SubnetID]
			}
		}
		if capacityCodes[oe.Code] {
			res.Errors = append(res.Errors, oe)
		} else {
			refusals = append(refusals, oe)
		}
	}
	for _, fi := range out.Instances {
		if len(fi.InstanceIds) == 0 || fi.InstanceIds[0] == "" {
			continue // an entry without an instance: the claim tag finds any instance later
		}
		fallback := cloud.Instance{
			ID: fi.InstanceIds[0], Type: string(fi.InstanceType), ImageID: imageID,
			State: cloud.StatePending, CapacityType: req.CapacityType, LaunchTime: p.opts.Now(),
			Tags: maps.Clone(tags),
		}
		if lo := fi.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			fallback.SubnetID = aws.ToString(lo.Overrides.SubnetId)
			fallback.Zone = zones[fallback.SubnetID]
		}
		inst := p.describeLaunched(ctx, fallback)
		res.Instance = &inst
		break
	}
	if res.Instance == nil && len(refusals) > 0 {
		return res, refusalError(aws.ToString(out.FleetId), refusals)
	}
	if res.Instance == nil && len(res.Errors) == 0 {
		return nil, fmt.Errorf("ec2: CreateFleet %s launched nothing and reported no errors", aws.ToString(out.FleetId))
	}
	return res, nil
}

// refusalError is the error of a fleet that launched nothing and reported errors that are no
// offering's, of the kind of the one a user must act on first (permission, then configuration,
// then quota, then EC2's own failure). It quotes each distinct code and message once.
func refusalError(fleetID string, refusals []cloud.OfferingError) error {
	rank := map[cloud.ErrorKind]int{cloud.KindPermission: 4, cloud.KindConfiguration: 3, cloud.KindQuota: 2, cloud.KindTransient: 1}
	kind := cloud.KindOther
	var quoted []string
	spotRole := false
	for _, r := range refusals {
		if k := kindOfCode(r.Code); rank[k] > rank[kind] {
			kind = k
		}
		spotRole = spotRole || r.Code == spotRoleMissingCode
		if q := r.Code + ": " + r.Message; !slices.Contains(quoted, q) {
			quoted = append(quoted, q)
		}
	}
	detail := strings.Join(quoted, "; ")
	var err error
	switch {
	case spotRole:
		err = fmt.Errorf("ec2: CreateFleet %s: %w: %s (%s)", fleetID, cloud.ErrSpotNotEnabled, spotRoleFix, detail)
	case kind == cloud.KindQuota:
		err = fmt.Errorf("ec2: CreateFleet %s: an account quota refused the launch: %s", fleetID, detail)
	default:
		err = fmt.Errorf("ec2: CreateFleet %s launched nothing (%s error): %s", fleetID, kind, detail)
	}
	return &cloud.Error{Kind: kind, Err: err}
}

// clientToken fits a caller's token into EC2's 64 ASCII characters (longer ones are hashed).
func clientToken(t string) *string {
	if t == "" {
		return nil
	}
	if len(t) <= 64 {
		return aws.String(t)
	}
	sum := sha256.Sum256([]byte(t))
	return aws.String(hex.EncodeToString(sum[:]))
}

// ownedTags merges tag sets (later ones win) under the cluster's ownership tags, which always
// win: kubernetes.io/cluster/<cluster>=owned and eks:eks-cluster-name=<cluster>.
func (p *Provider) ownedTags(sets ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, s := range sets {
		maps.Copy(out, s)
	}
	out[tagClusterPrefix+p.opts.ClusterName] = tagOwnedValue
	out[tagEKSCluster] = p.opts.ClusterName
	return out
}

func tagList(tags map[string]string) []ec2types.Tag {
	var list []ec2types.Tag
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		list = append(list, ec2types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	return list
}

// fleetTags tags what CreateFleet itself creates: the fleet, the instance and its volumes (the
// resource types an instant fleet's TagSpecifications take). The network interfaces and the
// spot request are tagged by the launch template (templateTags).
func fleetTags(tags map[string]string) []ec2types.TagSpecification {
	var out []ec2types.TagSpecification
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
		out = append(out, ec2types.TagSpecification{ResourceType: rt, Tags: tagList(tags)})
	}
	return out
}

// templateTagSpecs tags what a launch from the template creates, instance, volumes, network
// interfaces and, for spot, the spot request; CreateFleet's own tags add to them.
func templateTagSpecs(t templateSpec) []ec2types.LaunchTemplateTagSpecificationRequest {
	types := []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface}
	if t.capacityType == cloud.Spot {
		types = append(types, ec2types.ResourceTypeSpotInstancesRequest)
	}
	var out []ec2types.LaunchTemplateTagSpecificationRequest
	for _, rt := range types {
		out = append(out, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: rt, Tags: tagList(t.tags)})
	}
	return out
}

// createFleet ensures the launch templates, points the configs at them (by ID and explicit
// version, never $Latest: a template changed behind Tailor's back must not change what it
// launches) and calls CreateFleet; when EC2 no longer knows a template (deleted behind the
// cache), it creates them again and retries once.
func (p *Provider) createFleet(ctx context.Context, tmpls []templateSpec, input *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
	for attempt := 0; ; attempt++ {
		for g, t := range tmpls {
			ref, err := p.ensureTemplate(ctx, t)
			if err != nil {
				return nil, err
			}
			input.LaunchTemplateConfigs[g].LaunchTemplateSpecification = &ec2types.FleetLaunchTemplateSpecificationRequest{
				LaunchTemplateId: aws.String(ref.id), Version: aws.String(strconv.FormatInt(ref.version, 10)),
			}
		}
		out, err := p.ec2.CreateFleet(ctx, input)
		if err == nil {
			return out, nil
		}
		switch code := apiErrorCode(err); {
		case (code == "InvalidLaunchTemplateName.NotFoundException" || code == "InvalidLaunchTemplateId.NotFound") && attempt == 0:
			p.mu.Lock()
			for _, t := range tmpls {
				delete(p.templates, p.templateName(t))
			}
			p.mu.Unlock()
			continue
		case code == "InvalidSubnetID.NotFound":
			return nil, fmt.Errorf("ec2: launch: a subnet of the overrides does not exist: %w", err)
		}
		return nil, fmt.Errorf("ec2: launch: %w", err)
	}
}

// adopt answers a launch whose client token EC2 already knows with other parameters: the
// request was sent before (a crash lost the answer) and has changed since, as when the image
// alias now resolves to a newer AMI or a subnet was added. The first request's instance carries
// the launch's tags (the claim's among them): it is the launch's answer. Only when none is left
// running does the launch fail, and the claim with it; a new claim brings a new token.
func (p *Provider) adopt(ctx context.Context, req cloud.LaunchRequest, mismatch error) (*cloud.LaunchResult, error) {
	if len(req.Tags) == 0 {
		return nil, fmt.Errorf("ec2: launch: %w (and no tags to find its first instance by)", mismatch)
	}
	found, err := p.Instances(ctx, req.Tags)
	if err != nil {
		return nil, fmt.Errorf("ec2: launch: %w; finding the first request's instance: %v", mismatch, err)
	}
	for _, in := range found {
		switch in.State {
		case cloud.StatePending, cloud.StateRunning:
			p.log.Info("ec2: launch adopted the instance of an earlier request with this client token", "instance", in.ID, "token", req.ClientToken)
			return &cloud.LaunchResult{Instance: &in}, nil
		}
	}
	return nil, fmt.Errorf("ec2: launch: %w, and no running instance carries its tags", mismatch)
}

// describeLaunched fills in a new instance (IP, DNS name, zone) with DescribeInstances, which
// is eventually consistent after CreateFleet: it retries NotFound briefly, and falls back to what
// the fleet answer said.
func (p *Provider) describeLaunched(ctx context.Context, fallback cloud.Instance) cloud.Instance {
	delay := 100 * time.Millisecond
	for attempt := 0; attempt < 5; attempt++ {
		out, err := p.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{fallback.ID}})
		if err == nil {
			for _, r := range out.Reservations {
				for _, in := range r.Instances {
					if aws.ToString(in.InstanceId) == fallback.ID {
						return toInstance(in)
					}
				}
			}
		} else if apiErrorCode(err) != "InvalidInstanceID.NotFound" {
			return fallback
		}
		select {
		case <-ctx.Done():
			return fallback
		case <-time.After(delay):
		}
		delay *= 2
	}
	return fallback
}

// subnetZones returns the zone of every override's subnet, describing the unknown ones.
func (p *Provider) subnetZones(ctx context.Context, overrides []cloud.Override) (map[string]string, error) {
	zones := map[string]string{}
	var unknown []string
	p.mu.Lock()
	for _, o := range overrides {
		if z, ok := p.zones[o.SubnetID]; ok {
			zones[o.SubnetID] = z
		} else if !slices.Contains(unknown, o.SubnetID) {
			unknown = append(unknown, o.SubnetID)
		}
	}
	p.mu.Unlock()
	if len(unknown) == 0 {
		return zones, nil
	}
	found, err := p.describeSubnets(ctx, unknown, nil)
	if err != nil {
		if code := apiErrorCode(err); code == "InvalidSubnetID.NotFound" || code == "InvalidSubnetID.Malformed" {
			return nil, fmt.Errorf("ec2: launch: unknown subnet %s: %w", strings.Join(unknown, ", "), err)
		}
		return nil, fmt.Errorf("ec2: launch: describing subnets %s: %w", strings.Join(unknown, ", "), err)
	}
	for _, sn := range found {
		zones[sn.ID] = sn.Zone
	}
	return zones, nil
}

// templateSpec is everything that goes into a launch template.
type templateSpec struct {
	family         string
	imageID        string
	profile        string
	securityGroups []string
	userData       string
	// capacityType decides whether the template tags a spot request.
	capacityType cloud.CapacityType
	// tags go on the template and on what launches from it create (ownership tags included).
	tags map[string]string
	// settings are the pool's launch settings.
	settings cloud.LaunchSettings
	// reservation is the capacity reservation the template targets (nil: none).
	reservation *cloud.CapacityReservation
}

// templateRef is a launch template that exists: its ID and the version to launch.
type templateRef struct {
	id      string
	version int64
}

// templateName is tailor-<cluster>-<16 hex digits of a hash of the template's content>.
func (p *Provider) templateName(t templateSpec) string {
	h := sha256.New()
	parts := []string{p.opts.ClusterName, t.family, t.imageID, t.profile, strings.Join(t.securityGroups, ","), t.userData, string(t.capacityType)}
	if p.ipv6() {
		// Its templates carry an IPv6 interface: a template made before they did is not one.
		parts = append(parts, "ipv6")
	}
	if k := settingsKey(t.settings); k != "" {
		parts = append(parts, k) // the defaults add nothing: templates made before keep their names
	}
	if t.reservation != nil {
		parts = append(parts, "reservation="+t.reservation.ID)
	}
	for _, k := range slices.Sorted(maps.Keys(t.tags)) {
		parts = append(parts, k+"="+t.tags[k])
	}
	for _, s := range parts {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("tailor-%s-%s", p.opts.ClusterName, hex.EncodeToString(h.Sum(nil))[:16])
}

// ensureTemplate creates the launch template unless this Provider already knows it exists, and
// returns its ID and version. Its name is a hash of its content, so an existing template of
// that name is the same one: its latest version is the one to launch.
func (p *Provider) ensureTemplate(ctx context.Context, t templateSpec) (templateRef, error) {
	name := p.templateName(t)
	p.mu.Lock()
	ref, known := p.templates[name]
	p.mu.Unlock()
	if known {
		return ref, nil
	}
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:          aws.String(t.imageID),
		SecurityGroupIds: t.securityGroups,
		UserData:         aws.String(base64.StdEncoding.EncodeToString([]byte(t.userData))),
		// IMDSv2 only, one hop (pods cannot reach it through the node), and no instance tags in
		// the metadata: the tags are Tailor's bookkeeping, not the workload's business.
		MetadataOptions:     metadataOptions(t.settings),
		BlockDeviceMappings: blockDevices(t.family, t.settings.BlockDevices),
		TagSpecifications:   templateTagSpecs(t),
	}
	reservationSpec(data, t.reservation)
	if t.settings.DetailedMonitoring {
		data.Monitoring = &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(true)}
	}
	if p.ipv6() || t.settings.AssociatePublicIP != nil {
		// An IPv6 cluster's nodes need an IPv6 address on their primary interface, its primary
		// IPv6 (the node's address, and the VPC CNI's prefix delegation hangs off it), as
		// Karpenter and EKS managed node groups launch them; a public IPv4 address is asked for
		// on the interface too. The security groups then go on the interface: EC2 refuses them
		// in both places.
		nic := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
			DeviceIndex: aws.Int32(0), Groups: t.securityGroups, AssociatePublicIpAddress: t.settings.AssociatePublicIP,
		}
		if p.ipv6() {
			nic.Ipv6AddressCount, nic.PrimaryIpv6 = aws.Int32(1), aws.Bool(true)
		}
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{nic}
		data.SecurityGroupIds = nil
	}
	if t.profile != "" {
		if strings.HasPrefix(t.profile, "arn:") {
			data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Arn: aws.String(t.profile)}
		} else {
			data.IamInstanceProfile = &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(t.profile)}
		}
	}
	out, err := p.ec2.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tagList(t.tags)}},
	})
	var lt *ec2types.LaunchTemplate
	switch {
	case err == nil:
		lt = out.LaunchTemplate
	case apiErrorCode(err) == "InvalidLaunchTemplateName.AlreadyExistsException":
		// Made by an earlier run (or a concurrent launch): its ID and version are EC2's to tell.
		desc, derr := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
		if derr != nil {
			return templateRef{}, fmt.Errorf("ec2: describing existing launch template %s: %w", name, derr)
		}
		if len(desc.LaunchTemplates) == 1 {
			lt = &desc.LaunchTemplates[0]
		}
	default:
		return templateRef{}, fmt.Errorf("ec2: creating launch template %s: %w", name, err)
	}
	if lt == nil || aws.ToString(lt.LaunchTemplateId) == "" || aws.ToInt64(lt.LatestVersionNumber) < 1 {
		return templateRef{}, fmt.Errorf("ec2: launch template %s: EC2 reported no ID or version", name)
	}
	ref = templateRef{id: aws.ToString(lt.LaunchTemplateId), version: aws.ToInt64(lt.LatestVersionNumber)}
	p.mu.Lock()
	p.templates[name] = ref
	p.mu.Unlock()
	return ref, nil
}

// metadataOptions are the template's IMDS settings: by default IMDSv2 only, one hop (pods
// cannot reach it through the node), and never instance tags in the metadata (the tags are
// Tailor's bookkeeping, not the workload's business).
func metadataOptions(s cloud.LaunchSettings) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	tokens, hops, v6 := normalizedIMDS(s)
	out := &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled,
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(tokens),
		HttpPutResponseHopLimit: aws.Int32(hops),
		InstanceMetadataTags:    ec2types.LaunchTemplateInstanceMetadataTagsStateDisabled,
	}
	if v6 {
		out.HttpProtocolIpv6 = ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Enabled
	}
	return out
}

// normalizedIMDS are the IMDS settings with the defaults filled in.
func normalizedIMDS(s cloud.LaunchSettings) (tokens string, hops int32, v6 bool) {
	tokens, hops = s.HTTPTokens, s.HopLimit
	if tokens == "" {
		tokens = string(ec2types.LaunchTemplateHttpTokensStateRequired)
	}
	if hops == 0 {
		hops = 1
	}
	return tokens, hops, s.IMDSIPv6
}

// settingsKey names launch settings other than the defaults for a template's name ("" for the
// defaults).
func settingsKey(s cloud.LaunchSettings) string {
	tokens, hops, v6 := normalizedIMDS(s)
	if len(s.BlockDevices) == 0 && tokens == string(ec2types.LaunchTemplateHttpTokensStateRequired) && hops == 1 && !v6 && !s.DetailedMonitoring && s.AssociatePublicIP == nil {
		return ""
	}
	k := fmt.Sprintf("%s|%d|%t|%t|%+v", tokens, hops, v6, s.DetailedMonitoring, s.BlockDevices)
	if s.AssociatePublicIP != nil {
		k += fmt.Sprintf("|public-ip=%t", *s.AssociatePublicIP)
	}
	return k
}

// blockDevices are the pool's volumes, or else the root (and Bottlerocket data) volumes of the
// alias families.
func blockDevices(family string, pool []cloud.BlockDevice) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	if len(pool) > 0 {
		out := make([]ec2types.LaunchTemplateBlockDeviceMappingRequest, 0, len(pool))
		for _, b := range pool {
			ebs := &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(b.SizeGiB), VolumeType: ec2types.VolumeType(b.VolumeType),
				Encrypted: aws.Bool(b.Encrypted), DeleteOnTermination: aws.Bool(b.DeleteOnTermination),
			}
			if b.IOPS > 0 {
				ebs.Iops = aws.Int32(b.IOPS)
			}
			if b.Throughput > 0 {
				ebs.Throughput = aws.Int32(b.Throughput)
			}
			if b.KMSKeyID != "" {
				ebs.KmsKeyId = aws.String(b.KMSKeyID)
			}
			out = append(out, ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(b.DeviceName), Ebs: ebs})
		}
		return out
	}
	vol := func(dev string, gib int32) ec2types.LaunchTemplateBlockDeviceMappingRequest {
		return ec2types.LaunchTemplateBlockDeviceMappingRequest{
			DeviceName: aws.String(dev),
			Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(gib), VolumeType: ec2types.VolumeTypeGp3,
				Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
			},
		}
	}
	switch family { // a custom image keeps its own
	case familyAL2023:
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{vol(catalog.DataDevice(family), catalog.DefaultRootVolumeGiB)}
	case familyBottlerocket:
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{vol("/dev/xvda", 4), vol(catalog.DataDevice(family), catalog.DefaultRootVolumeGiB)}
	}
	return nil
}

// ResolveImage returns the AMI a launch of the instance types would use now (see Launch).
func (p *Provider) ResolveImage(ctx context.Context, image string, instanceTypes []string) (string, error) {
	if len(instanceTypes) == 0 {
		return "", errors.New("ec2: resolving image: no instance types")
	}
	types, err := p.launchTypes(ctx, instanceTypes)
	if err != nil {
		return "", err
	}
	id, _, err := p.resolveImage(ctx, image, types)
	return id, classify(err)
}

// launchTypes looks the named types up in the catalog.
func (p *Provider) launchTypes(ctx context.Context, names []string) ([]cloud.InstanceType, error) {
	types := make([]cloud.InstanceType, 0, len(names))
	for _, name := range names {
		it, ok, err := p.InstanceType(ctx, name)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("ec2: launch: instance type %s is not offered in this region", name)
		}
		types = append(types, it)
	}
	return types, nil
}

// imageFamily is how nodes of the image bootstrap: an alias names its family; an explicit AMI
// is taken to bootstrap with nodeadm like AL2023.
func imageFamily(image string) (string, error) {
	if strings.HasPrefix(image, "ami-") {
		return familyAL2023, nil
	}
	family := strings.ToLower(image)
	if family != familyAL2023 && family != familyBottlerocket {
		return "", fmt.Errorf("ec2: launch: image %q is neither an AMI ID (ami-…) nor an alias (al2023, bottlerocket)", image)
	}
	return family, nil
}

// ipv6 says whether the cluster is IPv6.
func (p *Provider) ipv6() bool { return strings.EqualFold(p.opts.IPFamily, "ipv6") }

// kubernetesVersion is the version whose AMIs the aliases stand for now (see Options).
func (p *Provider) kubernetesVersion() string {
	if p.opts.KubernetesVersion == "" && p.opts.KubernetesVersionFrom != nil {
		return p.opts.KubernetesVersionFrom()
	}
	return p.opts.KubernetesVersion
}

// resolveImage returns the AMI and bootstrap family for a launch (see Launch).
func (p *Provider) resolveImage(ctx context.Context, image string, types []cloud.InstanceType) (id, family string, err error) {
	if family, err = imageFamily(image); err != nil {
		return "", "", err
	}
	if strings.HasPrefix(image, "ami-") {
		return image, family, nil
	}
	v := p.kubernetesVersion()
	if v == "" {
		return "", "", fmt.Errorf("ec2: launch: image alias %s needs Options.KubernetesVersion", image)
	}
	archs := map[string][]string{}
	gpu := map[bool][]string{}
	for _, t := range types {
		archs[t.Arch] = append(archs[t.Arch], t.Name)
		nv := t.GPUCount > 0 && strings.EqualFold(t.GPUManufacturer, "NVIDIA")
		gpu[nv] = append(gpu[nv], t.Name)
	}
	if len(archs) != 1 {
		return "", "", fmt.Errorf("ec2: launch: image alias %s cannot serve overrides of several architectures (amd64: %s; arm64: %s); launch them separately",
			image, strings.Join(archs["amd64"], " "), strings.Join(archs["arm64"], " "))
	}
	if len(gpu) != 1 {
		return "", "", fmt.Errorf("ec2: launch: image alias %s cannot serve NVIDIA GPU types (%s) and others (%s) in one launch",
			image, strings.Join(gpu[true], " "), strings.Join(gpu[false], " "))
	}
	arch := "x86_64"
	if types[0].Arch == "arm64" {
		arch = "arm64"
	}
	nvidia := len(gpu[true]) > 0
	var param string
	switch family {
	case familyAL2023:
		variant := "standard"
		if nvidia {
			variant = "nvidia"
		}
		param = fmt.Sprintf("/aws/service/eks/optimized-ami/%s/amazon-linux-2023/%s/%s/recommended/image_id", v, arch, variant)
	case familyBottlerocket:
		flavour := ""
		if nvidia {
			flavour = "-nvidia"
		}
		param = fmt.Sprintf("/aws/service/bottlerocket/aws-k8s-%s%s/%s/latest/image_id", v, flavour, arch)
	}
	id, err = p.parameter(ctx, param)
	if err != nil {
		return "", "", err
	}
	return id, family, nil
}

// parameter reads an SSM parameter, cached for Options.CatalogTTL.
func (p *Provider) parameter(ctx context.Context, name string) (string, error) {
	p.mu.Lock()
	c, ok := p.images[name]
	p.mu.Unlock()
	if ok && p.opts.Now().Sub(c.at) < p.opts.CatalogTTL {
		return c.id, nil
	}
	out, err := p.ssm.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil {
		return "", fmt.Errorf("ec2: resolving image through SSM parameter %s: %w", name, err)
	}
	if out == nil || out.Parameter == nil || !strings.HasPrefix(aws.ToString(out.Parameter.Value), "ami-") {
		return "", fmt.Errorf("ec2: resolving image through SSM parameter %s: the answer holds no AMI ID", name)
	}
	id := aws.ToString(out.Parameter.Value)
	p.mu.Lock()
	p.images[name] = cachedImage{id: id, at: p.opts.Now()}
	p.mu.Unlock()
	return id, nil
}
