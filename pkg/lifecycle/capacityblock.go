package lifecycle

import (
	"context"
	"slices"
	"time"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// CapacityBlockPatience is how long a node of an ending Capacity Block handed over in time waits
// for its replacements before it drains: EC2 reclaims the instance 10 minutes after the drain
// lead, and the pods need the rest of that time to leave gracefully.
const CapacityBlockPatience = 5 * time.Minute

// blockEnds reads when the Capacity Blocks of the claims end now (a block may be extended after
// its claims were made); a block the cloud no longer lists as active has ended. ok is false when
// the cloud cannot say, and the claims' own end times stand.
func (c *Controller) blockEnds(ctx context.Context, cls []*v1alpha1.Claim, now time.Time) (ends map[string]time.Time, ok bool) {
	var ids []string
	for _, cl := range cls {
		if r := cl.Spec.CapacityReservation; r != nil && r.CapacityBlock && cl.Status.Phase == v1alpha1.ClaimRegistered && !slices.Contains(ids, r.ID) {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) == 0 {
		return nil, true
	}
	listed, err := c.Cloud.CapacityReservations(ctx, cloud.Selector{IDs: ids})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot read the Capacity Blocks of nodes; their recorded end times stand")
		return nil, false
	}
	ends = map[string]time.Time{}
	for _, id := range ids {
		ends[id] = now // not listed as active: ended, or cancelled
	}
	for _, r := range listed {
		if !r.EndsAt.IsZero() {
			ends[r.ID] = r.EndsAt
		}
	}
	return ends, true
}

// checkCapacityBlock hands a claim's node over for replacement and draining once its Capacity
// Block is within cloud.CapacityBlockDrainLead of its end (ends, if it has the block, else the
// end recorded on the claim): EC2 reclaims the instances then, whatever runs on them. The
// handover is idempotent: a node already handed over is left be.
func (c *Controller) checkCapacityBlock(ctx context.Context, cl *v1alpha1.Claim, ends map[string]time.Time, now time.Time) {
	r := cl.Spec.CapacityReservation
	if c.EndingCapacityBlock == nil || r == nil || !r.CapacityBlock || cl.DeletionTimestamp != nil {
		return
	}
	end, ok := ends[r.ID]
	if !ok {
		if r.EndsAt == nil {
			return
		}
		end = r.EndsAt.Time
	}
	if now.Before(end.Add(-cloud.CapacityBlockDrainLead)) {
		return
	}
	// Handed over later than the drain lead less the drain's patience, the node drains at once.
	late := !now.Before(end.Add(-cloud.CapacityBlockDrainLead + CapacityBlockPatience))
	if err := c.EndingCapacityBlock(ctx, cl.Name, late); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot hand over the node of an ending Capacity Block; next sweep tries again",
			"claim", cl.Name, "reservation", r.ID, "endsAt", end)
	}
}
