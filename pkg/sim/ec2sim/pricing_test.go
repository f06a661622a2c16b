package ec2sim

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// newPricingClient serves s and returns a real Pricing client for it (no retries).
func newPricingClient(t *testing.T, s *Sim) *pricing.Client {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return pricing.NewFromConfig(testConfig(srv.URL, 1))
}

func term(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Field: aws.String(field), Type: pricingtypes.FilterTypeTermMatch, Value: aws.String(value)}
}

// linuxFilters are the filters for the plain Linux on-demand products of a region.
func linuxFilters(regionField, region string) []pricingtypes.Filter {
	return []pricingtypes.Filter{
		term(regionField, region), term("operatingSystem", "Linux"), term("tenancy", "Shared"),
		term("preInstalledSw", "NA"), term("capacitystatus", "Used"),
	}
}

// parsedItem is what a client reads from one PriceList entry.
type parsedItem struct {
	Product struct {
		ProductFamily string            `json:"productFamily"`
		SKU           string            `json:"sku"`
		Attributes    map[string]string `json:"attributes"`
	} `json:"product"`
	ServiceCode string `json:"serviceCode"`
	Terms       struct {
		OnDemand map[string]struct {
			SKU             string `json:"sku"`
			OfferTermCode   string `json:"offerTermCode"`
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				RateCode     string            `json:"rateCode"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
		Reserved map[string]json.RawMessage `json:"Reserved"`
	} `json:"terms"`
}

// onDemandUSD returns the single hourly on-demand USD price of an item.
func (it parsedItem) onDemandUSD(t *testing.T) float64 {
	t.Helper()
	if len(it.Terms.OnDemand) != 1 {
		t.Fatalf("%d on-demand terms", len(it.Terms.OnDemand))
	}
	for key, term := range it.Terms.OnDemand {
		if key != it.Product.SKU+".JRTCKXETXF" || term.OfferTermCode != "JRTCKXETXF" || term.SKU != it.Product.SKU || len(term.PriceDimensions) != 1 {
			t.Fatalf("on-demand term %s: %+v", key, term)
		}
		for rk, d := range term.PriceDimensions {
			if rk != key+".6YS6EN2CT7" || d.RateCode != rk || d.Unit != "Hrs" {
				t.Fatalf("price dimension %s: %+v", rk, d)
			}
			p, err := strconv.ParseFloat(d.PricePerUnit["USD"], 64)
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
	}
	return 0
}

// getAll pages through GetProducts and parses every item.
func getAll(t *testing.T, c *pricing.Client, in *pricing.GetProductsInput) ([]parsedItem, int) {
	t.Helper()
	var items []parsedItem
	pages := 0
	pager := pricing.NewGetProductsPaginator(c, in)
	for pager.HasMorePages() {
		out, err := pager.NextPage(ctx(t))
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if aws.ToString(out.FormatVersion) != "aws_v1" {
			t.Errorf("format version %q", aws.ToString(out.FormatVersion))
		}
		for _, raw := range out.PriceList {
			var it parsedItem
			if err := json.Unmarshal([]byte(raw), &it); err != nil {
				t.Fatalf("price list item: %v\n%s", err, raw)
			}
			items = append(items, it)
		}
	}
	return items, pages
}

func TestGetProducts(t *testing.T) {
	s := New(Options{})
	c := newPricingClient(t, s)
	var priced []string
	for _, typ := range s.typeNames {
		if _, ok := s.OnDemandPrice(typ); ok {
			priced = append(priced, typ)
		}
	}
	m5 := func(p float64) float64 { return p }
	tests := []struct {
		name        string
		serviceCode string
		filters     []pricingtypes.Filter
		max         int32
		wantTypes   []string // nil: every priced type once
		wantRegion  string
		price       func(od float64) float64 // the on-demand price from the type's price
		wantOS      string
	}{
		{name: "linux by regionCode", filters: linuxFilters("regionCode", "us-east-1"), wantRegion: "us-east-1", price: m5, wantOS: "Linux"},
		{name: "linux by location", filters: linuxFilters("location", "US East (N. Virginia)"), max: 37, wantRegion: "us-east-1", price: m5, wantOS: "Linux"},
		{name: "other region", filters: linuxFilters("regionCode", "us-west-2"), wantRegion: "us-west-2", price: func(p float64) float64 { return round6(p * 1.1) }, wantOS: "Linux"},
		{name: "windows", filters: append(linuxFilters("regionCode", "us-east-1")[:1], term("instanceType", "m5.large"), term("operatingSystem", "Windows")),
			wantTypes: []string{"m5.large"}, wantRegion: "us-east-1", price: func(p float64) float64 { return round6(p + 2*0.046) }, wantOS: "Windows"},
		{name: "field names ignore case", filters: append(linuxFilters("REGIONCODE", "us-east-1"), term("INSTANCETYPE", "m5.large")),
			wantTypes: []string{"m5.large"}, wantRegion: "us-east-1", price: m5, wantOS: "Linux"},
		{name: "any of", filters: append(linuxFilters("regionCode", "us-east-1"), pricingtypes.Filter{Field: aws.String("instanceType"), Type: pricingtypes.FilterTypeAnyOf, Value: aws.String("m5.large, c5.xlarge")}),
			wantTypes: []string{"c5.xlarge", "m5.large"}, wantRegion: "us-east-1", price: m5, wantOS: "Linux"},
		{name: "unknown field", filters: append(linuxFilters("regionCode", "us-east-1"), term("noSuchField", "x")), wantTypes: []string{}},
		{name: "wrong value", filters: linuxFilters("regionCode", "us-east-7"), wantTypes: []string{}},
		{name: "other service", serviceCode: "AmazonRDS", filters: linuxFilters("regionCode", "us-east-1"), wantTypes: []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: tt.filters, FormatVersion: aws.String("aws_v1")}
			if tt.serviceCode != "" {
				in.ServiceCode = aws.String(tt.serviceCode)
			}
			if tt.max > 0 {
				in.MaxResults = aws.Int32(tt.max)
			}
			items, pages := getAll(t, c, in)
			want := tt.wantTypes
			if want == nil {
				want = priced
				size := 100
				if tt.max > 0 {
					size = int(tt.max)
				}
				if wantPages := (len(priced) + size - 1) / size; pages != wantPages {
					t.Errorf("%d pages, want %d", pages, wantPages)
				}
			}
			var got []string
			for _, it := range items {
				a := it.Product.Attributes
				typ := a["instanceType"]
				got = append(got, typ)
				if a["regionCode"] != tt.wantRegion || a["operatingSystem"] != tt.wantOS || it.ServiceCode != "AmazonEC2" || len(it.Product.SKU) != 16 {
					t.Fatalf("%s: product %+v", typ, it.Product)
				}
				if !strings.HasPrefix(it.Product.ProductFamily, "Compute Instance") || !strings.HasSuffix(a["usagetype"], ":"+typ) {
					t.Errorf("%s: family %q usage type %q", typ, it.Product.ProductFamily, a["usagetype"])
				}
				od, _ := s.OnDemandPrice(typ)
				if p := it.onDemandUSD(t); p != tt.price(od) {
					t.Errorf("%s: on-demand %v, want %v", typ, p, tt.price(od))
				}
				if len(it.Terms.Reserved) != 2 {
					t.Errorf("%s: %d reserved terms", typ, len(it.Terms.Reserved))
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("got %d products, want %d", len(got), len(want))
			}
		})
	}

	// The request as the SDK sent it, flattened.
	reqs := s.Requests("GetProducts")
	last := reqs[len(reqs)-1]
	if last.Get("ServiceCode") != "AmazonRDS" || last.Get("Filters.1.Field") != "regionCode" || last.Get("Filters.1.Type") != "TERM_MATCH" || last.Get("Filters.1.Value") != "us-east-1" || last.Get("FormatVersion") != "aws_v1" {
		t.Errorf("recorded request %v", last)
	}
}

func TestGetProductsVariantsAndPrices(t *testing.T) {
	s := New(Options{Region: "eu-west-1"})
	c := newPricingClient(t, s)
	get := func(filters ...pricingtypes.Filter) []parsedItem {
		items, _ := getAll(t, c, &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: filters})
		return items
	}
	all := get(term("regionCode", "eu-west-1"), term("instanceType", "m5.large"))
	if len(all) != 5 {
		t.Fatalf("%d products of m5.large in eu-west-1, want 5 variants", len(all))
	}
	plain := get(append(linuxFilters("regionCode", "eu-west-1"), term("instanceType", "m5.large"))...)
	if len(plain) != 1 || plain[0].Product.Attributes["location"] != "EU (Ireland)" || plain[0].Product.Attributes["usagetype"] != "EU-BoxUsage:m5.large" {
		t.Fatalf("plain Linux m5.large: %+v", plain)
	}
	if other := get(term("regionCode", "us-east-1"), term("instanceType", "m5.large")); len(other) != 5 || s.PricingOtherRegion() != "us-east-1" {
		t.Errorf("other region: %d products", len(other))
	}

	s.SetOnDemandPrice("m5.large", 0.5)
	if got := get(append(linuxFilters("regionCode", "eu-west-1"), term("instanceType", "m5.large"))...); len(got) != 1 || got[0].onDemandUSD(t) != 0.5 {
		t.Errorf("after SetOnDemandPrice: %+v", got)
	}
	if p, ok := s.OnDemandPrice("m5.large"); !ok || p != 0.5 {
		t.Errorf("OnDemandPrice %v %v", p, ok)
	}
	s.SetOnDemandPrice("m5.large", 0)
	if got := get(term("instanceType", "m5.large")); len(got) != 0 {
		t.Errorf("a type without a price is still listed %d times", len(got))
	}
	if _, ok := s.OnDemandPrice("m5.large"); ok {
		t.Error("price not removed")
	}
}

func TestGetProductsErrors(t *testing.T) {
	s := New(Options{})
	c := newPricingClient(t, s)
	page, err := c.GetProducts(ctx(t), &pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: linuxFilters("regionCode", "us-east-1"), MaxResults: aws.Int32(5)})
	if err != nil || page.NextToken == nil {
		t.Fatal(page, err)
	}
	tests := []struct {
		name  string
		in    pricing.GetProductsInput
		fault *Fault
		code  string
	}{
		{name: "max results too small", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(0)}, code: "ValidationException"},
		{name: "max results too large", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(101)}, code: "ValidationException"},
		{name: "bad filter type", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), Filters: []pricingtypes.Filter{{Field: aws.String("a"), Type: "REGEX", Value: aws.String("b")}}}, code: "ValidationException"},
		{name: "format version", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), FormatVersion: aws.String("aws_v2")}, code: "InvalidParameterException"},
		{name: "garbage token", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), NextToken: aws.String("nope")}, code: "InvalidNextTokenException"},
		{name: "token of another query", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), NextToken: page.NextToken}, code: "InvalidNextTokenException"},
		{name: "injected fault", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2")}, fault: &Fault{Action: "GetProducts", Code: "InternalErrorException", Times: 1}, code: "InternalErrorException"},
		{name: "fault used up", in: pricing.GetProductsInput{ServiceCode: aws.String("AmazonEC2"), MaxResults: aws.Int32(1)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fault != nil {
				s.InjectFault(*tt.fault)
			}
			_, err := c.GetProducts(ctx(t), &tt.in)
			if got := apiCode(err); got != tt.code {
				t.Errorf("error %v, want code %q", err, tt.code)
			}
		})
	}
	// Without the SDK's validation: ServiceCode is required.
	req := httptest.NewRequest("POST", "/", strings.NewReader(`{"Filters":[]}`))
	req.Header.Set("X-Amz-Target", "AWSPriceListService.GetProducts")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != 400 || rec.Header().Get("X-Amzn-ErrorType") != "ValidationException" || !strings.Contains(rec.Body.String(), "serviceCode") {
		t.Errorf("no ServiceCode: %d %s %s", rec.Code, rec.Header().Get("X-Amzn-ErrorType"), rec.Body)
	}
}

func TestSpotPriceHistory(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)
	clock := NewFakeClock(t0)
	s, c, _ := newTestSim(t, Options{Clock: clock})
	zone := s.Zones()[0]
	synth, ok := s.SpotPrice("m5.large", zone)
	if !ok {
		t.Fatal("no spot price")
	}
	clock.Advance(time.Hour) // 11:30
	s.SetSpotPrice("m5.large", zone, 0.05)
	clock.Advance(time.Hour) // 12:30
	s.SetSpotPrice("m5.large", zone, 0.04)
	s.SetSpotPrice("no.such-type", zone, 1)

	at := func(hm string) *time.Time {
		tm, err := time.Parse("15:04", hm)
		if err != nil {
			t.Fatal(err)
		}
		v := time.Date(2026, 3, 1, tm.Hour(), tm.Minute(), 0, 0, time.UTC)
		return &v
	}
	tests := []struct {
		name       string
		start, end *time.Time
		want       []float64
	}{
		{"all", nil, nil, []float64{0.04, 0.05, synth}},
		{"start after the last change", at("12:45"), nil, []float64{0.04}},
		{"start between changes", at("12:00"), nil, []float64{0.04, 0.05}},
		{"start at a change", at("11:30"), nil, []float64{0.04, 0.05}},
		{"start before the changes", at("10:15"), nil, []float64{0.04, 0.05, synth}},
		{"end before the last change", nil, at("12:00"), []float64{0.05, synth}},
		{"window", at("11:00"), at("12:00"), []float64{0.05, synth}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeSpotPriceHistory(ctx(t), &ec2.DescribeSpotPriceHistoryInput{
				InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String(zone),
				ProductDescriptions: []string{"Linux/UNIX"}, StartTime: tt.start, EndTime: tt.end,
			})
			if err != nil {
				t.Fatal(err)
			}
			var got []float64
			for i, sp := range out.SpotPriceHistory {
				p, _ := strconv.ParseFloat(aws.ToString(sp.SpotPrice), 64)
				got = append(got, p)
				if i > 0 && aws.ToTime(sp.Timestamp).After(aws.ToTime(out.SpotPriceHistory[i-1].Timestamp)) {
					t.Error("not newest first")
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("prices %v, want %v", got, tt.want)
			}
		})
	}
	if p, _ := s.SpotPrice("m5.large", zone); p != 0.04 {
		t.Errorf("SpotPrice %v", p)
	}
	if p, _ := s.SpotPrice("m5.large", s.Zones()[1]); p == 0.04 || p == 0 {
		t.Errorf("other zone changed: %v", p)
	}

	// Withdrawn: no price from now on, and spot launches fail there.
	s.SetSpotPrice("m5.large", zone, 0)
	if _, ok := s.SpotPrice("m5.large", zone); ok {
		t.Error("withdrawn spot price still known")
	}
	out, err := c.DescribeSpotPriceHistory(ctx(t), &ec2.DescribeSpotPriceHistoryInput{
		InstanceTypes: []ec2types.InstanceType{"m5.large"}, AvailabilityZone: aws.String(zone), StartTime: aws.Time(clock.Now()),
	})
	if err != nil || len(out.SpotPriceHistory) != 0 {
		t.Errorf("withdrawn: %v %v", out, err)
	}
	fleet := launch(t, c, s, 1, ec2types.DefaultTargetCapacityTypeSpot, "m5.large")
	if len(fleet.Instances) != 0 || len(fleet.Errors) != 1 || aws.ToString(fleet.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" {
		t.Errorf("spot launch after withdrawal: %+v", fleet)
	}
}
