// Package offerings says what each pool can launch now, as templates for the planner: the
// cloud's instance types and offerings, less those that recently had no capacity, in the zones
// where the pool has a subnet. It caches the pools' subnets and security groups, which the
// launch uses too, and the offerings that reported no capacity.
package offerings

import (
	"context"
	"reflect"
	"sort"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// Options wires a Cache.
type Options struct {
	Args  *config.TailorArgs
	Cloud cloud.Provider
	// Daemons returns the DaemonSet pods that may run on new nodes, each with its checker.
	Daemons func(ctx context.Context) []*planning.Pod
	// Observed holds the allocatable real nodes reported per instance type.
	Observed *catalog.Observed
	// Clock reads the time for the caches (default: the real one).
	Clock clock.PassiveClock
	// ReservedInFlight counts the claims that will take an instance of the capacity reservation
	// that a read of it at the time did not count yet: pending, or launched since.
	ReservedInFlight func(reservationID string, readAt time.Time) int
}

// Cache lists what every pool can launch and remembers, for a while, each pool's network and
// the offerings that had no capacity. It is safe for concurrent use.
type Cache struct {
	Options

	mu          sync.Mutex
	network     map[string]Network
	unavailable map[offeringKey]time.Time
	// reserved are the capacity reservations last read, by selector.
	reserved map[string]reservationsRead
	// built are the templates last made and what they were made from. The catalog and the
	// pools' zones change rarely, and building the templates anew for every batch and every
	// consolidation pass was most of what the scheduler allocated.
	built built
}

// built are templates and the catalog and zones they were made from.
type built struct {
	types     []cloud.InstanceType
	zones     map[string][]string
	templates []*planning.Template
}

// New builds a Cache.
func New(o Options) *Cache {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Cache{Options: o, network: map[string]Network{}, unavailable: map[offeringKey]time.Time{}, reserved: map[string]reservationsRead{}}
}

// Templates lists what every pool can launch now.
func (c *Cache) Templates(ctx context.Context) ([]*planning.Template, error) {
	its, err := c.Cloud.InstanceTypes(ctx)
	if err != nil {
		return nil, err
	}
	its, selected, err := c.withReserved(ctx, its)
	if err != nil {
		return nil, err
	}
	its = c.available(its)
	zones := map[string][]string{}
	for i := range c.Args.Pools {
		pool := &c.Args.Pools[i]
		nw, err := c.Network(ctx, pool)
		if err != nil {
			return nil, err
		}
		allowed := map[string]bool{}
		for _, z := range pool.Zones {
			allowed[z] = true
		}
		seen := map[string]bool{}
		for _, s := range nw.Subnets {
			if (len(allowed) == 0 || allowed[s.Zone]) && !seen[s.Zone] {
				seen[s.Zone] = true
				zones[pool.Name] = append(zones[pool.Name], s.Zone)
			}
		}
		sort.Strings(zones[pool.Name])
	}
	templates, err := c.templates(its, zones)
	if err != nil {
		return nil, err
	}
	templates = keepSelected(templates, selected)
	if c.Observed != nil {
		planning.UseObserved(templates, c.Observed.Allocatable)
	}
	if c.Daemons != nil {
		planning.AddDaemons(ctx, templates, c.Daemons(ctx))
	}
	return templates, nil
}

// templates returns a copy of each template of the pools for the catalog and zones, built
// again only when either changed since the last call. The copies share the templates' nodes,
// which nothing changes; each caller may set a copy's own fields (allocatable, daemons).
func (c *Cache) templates(its []cloud.InstanceType, zones map[string][]string) ([]*planning.Template, error) {
	c.mu.Lock()
	b := c.built
	c.mu.Unlock()
	if b.templates == nil || !reflect.DeepEqual(b.types, its) || !reflect.DeepEqual(b.zones, zones) {
		templates, err := planning.Templates(c.Args.Pools, its, zones)
		if err != nil {
			return nil, err
		}
		b = built{types: its, zones: zones, templates: templates}
		c.mu.Lock()
		c.built = b
		c.mu.Unlock()
	}
	out := make([]*planning.Template, len(b.templates))
	for i, t := range b.templates {
		cp := *t
		out[i] = &cp
	}
	return out, nil
}
