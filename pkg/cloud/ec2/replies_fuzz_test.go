package ec2

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// corrupting serves the simulator's answers, except that one API action gets the given status
// and body instead: a reply no real EC2 would send, which the provider must survive.
type corrupting struct {
	next   http.Handler
	action string
	status int
	body   []byte
	// served counts the replies it replaced.
	served atomic.Int64
}

func (c *corrupting) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	action := r.Header.Get("X-Amz-Target") // JSON protocols (SSM): Service.Action
	if i := strings.LastIndex(action, "."); i >= 0 {
		action = action[i+1:]
	}
	if action == "" { // EC2's query protocol: Action in the form body
		if v, err := url.ParseQuery(string(b)); err == nil {
			action = v.Get("Action")
		}
	}
	if action != c.action {
		c.next.ServeHTTP(w, r)
		return
	}
	c.served.Add(1)
	if r.Header.Get("X-Amz-Target") != "" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	} else {
		w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	}
	w.WriteHeader(c.status)
	_, _ = w.Write(c.body)
}

// repliedActions are the calls of the provider a fuzzed reply may replace.
var repliedActions = []string{
	"DescribeInstanceTypes", "DescribeInstanceTypeOfferings", "DescribeSpotPriceHistory", "DescribeSubnets",
	"DescribeSecurityGroups", "DescribeLaunchTemplates", "CreateLaunchTemplate", "GetParameter", "CreateFleet",
	"DescribeInstances", "TerminateInstances", "DeleteLaunchTemplate",
}

// FuzzProviderReplies replaces one EC2 or SSM reply with arbitrary bytes (an empty element, a
// missing field, a NaN price, a truncated document, an error body) and runs the provider's
// calls through the real SDK: every call answers or errs, never panics, and what the catalog
// serves has finite, non-negative prices.
func FuzzProviderReplies(f *testing.F) {
	seeds := []struct {
		action string
		status int
		body   string
	}{
		{"CreateFleet", 200, `<CreateFleetResponse><fleetId>fleet-1</fleetId><fleetInstanceSet><item></item></fleetInstanceSet></CreateFleetResponse>`},
		{"CreateFleet", 200, `<CreateFleetResponse><fleetInstanceSet><item><instanceIds><item></item></instanceIds></item></fleetInstanceSet><errorSet><item></item></errorSet></CreateFleetResponse>`},
		{"DescribeInstanceTypes", 200, `<DescribeInstanceTypesResponse><instanceTypeSet><item><instanceType>m5.large</instanceType></item></instanceTypeSet></DescribeInstanceTypesResponse>`},
		{"DescribeSpotPriceHistory", 200, `<DescribeSpotPriceHistoryResponse><spotPriceHistorySet><item><instanceType>m5.large</instanceType><spotPrice>NaN</spotPrice><availabilityZone>us-east-1a</availabilityZone></item><item><spotPrice>-1</spotPrice></item></spotPriceHistorySet></DescribeSpotPriceHistoryResponse>`},
		{"CreateLaunchTemplate", 200, `<CreateLaunchTemplateResponse><launchTemplate></launchTemplate></CreateLaunchTemplateResponse>`},
		{"GetParameter", 200, `{"Parameter":null}`},
		{"GetParameter", 200, `{"Parameter":{"Name":"x"}}`},
		{"DescribeInstances", 200, `<DescribeInstancesResponse><reservationSet><item><instancesSet><item><tagSet><item></item></tagSet></item></instancesSet></item></reservationSet></DescribeInstancesResponse>`},
		{"DescribeSubnets", 200, `<DescribeSubnetsResponse><subnetSet><item></item></subnetSet></DescribeSubnetsResponse>`},
		{"CreateFleet", 500, `<Response><Errors><Error><Code>InternalError</Code></Error></Errors></Response>`},
		{"CreateFleet", 400, `<Response><Errors><Error><Code>IdempotentParameterMismatch</Code></Error></Errors></Response>`},
		{"DescribeLaunchTemplates", 200, `<DescribeLaunchTemplatesResponse><launchTemplates><item><launchTemplateName>x</launchTemplateName></item></launchTemplates>`},
		{"TerminateInstances", 200, ``},
	}
	for _, s := range seeds {
		for i, a := range repliedActions {
			if a == s.action {
				f.Add(uint8(i), uint16(s.status), []byte(s.body))
			}
		}
	}
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	h := &corrupting{next: sim}
	srv := httptest.NewServer(h)
	f.Cleanup(srv.Close)
	var zoneA string
	var subnet string
	for _, sn := range sim.Subnets() {
		zoneA, subnet = sn.Zone, sn.ID
		break
	}
	var claims atomic.Int64
	f.Fuzz(func(t *testing.T, which uint8, status uint16, body []byte) {
		h.action = repliedActions[int(which)%len(repliedActions)]
		h.status = []int{200, 400, 500, 503}[int(status)%4]
		h.body = body
		p, err := NewFromConfig(testConfig(srv.URL), Options{ClusterName: cluster, KubernetesVersion: "1.34", ClusterEndpoint: "https://example.eks.amazonaws.com", ClusterCIDR: "10.100.0.0/16"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if types, err := p.InstanceTypes(ctx); err == nil {
			for _, it := range types {
				for _, o := range it.Offerings {
					if math.IsNaN(o.PricePerHour) || math.IsInf(o.PricePerHour, 0) || o.PricePerHour < 0 {
						t.Fatalf("%s in %s: price %v", it.Name, o.Zone, o.PricePerHour)
					}
				}
			}
		}
		_, _ = p.Subnets(ctx, cloud.Selector{Tags: map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}})
		_, _ = p.SecurityGroups(ctx, cloud.Selector{IDs: []string{sim.ClusterSecurityGroupID()}})
		token := fmt.Sprintf("fuzz-%d", claims.Add(1))
		res, err := p.Launch(ctx, cloud.LaunchRequest{
			ClientToken: token, CapacityType: cloud.OnDemand,
			Overrides:       []cloud.Override{{InstanceType: "m5.large", SubnetID: subnet}},
			Image:           "al2023",
			InstanceProfile: "demo-node", SecurityGroupIDs: []string{sim.ClusterSecurityGroupID()},
			NodeLabels: map[string]string{"tailor.dev/pool": "general"},
			Tags:       map[string]string{"kubernetes.io/cluster/" + cluster: "owned", "tailor.dev/claim": token},
		})
		if err == nil && res == nil {
			t.Fatal("Launch answered neither a result nor an error")
		}
		if err == nil && res.Instance != nil && res.Instance.ID == "" {
			t.Fatalf("Launch answered an instance without an ID: %+v (zone %s)", res.Instance, zoneA)
		}
		insts, _ := p.Instances(ctx, map[string]string{"tailor.dev/claim": token})
		var ids []string
		for _, in := range insts {
			ids = append(ids, in.ID)
		}
		if len(ids) > 0 {
			_ = p.Terminate(ctx, ids...)
		}
		if lts, err := p.LaunchTemplates(ctx, map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}); err == nil {
			for _, lt := range lts {
				_ = p.DeleteLaunchTemplate(ctx, lt.ID)
			}
		}
	})
}

// A page that hands back the very token it was asked with ends the pagination: the SDK's
// paginators would otherwise ask for that page again until the context ends (FuzzProviderReplies
// found it).
func TestPaginationStopsOnRepeatedToken(t *testing.T) {
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster})
	for _, tt := range []struct {
		action, set string
		call        func(context.Context, *Provider) error
	}{
		{"DescribeInstanceTypes", "instanceTypeSet", func(ctx context.Context, p *Provider) error { _, err := p.InstanceTypes(ctx); return err }},
		{"DescribeInstanceTypeOfferings", "instanceTypeOfferingSet", func(ctx context.Context, p *Provider) error { _, err := p.InstanceTypes(ctx); return err }},
		{"DescribeSpotPriceHistory", "spotPriceHistorySet", func(ctx context.Context, p *Provider) error { _, err := p.InstanceTypes(ctx); return err }},
		{"DescribeSubnets", "subnetSet", func(ctx context.Context, p *Provider) error {
			_, err := p.Subnets(ctx, cloud.Selector{Tags: map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}})
			return err
		}},
		{"DescribeSecurityGroups", "securityGroupInfo", func(ctx context.Context, p *Provider) error {
			_, err := p.SecurityGroups(ctx, cloud.Selector{Tags: map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}})
			return err
		}},
		{"DescribeInstances", "reservationSet", func(ctx context.Context, p *Provider) error {
			_, err := p.Instances(ctx, map[string]string{"tailor.dev/claim": "x"})
			return err
		}},
		{"DescribeLaunchTemplates", "launchTemplates", func(ctx context.Context, p *Provider) error {
			_, err := p.LaunchTemplates(ctx, map[string]string{"tailor.dev/pool": "*"})
			return err
		}},
	} {
		t.Run(tt.action, func(t *testing.T) {
			body := fmt.Sprintf("<%sResponse><%s></%s><nextToken>again</nextToken></%sResponse>", tt.action, tt.set, tt.set, tt.action)
			h := &corrupting{next: sim, action: tt.action, status: 200, body: []byte(body)}
			srv := httptest.NewServer(h)
			t.Cleanup(srv.Close)
			p, err := NewFromConfig(testConfig(srv.URL), Options{ClusterName: cluster, KubernetesVersion: "1.34"})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err = tt.call(ctx, p)
			if ctx.Err() != nil {
				t.Fatalf("the call ran until its context ended (%v): the repeated token was followed", err)
			}
			if n := h.served.Load(); n > 2 {
				t.Errorf("%d %s calls for a first page and one that repeats its token, want at most 2", n, tt.action)
			}
		})
	}
}
