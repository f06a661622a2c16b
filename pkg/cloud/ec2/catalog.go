package ec2

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/awsdata"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// InstanceTypes lists the launchable types of the region with their offerings and prices. Each
// call returns a copy.
//
// A type is listed when it is x86_64 (amd64) or arm64 (Mac types are left out) and has at least
// one offering. It has an on-demand offering in every zone DescribeInstanceTypeOfferings names
// for it when its on-demand price is known, and a spot offering there when it supports spot and
// DescribeSpotPriceHistory has a price for it in the zone.
//
// The types and their zones are cached for Options.CatalogTTL, on-demand prices for
// Options.OnDemandPriceTTL and spot prices for Options.SpotPriceTTL; whichever is stale is
// refreshed by the call. A failure of the first load of the types is an error; a failed
// refresh of the types keeps the last good ones and is tried again after catalogRetry; a failed
// price refresh keeps the last good prices, and before the first spot prices load there are no
// spot offerings (see the package documentation).
func (p *Provider) InstanceTypes(ctx context.Context) ([]cloud.InstanceType, error) {
	if err := p.refreshCatalog(ctx); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyCatalog(p.catalog), nil
}

// refreshCatalog loads what is due of the types and prices, and assembles the catalog anew
// when any of it changed.
func (p *Provider) refreshCatalog(ctx context.Context) error {
	p.catalogMu.Lock()
	defer p.catalogMu.Unlock()
	now := p.opts.Now()
	changed := false
	if p.types == nil || !now.Before(p.typesNext) {
		types, err := p.loadTypes(ctx)
		switch {
		case err == nil:
			if p.typesFailing {
				p.log.Info("ec2: instance types loaded again")
			}
			p.types, p.typesAt, p.typesNext, p.typesFailing, changed = types, now, now.Add(p.opts.CatalogTTL), false, true
		case p.types == nil:
			return err
		default:
			// A failed refresh must not stop provisioning: the types change rarely, and the
			// last good ones are still right. Try again sooner than a full TTL.
			if !p.typesFailing {
				p.log.Warn("ec2: refreshing instance types failed; keeping the last types", "typesFrom", p.typesAt, "error", err)
			}
			p.typesFailing, p.typesNext = true, now.Add(min(p.opts.CatalogTTL, catalogRetry))
		}
	}
	if p.onDemand.prices == nil || !now.Before(p.onDemand.next) {
		if err := p.refreshOnDemandPrices(ctx, now); err != nil {
			return err
		}
		changed = true
	}
	if p.spot.prices == nil || !now.Before(p.spot.next) {
		if err := p.refreshSpotPrices(ctx, now); err != nil {
			return err
		}
		changed = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if changed || p.catalog == nil {
		cat := p.assembleCatalog()
		byName := make(map[string]*cloud.InstanceType, len(cat))
		for i := range cat {
			byName[cat[i].Name] = &cat[i]
		}
		p.catalog, p.byName = cat, byName
	}
	return nil
}

func copyCatalog(in []cloud.InstanceType) []cloud.InstanceType {
	out := slices.Clone(in)
	for i := range out {
		out[i].Offerings = slices.Clone(out[i].Offerings)
	}
	return out
}

// InstanceType implements cloud.Provider: one type of the (cached) catalog, without copying the
// rest.
func (p *Provider) InstanceType(ctx context.Context, name string) (cloud.InstanceType, bool, error) {
	if err := p.refreshCatalog(ctx); err != nil {
		return cloud.InstanceType{}, false, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	it, ok := p.byName[name]
	if !ok {
		return cloud.InstanceType{}, false, nil
	}
	out := *it
	out.Offerings = slices.Clone(it.Offerings)
	return out, true, nil
}

// typeEntry is one launchable type without offerings, with the zones that offer it.
type typeEntry struct {
	it      cloud.InstanceType
	zones   []string // sorted, without duplicates
	canSpot bool
}

// loadTypes lists the launchable types and their zones, sorted by name.
func (p *Provider) loadTypes(ctx context.Context) ([]typeEntry, error) {
	var infos []ec2types.InstanceTypeInfo
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeInstanceTypes(ctx, &ec2.DescribeInstanceTypesInput{MaxResults: aws.Int32(100), NextToken: token})
		if err != nil {
			return nil, err
		}
		infos = append(infos, page.InstanceTypes...)
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing instance types: %w", err)
	}

	zones := map[string][]string{}
	err = eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeInstanceTypeOfferings(ctx, &ec2.DescribeInstanceTypeOfferingsInput{
			LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000), NextToken: token,
		})
		if err != nil {
			return nil, err
		}
		for _, o := range page.InstanceTypeOfferings {
			zones[string(o.InstanceType)] = append(zones[string(o.InstanceType)], aws.ToString(o.Location))
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing instance type offerings: %w", err)
	}

	enis, err := awsdata.ENILimits()
	if err != nil {
		return nil, err
	}
	out := []typeEntry{}
	for _, info := range infos {
		it, ok := convertType(info, enis)
		if !ok {
			continue
		}
		tz := slices.Clone(zones[it.Name])
		slices.Sort(tz)
		out = append(out, typeEntry{
			it:      it,
			zones:   slices.Compact(tz),
			canSpot: slices.Contains(info.SupportedUsageClasses, ec2types.UsageClassTypeSpot),
		})
	}
	slices.SortFunc(out, func(a, b typeEntry) int { return cmp.Compare(a.it.Name, b.it.Name) })
	return out, nil
}

// assembleCatalog joins the types, their zones and the prices into offerings. Callers hold
// catalogMu.
func (p *Provider) assembleCatalog() []cloud.InstanceType {
	var out []cloud.InstanceType
	for _, e := range p.types {
		it := e.it
		it.Offerings = nil
		od, hasOD := p.onDemand.prices[it.Name]
		for _, z := range e.zones {
			if hasOD {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.OnDemand, PricePerHour: od})
			}
			if sp, ok := p.spot.prices[it.Name][z]; ok && e.canSpot {
				it.Offerings = append(it.Offerings, cloud.Offering{Zone: z, CapacityType: cloud.Spot, PricePerHour: sp})
			}
		}
		if len(it.Offerings) > 0 {
			out = append(out, it)
		}
	}
	return out
}

// convertType maps an EC2 record to a cloud.InstanceType without offerings; false for types
// Tailor cannot run (Mac, i386-only, unknown architectures).
func convertType(info ec2types.InstanceTypeInfo, enis map[string]awsdata.ENILimit) (cloud.InstanceType, bool) {
	it := cloud.InstanceType{
		Name:       string(info.InstanceType),
		BareMetal:  aws.ToBool(info.BareMetal),
		Hypervisor: string(info.Hypervisor),
	}
	if info.InstanceStorageInfo != nil {
		it.InstanceStorageGB = aws.ToInt64(info.InstanceStorageInfo.TotalSizeInGB)
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
