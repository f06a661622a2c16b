package ec2

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/awsdata"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// spotProduct is the product description of Linux spot prices in a VPC.
const spotProduct = "Linux/UNIX"

// InstanceTypes lists the launchable types of the region with their offerings and prices. The
// result is cached for Options.CatalogTTL; each call returns a copy.
//
// A type is listed when it is x86_64 (amd64) or arm64 (Mac types are left out) and has at least
// one offering. It has an on-demand offering in every zone DescribeInstanceTypeOfferings names
// for it when its on-demand price is known, and a spot offering there when it supports spot and
// DescribeSpotPriceHistory has a price for it in the zone (the latest one).
func (p *Provider) InstanceTypes(ctx context.Context) ([]cloud.InstanceType, error) {
	p.catalogMu.Lock()
	defer p.catalogMu.Unlock()
	p.mu.Lock()
	fresh := p.catalog != nil && p.opts.Now().Sub(p.catalogAt) < p.opts.CatalogTTL
	p.mu.Unlock()
	if !fresh {
		cat, err := p.loadCatalog(ctx)
		if err != nil {
			return nil, err
		}
		byName := make(map[string]*cloud.InstanceType, len(cat))
		for i := range cat {
			byName[cat[i].Name] = &cat[i]
		}
		p.mu.Lock()
		p.catalog, p.byName, p.catalogAt = cat, byName, p.opts.Now()
		p.mu.Unlock()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyCatalog(p.catalog), nil
}

func copyCatalog(in []cloud.InstanceType) []cloud.InstanceType {
	out := slices.Clone(in)
	for i := range out {
		out[i].Offerings = slices.Clone(out[i].Offerings)
	}
	return out
}

// instanceType returns one type of the (cached) catalog.
func (p *Provider) instanceType(ctx context.Context, name string) (cloud.InstanceType, bool, error) {
	if _, err := p.InstanceTypes(ctx); err != nil {
		return cloud.InstanceType{}, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	it, ok := p.byName[name]
	if !ok {
		return cloud.InstanceType{}, false, nil
	}
	return *it, true, nil
}

func (p *Provider) loadCatalog(ctx context.Context) ([]cloud.InstanceType, error) {
	var infos []ec2types.InstanceTypeInfo
	typesPager := ec2.NewDescribeInstanceTypesPaginator(p.ec2, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100)})
	for typesPager.HasMorePages() {
		page, err := typesPager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2: describing instance types: %w", err)
		}
		infos = append(infos, page.InstanceTypes...)
	}

	zones := map[string][]string{}
	offPager := ec2.NewDescribeInstanceTypeOfferingsPaginator(p.ec2, &ec2.DescribeInstanceTypeOfferingsInput{
		LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000),
	})
	for offPager.HasMorePages() {
		page, err := offPager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2: describing instance type offerings: %w", err)
		}
		for _, o := range page.InstanceTypeOfferings {
			zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], aws.ToString(o.Location))
		}
	}

	type point struct {
		price float64
		at    int64
	}
	spot := map[string]map[string]point{} // type → zone → latest price
	spotPager := ec2.NewDescribeSpotPriceHistoryPaginator(p.ec2, &ec2.DescribeSpotPriceHistoryInput{
		ProductDescriptions: []string{spotProduct},
		StartTime:           aws.Time(p.opts.Now()),
		MaxResults:          aws.Int32(1000),
	})
	for spotPager.HasMorePages() {
		page, err := spotPager.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("ec2: describing spot price history: %w", err)
		}
		for _, sp := range page.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || price <= 0 {
				continue
			}
			typ, zone, at := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone), aws.ToTime(sp.Timestamp).UnixNano()
			if spot[typ] == nil {
				spot[typ] = map[string]point{}
			}
			if old, ok := spot[typ][zone]; !ok || at > old.at {
				spot[typ][zone] = point{price, at}
			}
		}
	}

	onDemand, err := awsdata.OnDemandPrices()
	if err != nil {
		return nil, err
	}
	enis, err := awsdata.ENILimits()
	if err != nil {
		return nil, err
	}

	var out []cloud.InstanceType
	for _, info := range infos {
		name := string(info.InstanceType)
		it, ok := convertType(info, enis)
		if !ok {
			continue
		}
		od, hasOD := onDemand[name]
		canSpot := slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot)
		tz := slices.Clone(zones[name])
		slices.Sort(tz)
		for _, z := range slices.Compact(tz) {
			if hasOD {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.OnDemand, PricePerHour: od})
			}
			if sp, ok := spot[name][z]; ok && canSpot {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.Spot, PricePerHour: sp.price})
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	slices.SortFunc(out, func(a, b cloud.InstanceType) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// convertType maps an EC2 record to a cloud.InstanceType without offerings; false for types
// Tailor cannot run (Mac, i386-only, unknown architectures).
func convertType(info ec2types.InstanceTypeInfo, enis map[string]awsdata.ENILimit) (cloud.InstanceType, bool) {
	it := cloud.InstanceType{
		Name:       string(info.InstanceType),
		BareMetal:  aws.ToBool(info.BareMetal),
		Hypervisor: string(info.Hypervisor),
	}
	if info.ProcessorInfo == nil {
		return it, false
	}
	archs := info.ProcessorInfo.SupportedArchitectures
	switch {
	case slices.Contains(archs, ec2types.ArchitectureTypeX8664Mac), slices.Contains(archs, ec2types.ArchitectureTypeArm64Mac):
		return it, false
	case slices.Contains(archs, ec2types.ArchitectureTypeArm64):
		it.Arch = "arm64"
	case slices.Contains(archs, ec2types.ArchitectureTypeX8664):
		it.Arch = "amd64"
	default:
		return it, false
	}
	if info.VCpuInfo != nil {
		it.VCPUs = int64(aws.ToInt32(info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil {
		it.MemoryMiB = aws.ToInt64(info.MemoryInfo.SizeInMiB)
	}
	if info.GpuInfo != nil {
		for _, g := range info.GpuInfo.Gpus {
			n := int64(aws.ToInt32(g.Count))
			it.GPUCount += n
			if it.GPUName == "" {
				it.GPUName = aws.ToString(g.Name)
				it.GPUManufacturer = aws.ToString(g.Manufacturer)
			}
			if info.GpuInfo.TotalGpuMemoryInMiB == nil && g.MemoryInfo != nil {
				it.GPUMemoryMiB += n * int64(aws.ToInt32(g.MemoryInfo.SizeInMiB))
			}
		}
		if info.GpuInfo.TotalGpuMemoryInMiB != nil {
			it.GPUMemoryMiB = int64(aws.ToInt32(info.GpuInfo.TotalGpuMemoryInMiB))
		}
	}
	if l, ok := enis[it.Name]; ok && l.MaxENIs > 0 {
		it.MaxENIs, it.IPv4PerENI = l.MaxENIs, l.IPv4PerENI
	} else if info.NetworkInfo != nil {
		it.MaxENIs = int64(aws.ToInt32(info.NetworkInfo.MaximumNetworkInterfaces))
		it.IPv4PerENI = int64(aws.ToInt32(info.NetworkInfo.Ipv4AddressesPerInterface))
	}
	return it, true
}
