package ec2sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// fleetCandidate is one (launch template config, override) pair of a CreateFleet request.
type fleetCandidate struct {
	idx          int
	lt           *launchTemplate
	version      string
	instanceType string
	sn           *subnet
	imageID      string
	priority     float64 // +Inf when not given
	maxPrice     float64 // +Inf when not given
	price        float64
	// echo is what the response repeats of the request for this pair.
	echo ec2types.LaunchTemplateAndOverridesResponse
	// reservation is the capacity reservation the template targets, if any.
	reservation *capacityReservation
}

var (
	onDemandStrategies = []string{"lowest-price", "prioritized"}
	spotStrategies     = []string{"lowest-price", "diversified", "capacity-optimized", "capacity-optimized-prioritized", "price-capacity-optimized"}
)

// CreateFleet: Type=instant only. See the package documentation for the launch rules.
func (s *Sim) createFleet(q query) (any, error) {
	switch t := q.get("Type"); t {
	case "instant":
	case "":
		return nil, errf("InvalidParameterValue", "ec2sim supports only fleets of Type instant; the request has no Type (EC2's default is maintain)")
	case "maintain", "request":
		return nil, errf("InvalidParameterValue", "ec2sim supports only fleets of Type instant, not %s", t)
	default:
		return nil, invalidValue("Type", t)
	}
	token := q.get("ClientToken")
	if len(token) > 64 {
		return nil, errf("InvalidParameterValue", "The client token must be at most 64 characters long")
	}
	hash := canonicalParams(q)
	if token != "" {
		if rec, ok := s.fleetTokens[token]; ok {
			if rec.hash != hash {
				return nil, errf("IdempotentParameterMismatch", "The client token %s was already used with different parameters.", token)
			}
			return rec.out, nil
		}
	}

	tcs := q.sub("TargetCapacitySpecification")
	total, ok, err := tcs.int("TotalTargetCapacity")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, missing("TargetCapacitySpecification.TotalTargetCapacity")
	}
	if total < 1 {
		return nil, invalidValue("TargetCapacitySpecification.TotalTargetCapacity", strconv.Itoa(total))
	}
	capType := cloud.CapacityType(tcs.get("DefaultTargetCapacityType"))
	block := false // a Capacity Block fleet: on-demand instances in the block its templates target
	switch capType {
	case "":
		capType = cloud.OnDemand
	case cloud.OnDemand, cloud.Spot:
	case marketCapacityBlock:
		capType, block = cloud.OnDemand, true
	default:
		return nil, invalidValue("TargetCapacitySpecification.DefaultTargetCapacityType", string(capType))
	}
	odStrategy := q.get("OnDemandOptions.AllocationStrategy")
	if odStrategy != "" && !slices.Contains(onDemandStrategies, odStrategy) {
		return nil, invalidValue("OnDemandOptions.AllocationStrategy", odStrategy)
	}
	spotStrategy := q.get("SpotOptions.AllocationStrategy")
	if spotStrategy != "" && !slices.Contains(spotStrategies, spotStrategy) {
		return nil, invalidValue("SpotOptions.AllocationStrategy", spotStrategy)
	}
	// An instant fleet tags the fleet, its instances and their volumes; network interfaces and
	// spot requests are tagged by the launch template.
	tagSpecs, err := q.tagSpecs("TagSpecification", "instance", "volume", "fleet")
	if err != nil {
		return nil, err
	}
	configs := q.members("LaunchTemplateConfigs")
	if len(configs) == 0 {
		return nil, missing("LaunchTemplateConfigs")
	}
	if len(configs) > 50 {
		return nil, errf("InvalidParameterValue", "A fleet request can have at most 50 launch template configurations")
	}
	cands, err := s.fleetCandidates(configs)
	if err != nil {
		return nil, err
	}
	if err := s.fleetReservations(cands, capType, block); err != nil {
		return nil, err
	}

	// The request is valid: from here on it creates a fleet.
	fleetID := "fleet-" + s.newUUID()
	s.fleetsCreated++
	lifecycle := ec2types.InstanceLifecycle(capType)
	if block {
		lifecycle = ec2types.InstanceLifecycleCapacityBlock
	}
	var fleetErrors []ec2types.CreateFleetError
	report := func(c *fleetCandidate, code, msg string) {
		fleetErrors = append(fleetErrors, ec2types.CreateFleetError{
			ErrorCode: aws.String(code), ErrorMessage: aws.String(msg),
			LaunchTemplateAndOverrides: copyEcho(c.echo), Lifecycle: lifecycle,
		})
	}

	var valid []*fleetCandidate
	for _, c := range cands {
		zone := c.sn.zone
		img := s.imageByID[c.imageID]
		switch {
		case !s.Offered(c.instanceType, zone):
			report(c, "Unsupported", fmt.Sprintf("Your requested instance type (%s) is not supported in your requested Availability Zone (%s). Please retry your request by not specifying an Availability Zone or choosing %s.", c.instanceType, zone, strings.Join(s.zonesOffering(c.instanceType), ", ")))
			continue
		case capType == cloud.Spot && !s.supportsSpot(c.instanceType):
			report(c, "Unsupported", fmt.Sprintf("The instance type %s does not support Spot Instances.", c.instanceType))
			continue
		case img != nil && !slices.Contains(s.archOf(c.instanceType), img.arch):
			report(c, "InvalidParameterValue", fmt.Sprintf("The architecture '%s' of the specified instance type does not match the architecture '%s' of the specified AMI. Specify an instance type and an AMI that have matching architectures, and try again. You can use 'describe-instance-types' or 'describe-images' to discover the architecture of the instance type or AMI.", archList(s.archOf(c.instanceType)), img.arch))
			continue
		}
		if code, msg := s.reservationRefusal(c); code != "" {
			report(c, code, msg)
			continue
		}
		if capType == cloud.Spot {
			var priced bool
			c.price, priced = s.spotPrice(c.instanceType, zone)
			if !priced { // withdrawn by SetSpotPrice
				report(c, "InsufficientInstanceCapacity", "There is no Spot capacity available that matches your request.")
				continue
			}
			if c.price > c.maxPrice {
				report(c, "SpotMaxPriceTooLow", fmt.Sprintf("Your Spot request price of %v is lower than the minimum required Spot request fulfillment price of %v.", c.maxPrice, c.price))
				continue
			}
		} else if p, ok := s.prices[c.instanceType]; ok {
			c.price = p
		} else {
			c.price = math.Inf(1)
		}
		valid = append(valid, c)
	}
	if f := s.fleetFault; f != nil {
		for _, c := range valid {
			report(c, f.Code, f.Message)
		}
		valid = nil
	}
	prioritized := (capType == cloud.OnDemand && odStrategy == "prioritized") ||
		(capType == cloud.Spot && spotStrategy == "capacity-optimized-prioritized")
	sort.SliceStable(valid, func(i, j int) bool {
		a, b := valid[i], valid[j]
		if prioritized && a.priority != b.priority {
			return a.priority < b.priority
		}
		if a.price != b.price {
			return a.price < b.price
		}
		return a.idx < b.idx
	})

	requestTags := tagSpecs["instance"]
	launched := map[int][]string{}
	var order []*fleetCandidate
	reservations := map[int]string{}
	exhausted := map[int]bool{}
	for n := 0; n < total; n++ {
		var pick *fleetCandidate
		var into *capacityReservation
		for _, c := range valid {
			if exhausted[c.idx] {
				continue
			}
			r, code, msg := s.reservationForLaunch(c, capType)
			if code != "" {
				exhausted[c.idx] = true
				report(c, code, msg)
				continue
			}
			// Reserved capacity is there for the reservation's instances: no offering limit.
			if r == nil && !s.hasCapacity(capacityKey{c.instanceType, c.sn.zone, capType}) {
				exhausted[c.idx] = true
				if capType == cloud.Spot {
					report(c, "InsufficientInstanceCapacity", "There is no Spot capacity available that matches your request.")
				} else {
					report(c, "InsufficientInstanceCapacity", fmt.Sprintf("We currently do not have sufficient %s capacity in the Availability Zone you requested (%s). Our system will be working on provisioning additional capacity. You can currently get %s capacity by not specifying an Availability Zone in your request or choosing %s.", c.instanceType, c.sn.zone, c.instanceType, strings.Join(s.otherZones(c.sn.zone), ", ")))
				}
				continue
			}
			if c.sn.available() <= 0 {
				exhausted[c.idx] = true
				report(c, "InsufficientFreeAddressesInSubnet", fmt.Sprintf("There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", c.sn.id))
				continue
			}
			pick, into = c, r
			break
		}
		if pick == nil {
			break
		}
		if _, ok := reservations[pick.idx]; !ok {
			reservations[pick.idx] = s.newID("r")
			order = append(order, pick)
		}
		if into == nil {
			s.useCapacity(capacityKey{pick.instanceType, pick.sn.zone, capType})
		}
		in := s.launch(pick, capType, fleetID, token, reservations[pick.idx], requestTags)
		placeInReservation(in, pick, into)
		launched[pick.idx] = append(launched[pick.idx], in.id)
		s.launchAuthorizations(pick, in, fleetID, tagSpecs)
	}
	if len(launched) == 0 {
		// Nothing launched: the request was still authorized on what it names and creates.
		resources := []AuthorizedResource{{Type: "fleet", ID: fleetID, RequestTags: tagsOrEmpty(tagSpecs["fleet"])}}
		for _, c := range cands {
			resources = append(resources,
				AuthorizedResource{Type: "launch-template", ID: c.lt.id, Tags: c.lt.tags},
				AuthorizedResource{Type: "subnet", ID: c.sn.id, Tags: c.sn.tags},
				AuthorizedResource{Type: "image", ID: c.imageID, Tags: s.imageByID[c.imageID].tags})
			resources = append(resources, c.reservationResources()...)
		}
		s.authorize("ec2:CreateFleet", resources, nil)
	}

	out := &ec2.CreateFleetOutput{FleetId: aws.String(fleetID), Errors: fleetErrors}
	for _, c := range order {
		out.Instances = append(out.Instances, ec2types.CreateFleetInstance{
			InstanceIds:                launched[c.idx],
			InstanceType:               ec2types.InstanceType(c.instanceType),
			LaunchTemplateAndOverrides: copyEcho(c.echo),
			Lifecycle:                  lifecycle,
		})
	}
	if token != "" {
		s.fleetTokens[token] = &fleetRecord{hash: hash, out: out}
	}
	return out, nil
}

// fleetCandidates resolves every (config, override) pair, failing the request on unknown
// templates, types, subnets, images and security groups.
func (s *Sim) fleetCandidates(configs []query) ([]*fleetCandidate, error) {
	var out []*fleetCandidate
	for _, c := range configs {
		spec := c.sub("LaunchTemplateSpecification")
		lt, err := s.findTemplate(spec.get("LaunchTemplateId"), spec.get("LaunchTemplateName"))
		if err != nil {
			return nil, err
		}
		version := spec.get("Version")
		switch version {
		case "", "$Latest", "$Default", "1":
		default:
			return nil, errf("InvalidLaunchTemplateId.VersionNotFound", "Could not find launch template version %s for launch template %s.", version, lt.id)
		}
		for _, gid := range lt.securityGroupIDs {
			if s.groupByID(gid) == nil {
				return nil, errf("InvalidGroup.NotFound", "The security group '%s' does not exist", gid)
			}
		}
		overrides := c.members("Overrides")
		if len(overrides) == 0 {
			overrides = []query{c.sub("Overrides.0")} // no overrides: the template alone
		}
		for _, ov := range overrides {
			cand, err := s.fleetCandidate(len(out), lt, spec, version, ov)
			if err != nil {
				return nil, err
			}
			out = append(out, cand)
		}
	}
	if len(out) > 300 {
		return nil, errf("InvalidParameterValue", "A fleet request can have at most 300 overrides")
	}
	return out, nil
}

func (s *Sim) fleetCandidate(idx int, lt *launchTemplate, spec query, version string, ov query) (*fleetCandidate, error) {
	c := &fleetCandidate{idx: idx, lt: lt, version: version, priority: math.Inf(1), maxPrice: math.Inf(1)}
	c.instanceType = ov.get("InstanceType")
	if c.instanceType == "" {
		c.instanceType = lt.instanceType
	}
	if c.instanceType == "" {
		return nil, missing("InstanceType")
	}
	if _, ok := s.types[c.instanceType]; !ok {
		return nil, invalidValue("InstanceType", c.instanceType)
	}
	az := ov.get("AvailabilityZone")
	if az != "" && !slices.Contains(s.opts.Zones, az) {
		return nil, errf("InvalidParameterValue", "Invalid availability zone: [%s]", az)
	}
	switch id := ov.get("SubnetId"); {
	case id != "":
		if !subnetIDRe.MatchString(id) {
			return nil, errf("InvalidSubnetID.Malformed", "Invalid id: \"%s\"", id)
		}
		c.sn = s.subnetByID[id]
		if c.sn == nil {
			return nil, errf("InvalidSubnetID.NotFound", "The subnet ID '%s' does not exist", id)
		}
		if az != "" && az != c.sn.zone {
			return nil, errf("InvalidParameterValue", "The subnet '%s' is in Availability Zone %s, not %s", id, c.sn.zone, az)
		}
	default:
		if az == "" {
			az = s.opts.Zones[0]
		}
		for _, sn := range s.subnets {
			if sn.zone == az {
				c.sn = sn
				break
			}
		}
	}
	c.imageID = ov.get("ImageId")
	if c.imageID == "" {
		c.imageID = lt.imageID
	}
	if ssmName, ok := strings.CutPrefix(c.imageID, "resolve:ssm:"); ok {
		id, found := s.resolveParameter(ssmName)
		if !found {
			return nil, errf("InvalidParameterValue", "Unable to resolve the SSM parameter %s", ssmName)
		}
		c.imageID = id
	}
	switch {
	case c.imageID == "":
		return nil, missing("ImageId")
	case !imageIDRe.MatchString(c.imageID):
		return nil, errf("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", c.imageID)
	case s.imageByID[c.imageID] == nil:
		return nil, errf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", c.imageID)
	}
	echoOv := &ec2types.FleetLaunchTemplateOverrides{
		InstanceType: ec2types.InstanceType(c.instanceType),
		SubnetId:     ptrIfSet(ov.get("SubnetId")),
		ImageId:      ptrIfSet(ov.get("ImageId")),
		MaxPrice:     ptrIfSet(ov.get("MaxPrice")),
	}
	if az := ov.get("AvailabilityZone"); az != "" {
		echoOv.AvailabilityZone = aws.String(az)
	}
	if p := ov.get("Priority"); p != "" {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, invalidValue("Priority", p)
		}
		c.priority = f
		echoOv.Priority = aws.Float64(f)
	}
	if p := ov.get("MaxPrice"); p != "" {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, invalidValue("MaxPrice", p)
		}
		c.maxPrice = f
	}
	if w := ov.get("WeightedCapacity"); w != "" {
		f, err := strconv.ParseFloat(w, 64)
		if err != nil {
			return nil, invalidValue("WeightedCapacity", w)
		}
		echoOv.WeightedCapacity = aws.Float64(f)
	}
	v := version
	if v == "" || v == "$Latest" || v == "$Default" {
		v = "1"
	}
	c.echo = ec2types.LaunchTemplateAndOverridesResponse{
		LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecification{
			LaunchTemplateId:   aws.String(lt.id),
			LaunchTemplateName: ptrIfSet(spec.get("LaunchTemplateName")),
			Version:            aws.String(v),
		},
		Overrides: echoOv,
	}
	return c, nil
}

func copyEcho(e ec2types.LaunchTemplateAndOverridesResponse) *ec2types.LaunchTemplateAndOverridesResponse {
	spec := *e.LaunchTemplateSpecification
	ov := *e.Overrides
	return &ec2types.LaunchTemplateAndOverridesResponse{LaunchTemplateSpecification: &spec, Overrides: &ov}
}

// launch creates one instance. Callers hold s.mu.
func (s *Sim) launch(c *fleetCandidate, capType cloud.CapacityType, fleetID, token, reservationID string, requestTags map[string]string) *instance {
	in := &instance{
		id: s.newID("i"), instanceType: c.instanceType, subnetID: c.sn.id, zone: c.sn.zone,
		vpcID: c.sn.vpcID, imageID: c.imageID, reservationID: reservationID, fleetID: fleetID,
		clientToken: token, capacityType: capType, launched: s.clock.Now(), pendingFor: s.opts.PendingFor,
		arch: s.imageByID[c.imageID].arch,
	}
	ip, off, _ := c.sn.allocate(in.id)
	in.privateIP, in.ipOffset = ip.String(), off
	if capType == cloud.Spot {
		in.spotRequestID = fmt.Sprintf("sir-%08x", uint32(s.next()))
	}
	switch {
	case c.lt.profileArn != "":
		in.profileArn = c.lt.profileArn
	case c.lt.profileName != "":
		in.profileArn = fmt.Sprintf("arn:aws:iam::%s:instance-profile/%s", s.opts.AccountID, c.lt.profileName)
	}
	for _, gid := range c.lt.securityGroupIDs {
		if g := s.groupByID(gid); g != nil {
			in.groups = append(in.groups, ec2types.GroupIdentifier{GroupId: aws.String(g.id), GroupName: aws.String(g.name)})
		}
	}
	in.tags = maps.Clone(c.lt.instanceTags)
	if in.tags == nil {
		in.tags = map[string]string{}
	}
	maps.Copy(in.tags, requestTags)
	in.tags["aws:ec2:fleet-id"] = fleetID
	in.tags["aws:ec2launchtemplate:id"] = c.lt.id
	in.tags["aws:ec2launchtemplate:version"] = "1"
	in.userData = c.lt.userData
	in.volumes = templateVolumes(c.lt)
	s.launches++
	in.launchSeq = s.launches
	s.instances = append(s.instances, in)
	s.instanceByID[in.id] = in
	close(s.launchSignal)
	s.launchSignal = make(chan struct{})
	return in
}

// Launches returns a channel closed at the next launch of an instance: the node agent boots
// an instance as it starts, as its kubelet would, rather than at its next poll of
// DescribeInstances.
func (s *Sim) Launches() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.launchSignal
}

func tagsOrEmpty(t map[string]string) map[string]string {
	if t == nil {
		return map[string]string{}
	}
	return maps.Clone(t)
}

// canonicalParams is a stable digest of a request's parameters for idempotency checks.
func canonicalParams(q query) string {
	keys := make([]string, 0, len(q.v))
	for k := range q.v {
		if k != "Action" && k != "Version" {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(q.v[k], ","))
		b.WriteByte(0)
	}
	return b.String()
}

func (s *Sim) zonesOffering(instanceType string) []string {
	var out []string
	for _, z := range s.opts.Zones {
		if s.Offered(instanceType, z) {
			out = append(out, z)
		}
	}
	return out
}

func (s *Sim) otherZones(zone string) []string {
	return slices.DeleteFunc(slices.Clone(s.opts.Zones), func(z string) bool { return z == zone })
}

func archList(a []ec2types.ArchitectureType) string {
	out := make([]string, len(a))
	for i, x := range a {
		out[i] = string(x)
	}
	return strings.Join(out, ", ")
}
