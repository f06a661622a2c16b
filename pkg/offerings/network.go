package offerings

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// networkTTL is how long subnet and security-group lookups are reused.
const networkTTL = time.Minute

// Network is where a pool's nodes launch: its subnets (the zones it can use) and security groups.
type Network struct {
	Subnets []cloud.Subnet
	Groups  []string
	at      time.Time
}

// Network returns the pool's subnets and security groups, looked up at most once a minute.
func (c *Cache) Network(ctx context.Context, pool *config.Pool) (Network, error) {
	c.mu.Lock()
	nw, ok := c.network[pool.Name]
	c.mu.Unlock()
	if ok && c.Clock.Since(nw.at) < networkTTL {
		return nw, nil
	}
	subnets, err := c.Cloud.Subnets(ctx, cloud.Selector{IDs: pool.SubnetSelector.IDs, Tags: pool.SubnetSelector.Tags})
	if err != nil {
		return nw, fmt.Errorf("pool %s: subnets: %w", pool.Name, err)
	}
	groups, err := c.Cloud.SecurityGroups(ctx, cloud.Selector{IDs: pool.SecurityGroupSelector.IDs, Tags: pool.SecurityGroupSelector.Tags})
	if err != nil {
		return nw, fmt.Errorf("pool %s: security groups: %w", pool.Name, err)
	}
	// Sorted, so a retried launch sends the same request and EC2's idempotency holds.
	sort.Slice(subnets, func(i, j int) bool { return subnets[i].ID < subnets[j].ID })
	sort.Strings(groups)
	nw = Network{Subnets: subnets, Groups: groups, at: c.Clock.Now()}
	c.mu.Lock()
	c.network[pool.Name] = nw
	c.mu.Unlock()
	return nw, nil
}
