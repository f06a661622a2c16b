package offerings

import (
	"context"
	"reflect"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// fixedCloud serves one type in two zones and a subnet in each; Templates asks nothing else.
type fixedCloud struct {
	cloud.Provider
	subnetCalls int
}

func (*fixedCloud) InstanceTypes(context.Context) ([]cloud.InstanceType, error) {
	return []cloud.InstanceType{{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10, Offerings: []cloud.Offering{
		{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096},
		{Zone: "us-east-1b", CapacityType: cloud.OnDemand, PricePerHour: 0.096},
		{Zone: "us-east-1b", CapacityType: cloud.Spot, PricePerHour: 0.04},
	}}}, nil
}

func (f *fixedCloud) Subnets(context.Context, cloud.Selector) ([]cloud.Subnet, error) {
	f.subnetCalls++
	return []cloud.Subnet{{ID: "subnet-b", Zone: "us-east-1b"}, {ID: "subnet-a", Zone: "us-east-1a"}}, nil
}

func (*fixedCloud) SecurityGroups(context.Context, cloud.Selector) ([]string, error) {
	return []string{"sg-2", "sg-1"}, nil
}

func keys(t *testing.T, c *Cache) map[string]bool {
	t.Helper()
	ts, err := c.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, tm := range ts {
		out[tm.Key()] = true
	}
	return out
}

func TestTemplatesLeaveOutUnavailableOfferings(t *testing.T) {
	fc := &fixedCloud{}
	now := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	c := New(Options{Cloud: fc, Clock: now, Args: &config.TailorArgs{Pools: []config.Pool{
		{Name: "a", CapacityTypes: []string{"on-demand", "spot"}},
		{Name: "b", CapacityTypes: []string{"on-demand"}, Zones: []string{"us-east-1a"}},
	}}})
	want := map[string]bool{
		"a/m5.large/us-east-1a/on-demand": true, "a/m5.large/us-east-1b/on-demand": true, "a/m5.large/us-east-1b/spot": true,
		"b/m5.large/us-east-1a/on-demand": true, // only the pool's zone
	}
	if got := keys(t, c); !reflect.DeepEqual(got, want) {
		t.Fatalf("templates %v, want %v", got, want)
	}

	c.MarkUnavailable("m5.large", "us-east-1b", cloud.Spot, "interruption")
	c.MarkFailed(cloud.OnDemand, []cloud.OfferingError{{InstanceType: "m5.large", Zone: "us-east-1a", Code: "InsufficientInstanceCapacity"}})
	got := keys(t, c)
	if len(got) != 1 || !got["a/m5.large/us-east-1b/on-demand"] {
		t.Errorf("templates after marking %v: want only a/m5.large/us-east-1b/on-demand", got)
	}

	nw, err := c.Network(context.Background(), &c.Args.Pools[0])
	if err != nil {
		t.Fatal(err)
	}
	if nw.Subnets[0].ID != "subnet-a" || nw.Groups[0] != "sg-1" {
		t.Errorf("network %+v: want subnets and groups sorted, so a retried launch sends the same request", nw)
	}
	if fc.subnetCalls != 2 {
		t.Errorf("%d subnet lookups for two pools over three listings: want each pool's network reused", fc.subnetCalls)
	}

	// The marks last unavailableFor; the networks networkTTL.
	now.Step(unavailableFor - time.Second)
	if got := keys(t, c); len(got) != 1 {
		t.Errorf("templates just before the marks expire: %v", got)
	}
	now.Step(2 * time.Second)
	if got := keys(t, c); !reflect.DeepEqual(got, want) {
		t.Errorf("templates after the marks expired %v, want %v", got, want)
	}
	before := fc.subnetCalls
	if _, err := c.Network(context.Background(), &c.Args.Pools[0]); err != nil {
		t.Fatal(err)
	}
	now.Step(networkTTL)
	if _, err := c.Network(context.Background(), &c.Args.Pools[0]); err != nil {
		t.Fatal(err)
	}
	if got := fc.subnetCalls - before; got != 1 {
		t.Errorf("%d subnet lookups for a pool's network asked within and after networkTTL, want 1 (after)", got)
	}
}

// An account's spot quota leaves every spot offering out of plans, of every type and zone, for
// unavailableFor; on-demand offerings stay.
func TestCapacityTypeUnavailable(t *testing.T) {
	now := clocktesting.NewFakeClock(time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC))
	c := New(Options{Cloud: &fixedCloud{}, Clock: now, Args: &config.TailorArgs{Pools: []config.Pool{
		{Name: "a", CapacityTypes: []string{"on-demand", "spot"}},
	}}})
	all := map[string]bool{
		"a/m5.large/us-east-1a/on-demand": true,
		"a/m5.large/us-east-1b/on-demand": true,
		"a/m5.large/us-east-1b/spot":      true,
	}
	if got := keys(t, c); !reflect.DeepEqual(got, all) {
		t.Fatalf("templates %v, want %v", got, all)
	}
	c.MarkCapacityTypeUnavailable(cloud.Spot, "MaxSpotInstanceCountExceeded")
	onDemand := map[string]bool{"a/m5.large/us-east-1a/on-demand": true, "a/m5.large/us-east-1b/on-demand": true}
	if got := keys(t, c); !reflect.DeepEqual(got, onDemand) {
		t.Errorf("templates with spot unavailable %v, want %v", got, onDemand)
	}
	now.Step(unavailableFor + time.Second)
	if got := keys(t, c); !reflect.DeepEqual(got, all) {
		t.Errorf("templates after the mark expired %v, want %v", got, all)
	}
}

// pricedCloud is fixedCloud at a spot price the test changes.
type pricedCloud struct {
	fixedCloud
	spot float64
}

func (p *pricedCloud) InstanceTypes(ctx context.Context) ([]cloud.InstanceType, error) {
	its, _ := p.fixedCloud.InstanceTypes(ctx)
	its[0].Offerings[2].PricePerHour = p.spot
	return its, nil
}

// Templates are built once per catalog: later calls get copies of the same build, each its own
// to change, until a price changes.
func TestTemplatesBuiltOncePerCatalog(t *testing.T) {
	pc := &pricedCloud{spot: 0.04}
	c := New(Options{Cloud: pc, Args: &config.TailorArgs{Pools: []config.Pool{{Name: "a", CapacityTypes: []string{"on-demand", "spot"}}}}})
	ctx := context.Background()
	first, err := c.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	first[0].Available = nil
	second, err := c.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != len(first) || second[0] == first[0] {
		t.Fatalf("second call: want %d fresh copies, got %d (first shared: %v)", len(first), len(second), second[0] == first[0])
	}
	if second[0].Node != first[0].Node {
		t.Errorf("the catalog did not change, yet the templates were built again")
	}
	if second[0].Available == nil {
		t.Errorf("a change to one call's template reached the next call's")
	}
	pc.spot = 0.05
	third, err := c.Templates(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if third[0].Node == first[0].Node {
		t.Errorf("the spot price changed, yet the templates were not built again")
	}
	for _, tm := range third {
		if tm.Offering.CapacityType == cloud.Spot && tm.Offering.PricePerHour != 0.05 {
			t.Errorf("template %s priced %v, want the new 0.05", tm.Key(), tm.Offering.PricePerHour)
		}
	}
}
