package fake

import (
	"context"
	"errors"
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/cloudtest"
)

func newFake() *Provider {
	types := []cloud.InstanceType{{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192,
		Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096}}}}
	return New(types, []cloud.Subnet{{ID: "subnet-a", Zone: "us-east-1a", AvailableIPs: 100}}, []string{"sg-1"})
}

func request() cloud.LaunchRequest {
	return cloud.LaunchRequest{CapacityType: cloud.OnDemand, Overrides: []cloud.Override{{InstanceType: "m5.large", SubnetID: "subnet-a"}},
		Image: "al2023", SecurityGroupIDs: []string{"sg-1"}, Tags: map[string]string{"tailor.dev/claim": "contract"}}
}

func TestContract(t *testing.T) {
	cloudtest.Contract(t, func(t *testing.T) cloudtest.Env { return cloudtest.Env{Provider: newFake(), Request: request()} })
}

// The fake's own knobs: failures for a number of calls, capacity that runs out per offering.
func TestFailuresAndCapacity(t *testing.T) {
	ctx := context.Background()
	p := newFake()
	boom := errors.New("boom")
	p.Fail("Launch", boom, 2)
	for i := 0; i < 2; i++ {
		if _, err := p.Launch(ctx, request()); !errors.Is(err, boom) {
			t.Fatalf("launch %d: %v, want the failure", i, err)
		}
	}
	p.SetCapacity("m5.large", "us-east-1a", cloud.OnDemand, 1)
	req := request()
	req.ClientToken = "a"
	if res, err := p.Launch(ctx, req); err != nil || res.Instance == nil {
		t.Fatalf("launch with capacity: %+v, %v", res, err)
	}
	req.ClientToken = "b"
	res, err := p.Launch(ctx, req)
	if err != nil || res.Instance != nil || len(res.Errors) != 1 || res.Errors[0].Code != "InsufficientInstanceCapacity" {
		t.Fatalf("launch without capacity: %+v, %v", res, err)
	}
	if p.Launches() != 1 {
		t.Errorf("%d launches, want 1", p.Launches())
	}
}
