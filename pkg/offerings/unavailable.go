package offerings

import (
	"time"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/metrics"
)

// unavailableFor is how long an offering that reported no capacity is left out of plans.
const unavailableFor = 3 * time.Minute

type offeringKey struct {
	instanceType, zone string
	capacityType       cloud.CapacityType
}

// everyOffering is the key of a whole capacity type: every type, every zone.
func everyOffering(ct cloud.CapacityType) offeringKey { return offeringKey{capacityType: ct} }

// available drops the offerings that recently reported no capacity.
func (c *Cache) available(its []cloud.InstanceType) []cloud.InstanceType {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.Clock.Now()
	for k, until := range c.unavailable {
		if now.After(until) {
			delete(c.unavailable, k)
		}
	}
	if len(c.unavailable) == 0 {
		return its
	}
	out := make([]cloud.InstanceType, len(its))
	for i, it := range its {
		out[i] = it
		out[i].Offerings = nil
		for _, o := range it.Offerings {
			_, gone := c.unavailable[offeringKey{it.Name, o.Zone, o.CapacityType}]
			if _, all := c.unavailable[everyOffering(o.CapacityType)]; !gone && !all {
				out[i].Offerings = append(out[i].Offerings, o)
			}
		}
	}
	return out
}

// MarkUnavailable leaves an offering out of plans for a while, as if a launch had found no
// capacity there: an interruption warning says EC2 is reclaiming that capacity. code says why
// (the metric's code label).
func (c *Cache) MarkUnavailable(instanceType, zone string, ct cloud.CapacityType, code string) {
	c.MarkFailed(ct, []cloud.OfferingError{{InstanceType: instanceType, Zone: zone, Code: code}})
}

// MarkFailed leaves out of plans for a while the offerings of capacity type ct that a launch
// found without capacity, so their pods can be planned again at once on the next offering.
func (c *Cache) MarkFailed(ct cloud.CapacityType, errs []cloud.OfferingError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range errs {
		c.unavailable[offeringKey{e.InstanceType, e.Zone, ct}] = c.Clock.Now().Add(unavailableFor)
		metrics.OfferingsMarkedUnavailable.WithLabelValues(e.InstanceType, e.Zone, string(ct), e.Code).Inc()
	}
}

// MarkCapacityTypeUnavailable leaves every offering of capacity type ct out of plans for a while:
// an account quota of the capacity type (EC2's spot instance quota) refused a launch, so no
// type or zone of it launches until the quota frees up, and the pods are better planned onto
// another capacity type their pools allow. code says why (the metric's code label).
func (c *Cache) MarkCapacityTypeUnavailable(ct cloud.CapacityType, code string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unavailable[everyOffering(ct)] = c.Clock.Now().Add(unavailableFor)
	metrics.OfferingsMarkedUnavailable.WithLabelValues("*", "*", string(ct), code).Inc()
}
