package ec2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"

	"github.com/tailor-eks/tailor/pkg/awsdata"
)

const (
	// spotProduct is the product description of Linux spot prices in a VPC.
	spotProduct = "Linux/UNIX"
	// pricingTimeout bounds one on-demand price load from the Pricing API (all its pages).
	pricingTimeout = time.Minute
	// onDemandRetry, spotRetry and catalogRetry are how soon a failed refresh of the prices or
	// of the instance types is tried again (or the TTL, when shorter).
	onDemandRetry = time.Hour
	spotRetry     = time.Minute
	catalogRetry  = time.Minute
)

// Where on-demand prices came from.
const (
	sourcePricingAPI = "pricing API"
	sourceTable      = "shipped table"
)

// onDemandPrices are the on-demand prices by instance type and their refresh state.
type onDemandPrices struct {
	prices  map[string]float64 // nil until loaded
	source  string
	at      time.Time // when the prices were fetched
	next    time.Time // when to refresh them
	failing bool      // the last refresh failed (and was logged)
}

// spotPrices are the spot prices by instance type and zone and their refresh state.
type spotPrices struct {
	prices  map[string]map[string]float64 // nil until loaded
	at      time.Time
	next    time.Time
	failing bool
}

// pricingRegion is where the Pricing API is asked: it is served from us-east-1 (and a few other
// regions) for every commercial region, and from cn-northwest-1 for the China regions.
func pricingRegion(region string) string {
	if strings.HasPrefix(region, "cn-") {
		return "cn-northwest-1"
	}
	return "us-east-1"
}

// refreshOnDemandPrices loads the on-demand prices from the Pricing API, or the shipped table
// when that fails and no earlier Pricing API prices exist. Only an unreadable shipped table is
// an error. Callers hold catalogMu.
func (p *Provider) refreshOnDemandPrices(ctx context.Context, now time.Time) error {
	ttl := p.opts.OnDemandPriceTTL
	if p.pricing == nil {
		table, err := awsdata.OnDemandPrices()
		if err != nil {
			return err
		}
		if p.onDemand.prices == nil {
			p.log.Info("ec2: on-demand prices from the shipped us-east-1 table", "region", p.region, "reason", p.noPricingAPI)
		}
		p.onDemand = onDemandPrices{prices: table, source: sourceTable, at: now, next: now.Add(ttl)}
		return nil
	}

	prices, err := p.fetchOnDemandPrices(ctx)
	if err == nil && len(prices) == 0 {
		err = fmt.Errorf("the Pricing API lists no Linux on-demand prices for %s", p.region)
	}
	if err == nil {
		if p.onDemand.failing {
			p.log.Info("ec2: on-demand prices from the Pricing API again", "region", p.region, "types", len(prices))
		}
		p.onDemand = onDemandPrices{prices: prices, source: sourcePricingAPI, at: now, next: now.Add(ttl)}
		return nil
	}

	retry := now.Add(min(ttl, onDemandRetry))
	if p.onDemand.source == sourcePricingAPI {
		if !p.onDemand.failing {
			p.log.Warn("ec2: refreshing on-demand prices from the Pricing API failed; keeping the last prices",
				"region", p.region, "pricesFrom", p.onDemand.at, "error", err)
		}
		p.onDemand.failing, p.onDemand.next = true, retry
		return nil
	}
	table, terr := awsdata.OnDemandPrices()
	if terr != nil {
		return errors.Join(err, terr)
	}
	if !p.onDemand.failing {
		p.log.Warn("ec2: on-demand prices from the shipped us-east-1 table: the Pricing API failed",
			"region", p.region, "error", err)
	}
	p.onDemand = onDemandPrices{prices: table, source: sourceTable, at: now, next: retry, failing: true}
	return nil
}

// fetchOnDemandPrices reads the Linux on-demand prices of the region from the Pricing API.
func (p *Provider) fetchOnDemandPrices(ctx context.Context) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, pricingTimeout)
	defer cancel()
	term := func(field, value string) pricingtypes.Filter {
		return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
	}
	in := &pricing.GetProductsInput{
		ServiceCode: aws.String("AmazonEC2"),
		Filters: []pricingtypes.Filter{
			term("regionCode", p.region),
			term("operatingSystem", "Linux"),
			term("tenancy", "Shared"),
			term("preInstalledSw", "NA"),
			term("capacitystatus", "Used"),
		},
		FormatVersion: aws.String("aws_v1"),
		MaxResults:    aws.Int32(100),
	}
	out := map[string]float64{}
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		req := *in
		req.NextToken = token
		page, err := p.pricing.GetProducts(ctx, &req)
		if err != nil {
			return nil, err
		}
		for _, raw := range page.PriceList {
			typ, price, ok := parsePriceListItem(raw, p.region)
			if !ok {
				continue
			}
			if old, dup := out[typ]; !dup || price < old {
				out[typ] = price
			}
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("pricing GetProducts: %w", err)
	}
	return out, nil
}

// priceListItem is the part of a Price List product (aws_v1 format) Tailor reads.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType    string `json:"instanceType"`
			RegionCode      string `json:"regionCode"`
			OperatingSystem string `json:"operatingSystem"`
			Tenancy         string `json:"tenancy"`
			PreInstalledSw  string `json:"preInstalledSw"`
			CapacityStatus  string `json:"capacitystatus"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// parsePriceListItem returns the instance type and hourly USD on-demand price of one price list
// product; false when the item is unreadable, has no positive hourly price, or is not a Linux,
// shared tenancy, used capacity product of the region without pre-installed software (the
// request's filters should have ensured that; attributes the item lacks are not checked).
func parsePriceListItem(raw, region string) (string, float64, bool) {
	var item priceListItem
	if err := json.Unmarshal([]byte(raw), &item); err != nil {
		return "", 0, false
	}
	a := item.Product.Attributes
	for _, c := range [][2]string{
		{a.RegionCode, region}, {a.OperatingSystem, "Linux"}, {a.Tenancy, "Shared"},
		{a.PreInstalledSw, "NA"}, {a.CapacityStatus, "Used"},
	} {
		if c[0] != "" && c[0] != c[1] {
			return "", 0, false
		}
	}
	if a.InstanceType == "" {
		return "", 0, false
	}
	best := 0.0
	for _, term := range item.Terms.OnDemand {
		for _, d := range term.PriceDimensions {
			if !strings.EqualFold(d.Unit, "Hrs") {
				continue
			}
			price, err := strconv.ParseFloat(d.PricePerUnit["USD"], 64)
			if err != nil || !usablePrice(price) {
				continue
			}
			if best == 0 || price < best {
				best = price
			}
		}
	}
	return a.InstanceType, best, best > 0
}

// refreshSpotPrices loads the spot prices. A failure keeps the last prices; before the first
// load succeeds there are none, so the catalog offers no spot until one does: a spot outage (or
// a policy without ec2:DescribeSpotPriceHistory) must not stall on-demand pools. Callers hold
// catalogMu.
func (p *Provider) refreshSpotPrices(ctx context.Context, now time.Time) error {
	prices, err := p.fetchSpotPrices(ctx, now)
	if err != nil {
		if !p.spot.failing {
			if p.spot.prices == nil {
				p.log.Warn("ec2: loading spot prices failed; no spot offerings until they load", "error", err)
			} else {
				p.log.Warn("ec2: refreshing spot prices failed; keeping the last prices", "pricesFrom", p.spot.at, "error", err)
			}
		}
		if p.spot.prices == nil {
			p.spot.prices = map[string]map[string]float64{}
		}
		p.spot.failing, p.spot.next = true, now.Add(min(p.opts.SpotPriceTTL, spotRetry))
		return nil
	}
	if p.spot.failing {
		p.log.Info("ec2: spot prices refreshed again")
	}
	p.spot = spotPrices{prices: prices, at: now, next: now.Add(p.opts.SpotPriceTTL)}
	return nil
}

// fetchSpotPrices returns the newest Linux spot price of every type in every zone, as of now.
func (p *Provider) fetchSpotPrices(ctx context.Context, now time.Time) (map[string]map[string]float64, error) {
	type point struct {
		price float64
		at    time.Time
	}
	newest := map[string]map[string]point{} // type → zone → newest point
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeSpotPriceHistory(ctx, &ec2.DescribeSpotPriceHistoryInput{
			ProductDescriptions: []string{spotProduct},
			StartTime:           aws.Time(now),
			MaxResults:          aws.Int32(1000),
			NextToken:           token,
		})
		if err != nil {
			return nil, err
		}
		for _, sp := range page.SpotPriceHistory {
			price, err := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
			if err != nil || !usablePrice(price) {
				continue
			}
			typ, zone, at := string(sp.InstanceType), aws.ToString(sp.AvailabilityZone), aws.ToTime(sp.Timestamp)
			if typ == "" || zone == "" {
				continue
			}
			if newest[typ] == nil {
				newest[typ] = map[string]point{}
			}
			if old, ok := newest[typ][zone]; !ok || at.After(old.at) {
				newest[typ][zone] = point{price, at}
			}
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]map[string]float64, len(newest))
	for typ, zones := range newest {
		out[typ] = make(map[string]float64, len(zones))
		for z, pt := range zones {
			out[typ][z] = pt.price
		}
	}
	return out, nil
}

// usablePrice says whether a price read from AWS can be planned with: positive and finite
// (ParseFloat reads "NaN" and "Inf", and NaN passes every comparison's negation).
func usablePrice(p float64) bool { return p > 0 && !math.IsInf(p, 1) }
