// Package interruption acts on the warnings EC2 gives before it takes an instance away, as
// Karpenter's interruption controller does: EventBridge rules put EC2 spot interruption
// warnings, rebalance recommendations, instance state changes and AWS Health scheduled changes
// on an SQS queue, and the elected leader long-polls it.
//
// For a warning (spot interruption, scheduled change) about an instance Tailor launched, the spot
// offering it ran on is left out of plans for a while, and the node is handed to the
// consolidation loop, which launches replacement capacity for its pods first, then taints and
// drains it through the Eviction API (PodDisruptionBudgets respected) and terminates it. For an
// instance already stopping or terminating, its node and claim go at once. A rebalance
// recommendation is advice, not a warning (it comes early, in bursts, often for instances never
// interrupted): by default an event on the node is all, as Karpenter does; with
// rebalanceRecommendations: Replace the offering is left out and the node renewed like a drifted
// one, within its pool's budgets. Every message is
// deleted once handled; one that is malformed, of another kind, of another region or about an
// instance Tailor does not own is logged and deleted, never acted on. A message whose handling
// failed (the API server did not answer) stays on the queue and comes back after the queue's
// visibility timeout. Handling is idempotent: the node's interruption annotation is the state,
// so a second copy of a message (SQS delivers at least once) does nothing new.
package interruption

import (
	"context"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/sqs"
	"github.com/tailor-eks/tailor/pkg/consolidation"
)

// Queue is the interruption queue (pkg/cloud/sqs implements it).
type Queue interface {
	Receive(ctx context.Context) ([]sqs.Message, error)
	Delete(ctx context.Context, m sqs.Message) error
}

// Claims finds the claim of an instance (pkg/claims implements it).
type Claims interface {
	ByInstanceID(id string) (*v1alpha1.Claim, bool)
}

// Disrupter takes interrupted nodes away (pkg/consolidation implements it).
type Disrupter interface {
	// Interrupt hands the claim's node over, calling first before anything new happens; it
	// says whether anything did.
	Interrupt(ctx context.Context, claim, kind string, first func()) (bool, error)
	// RecommendRebalance tells the claim's node EC2 recommends rebalancing it: an event, or
	// with replace a renewal within the pool's budgets, calling first before anything new
	// happens; it says whether anything did.
	RecommendRebalance(ctx context.Context, claim string, replace bool, first func()) (bool, error)
}

// Offerings leaves offerings out of plans (pkg/offerings' Cache implements it).
type Offerings interface {
	MarkUnavailable(instanceType, zone string, capacityType cloud.CapacityType, code string)
}

// receiveBackoff is how long the loop waits after a failed receive (the queue or the
// credentials may be missing), so an error is not a hot loop.
const receiveBackoff = 10 * time.Second

// handleTimeout bounds the handling of one message.
const handleTimeout = 30 * time.Second

// Controller reads the interruption queue. Run it only while holding the controllers' lease.
type Controller struct {
	Queue     Queue
	Claims    Claims
	Disrupter Disrupter
	Offerings Offerings
	// Region is the cluster's: an event of another region is not about its instances.
	Region string
	// RebalanceReplace renews the nodes EC2 recommends rebalancing; false, an event is all
	// (TailorArgs.RebalanceRecommendations).
	RebalanceReplace bool
	// ReceiveBackoff is the wait after a failed receive; default 10s.
	ReceiveBackoff time.Duration
	// Clock times that wait; default the real one.
	Clock clock.Clock
}

func (c *Controller) clock() clock.Clock {
	if c.Clock == nil {
		return clock.RealClock{}
	}
	return c.Clock
}

// Run receives and handles messages until ctx ends.
func (c *Controller) Run(ctx context.Context) error {
	RegisterMetrics()
	logger := klog.FromContext(ctx).WithName("interruption")
	ctx = klog.NewContext(ctx, logger)
	logger.Info("Interruption handling running")
	for ctx.Err() == nil {
		msgs, err := c.Queue.Receive(ctx)
		if err != nil {
			if ctx.Err() != nil {
				break
			}
			errorsTotal.WithLabelValues("receive").Inc()
			backoff := c.ReceiveBackoff
			if backoff <= 0 {
				backoff = receiveBackoff
			}
			logger.Error(err, "Cannot receive from the interruption queue; will retry", "after", backoff)
			select {
			case <-ctx.Done():
			case <-c.clock().After(backoff):
			}
			continue
		}
		for _, m := range msgs {
			c.Handle(ctx, m)
		}
	}
	return nil
}

// Handle acts on one message and deletes it, unless acting failed and a later receive should
// try again.
func (c *Controller) Handle(ctx context.Context, m sqs.Message) {
	ctx, cancel := context.WithTimeout(ctx, handleTimeout)
	defer cancel()
	logger := klog.FromContext(ctx).WithValues("message", m.ID)
	ev, err := Parse(m.Body)
	if err != nil {
		received.WithLabelValues(string(Malformed)).Inc()
		logger.Info("Deleting a malformed interruption message", "err", err, "body", truncate(m.Body, 256))
		c.delete(ctx, m)
		return
	}
	received.WithLabelValues(string(ev.Kind)).Inc()
	logger = logger.WithValues("event", ev.ID, "kind", ev.Kind)
	ctx = klog.NewContext(ctx, logger)
	switch {
	case ev.Kind == Unknown:
		actions.WithLabelValues(actionNone).Inc()
		logger.Info("Deleting an event Tailor does not act on")
		c.delete(ctx, m)
		return
	case ev.Region != "" && c.Region != "" && ev.Region != c.Region:
		actions.WithLabelValues(actionForeign).Inc()
		logger.Info("Deleting an event of another region", "region", ev.Region, "clusterRegion", c.Region)
		c.delete(ctx, m)
		return
	}
	handled := true
	for _, id := range ev.InstanceIDs {
		if err := c.act(ctx, ev, id); err != nil {
			errorsTotal.WithLabelValues("handle").Inc()
			logger.Error(err, "Cannot act on the event; it will be received again", "instance", id)
			handled = false
		}
	}
	if handled {
		c.delete(ctx, m)
	}
}

// act handles the event for one instance.
func (c *Controller) act(ctx context.Context, ev Event, id string) error {
	logger := klog.FromContext(ctx).WithValues("instance", id)
	var kind string
	switch ev.Kind {
	case SpotInterruption:
		kind = consolidation.InterruptionSpot
	case ScheduledChange:
		kind = consolidation.InterruptionScheduled
	case StateChange:
		if !going(ev.State) {
			actions.WithLabelValues(actionNone).Inc()
			logger.V(2).Info("Instance state needs nothing", "state", ev.State)
			return nil
		}
		kind = consolidation.InterruptionStoppedPrefix + ev.State
	}
	cl, ok := c.Claims.ByInstanceID(id)
	if !ok || cl.Status.InstanceID != id {
		// Another cluster's instance, one Tailor never launched, or one already cleaned up.
		actions.WithLabelValues(actionNotOwned).Inc()
		logger.Info("Deleting an event about an instance Tailor does not own")
		return nil
	}
	logger = logger.WithValues("claim", cl.Name, "node", cl.Status.NodeName)
	ctx = klog.NewContext(ctx, logger)
	first := func() {
		// EC2 is reclaiming this spot capacity: replacements, and launches for a while, go
		// elsewhere. (A stopping instance says nothing about its offering.)
		if ev.Kind != StateChange {
			c.markSpotOffering(ctx, cl, ev.Kind)
		}
	}
	if ev.Kind == RebalanceRecommendation {
		return c.recommendRebalance(ctx, cl, first)
	}
	acted, err := c.Disrupter.Interrupt(ctx, cl.Name, kind, first)
	switch {
	case err != nil:
		return err
	case !acted:
		actions.WithLabelValues(actionDuplicate).Inc()
		logger.V(2).Info("Node already handled for an interruption; nothing new")
	case ev.Kind == StateChange:
		actions.WithLabelValues(actionRemove).Inc()
		logger.Info("Instance is going; removing its node and claim", "state", ev.State)
	default:
		actions.WithLabelValues(actionInterrupt).Inc()
		logger.Info("Replacing and draining an interrupted node")
	}
	return nil
}

// recommendRebalance passes a rebalance recommendation on: advisory unless RebalanceReplace.
func (c *Controller) recommendRebalance(ctx context.Context, cl *v1alpha1.Claim, first func()) error {
	logger := klog.FromContext(ctx)
	acted, err := c.Disrupter.RecommendRebalance(ctx, cl.Name, c.RebalanceReplace, first)
	switch {
	case err != nil:
		return err
	case !acted:
		actions.WithLabelValues(actionDuplicate).Inc()
		logger.V(2).Info("Rebalance recommendation needs nothing new (node not registered, already going or marked)")
	case c.RebalanceReplace:
		actions.WithLabelValues(actionRenew).Inc()
		logger.Info("Rebalance recommended; renewing the node within its pool's budgets")
	default:
		actions.WithLabelValues(actionAdvise).Inc()
		logger.Info("Rebalance recommended; the node keeps running (advisory)")
	}
	return nil
}

// markSpotOffering leaves the claim's spot offering out of plans for a while.
func (c *Controller) markSpotOffering(ctx context.Context, cl *v1alpha1.Claim, k Kind) {
	if ct := capacityType(cl); ct == cloud.Spot && cl.Status.InstanceType != "" && cl.Status.Zone != "" {
		c.Offerings.MarkUnavailable(cl.Status.InstanceType, cl.Status.Zone, ct, offeringCode(k))
		actions.WithLabelValues(actionUnavailable).Inc()
		klog.FromContext(ctx).Info("Spot offering marked unavailable", "instanceType", cl.Status.InstanceType, "zone", cl.Status.Zone)
	}
}

func (c *Controller) delete(ctx context.Context, m sqs.Message) {
	if err := c.Queue.Delete(ctx, m); err != nil {
		// It comes back after the visibility timeout, and handling it again does nothing new.
		errorsTotal.WithLabelValues("delete").Inc()
		klog.FromContext(ctx).Error(err, "Cannot delete a handled interruption message")
	}
}

// capacityType is how the claim's instance was bought.
func capacityType(cl *v1alpha1.Claim) cloud.CapacityType {
	if cl.Status.CapacityType != "" {
		return cloud.CapacityType(cl.Status.CapacityType)
	}
	return cloud.CapacityType(cl.Spec.CapacityType)
}

// offeringCode is the code an offering is marked unavailable with (the metric's code label).
func offeringCode(k Kind) string {
	switch k {
	case SpotInterruption:
		return "SpotInterruption"
	case RebalanceRecommendation:
		return "RebalanceRecommendation"
	}
	return "ScheduledChange"
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
