package offerings

import (
	"context"
	"slices"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// reservedCloud is fixedCloud with capacity reservations, returned by ID.
type reservedCloud struct {
	fixedCloud
	reservations []cloud.CapacityReservation
	calls        int
}

func (r *reservedCloud) CapacityReservations(_ context.Context, sel cloud.Selector) ([]cloud.CapacityReservation, error) {
	r.calls++
	var out []cloud.CapacityReservation
	for _, cr := range r.reservations {
		if slices.Contains(sel.IDs, cr.ID) {
			out = append(out, cr)
		}
	}
	return out, nil
}

// A pool's reservations become reserved templates of that pool alone, priced next to nothing, as
// long as they have instances free that claims in flight do not take; the reservations are read
// again only after reservationsTTL.
func TestReservedTemplates(t *testing.T) {
	rc := &reservedCloud{reservations: []cloud.CapacityReservation{
		{ID: "cr-a", InstanceType: "m5.large", Zone: "us-east-1a", Available: 2},
		{ID: "cr-b", InstanceType: "m5.large", Zone: "us-east-1b", Available: 1},
	}}
	now := clocktesting.NewFakeClock(time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC))
	inFlight := map[string]int{}
	c := New(Options{Cloud: rc, Clock: now, ReservedInFlight: func(id string, _ time.Time) int { return inFlight[id] }, Args: &config.TailorArgs{Pools: []config.Pool{
		{Name: "ml", CapacityTypes: []string{"reserved", "on-demand"}, CapacityReservationSelector: config.Selector{IDs: []string{"cr-a"}}},
		{Name: "web", CapacityTypes: []string{"reserved"}, CapacityReservationSelector: config.Selector{IDs: []string{"cr-b"}}},
		{Name: "plain", CapacityTypes: []string{"on-demand"}},
	}}})
	ts, err := c.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	reserved := map[string]string{}
	for _, tm := range ts {
		if r := tm.Offering.Reservation; r != nil {
			reserved[tm.Pool.Name+"/"+tm.Offering.Zone] = r.ID
			if tm.Offering.PricePerHour >= 0.001 {
				t.Errorf("reserved template %s costs %v", tm.Key(), tm.Offering.PricePerHour)
			}
		}
	}
	if len(reserved) != 2 || reserved["ml/us-east-1a"] != "cr-a" || reserved["web/us-east-1b"] != "cr-b" {
		t.Errorf("reserved templates %v, want cr-a for ml in us-east-1a and cr-b for web in us-east-1b", reserved)
	}
	// A claim in flight takes cr-b's last instance: web has no reserved template until the
	// reservations are read again and show it free.
	inFlight["cr-b"] = 1
	now.Step(reservationsTTL)
	if k := keys(t, c); k["web/m5.large/us-east-1b/reserved"] || !k["ml/m5.large/us-east-1a/reserved"] {
		t.Errorf("templates %v: cr-b is taken, cr-a is not", k)
	}
	// A Capacity Block about to be drained is launched into no more.
	rc.reservations = append(rc.reservations, cloud.CapacityReservation{ID: "cr-c", InstanceType: "m5.large", Zone: "us-east-1b", Available: 4,
		CapacityBlock: true, EndsAt: now.Now().Add(reservationsTTL + cloud.CapacityBlockDrainLead + blockMinUse - time.Second)})
	c.Args.Pools[1].CapacityReservationSelector.IDs = []string{"cr-b", "cr-c"}
	now.Step(reservationsTTL)
	if k := keys(t, c); k["web/m5.large/us-east-1b/reserved"] {
		t.Errorf("templates %v: cr-c ends too soon to launch into", k)
	}
	calls := rc.calls
	keys(t, c)
	if rc.calls != calls {
		t.Errorf("reservations read again within %v", reservationsTTL)
	}
}
