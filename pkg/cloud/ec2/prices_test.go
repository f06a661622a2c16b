package ec2

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/tailor-eks/tailor/pkg/awsdata"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// logRecorder is a slog.Handler that keeps the records.
type logRecorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (h *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *logRecorder) WithGroup(string) slog.Handler            { return h }
func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, r.Clone())
	return nil
}

// count returns how many records of the level contain the text.
func (h *logRecorder) count(level slog.Level, text string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, r := range h.recs {
		if r.Level == level && strings.Contains(r.Message, text) {
			n++
		}
	}
	return n
}

// priceEnv is a simulator and a provider sharing a fake clock, with the provider's logs and the
// credential scopes of the Pricing requests.
type priceEnv struct {
	sim    *ec2sim.Sim
	p      *Provider
	clock  *ec2sim.FakeClock
	logs   *logRecorder
	mu     sync.Mutex
	scopes []string
}

// newPriceEnv serves a simulator of the region; wrap (if not nil) may answer requests itself.
func newPriceEnv(t *testing.T, region string, opts Options, wrap func(http.ResponseWriter, *http.Request) bool) *priceEnv {
	t.Helper()
	e := &priceEnv{clock: ec2sim.NewFakeClock(time.Date(2026, 3, 1, 10, 30, 0, 0, time.UTC)), logs: &logRecorder{}}
	e.sim = ec2sim.New(ec2sim.Options{Region: region, ClusterName: cluster, Clock: e.clock, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Amz-Target") == "AWSPriceListService.GetProducts" {
			e.mu.Lock()
			e.scopes = append(e.scopes, r.Header.Get("Authorization"))
			e.mu.Unlock()
		}
		if wrap != nil && wrap(w, r) {
			return
		}
		e.sim.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.Region = region
	opts.ClusterName = cluster
	opts.Now = e.clock.Now
	opts.Logger = slog.New(e.logs)
	p, err := NewFromConfig(cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.p = p
	return e
}

func (e *priceEnv) load(t *testing.T) []cloud.InstanceType {
	t.Helper()
	types, err := e.p.InstanceTypes(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return types
}

// price returns the price of an offering.
func price(types []cloud.InstanceType, name, zone string, ct cloud.CapacityType) (float64, bool) {
	for _, it := range types {
		if it.Name != name {
			continue
		}
		for _, o := range it.Offerings {
			if o.Zone == zone && o.CapacityType == ct {
				return o.PricePerHour, true
			}
		}
	}
	return 0, false
}

func TestOnDemandPrices(t *testing.T) {
	table, err := awsdata.OnDemandPrices()
	if err != nil {
		t.Fatal(err)
	}
	emptyPriceList := func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Amz-Target") != "AWSPriceListService.GetProducts" {
			return false
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_, _ = w.Write([]byte(`{"FormatVersion":"aws_v1","PriceList":[]}`))
		return true
	}
	tests := []struct {
		name       string
		region     string
		fault      string // error code for every GetProducts
		wrap       func(http.ResponseWriter, *http.Request) bool
		wantSource string
		wantWarn   string
	}{
		{name: "pricing API", region: "us-east-1", wantSource: sourcePricingAPI},
		{name: "pricing API for another region", region: "eu-west-1", wantSource: sourcePricingAPI},
		{name: "pricing API fails", region: "us-east-1", fault: "InternalErrorException", wantSource: sourceTable, wantWarn: "InternalErrorException"},
		{name: "pricing API access denied", region: "us-east-1", fault: "AccessDeniedException", wantSource: sourceTable, wantWarn: "AccessDeniedException"},
		{name: "pricing API lists nothing", region: "us-east-1", wrap: emptyPriceList, wantSource: sourceTable, wantWarn: "lists no Linux on-demand prices"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPriceEnv(t, tt.region, Options{}, tt.wrap)
			// Prices only the Pricing API knows: a changed one and a withdrawn one.
			e.sim.SetOnDemandPrice("m5.large", 0.5)
			e.sim.SetOnDemandPrice("c5.large", 0)
			if tt.fault != "" {
				e.sim.InjectFault(ec2sim.Fault{Action: "GetProducts", Code: tt.fault})
			}
			types := e.load(t)
			zone := e.sim.Zones()[0]

			if e.p.onDemand.source != tt.wantSource {
				t.Errorf("source %q, want %q", e.p.onDemand.source, tt.wantSource)
			}
			for _, it := range types {
				want, known := e.sim.OnDemandPrice(it.Name)
				if tt.wantSource == sourceTable {
					want, known = table[it.Name]
				}
				for _, z := range e.sim.Zones() {
					got, ok := price(types, it.Name, z, cloud.OnDemand)
					if ok != (known && e.sim.Offered(it.Name, z)) || got != want && ok {
						t.Fatalf("%s in %s: on-demand %v %v, want %v %v", it.Name, z, got, ok, want, known)
					}
				}
			}
			m5, _ := price(types, "m5.large", zone, cloud.OnDemand)
			_, c5OD := price(types, "c5.large", zone, cloud.OnDemand)
			_, c5Spot := price(types, "c5.large", zone, cloud.Spot)
			switch tt.wantSource {
			case sourcePricingAPI:
				if m5 != 0.5 || c5OD || !c5Spot {
					t.Errorf("m5.large on-demand %v; c5.large on-demand %v, spot %v", m5, c5OD, c5Spot)
				}
			case sourceTable:
				if m5 != table["m5.large"] || !c5OD {
					t.Errorf("m5.large on-demand %v, c5.large on-demand %v", m5, c5OD)
				}
			}

			// The request: the cluster's region, asked in us-east-1.
			reqs := e.sim.Requests("GetProducts")
			if len(reqs) == 0 && tt.wrap == nil {
				t.Fatal("no GetProducts")
			}
			if len(reqs) > 0 {
				got := map[string]string{}
				for i := 1; reqs[0].Get("Filters."+strconv.Itoa(i)+".Field") != ""; i++ {
					k := "Filters." + strconv.Itoa(i)
					got[reqs[0].Get(k+".Field")] = reqs[0].Get(k+".Type") + " " + reqs[0].Get(k+".Value")
				}
				want := map[string]string{"regionCode": "TERM_MATCH " + tt.region, "operatingSystem": "TERM_MATCH Linux", "tenancy": "TERM_MATCH Shared", "preInstalledSw": "TERM_MATCH NA", "capacitystatus": "TERM_MATCH Used"}
				if len(got) != len(want) || reqs[0].Get("ServiceCode") != "AmazonEC2" || reqs[0].Get("MaxResults") != "100" {
					t.Errorf("request %v", reqs[0])
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("filter %s: %q, want %q", k, got[k], v)
					}
				}
			}
			e.mu.Lock()
			for _, auth := range e.scopes {
				if !strings.Contains(auth, "/us-east-1/pricing/aws4_request") {
					t.Errorf("Pricing request signed for %q", auth)
				}
			}
			e.mu.Unlock()
			if tt.wantSource == sourcePricingAPI {
				if n, pages := len(reqs), (len(e.p.onDemand.prices)+99)/100; n != pages {
					t.Errorf("%d GetProducts calls for %d prices", n, len(e.p.onDemand.prices))
				}
			}

			// Logged once, with the reason.
			if tt.wantWarn != "" {
				e.clock.Advance(onDemandRetry)
				e.load(t)
				if n := e.logs.count(slog.LevelWarn, "shipped us-east-1 table"); n != 1 {
					t.Errorf("%d warnings after two failed loads, want 1", n)
				}
				if got := e.logs.text(slog.LevelWarn); !strings.Contains(got, tt.wantWarn) {
					t.Errorf("warning %q, want the reason %q", got, tt.wantWarn)
				}
			} else if n := e.logs.count(slog.LevelWarn, ""); n != 0 {
				t.Errorf("%d warnings", n)
			}
		})
	}
}

// text returns the messages and attributes of the records of the level.
func (h *logRecorder) text(level slog.Level) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var b strings.Builder
	for _, r := range h.recs {
		if r.Level != level {
			continue
		}
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			b.WriteString(" " + a.String())
			return true
		})
		b.WriteString("\n")
	}
	return b.String()
}

func TestPricingEndpointFromEnvironment(t *testing.T) {
	tests := []struct {
		name     string
		pricing  bool
		wantCall bool
	}{
		{name: "EC2 endpoint alone: shipped table, no Pricing API call", pricing: false},
		{name: "Pricing endpoint too", pricing: true, wantCall: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := ec2sim.New(ec2sim.Options{Region: "eu-west-1", ClusterName: cluster})
			srv := httptest.NewServer(sim)
			t.Cleanup(srv.Close)
			env := map[string]string{
				"AWS_ENDPOINT_URL_EC2": srv.URL, "AWS_ENDPOINT_URL_SSM": srv.URL, "AWS_ENDPOINT_URL_PRICING": "", "AWS_ENDPOINT_URL": "",
				"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_EC2_METADATA_DISABLED": "true",
				"AWS_CONFIG_FILE": t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/none", "AWS_PROFILE": "",
			}
			if tt.pricing {
				env["AWS_ENDPOINT_URL_PRICING"] = srv.URL
			}
			for k, v := range env {
				t.Setenv(k, v)
			}
			p, err := New(testCtx(t), Options{ClusterName: cluster, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			if (p.pricing != nil) != tt.wantCall {
				t.Fatalf("pricing client %v", p.pricing != nil)
			}
			if p.pricing != nil {
				if o := p.pricing.Options(); o.Region != "us-east-1" || aws.ToString(o.BaseEndpoint) != srv.URL {
					t.Errorf("pricing client in %s at %s", o.Region, aws.ToString(o.BaseEndpoint))
				}
			}
			if _, err := p.InstanceTypes(testCtx(t)); err != nil {
				t.Fatal(err)
			}
			if got := sim.Calls("GetProducts") > 0; got != tt.wantCall {
				t.Errorf("GetProducts called: %v", got)
			}
			if want := map[bool]string{false: sourceTable, true: sourcePricingAPI}[tt.wantCall]; p.onDemand.source != want {
				t.Errorf("source %q", p.onDemand.source)
			}
		})
	}
}

func TestSpotPriceRefresh(t *testing.T) {
	e := newPriceEnv(t, "us-east-1", Options{CatalogTTL: time.Hour, SpotPriceTTL: 5 * time.Minute}, nil)
	a, b := e.sim.Zones()[0], e.sim.Zones()[1]
	types := e.load(t)
	for _, z := range e.sim.Zones() {
		want, _ := e.sim.SpotPrice("m5.large", z)
		if got, ok := price(types, "m5.large", z, cloud.Spot); !ok || got != want {
			t.Errorf("m5.large spot in %s: %v, want %v", z, got, want)
		}
	}
	oldA, _ := e.sim.SpotPrice("m5.large", a)
	oldB, _ := e.sim.SpotPrice("m5.large", b)
	calls := func() [3]int {
		return [3]int{e.sim.Calls("DescribeSpotPriceHistory"), e.sim.Calls("DescribeInstanceTypes"), e.sim.Calls("GetProducts")}
	}
	before := calls()

	e.clock.Advance(time.Minute)
	e.sim.SetSpotPrice("m5.large", a, 0.0123)
	e.sim.SetSpotPrice("m5.large", b, 0) // withdrawn

	steps := []struct {
		name               string
		advance            time.Duration
		wantA              float64
		wantB              float64 // 0: no spot offering
		spotCalls, typeCal int     // loads since the first one
	}{
		{"within the TTL", 3 * time.Minute, oldA, oldB, 0, 0},
		{"after the TTL", 2 * time.Minute, 0.0123, 0, 1, 0},
		{"within the new TTL", 4 * time.Minute, 0.0123, 0, 1, 0},
		{"catalog and spot TTLs apart", 56 * time.Minute, 0.0123, 0, 2, 1},
	}
	for _, st := range steps {
		e.clock.Advance(st.advance)
		types := e.load(t)
		gotA, _ := price(types, "m5.large", a, cloud.Spot)
		gotB, okB := price(types, "m5.large", b, cloud.Spot)
		if gotA != st.wantA || gotB != st.wantB || okB != (st.wantB != 0) {
			t.Errorf("%s: spot %v in %s, %v %v in %s; want %v, %v", st.name, gotA, a, gotB, okB, b, st.wantA, st.wantB)
		}
		if _, ok := price(types, "m5.large", b, cloud.OnDemand); !ok {
			t.Errorf("%s: on-demand offering in %s lost", st.name, b)
		}
		now := calls()
		// A load takes several pages: before holds the calls of one.
		if now[0]-before[0] != st.spotCalls*before[0] || now[1]-before[1] != st.typeCal*before[1] || now[2] != before[2] {
			t.Errorf("%s: calls since the first load: spot %d, types %d, pricing %d", st.name, now[0]-before[0], now[1]-before[1], now[2]-before[2])
		}
	}
	reqs := e.sim.Requests("DescribeSpotPriceHistory")
	last := reqs[len(reqs)-1]
	if want := e.clock.Now().UTC().Format(time.RFC3339); !strings.HasPrefix(last.Get("StartTime"), strings.TrimSuffix(want, "Z")) || last.Get("ProductDescription.1") != "Linux/UNIX" {
		t.Errorf("StartTime %q (now %s), product %q", last.Get("StartTime"), want, last.Get("ProductDescription.1"))
	}
}

func TestFailedRefreshKeepsPrices(t *testing.T) {
	tests := []struct {
		name, action, code string
		ttl, retry         time.Duration
		set                func(e *priceEnv, price float64)
		ct                 cloud.CapacityType
		warning            string
	}{
		{
			name: "spot", action: "DescribeSpotPriceHistory", code: "InternalError", ttl: 5 * time.Minute, retry: spotRetry, ct: cloud.Spot,
			set:     func(e *priceEnv, p float64) { e.sim.SetSpotPrice("m5.large", e.sim.Zones()[0], p) },
			warning: "refreshing spot prices failed",
		},
		{
			name: "on-demand", action: "GetProducts", code: "ThrottlingException", ttl: 12 * time.Hour, retry: onDemandRetry, ct: cloud.OnDemand,
			set:     func(e *priceEnv, p float64) { e.sim.SetOnDemandPrice("m5.large", p) },
			warning: "refreshing on-demand prices from the Pricing API failed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newPriceEnv(t, "us-east-1", Options{}, nil)
			zone := e.sim.Zones()[0]
			get := func() float64 {
				t.Helper()
				p, ok := price(e.load(t), "m5.large", zone, tt.ct)
				if !ok {
					t.Fatal("no offering")
				}
				return p
			}
			tt.set(e, 0.5)
			if p := get(); p != 0.5 {
				t.Fatalf("first load: %v", p)
			}
			e.clock.Advance(time.Second)
			tt.set(e, 0.7)
			e.sim.InjectFault(ec2sim.Fault{Action: tt.action, Code: tt.code})
			calls := e.sim.Calls(tt.action)

			e.clock.Advance(tt.ttl)
			if p := get(); p != 0.5 {
				t.Errorf("after a failed refresh: %v, want the old 0.5", p)
			}
			if e.sim.Calls(tt.action) == calls {
				t.Error("no refresh tried")
			}
			e.clock.Advance(tt.retry / 2)
			calls = e.sim.Calls(tt.action)
			if p := get(); p != 0.5 || e.sim.Calls(tt.action) != calls {
				t.Errorf("before the retry: %v, %d calls", p, e.sim.Calls(tt.action)-calls)
			}
			e.clock.Advance(tt.retry / 2)
			if p := get(); p != 0.5 || e.sim.Calls(tt.action) == calls {
				t.Errorf("failed retry: %v, %d calls", p, e.sim.Calls(tt.action)-calls)
			}
			if n := e.logs.count(slog.LevelWarn, tt.warning); n != 1 {
				t.Errorf("%d warnings for two failed refreshes, want 1", n)
			}

			e.sim.ClearFaults()
			e.clock.Advance(tt.retry)
			if p := get(); p != 0.7 {
				t.Errorf("after recovery: %v, want 0.7", p)
			}
			if n := e.logs.count(slog.LevelInfo, "again"); n != 1 {
				t.Errorf("%d recovery records", n)
			}
		})
	}
}

// The first spot price load fails: the catalog still serves every on-demand offering (an
// on-demand pool must not wait on spot prices) and no spot offering, until a load succeeds.
func TestFirstSpotLoadFails(t *testing.T) {
	e := newPriceEnv(t, "us-east-1", Options{}, nil)
	e.sim.InjectFault(ec2sim.Fault{Action: "DescribeSpotPriceHistory", Code: "UnauthorizedOperation"})
	types := e.load(t)
	zone := e.sim.Zones()[0]
	if _, ok := price(types, "m5.large", zone, cloud.OnDemand); !ok {
		t.Error("no on-demand offering while spot prices fail")
	}
	for _, it := range types {
		for _, o := range it.Offerings {
			if o.CapacityType == cloud.Spot {
				t.Fatalf("spot offering %s in %s without a spot price", it.Name, o.Zone)
			}
		}
	}
	if n := e.logs.count(slog.LevelWarn, "no spot offerings"); n != 1 {
		t.Errorf("%d warnings about missing spot prices, want 1", n)
	}
	e.sim.ClearFaults()
	e.clock.Advance(spotRetry)
	types = e.load(t)
	if _, ok := price(types, "m5.large", zone, cloud.Spot); !ok {
		t.Error("no spot offering after the failure cleared")
	}
}

func TestParsePriceListItem(t *testing.T) {
	item := func(attrs, terms string) string {
		return `{"product":{"productFamily":"Compute Instance","attributes":{` + attrs + `},"sku":"ABC"},"serviceCode":"AmazonEC2","terms":{` + terms + `}}`
	}
	const linux = `"instanceType":"m5.large","regionCode":"us-east-1","operatingSystem":"Linux","tenancy":"Shared","preInstalledSw":"NA","capacitystatus":"Used"`
	od := func(unit, usd string) string {
		return `"OnDemand":{"ABC.JRTCKXETXF":{"priceDimensions":{"ABC.JRTCKXETXF.6YS6EN2CT7":{"unit":"` + unit + `","pricePerUnit":{"USD":"` + usd + `"}}},"offerTermCode":"JRTCKXETXF"}}`
	}
	reserved := `"Reserved":{"ABC.4NA7Y494T4":{"priceDimensions":{"ABC.4NA7Y494T4.6YS6EN2CT7":{"unit":"Hrs","pricePerUnit":{"USD":"0.0100000000"}}}}}`
	tests := []struct {
		name  string
		raw   string
		typ   string
		price float64
	}{
		{"on-demand", item(linux, od("Hrs", "0.0960000000")), "m5.large", 0.096},
		{"reserved terms ignored", item(linux, reserved+","+od("Hrs", "0.0960000000")), "m5.large", 0.096},
		{"only reserved", item(linux, reserved), "", 0},
		{"zero price", item(linux, od("Hrs", "0.0000000000")), "", 0},
		{"not hourly", item(linux, od("Quantity", "12")), "", 0},
		{"other region", item(strings.Replace(linux, "us-east-1", "us-west-2", 1), od("Hrs", "0.1")), "", 0},
		{"windows", item(strings.Replace(linux, `"Linux"`, `"Windows"`, 1), od("Hrs", "0.1")), "", 0},
		{"dedicated", item(strings.Replace(linux, "Shared", "Dedicated", 1), od("Hrs", "0.1")), "", 0},
		{"unused reservation", item(strings.Replace(linux, `"Used"`, `"UnusedCapacityReservation"`, 1), od("Hrs", "0.1")), "", 0},
		{"attributes missing", item(`"instanceType":"m5.large"`, od("Hrs", "0.1")), "m5.large", 0.1},
		{"no instance type", item(`"regionCode":"us-east-1"`, od("Hrs", "0.1")), "", 0},
		{"not JSON", `{"product":`, "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, p, ok := parsePriceListItem(tt.raw, "us-east-1")
			if ok != (tt.typ != "") || ok && (typ != tt.typ || p != tt.price) {
				t.Errorf("got %q %v %v, want %q %v", typ, p, ok, tt.typ, tt.price)
			}
		})
	}
}
