package ec2

import (
	"testing"
	"time"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// Reservations are read by tags or IDs; a launch into one targets it (capacity-reservations-only)
// and the instance comes back as reserved; a full one is a capacity error of its offering; a
// Capacity Block launches on the capacity-block market.
func TestLaunchIntoCapacityReservations(t *testing.T) {
	e := newEnv(t)
	zone := e.sim.Zones()[0]
	a := e.subnet(t, zone)
	odcr, err := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1,
		Tags: map[string]string{"team": "ml"}, InstanceMatchCriteria: "targeted"})
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(24 * time.Hour).Truncate(time.Second)
	block, err := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "p5.48xlarge", AvailabilityZone: zone, TotalInstanceCount: 1,
		Type: ec2sim.ReservationTypeCapacityBlock, StartDate: time.Now().Add(-time.Hour), EndDate: end})
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.p.CapacityReservations(testCtx(t), cloud.Selector{Tags: map[string]string{"team": "ml"}})
	if err != nil || len(got) != 1 || got[0] != (cloud.CapacityReservation{ID: odcr, InstanceType: "m5.large", Zone: zone, Available: 1}) {
		t.Fatalf("reservations by tag: %+v %v", got, err)
	}
	got, err = e.p.CapacityReservations(testCtx(t), cloud.Selector{IDs: []string{block}})
	if err != nil || len(got) != 1 || !got[0].CapacityBlock || !got[0].EndsAt.Equal(end) {
		t.Fatalf("capacity block by ID: %+v %v", got, err)
	}

	launch := func(token, typ string, r cloud.CapacityReservation) (*cloud.LaunchResult, error) {
		req := e.request(t, token, cloud.Reserved, cloud.Override{InstanceType: typ, SubnetID: a})
		req.Reservation = &r
		return e.p.Launch(testCtx(t), req)
	}
	res, err := launch("c-odcr", "m5.large", cloud.CapacityReservation{ID: odcr, InstanceType: "m5.large", Zone: zone})
	if err != nil || res.Instance == nil || res.Instance.CapacityType != cloud.Reserved || res.Instance.CapacityReservationID != odcr {
		t.Fatalf("launch into the reservation: %+v %v", res, err)
	}
	lts := e.sim.LaunchTemplates()
	data := lts[len(lts)-1].Data
	if data.Get("CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId") != odcr ||
		data.Get("CapacityReservationSpecification.CapacityReservationPreference") != "capacity-reservations-only" {
		t.Errorf("template does not target the reservation: %v", data)
	}
	// The reservation is full now: its offering had no capacity, which callers mark.
	res, err = launch("c-odcr-2", "m5.large", cloud.CapacityReservation{ID: odcr, InstanceType: "m5.large", Zone: zone})
	if err != nil || res.Instance != nil || len(res.Errors) != 1 || res.Errors[0].Code != "ReservationCapacityExceeded" {
		t.Fatalf("launch into the full reservation: %+v %v", res, err)
	}
	res, err = launch("c-block", "p5.48xlarge", cloud.CapacityReservation{ID: block, InstanceType: "p5.48xlarge", Zone: zone, CapacityBlock: true, EndsAt: end})
	if err != nil || res.Instance == nil || res.Instance.CapacityType != cloud.Reserved || res.Instance.CapacityReservationID != block {
		t.Fatalf("launch into the capacity block: %+v %v", res, err)
	}
	lts = e.sim.LaunchTemplates()
	if mt := lts[len(lts)-1].Data.Get("InstanceMarketOptions.MarketType"); mt != "capacity-block" {
		t.Errorf("capacity block template market type %q", mt)
	}
	// An on-demand launch is not reserved, even where an open reservation takes it.
	if _, err := e.sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.xlarge", AvailabilityZone: zone, TotalInstanceCount: 1}); err != nil {
		t.Fatal(err)
	}
	res, err = e.p.Launch(testCtx(t), e.request(t, "c-open", cloud.OnDemand, cloud.Override{InstanceType: "m5.xlarge", SubnetID: a}))
	if err != nil || res.Instance == nil || res.Instance.CapacityType != cloud.OnDemand {
		t.Fatalf("on-demand launch: %+v %v", res, err)
	}
}
