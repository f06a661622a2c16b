// Package metrics holds Tailor's provisioning metrics. They are component-base metrics in the
// scheduler's legacy registry, so the scheduler's /metrics (its secure port) serves them beside
// kube-scheduler's own. The plugin registers them when it starts, on every replica: a standby
// reports its zeros rather than nothing, and dashboards need no leader to find the series.
package metrics

import (
	"strconv"
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

const (
	namespace    = "tailor"
	provisioning = "provisioning"
)

// Launch results (the result label of Launches).
const (
	ResultLaunched             = "launched"
	ResultInsufficientCapacity = "insufficient_capacity"
	// ResultFailed is a launch that failed for another reason: EC2 pushing back (throttling,
	// 5xx) or an error nobody classified.
	ResultFailed = "failed"
	// ResultQuota is a launch an account quota refused.
	ResultQuota = "quota"
	// ResultError is a launch EC2 refused as misconfigured (a missing AMI, a volume smaller than
	// its snapshot) or not permitted (the controller's role, the spot service-linked role): it
	// fails alike until someone changes a setting.
	ResultError = "error"
)

var (
	// Batches counts planned batches of unschedulable pods.
	Batches = metrics.NewCounter(&metrics.CounterOpts{Namespace: namespace, Subsystem: provisioning, Name: "batches_total",
		Help: "Batches of unschedulable pods planned.", StabilityLevel: metrics.ALPHA})
	// BatchPods is the size of each planned batch.
	BatchPods = metrics.NewHistogram(&metrics.HistogramOpts{Namespace: namespace, Subsystem: provisioning, Name: "batch_pods",
		Help: "Pods in each planned batch.", Buckets: metrics.ExponentialBuckets(1, 2, 12), StabilityLevel: metrics.ALPHA})
	// ExpectedPods counts the pods planned before their controllers created them.
	ExpectedPods = metrics.NewCounter(&metrics.CounterOpts{Namespace: namespace, Subsystem: provisioning, Name: "expected_pods_total",
		Help: "Pods planned with a batch before their controllers (ReplicaSets, StatefulSets, Jobs) created them.", StabilityLevel: metrics.ALPHA})
	// PlanDuration is how long planning a batch took.
	PlanDuration = metrics.NewHistogram(&metrics.HistogramOpts{Namespace: namespace, Subsystem: provisioning, Name: "plan_duration_seconds",
		Help: "Time to plan one batch (catalog read, in-flight fill, packing).", Buckets: metrics.ExponentialBuckets(0.001, 2, 15), StabilityLevel: metrics.ALPHA})
	// Launches counts launch attempts by pool, instance type (empty when none launched),
	// capacity type and result.
	Launches = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: namespace, Subsystem: provisioning, Name: "launches_total",
		Help: "Launch attempts, by pool, instance type, capacity type and result (launched, insufficient_capacity, quota, error, failed).", StabilityLevel: metrics.ALPHA},
		[]string{"pool", "instance_type", "capacity_type", "result"})
	// OfferingsMarkedUnavailable counts offerings left out after EC2 refused them (insufficient
	// capacity and the like).
	OfferingsMarkedUnavailable = metrics.NewCounterVec(&metrics.CounterOpts{Namespace: namespace, Subsystem: provisioning, Name: "offerings_marked_unavailable_total",
		Help: "Offerings marked unavailable after EC2 refused them, by instance type, zone, capacity type and EC2 error code.", StabilityLevel: metrics.ALPHA},
		[]string{"instance_type", "zone", "capacity_type", "code"})
	// RegistrationDuration is the time from launch to the node's registration, by pool.
	RegistrationDuration = metrics.NewHistogramVec(&metrics.HistogramOpts{Namespace: namespace, Subsystem: provisioning, Name: "registration_duration_seconds",
		Help: "Time from an instance's launch to its node's registration, by pool.", Buckets: []float64{1, 5, 10, 20, 30, 45, 60, 90, 120, 180, 300, 600}, StabilityLevel: metrics.ALPHA},
		[]string{"pool"})

	podsWaitingDesc = metrics.NewDesc(metrics.BuildFQName(namespace, provisioning, "pods_waiting"),
		"Pods waiting for capacity: in a batch, being planned, or planned onto a claim not yet theirs.", nil, nil, metrics.ALPHA, "")
	claimsDesc = metrics.NewDesc(metrics.BuildFQName(namespace, "", "claims"),
		"Claims, by phase.", []string{"phase"}, nil, metrics.ALPHA, "")
	gangsWaitingDesc = metrics.NewDesc(metrics.BuildFQName(namespace, provisioning, "gangs_waiting"),
		"Gangs (Coscheduling PodGroups) that got no capacity, by why: incomplete (fewer than minMember pods exist), no_podgroup, pool_limit, unplannable (no offering holds the whole gang), not_recorded.",
		[]string{"reason"}, nil, metrics.ALPHA, "")
	fleetCostDesc = metrics.NewDesc(metrics.BuildFQName(namespace, "", "fleet_dollars_per_hour"),
		"Hourly price of the instances Tailor runs (launched or registered claims), by pool.", []string{"pool"}, nil, metrics.ALPHA, "")
)

// State is what the scrape-time metrics read.
type State struct {
	PodsWaiting func() int
	Claims      func() []*v1alpha1.Claim
	// Pools are the configured pool names: each reports a fleet cost, zero included.
	Pools []string
	// GangsWaiting, if set, counts the gangs that got no capacity, by why.
	GangsWaiting func() map[string]int
}

var (
	registerOnce sync.Once
	collector    = &stateCollector{}
)

// Register adds Tailor's provisioning metrics to the legacy registry (once per process) and
// points the scrape-time gauges at s: the plugin built last wins, as when a scheduler is
// rebuilt in the same process.
func Register(s State) {
	collector.mu.Lock()
	collector.state = s
	collector.mu.Unlock()
	registerOnce.Do(func() {
		legacyregistry.MustRegister(Batches, BatchPods, ExpectedPods, PlanDuration, Launches, OfferingsMarkedUnavailable, RegistrationDuration)
		legacyregistry.CustomMustRegister(collector)
	})
}

// stateCollector reports gauges computed from Tailor's state at each scrape.
type stateCollector struct {
	metrics.BaseStableCollector
	mu    sync.Mutex
	state State
}

func (c *stateCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- podsWaitingDesc
	ch <- claimsDesc
	ch <- fleetCostDesc
	ch <- gangsWaitingDesc
}

func (c *stateCollector) CollectWithStability(ch chan<- metrics.Metric) {
	c.mu.Lock()
	state := c.state
	c.mu.Unlock()
	if state.PodsWaiting == nil || state.Claims == nil {
		return
	}
	ch <- metrics.NewLazyConstMetric(podsWaitingDesc, metrics.GaugeValue, float64(state.PodsWaiting()))
	phases := map[v1alpha1.ClaimPhase]int{v1alpha1.ClaimPending: 0, v1alpha1.ClaimLaunched: 0, v1alpha1.ClaimRegistered: 0, v1alpha1.ClaimFailed: 0}
	cost := map[string]float64{}
	for _, p := range state.Pools {
		cost[p] = 0
	}
	for _, cl := range state.Claims() {
		phase := cl.Status.Phase
		if phase == "" {
			phase = v1alpha1.ClaimPending
		}
		phases[phase]++
		if phase == v1alpha1.ClaimLaunched || phase == v1alpha1.ClaimRegistered {
			if price, err := strconv.ParseFloat(cl.Status.PricePerHour, 64); err == nil {
				cost[cl.Spec.Pool] += price
			}
		}
	}
	for phase, n := range phases {
		ch <- metrics.NewLazyConstMetric(claimsDesc, metrics.GaugeValue, float64(n), string(phase))
	}
	for pool, v := range cost {
		ch <- metrics.NewLazyConstMetric(fleetCostDesc, metrics.GaugeValue, v, pool)
	}
	if state.GangsWaiting != nil {
		for reason, n := range state.GangsWaiting() {
			ch <- metrics.NewLazyConstMetric(gangsWaitingDesc, metrics.GaugeValue, float64(n), reason)
		}
	}
}
