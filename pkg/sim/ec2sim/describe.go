package ec2sim

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func (s *Sim) instanceTypeAttrs(info ec2types.InstanceTypeInfo) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "instance-type":
			return []string{string(info.InstanceType)}, true
		case "processor-info.supported-architecture":
			var out []string
			if info.ProcessorInfo != nil {
				for _, a := range info.ProcessorInfo.SupportedArchitectures {
					out = append(out, string(a))
				}
			}
			return out, true
		case "supported-usage-class":
			var out []string
			for _, u := range info.SupportedUsageClasses {
				out = append(out, string(u))
			}
			return out, true
		case "bare-metal":
			return boolAttr(aws.ToBool(info.BareMetal)), true
		case "current-generation":
			return boolAttr(aws.ToBool(info.CurrentGeneration)), true
		case "burstable-performance-supported":
			return boolAttr(aws.ToBool(info.BurstablePerformanceSupported)), true
		case "hypervisor":
			return []string{string(info.Hypervisor)}, true
		case "vcpu-info.default-vcpus":
			if info.VCpuInfo == nil {
				return nil, true
			}
			return []string{strconv.Itoa(int(aws.ToInt32(info.VCpuInfo.DefaultVCpus)))}, true
		case "memory-info.size-in-mib":
			if info.MemoryInfo == nil {
				return nil, true
			}
			return []string{strconv.FormatInt(aws.ToInt64(info.MemoryInfo.SizeInMiB), 10)}, true
		}
		return nil, false
	}
}

// DescribeInstanceTypes: InstanceType.N, Filter.N, MaxResults (5–100, pages of 100 without it).
func (s *Sim) describeInstanceTypes(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	names := s.typeNames
	if wanted := q.list("InstanceType"); len(wanted) > 0 {
		var unknown []string
		for _, n := range wanted {
			if _, ok := s.types[n]; !ok {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			return nil, errf("InvalidInstanceType", "The following supplied instance types do not exist: [%s]", strings.Join(unknown, ", "))
		}
		names = slices.Clone(wanted)
		slices.Sort(names)
		names = slices.Compact(names)
	}
	var infos []ec2types.InstanceTypeInfo
	for _, n := range names {
		info := s.types[n]
		ok, err := matchFilters(filters, s.instanceTypeAttrs(info))
		if err != nil {
			return nil, err
		}
		if ok {
			infos = append(infos, info)
		}
	}
	p, err := paginate(q, "DescribeInstanceTypes", len(infos), pageLimits{min: 5, max: 100, def: 100})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypesOutput{InstanceTypes: infos[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

// DescribeInstanceTypeOfferings: LocationType (region, availability-zone, availability-zone-id),
// Filter.N (instance-type, location), MaxResults (5–1000, default 1000).
func (s *Sim) describeInstanceTypeOfferings(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	lt := q.get("LocationType")
	if lt == "" {
		lt = "region"
	}
	var offs []ec2types.InstanceTypeOffering
	add := func(typ, loc string) error {
		o := ec2types.InstanceTypeOffering{InstanceType: ec2types.InstanceType(typ), Location: aws.String(loc), LocationType: ec2types.LocationType(lt)}
		ok, err := matchFilters(filters, func(name string) ([]string, bool) {
			switch name {
			case "instance-type":
				return []string{typ}, true
			case "location":
				return []string{loc}, true
			}
			return nil, false
		})
		if ok {
			offs = append(offs, o)
		}
		return err
	}
	for _, typ := range s.typeNames {
		switch lt {
		case "region":
			err = add(typ, s.opts.Region)
		case "availability-zone", "availability-zone-id":
			for _, z := range s.opts.Zones {
				if !s.Offered(typ, z) {
					continue
				}
				loc := z
				if lt == "availability-zone-id" {
					loc = s.zoneIDs[z]
				}
				if err = add(typ, loc); err != nil {
					break
				}
			}
		default:
			return nil, invalidValue("LocationType", lt)
		}
		if err != nil {
			return nil, err
		}
	}
	p, err := paginate(q, "DescribeInstanceTypeOfferings", len(offs), pageLimits{min: 5, max: 1000, def: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeInstanceTypeOfferingsOutput{InstanceTypeOfferings: offs[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

func (s *Sim) subnetAttrs(sn *subnet) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "subnet-id":
			return []string{sn.id}, true
		case "availability-zone":
			return []string{sn.zone}, true
		case "availability-zone-id":
			return []string{sn.zoneID}, true
		case "vpc-id":
			return []string{sn.vpcID}, true
		case "cidr-block", "cidr":
			return []string{sn.cidr.String()}, true
		case "state":
			return []string{"available"}, true
		case "default-for-az", "map-public-ip-on-launch":
			return boolAttr(false), true
		case "owner-id":
			return []string{s.opts.AccountID}, true
		case "available-ip-address-count":
			return []string{strconv.FormatInt(sn.available(), 10)}, true
		}
		return tagAttrs(sn.tags, name)
	}
}

// DescribeSubnets: SubnetId.N, Filter.N, MaxResults (5–1000; everything without it).
func (s *Sim) describeSubnets(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	candidates := s.subnets
	if ids := q.list("SubnetId"); len(ids) > 0 {
		candidates = nil
		var unknown []string
		for _, id := range ids {
			if !subnetIDRe.MatchString(id) {
				return nil, errf("InvalidSubnetID.Malformed", "Invalid id: \"%s\"", id)
			}
			if sn, ok := s.subnetByID[id]; ok {
				if !slices.Contains(candidates, sn) {
					candidates = append(candidates, sn)
				}
			} else {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			return nil, notFoundList("InvalidSubnetID.NotFound", "subnet", unknown)
		}
	}
	var out []ec2types.Subnet
	for _, sn := range candidates {
		ok, err := matchFilters(filters, s.subnetAttrs(sn))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s.sdkSubnet(sn))
		}
	}
	p, err := paginate(q, "DescribeSubnets", len(out), pageLimits{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSubnetsOutput{Subnets: out[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

func (s *Sim) sdkSubnet(sn *subnet) ec2types.Subnet {
	return ec2types.Subnet{
		AssignIpv6AddressOnCreation: aws.Bool(false),
		AvailabilityZone:            aws.String(sn.zone),
		AvailabilityZoneId:          aws.String(sn.zoneID),
		AvailableIpAddressCount:     aws.Int32(int32(sn.available())),
		CidrBlock:                   aws.String(sn.cidr.String()),
		DefaultForAz:                aws.Bool(false),
		EnableDns64:                 aws.Bool(false),
		Ipv6Native:                  aws.Bool(false),
		MapCustomerOwnedIpOnLaunch:  aws.Bool(false),
		MapPublicIpOnLaunch:         aws.Bool(false),
		OwnerId:                     aws.String(s.opts.AccountID),
		State:                       ec2types.SubnetStateAvailable,
		SubnetArn:                   aws.String(fmt.Sprintf("arn:aws:ec2:%s:%s:subnet/%s", s.opts.Region, s.opts.AccountID, sn.id)),
		SubnetId:                    aws.String(sn.id),
		Tags:                        sdkTags(sn.tags),
		VpcId:                       aws.String(sn.vpcID),
	}
}

func (s *Sim) groupAttrs(g *securityGroup) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "group-id":
			return []string{g.id}, true
		case "group-name":
			return []string{g.name}, true
		case "description":
			return []string{g.description}, true
		case "vpc-id":
			return []string{g.vpcID}, true
		case "owner-id":
			return []string{s.opts.AccountID}, true
		}
		return tagAttrs(g.tags, name)
	}
}

// DescribeSecurityGroups: GroupId.N, GroupName.N, Filter.N, MaxResults (5–1000).
func (s *Sim) describeSecurityGroups(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	candidates := s.groups
	ids, names := q.list("GroupId"), q.list("GroupName")
	if len(ids) > 0 || len(names) > 0 {
		candidates = nil
		var unknown []string
		for _, id := range ids {
			if !groupIDRe.MatchString(id) {
				return nil, errf("InvalidGroupId.Malformed", "Invalid id: \"%s\" (expecting \"sg-...\")", id)
			}
			g := s.groupByID(id)
			if g == nil {
				unknown = append(unknown, id)
			} else if !slices.Contains(candidates, g) {
				candidates = append(candidates, g)
			}
		}
		if len(unknown) > 0 {
			return nil, errf("InvalidGroup.NotFound", "The security group '%s' does not exist", strings.Join(unknown, ", "))
		}
		for _, n := range names {
			i := slices.IndexFunc(s.groups, func(g *securityGroup) bool { return g.name == n })
			if i < 0 {
				return nil, errf("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", n, s.vpcID)
			}
			if !slices.Contains(candidates, s.groups[i]) {
				candidates = append(candidates, s.groups[i])
			}
		}
	}
	var out []ec2types.SecurityGroup
	for _, g := range candidates {
		ok, err := matchFilters(filters, s.groupAttrs(g))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s.sdkGroup(g))
		}
	}
	p, err := paginate(q, "DescribeSecurityGroups", len(out), pageLimits{min: 5, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: out[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

func (s *Sim) groupByID(id string) *securityGroup {
	for _, g := range s.groups {
		if g.id == id {
			return g
		}
	}
	return nil
}

func (s *Sim) sdkGroup(g *securityGroup) ec2types.SecurityGroup {
	return ec2types.SecurityGroup{
		Description: aws.String(g.description),
		GroupId:     aws.String(g.id),
		GroupName:   aws.String(g.name),
		IpPermissions: []ec2types.IpPermission{{
			IpProtocol:       aws.String("-1"),
			UserIdGroupPairs: []ec2types.UserIdGroupPair{{GroupId: aws.String(g.id), UserId: aws.String(s.opts.AccountID)}},
		}},
		IpPermissionsEgress: []ec2types.IpPermission{{
			IpProtocol: aws.String("-1"),
			IpRanges:   []ec2types.IpRange{{CidrIp: aws.String("0.0.0.0/0")}},
		}},
		OwnerId:          aws.String(s.opts.AccountID),
		SecurityGroupArn: aws.String(fmt.Sprintf("arn:aws:ec2:%s:%s:security-group/%s", s.opts.Region, s.opts.AccountID, g.id)),
		Tags:             sdkTags(g.tags),
		VpcId:            aws.String(g.vpcID),
	}
}

func imageAttrs(im *image) attrFunc {
	return func(name string) ([]string, bool) {
		switch name {
		case "image-id":
			return []string{im.id}, true
		case "name":
			return []string{im.name}, true
		case "architecture":
			return []string{string(im.arch)}, true
		case "owner-id":
			if im.owner != "" {
				return []string{im.owner}, true
			}
			return []string{"602401143452"}, true
		case "owner-alias":
			if im.owner != "" {
				return nil, true
			}
			return []string{"amazon"}, true
		case "state":
			return []string{"available"}, true
		case "is-public":
			return boolAttr(im.owner == ""), true
		case "image-type":
			return []string{"machine"}, true
		case "root-device-type":
			return []string{"ebs"}, true
		case "virtualization-type":
			return []string{"hvm"}, true
		}
		return tagAttrs(im.tags, name)
	}
}

// DescribeImages: ImageId.N, Owner.N, Filter.N, MaxResults (6–1000).
func (s *Sim) describeImages(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	candidates := s.images
	if ids := q.list("ImageId"); len(ids) > 0 {
		candidates = nil
		var unknown []string
		for _, id := range ids {
			if !imageIDRe.MatchString(id) {
				return nil, errf("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", id)
			}
			if im, ok := s.imageByID[id]; ok {
				if !slices.Contains(candidates, im) {
					candidates = append(candidates, im)
				}
			} else {
				unknown = append(unknown, id)
			}
		}
		if len(unknown) > 0 {
			return nil, errf("InvalidAMIID.NotFound", "The image id '[%s]' does not exist", strings.Join(unknown, ", "))
		}
	}
	owners := q.list("Owner")
	var out []ec2types.Image
	for _, im := range candidates {
		if len(owners) > 0 && !s.ownedBy(im, owners) {
			continue
		}
		ok, err := matchFilters(filters, imageAttrs(im))
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, s.sdkImage(im))
		}
	}
	p, err := paginate(q, "DescribeImages", len(out), pageLimits{min: 6, max: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeImagesOutput{Images: out[p.start:p.end], NextToken: ptrIfSet(p.next)}, nil
}

// spotProducts are the product descriptions the simulator prices.
var spotProducts = []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"}

// DescribeSpotPriceHistory: InstanceType.N, ProductDescription.N, AvailabilityZone, Filter.N
// (availability-zone, instance-type, product-description), StartTime, EndTime, MaxResults
// (1–1000, default 1000). As in EC2, StartTime returns the price in effect at that time (the
// newest point at or before it) and every later point; EndTime drops points after it. Points come
// newest first for each type, zone and product.
func (s *Sim) describeSpotPriceHistory(q query) (any, error) {
	filters, err := q.filters()
	if err != nil {
		return nil, err
	}
	startTime, hasStart, err := q.timestamp("StartTime")
	if err != nil {
		return nil, err
	}
	endTime, hasEnd, err := q.timestamp("EndTime")
	if err != nil {
		return nil, err
	}
	if hasStart && hasEnd && endTime.Before(startTime) {
		return nil, errf("InvalidParameterValue", "The end time must be after the start time.")
	}
	types := s.typeNames
	if wanted := q.list("InstanceType"); len(wanted) > 0 {
		for _, n := range wanted {
			if _, ok := s.types[n]; !ok {
				return nil, invalidValue("InstanceType", n)
			}
		}
		types = wanted
	}
	products := spotProducts
	if wanted := q.list("ProductDescription"); len(wanted) > 0 {
		products = wanted
	}
	zones := s.opts.Zones
	if z := q.get("AvailabilityZone"); z != "" {
		zones = []string{z}
	}
	var out []ec2types.SpotPrice
	for _, typ := range types {
		for _, z := range zones {
			var points []pricePoint // newest first
			hist := s.spotHistory(typ, z)
			for i := len(hist) - 1; i >= 0; i-- {
				pt := hist[i]
				if hasEnd && pt.at.After(endTime) {
					continue
				}
				points = append(points, pt)
				if hasStart && !pt.at.After(startTime) {
					break // the price in effect at StartTime
				}
			}
			for _, prod := range products {
				if !slices.Contains(spotProducts, prod) {
					continue
				}
				ok, err := matchFilters(filters, func(name string) ([]string, bool) {
					switch name {
					case "availability-zone":
						return []string{z}, true
					case "instance-type":
						return []string{typ}, true
					case "product-description":
						return []string{prod}, true
					}
					return nil, false
				})
				if err != nil {
					return nil, err
				}
				if !ok {
					continue
				}
				for _, pt := range points {
					if pt.price <= 0 {
						continue // withdrawn
					}
					out = append(out, ec2types.SpotPrice{
						AvailabilityZone:   aws.String(z),
						InstanceType:       ec2types.InstanceType(typ),
						ProductDescription: ec2types.RIProductDescription(prod),
						SpotPrice:          aws.String(strconv.FormatFloat(pt.price, 'f', 6, 64)),
						Timestamp:          aws.Time(pt.at),
					})
				}
			}
		}
	}
	p, err := paginate(q, "DescribeSpotPriceHistory", len(out), pageLimits{min: 1, max: 1000, def: 1000})
	if err != nil {
		return nil, err
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: out[p.start:p.end], NextToken: aws.String(p.next)}, nil
}

// ownedBy says whether one of the owners (an account, "self" for the caller's, "amazon") owns
// the image.
func (s *Sim) ownedBy(im *image, owners []string) bool {
	if im.owner == "" {
		return slices.Contains(owners, "amazon") || slices.Contains(owners, "602401143452")
	}
	return slices.Contains(owners, "self") || slices.Contains(owners, im.owner)
}
