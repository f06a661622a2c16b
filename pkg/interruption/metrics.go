package interruption

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Actions (the action label of actionsTotal).
const (
	actionInterrupt   = "interrupt"            // a node handed to consolidation to replace and drain
	actionAdvise      = "advise"               // a rebalance recommendation told on the node, nothing else
	actionRenew       = "renew"                // a node renewed within budgets after a rebalance recommendation
	actionRemove      = "remove"               // a node and claim removed at once (instance going)
	actionUnavailable = "offering_unavailable" // a spot offering left out of plans
	actionDuplicate   = "duplicate"            // the node was already being handled
	actionNotOwned    = "not_owned"            // an instance Tailor did not launch
	actionForeign     = "foreign"              // an event of another region
	actionNone        = "none"                 // nothing to do (an unknown event, a running instance)
)

var (
	received = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "interruption", Name: "messages_received_total",
		Help: "Interruption queue messages received, by kind (spot_interruption, rebalance_recommendation, scheduled_change, state_change, unknown, malformed).", StabilityLevel: metrics.ALPHA},
		[]string{"kind"})
	actions = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "interruption", Name: "actions_total",
		Help: "What interruption messages led to, by action (interrupt, advise, renew, remove, offering_unavailable, duplicate, not_owned, foreign, none).", StabilityLevel: metrics.ALPHA},
		[]string{"action"})
	errorsTotal = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "interruption", Name: "errors_total",
		Help: "Interruption queue errors, by operation (receive, delete, handle); a message whose handling failed is received again.", StabilityLevel: metrics.ALPHA},
		[]string{"operation"})

	registerOnce sync.Once
)

// RegisterMetrics adds the interruption metrics to the legacy registry (once per process). The
// plugin calls it at start on every replica, so a standby serves the series too.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(received, actions, errorsTotal)
	})
}
