package consolidation

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

var (
	decisions = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "consolidation", Name: "decisions_total",
		Help: "Nodes chosen for disruption, by method (empty, delete, merge, replace, drift, expired, rebalance, interruption).", StabilityLevel: metrics.ALPHA}, []string{"method"})
	evictions = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "consolidation", Name: "evictions_total",
		Help: "Eviction requests, by result (evicted, refused by a PodDisruptionBudget, failed otherwise).", StabilityLevel: metrics.ALPHA}, []string{"result"})
	removed = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "consolidation", Name: "nodes_removed_total",
		Help: "Nodes terminated and deleted, by method.", StabilityLevel: metrics.ALPHA}, []string{"method"})
	saved = metrics.NewCounter(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "consolidation", Name: "saved_dollars_per_hour_total",
		Help: "Sum of the hourly prices of the nodes removed.", StabilityLevel: metrics.ALPHA})
	rollbacks = metrics.NewCounter(&metrics.CounterOpts{Namespace: "tailor", Subsystem: "consolidation", Name: "rollbacks_total",
		Help: "Drains given up and undone.", StabilityLevel: metrics.ALPHA})

	registerOnce sync.Once
)

// RegisterMetrics adds the consolidation metrics to the legacy registry (once per process). The
// plugin calls it at start on every replica, so a standby serves the series too.
func RegisterMetrics() {
	registerOnce.Do(func() {
		legacyregistry.MustRegister(decisions, evictions, removed, saved, rollbacks)
	})
}
