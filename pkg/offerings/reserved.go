package offerings

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// reservationsTTL is how long the reservations read for a selector are used: their free
// instances change with every launch into them, which claims in flight account for meanwhile.
const reservationsTTL = 5 * time.Second

// reservedPriceFactor prices reserved offerings: the reservation is paid for whether used or
// not, so an instance in it costs next to nothing more. A sliver of the on-demand price keeps
// the planner's preference among reserved types by size.
const reservedPriceFactor = 1e-6

// reservationsRead are the reservations of a selector as read at a time.
type reservationsRead struct {
	at   time.Time
	list []cloud.CapacityReservation
}

// withReserved adds to the catalog's types an offering for each reservation of the pools that
// has instances free (less those claims in flight will take), and returns the reservations each
// pool selected, by pool name.
func (c *Cache) withReserved(ctx context.Context, its []cloud.InstanceType) ([]cloud.InstanceType, map[string]map[string]bool, error) {
	selected := map[string]map[string]bool{}
	byType := map[string][]cloud.CapacityReservation{}
	seen := map[string]bool{}
	for i := range c.Args.Pools {
		pool := &c.Args.Pools[i]
		if !slices.Contains(pool.CapacityTypes, string(cloud.Reserved)) {
			continue
		}
		read, err := c.reservations(ctx, pool.CapacityReservationSelector)
		if err != nil {
			return nil, nil, fmt.Errorf("pool %s: %w", pool.Name, err)
		}
		selected[pool.Name] = map[string]bool{}
		for _, r := range read.list {
			selected[pool.Name][r.ID] = true
			if seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			if c.ReservedInFlight != nil {
				r.Available -= int64(c.ReservedInFlight(r.ID, read.at))
			}
			if r.Available > 0 && !endingBlock(r, read.at) {
				byType[r.InstanceType] = append(byType[r.InstanceType], r)
			}
		}
	}
	if len(byType) == 0 {
		return its, selected, nil
	}
	out := slices.Clone(its)
	for i := range out {
		rs := byType[out[i].Name]
		if len(rs) == 0 {
			continue
		}
		out[i].Offerings = slices.Clone(out[i].Offerings)
		for _, r := range rs {
			out[i].Offerings = append(out[i].Offerings, cloud.Offering{
				Zone: r.Zone, CapacityType: cloud.Reserved, PricePerHour: reservedPrice(&out[i], r.Zone), Reservation: &r,
			})
		}
	}
	return out, selected, nil
}

// blockMinUse is the least time a Capacity Block must have left before its nodes are drained for
// a launch into it to be worth it: the node must boot and its pods start.
const blockMinUse = 10 * time.Minute

// endingBlock says whether a Capacity Block ends too soon to launch into.
func endingBlock(r cloud.CapacityReservation, now time.Time) bool {
	return r.CapacityBlock && !r.EndsAt.IsZero() && !now.Before(r.EndsAt.Add(-cloud.CapacityBlockDrainLead-blockMinUse))
}

// reservedPrice is a reserved offering's price: a sliver of the type's on-demand price there.
func reservedPrice(it *cloud.InstanceType, zone string) float64 {
	for _, o := range it.Offerings {
		if o.Zone == zone && o.CapacityType == cloud.OnDemand {
			return o.PricePerHour * reservedPriceFactor
		}
	}
	return reservedPriceFactor
}

// reservations reads the reservations a selector picks, at most every reservationsTTL.
func (c *Cache) reservations(ctx context.Context, sel config.Selector) (reservationsRead, error) {
	b, _ := json.Marshal(sel)
	key := string(b)
	now := c.Clock.Now()
	c.mu.Lock()
	read, ok := c.reserved[key]
	c.mu.Unlock()
	if ok && now.Sub(read.at) < reservationsTTL {
		return read, nil
	}
	list, err := c.Cloud.CapacityReservations(ctx, cloud.Selector{IDs: sel.IDs, Tags: sel.Tags})
	if err != nil {
		return reservationsRead{}, err
	}
	read = reservationsRead{at: now, list: list}
	c.mu.Lock()
	c.reserved[key] = read
	c.mu.Unlock()
	return read, nil
}

// keepSelected drops the reserved templates of reservations their pool did not select.
func keepSelected(templates []*planning.Template, selected map[string]map[string]bool) []*planning.Template {
	out := templates[:0]
	for _, t := range templates {
		if r := t.Offering.Reservation; r == nil || selected[t.Pool.Name][r.ID] {
			out = append(out, t)
		}
	}
	return out
}
