package ec2sim

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The AWS Price List Query API (service "pricing", JSON 1.1, X-Amz-Target
// AWSPriceListService.GetProducts), as far as EC2 on-demand prices go.

// Pricing API constants, as the real price list spells them.
const (
	pricingFormat      = "aws_v1"
	pricingVersion     = "20260101000000"
	pricingPublication = "2026-01-01T00:00:00Z"
	onDemandTermCode   = "JRTCKXETXF" // the on-demand offer term of every product
	hourlyRateCode     = "6YS6EN2CT7" // the per-hour price dimension
	upfrontRateCode    = "2TG2D8R56U" // the upfront fee of an All Upfront reservation
	reserved1yNoUp     = "4NA7Y494T4" // 1yr standard No Upfront
	reserved1yAllUp    = "6QCMYABX3D" // 1yr standard All Upfront
	pricingMaxResults  = 100
	otherRegionFactor  = 1.1
	ec2ServiceCode     = "AmazonEC2"
	ec2ServiceName     = "Amazon Elastic Compute Cloud"
)

// regionNames are the price list's location names and usage type prefixes of the regions.
var regionNames = map[string]struct{ location, usagePrefix string }{
	"us-east-1":      {"US East (N. Virginia)", ""},
	"us-east-2":      {"US East (Ohio)", "USE2-"},
	"us-west-1":      {"US West (N. California)", "USW1-"},
	"us-west-2":      {"US West (Oregon)", "USW2-"},
	"ca-central-1":   {"Canada (Central)", "CAN1-"},
	"eu-west-1":      {"EU (Ireland)", "EU-"},
	"eu-west-2":      {"EU (London)", "EUW2-"},
	"eu-west-3":      {"EU (Paris)", "EUW3-"},
	"eu-central-1":   {"EU (Frankfurt)", "EUC1-"},
	"eu-central-2":   {"EU (Zurich)", "EUC2-"},
	"eu-north-1":     {"EU (Stockholm)", "EUN1-"},
	"eu-south-1":     {"EU (Milan)", "EUS1-"},
	"ap-northeast-1": {"Asia Pacific (Tokyo)", "APN1-"},
	"ap-northeast-2": {"Asia Pacific (Seoul)", "APN2-"},
	"ap-northeast-3": {"Asia Pacific (Osaka)", "APN3-"},
	"ap-southeast-1": {"Asia Pacific (Singapore)", "APS1-"},
	"ap-southeast-2": {"Asia Pacific (Sydney)", "APS2-"},
	"ap-south-1":     {"Asia Pacific (Mumbai)", "APS3-"},
	"ap-east-1":      {"Asia Pacific (Hong Kong)", "APE1-"},
	"sa-east-1":      {"South America (Sao Paulo)", "SAE1-"},
	"me-south-1":     {"Middle East (Bahrain)", "MES1-"},
	"af-south-1":     {"Africa (Cape Town)", "AFS1-"},
}

// regionLocation returns the price list location and usage type prefix of a region; for a region
// the simulator does not know, the region code and its upper-case form.
func regionLocation(region string) (location, usagePrefix string) {
	if n, ok := regionNames[region]; ok {
		return n.location, n.usagePrefix
	}
	return region, strings.ToUpper(region) + "-"
}

// PricingOtherRegion is the second region whose products GetProducts lists beside the simulated
// one (priced at 1.1 times), so that a client forgetting its region filter gets wrong answers.
func (s *Sim) PricingOtherRegion() string {
	if s.opts.Region == "us-east-1" {
		return "us-west-2"
	}
	return "us-east-1"
}

// productVariant is one of the products the price list has for every instance type: the plain
// Linux one Tailor wants and a few others that a client must filter out.
type productVariant struct {
	name                                      string
	os, tenancy, preInstalledSw, capacity, op string
	usage                                     string // usage type before ":<type>"
	descr                                     string // "On Demand Linux", as in "$X per On Demand Linux m5.large Instance Hour"
	price                                     func(base float64, vcpus int32) float64
	reserved                                  bool
}

var productVariants = []productVariant{
	{name: "linux", os: "Linux", tenancy: "Shared", preInstalledSw: "NA", capacity: "Used", op: "RunInstances", usage: "BoxUsage", descr: "On Demand Linux",
		price: func(p float64, _ int32) float64 { return p }, reserved: true},
	{name: "linux-unused", os: "Linux", tenancy: "Shared", preInstalledSw: "NA", capacity: "UnusedCapacityReservation", op: "RunInstances", usage: "UnusedBox", descr: "Unused Reservation Linux",
		price: func(p float64, _ int32) float64 { return p }},
	{name: "linux-dedicated", os: "Linux", tenancy: "Dedicated", preInstalledSw: "NA", capacity: "Used", op: "RunInstances", usage: "DedicatedUsage", descr: "On Demand Linux",
		price: func(p float64, _ int32) float64 { return round6(p * 1.1) }, reserved: true},
	{name: "linux-sqlstd", os: "Linux", tenancy: "Shared", preInstalledSw: "SQL Std", capacity: "Used", op: "RunInstances:0004", usage: "BoxUsage", descr: "On Demand Linux with SQL Std",
		price: func(p float64, v int32) float64 { return round6(p + 0.12*float64(v)) }, reserved: true},
	{name: "windows", os: "Windows", tenancy: "Shared", preInstalledSw: "NA", capacity: "Used", op: "RunInstances:0002", usage: "BoxUsage", descr: "On Demand Windows",
		price: func(p float64, v int32) float64 { return round6(p + 0.046*float64(v)) }, reserved: true},
}

func round6(f float64) float64 { return math.Round(f*1e6) / 1e6 }

// product is one price list product without its prices (they follow the current on-demand price
// of the type).
type product struct {
	region, location, usagePrefix string
	instanceType                  string
	vcpus                         int32
	variant                       *productVariant
	family                        string
	sku                           string
	typeAttrs                     map[string]string // shared by the products of the type
	typeFields                    map[string]string // the same with lower-case names
}

// field returns the value of a filter field (lower case): an attribute, servicecode,
// productfamily or sku.
func (p *product) field(name string) (string, bool) {
	v := p.variant
	switch name {
	case "servicecode":
		return ec2ServiceCode, true
	case "productfamily":
		return p.family, true
	case "sku":
		return p.sku, true
	case "availabilityzone":
		return "NA", true
	case "capacitystatus":
		return v.capacity, true
	case "instancetype":
		return p.instanceType, true
	case "licensemodel":
		return "No License required", true
	case "location":
		return p.location, true
	case "locationtype":
		return "AWS Region", true
	case "marketoption":
		return "OnDemand", true
	case "operatingsystem":
		return v.os, true
	case "operation":
		return v.op, true
	case "preinstalledsw":
		return v.preInstalledSw, true
	case "regioncode":
		return p.region, true
	case "servicename":
		return ec2ServiceName, true
	case "tenancy":
		return v.tenancy, true
	case "usagetype":
		return p.usagePrefix + v.usage + ":" + p.instanceType, true
	}
	val, ok := p.typeFields[name]
	return val, ok
}

// attributes returns the product's attributes as the price list spells them.
func (p *product) attributes() map[string]string {
	v := p.variant
	attrs := map[string]string{
		"availabilityzone": "NA",
		"capacitystatus":   v.capacity,
		"instanceType":     p.instanceType,
		"licenseModel":     "No License required",
		"location":         p.location,
		"locationType":     "AWS Region",
		"marketoption":     "OnDemand",
		"operatingSystem":  v.os,
		"operation":        v.op,
		"preInstalledSw":   v.preInstalledSw,
		"regionCode":       p.region,
		"servicecode":      ec2ServiceCode,
		"servicename":      ec2ServiceName,
		"tenancy":          v.tenancy,
		"usagetype":        p.usagePrefix + v.usage + ":" + p.instanceType,
	}
	for k, val := range p.typeAttrs {
		attrs[k] = val
	}
	return attrs
}

// buildProducts makes the products of the simulated region and the other region, for every
// instance type. Prices are looked up per request.
func (s *Sim) buildProducts() {
	typeAttrs := make(map[string]map[string]string, len(s.typeNames))
	typeFields := make(map[string]map[string]string, len(s.typeNames))
	for _, typ := range s.typeNames {
		attrs := typeAttributes(s.types[typ])
		fields := make(map[string]string, len(attrs))
		for k, v := range attrs {
			fields[strings.ToLower(k)] = v
		}
		typeAttrs[typ], typeFields[typ] = attrs, fields
	}
	for _, region := range []string{s.opts.Region, s.PricingOtherRegion()} {
		location, prefix := regionLocation(region)
		for _, typ := range s.typeNames {
			info := s.types[typ]
			for i := range productVariants {
				v := &productVariants[i]
				p := &product{
					region: region, location: location, usagePrefix: prefix, instanceType: typ, variant: v,
					family: "Compute Instance", sku: skuOf(region + "|" + typ + "|" + v.name),
					typeAttrs: typeAttrs[typ], typeFields: typeFields[typ],
				}
				if info.BareMetal != nil && *info.BareMetal {
					p.family = "Compute Instance (bare metal)"
				}
				if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
					p.vcpus = *info.VCpuInfo.DefaultVCpus
				}
				s.products = append(s.products, p)
			}
		}
	}
}

// typeAttributes are the price list attributes that describe the machine.
func typeAttributes(info ec2types.InstanceTypeInfo) map[string]string {
	out := map[string]string{
		"currentGeneration":     "No",
		"processorArchitecture": "64-bit",
		"instanceFamily":        instanceFamily(string(info.InstanceType)),
		"storage":               "EBS only",
	}
	if info.CurrentGeneration != nil && *info.CurrentGeneration {
		out["currentGeneration"] = "Yes"
	}
	if info.VCpuInfo != nil && info.VCpuInfo.DefaultVCpus != nil {
		out["vcpu"] = strconv.Itoa(int(*info.VCpuInfo.DefaultVCpus))
	}
	if info.MemoryInfo != nil && info.MemoryInfo.SizeInMiB != nil {
		out["memory"] = strconv.FormatFloat(float64(*info.MemoryInfo.SizeInMiB)/1024, 'f', -1, 64) + " GiB"
	}
	if info.NetworkInfo != nil && info.NetworkInfo.NetworkPerformance != nil {
		out["networkPerformance"] = *info.NetworkInfo.NetworkPerformance
	}
	if info.ProcessorInfo != nil && info.ProcessorInfo.SustainedClockSpeedInGhz != nil {
		out["clockSpeed"] = strconv.FormatFloat(*info.ProcessorInfo.SustainedClockSpeedInGhz, 'f', -1, 64) + " GHz"
	}
	if info.InstanceStorageInfo != nil && len(info.InstanceStorageInfo.Disks) > 0 {
		d := info.InstanceStorageInfo.Disks[0]
		kind := "SSD"
		if d.Type == ec2types.DiskTypeHdd {
			kind = "HDD"
		}
		if info.InstanceStorageInfo.NvmeSupport == ec2types.EphemeralNvmeSupportRequired {
			kind = "NVMe " + kind
		}
		var count int32
		var size int64
		if d.Count != nil {
			count = *d.Count
		}
		if d.SizeInGB != nil {
			size = *d.SizeInGB
		}
		out["storage"] = fmt.Sprintf("%d x %d %s", count, size, kind)
	}
	if info.GpuInfo != nil {
		n := int32(0)
		for _, g := range info.GpuInfo.Gpus {
			if g.Count != nil {
				n += *g.Count
			}
		}
		out["gpu"] = strconv.Itoa(int(n))
	}
	return out
}

// instanceFamily approximates the price list's instanceFamily from the type name.
func instanceFamily(typ string) string {
	fam, _, _ := strings.Cut(typ, ".")
	switch {
	case strings.HasPrefix(fam, "inf"), strings.HasPrefix(fam, "trn"), strings.HasPrefix(fam, "dl"):
		return "Machine Learning ASIC Instances"
	case strings.HasPrefix(fam, "f"):
		return "FPGA Instances"
	case strings.HasPrefix(fam, "p"), strings.HasPrefix(fam, "g"), strings.HasPrefix(fam, "vt"):
		return "GPU instance"
	case strings.HasPrefix(fam, "c"):
		return "Compute optimized"
	case strings.HasPrefix(fam, "r"), strings.HasPrefix(fam, "x"), strings.HasPrefix(fam, "z"), strings.HasPrefix(fam, "u"):
		return "Memory optimized"
	case strings.HasPrefix(fam, "i"), strings.HasPrefix(fam, "d"), strings.HasPrefix(fam, "h"):
		return "Storage optimized"
	}
	return "General purpose"
}

// skuOf returns a stable 16-character SKU like 2JU7DWF3RQ3WHW3A.
func skuOf(key string) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	h1, h2 := hash64(key), hash64(key+"#")
	var b [16]byte
	for i := range b {
		if i < 12 {
			b[i] = alphabet[h1>>(5*i)&31]
		} else {
			b[i] = alphabet[h2>>(5*(i-12))&31]
		}
	}
	return string(b[:])
}

// price returns the on-demand USD/hour of a product, from the current on-demand price of its
// type. Callers hold s.mu.
func (s *Sim) productPrice(p *product) (float64, bool) {
	base, ok := s.onDemandPrice(p.instanceType)
	if !ok {
		return 0, false
	}
	if p.region != s.opts.Region {
		base = round6(base * otherRegionFactor)
	}
	return p.variant.price(base, p.vcpus), true
}

// The JSON shapes of GetProducts.
type (
	pricingFilter struct {
		Field *string `json:"Field"`
		Type  *string `json:"Type"`
		Value *string `json:"Value"`
	}
	getProductsInput struct {
		ServiceCode   *string         `json:"ServiceCode"`
		Filters       []pricingFilter `json:"Filters"`
		FormatVersion *string         `json:"FormatVersion"`
		MaxResults    *int64          `json:"MaxResults"`
		NextToken     *string         `json:"NextToken"`
	}
	getProductsOutput struct {
		FormatVersion string   `json:"FormatVersion"`
		NextToken     string   `json:"NextToken,omitempty"`
		PriceList     []string `json:"PriceList"`
	}
)

// filterTypes are the Pricing API's filter types.
var filterTypes = []string{"TERM_MATCH", "EQUALS", "CONTAINS", "ANY_OF", "NONE_OF"}

func validationError(problems []string) *apiError {
	noun := "error"
	if len(problems) > 1 {
		noun = "errors"
	}
	return &apiError{status: 400, code: "ValidationException",
		message: fmt.Sprintf("%d validation %s detected: %s", len(problems), noun, strings.Join(problems, "; "))}
}

// getProducts is the Pricing API's GetProducts over the simulated EC2 products.
func (s *Sim) getProducts(body []byte, _ map[string]any) (any, *apiError) {
	var in getProductsInput
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, &apiError{status: 400, code: "SerializationException", message: err.Error()}
	}
	var problems []string
	if in.ServiceCode == nil {
		problems = append(problems, "Value null at 'serviceCode' failed to satisfy constraint: Member must not be null")
	}
	for i, f := range in.Filters {
		at := fmt.Sprintf("filters.%d.member", i+1)
		if f.Field == nil {
			problems = append(problems, fmt.Sprintf("Value null at '%s.field' failed to satisfy constraint: Member must not be null", at))
		}
		if f.Value == nil {
			problems = append(problems, fmt.Sprintf("Value null at '%s.value' failed to satisfy constraint: Member must not be null", at))
		}
		switch {
		case f.Type == nil:
			problems = append(problems, fmt.Sprintf("Value null at '%s.type' failed to satisfy constraint: Member must not be null", at))
		case !slices.Contains(filterTypes, *f.Type):
			problems = append(problems, fmt.Sprintf("Value '%s' at '%s.type' failed to satisfy constraint: Member must satisfy enum value set: [%s]", *f.Type, at, strings.Join(filterTypes, ", ")))
		}
	}
	size := int64(pricingMaxResults)
	if in.MaxResults != nil {
		size = *in.MaxResults
		if size < 1 {
			problems = append(problems, fmt.Sprintf("Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value greater than or equal to 1", size))
		} else if size > pricingMaxResults {
			problems = append(problems, fmt.Sprintf("Value '%d' at 'maxResults' failed to satisfy constraint: Member must have value less than or equal to %d", size, pricingMaxResults))
		}
	}
	if len(problems) > 0 {
		return nil, validationError(problems)
	}
	if in.FormatVersion != nil && *in.FormatVersion != pricingFormat {
		return nil, &apiError{status: 400, code: "InvalidParameterException", message: fmt.Sprintf("Invalid format version: %s. Valid format versions: %s", *in.FormatVersion, pricingFormat)}
	}

	// The token is bound to the query it continues.
	var q strings.Builder
	q.WriteString(*in.ServiceCode)
	for _, f := range in.Filters {
		fmt.Fprintf(&q, "\x00%s\x00%s\x00%s", *f.Field, *f.Type, *f.Value)
	}
	queryHash := hash64(q.String())
	start := 0
	if in.NextToken != nil && *in.NextToken != "" {
		off, ok := parsePricingToken(*in.NextToken, queryHash)
		if !ok {
			return nil, &apiError{status: 400, code: "InvalidNextTokenException", message: "The pagination token is invalid. Try again without a pagination token."}
		}
		start = off
	}

	type match struct {
		p     *product
		price float64
	}
	var matches []match
	if *in.ServiceCode == ec2ServiceCode { // the simulator has products of EC2 only
		s.productsOnce.Do(s.buildProducts)
		s.mu.Lock()
		for _, p := range s.products {
			if !matchProduct(p, in.Filters) {
				continue
			}
			if price, ok := s.productPrice(p); ok {
				matches = append(matches, match{p, price})
			}
		}
		s.mu.Unlock()
	}

	out := getProductsOutput{FormatVersion: pricingFormat, PriceList: []string{}}
	start = min(start, len(matches))
	end := min(start+int(size), len(matches))
	for _, m := range matches[start:end] {
		item, err := json.Marshal(priceListItem(m.p, m.price))
		if err != nil {
			return nil, &apiError{status: 500, code: "InternalErrorException", message: err.Error()}
		}
		out.PriceList = append(out.PriceList, string(item))
	}
	if end < len(matches) {
		out.NextToken = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "GetProducts:%d:%016x", end, queryHash))
	}
	return out, nil
}

func parsePricingToken(tok string, queryHash uint64) (int, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return 0, false
	}
	parts := strings.Split(string(raw), ":")
	if len(parts) != 3 || parts[0] != "GetProducts" || parts[2] != fmt.Sprintf("%016x", queryHash) {
		return 0, false
	}
	off, err := strconv.Atoi(parts[1])
	if err != nil || off < 0 {
		return 0, false
	}
	return off, true
}

// matchProduct reports whether a product passes every filter. Field names match without regard
// to case; values match exactly (CONTAINS: as a substring; ANY_OF and NONE_OF: a comma-separated
// list).
func matchProduct(p *product, filters []pricingFilter) bool {
	for _, f := range filters {
		v, has := p.field(strings.ToLower(*f.Field))
		want := *f.Value
		switch *f.Type {
		case "TERM_MATCH", "EQUALS":
			if !has || v != want {
				return false
			}
		case "CONTAINS":
			if !has || !strings.Contains(v, want) {
				return false
			}
		case "ANY_OF", "NONE_OF":
			in := false
			for _, w := range strings.Split(want, ",") {
				if has && strings.TrimSpace(w) == v {
					in = true
				}
			}
			if in != (*f.Type == "ANY_OF") {
				return false
			}
		}
	}
	return true
}

// The price list item JSON, as GetProducts returns it (one JSON document per string).
type (
	plItem struct {
		Product         plProduct                    `json:"product"`
		ServiceCode     string                       `json:"serviceCode"`
		Terms           map[string]map[string]plTerm `json:"terms"`
		Version         string                       `json:"version"`
		PublicationDate string                       `json:"publicationDate"`
	}
	plProduct struct {
		ProductFamily string            `json:"productFamily"`
		Attributes    map[string]string `json:"attributes"`
		SKU           string            `json:"sku"`
	}
	plTerm struct {
		PriceDimensions map[string]plDimension `json:"priceDimensions"`
		SKU             string                 `json:"sku"`
		EffectiveDate   string                 `json:"effectiveDate"`
		OfferTermCode   string                 `json:"offerTermCode"`
		TermAttributes  map[string]string      `json:"termAttributes"`
	}
	plDimension struct {
		Unit         string            `json:"unit"`
		EndRange     string            `json:"endRange,omitempty"`
		Description  string            `json:"description"`
		AppliesTo    []string          `json:"appliesTo"`
		RateCode     string            `json:"rateCode"`
		BeginRange   string            `json:"beginRange,omitempty"`
		PricePerUnit map[string]string `json:"pricePerUnit"`
	}
)

func usd(p float64) map[string]string {
	return map[string]string{"USD": strconv.FormatFloat(p, 'f', 10, 64)}
}

// priceListItem renders a product at an on-demand price, with its on-demand term and (for most
// variants) two reserved terms a client must not take for the on-demand price.
func priceListItem(p *product, price float64) plItem {
	v := p.variant
	odKey := p.sku + "." + onDemandTermCode
	dims := func(term string, ds ...plDimension) map[string]plDimension {
		out := map[string]plDimension{}
		for _, d := range ds {
			d.RateCode = p.sku + "." + term + "." + d.RateCode
			if d.AppliesTo == nil {
				d.AppliesTo = []string{}
			}
			out[d.RateCode] = d
		}
		return out
	}
	suffix := " Instance Hour"
	if v.tenancy == "Dedicated" {
		suffix = " Dedicated Instance Hour"
	}
	terms := map[string]map[string]plTerm{
		"OnDemand": {odKey: {
			PriceDimensions: dims(onDemandTermCode, plDimension{
				Unit: "Hrs", BeginRange: "0", EndRange: "Inf", RateCode: hourlyRateCode, PricePerUnit: usd(price),
				Description: fmt.Sprintf("$%s per %s %s%s", strconv.FormatFloat(price, 'f', -1, 64), v.descr, p.instanceType, suffix),
			}),
			SKU: p.sku, EffectiveDate: pricingPublication, OfferTermCode: onDemandTermCode, TermAttributes: map[string]string{},
		}},
	}
	if v.reserved {
		what := fmt.Sprintf("%s, %s reserved instance applied", strings.TrimPrefix(v.descr, "On Demand "), p.instanceType)
		terms["Reserved"] = map[string]plTerm{
			p.sku + "." + reserved1yNoUp: {
				PriceDimensions: dims(reserved1yNoUp, plDimension{
					Unit: "Hrs", BeginRange: "0", EndRange: "Inf", RateCode: hourlyRateCode, PricePerUnit: usd(round6(price * 0.63)),
					Description: what,
				}),
				SKU: p.sku, EffectiveDate: pricingPublication, OfferTermCode: reserved1yNoUp,
				TermAttributes: map[string]string{"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "No Upfront"},
			},
			p.sku + "." + reserved1yAllUp: {
				PriceDimensions: dims(reserved1yAllUp,
					plDimension{Unit: "Quantity", RateCode: upfrontRateCode, PricePerUnit: usd(math.Round(price * 0.59 * 8760)), Description: "Upfront Fee"},
					plDimension{Unit: "Hrs", BeginRange: "0", EndRange: "Inf", RateCode: hourlyRateCode, PricePerUnit: usd(0), Description: what},
				),
				SKU: p.sku, EffectiveDate: pricingPublication, OfferTermCode: reserved1yAllUp,
				TermAttributes: map[string]string{"LeaseContractLength": "1yr", "OfferingClass": "standard", "PurchaseOption": "All Upfront"},
			},
		}
	}
	return plItem{
		Product:         plProduct{ProductFamily: p.family, Attributes: p.attributes(), SKU: p.sku},
		ServiceCode:     ec2ServiceCode,
		Terms:           terms,
		Version:         pricingVersion,
		PublicationDate: pricingPublication,
	}
}
