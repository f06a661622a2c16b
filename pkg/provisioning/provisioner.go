// Package provisioning turns batches of unschedulable pods into launches: it plans them with
// pkg/planning over the templates of pkg/offerings and records each planned node as a Claim,
// which pkg/lifecycle launches. It keeps the ledger of which pods wait on which claim, following
// the claims, and tells the scheduler to retry the pods as their claims launch, so they are
// nominated to the new capacity.
package provisioning

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	schedlisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/rollout"
)

// Options wires a Provisioner.
type Options struct {
	Args     *config.TailorArgs
	Cloud    cloud.Provider
	Claims   *claims.Store
	Ledger   *ledger.Ledger
	Recorder events.EventRecorder
	Pods     corelisters.PodLister
	// Nodes, if set, tells a claim whose node is going (deleted, or drained) from one whose node
	// is still to come up: the first takes no more pods.
	Nodes corelisters.NodeLister
	// Activate moves pods back to the scheduler's active queue.
	Activate func(pods []*corev1.Pod)
	// Offerings lists what may be launched, and learns which offerings had no capacity.
	Offerings *offerings.Cache
	// Clock reads the time and schedules the retries; default the real one.
	Clock clock.WithDelayedExecution
	// Rollouts, if set, finds the workloads of pods and what they will still create: their
	// pods still to come are planned with the batch (expected.go).
	Rollouts *rollout.Lister
	// PodGroups, if set, finds the gangs' PodGroups (Coscheduling's): a gang's pods are planned
	// whole (gangs.go). Nil when the profile does not run Coscheduling.
	PodGroups schedlisters.PodGroupLister
	// PodGroupsSynced, if set, says whether PodGroups has listed them all: until then a gang is
	// held, not told its PodGroup is missing.
	PodGroupsSynced func() bool
	// Upcoming, if set, lists a pod of each workload that owes pods and has created none yet,
	// as its controller will create it, with its PreFilter state: those workloads are planned
	// with the batch too (expected.go).
	Upcoming func() []*planning.Pod
}

// clock is Options.Clock, or the real one.
func (o *Options) clock() clock.WithDelayedExecution {
	if o.Clock == nil {
		return clock.RealClock{}
	}
	return o.Clock
}

// Provisioner owns the batcher and the launches.
type Provisioner struct {
	Options
	batcher      *Batcher
	reservations *Reservations

	mu sync.Mutex
	// planning holds pods taken from the batcher and not yet in the ledger, so a retry of one of
	// them during planning does not plan it twice.
	planning map[types.UID]bool
	// rollouts remembers which workloads' pods still to come were planned already.
	rollouts rolloutPlans
	// handedBack remembers when pods were handed back to the scheduler (handBack), so each is
	// handed back once.
	handedBack map[types.UID]time.Time
	// gangs holds gang pods waiting for their siblings, and why gangs got no claim.
	gangs gangState
}

// New builds a Provisioner.
func New(o Options) *Provisioner {
	p := &Provisioner{
		Options:      o,
		batcher:      NewBatcher(o.Args.BatchIdleDuration.Duration, o.Args.BatchMaxDuration.Duration),
		reservations: NewReservations(o),
		planning:     map[types.UID]bool{},
		handedBack:   map[types.UID]time.Time{},
	}
	p.batcher.Covered = p.covered
	return p
}

// Reservations returns the claims' side of provisioning: it records claims, follows them into the
// ledger and tells the lifecycle which claims pods want.
func (p *Provisioner) Reservations() *Reservations { return p.reservations }

// Enqueue hands a pod to the batcher unless it is already waiting or being planned. untried says
// that no node was tried for it: a PreFilter plugin turned it away (Coscheduling's, while its
// gang was short of pods).
func (p *Provisioner) Enqueue(pod *planning.Pod, untried bool) {
	if p.Busy(pod.Pod.UID) {
		return
	}
	if untried {
		p.gangs.markUntried(pod.Pod)
	}
	p.batcher.Add(pod)
}

// Waiting counts the pods waiting for capacity: in the open batch, being planned, or planned
// onto a claim whose node they have not reached.
func (p *Provisioner) Waiting() int {
	p.mu.Lock()
	n := len(p.planning)
	p.mu.Unlock()
	return n + p.batcher.Len() + p.Ledger.Waiting()
}

// Active reports whether pods wait in the open batch or a batch is being planned: the cluster
// is scaling up.
func (p *Provisioner) Active() bool {
	p.mu.Lock()
	n := len(p.planning)
	p.mu.Unlock()
	return n > 0 || p.batcher.Len() > 0
}

// Busy reports whether the pod waits in a batch or is being planned.
func (p *Provisioner) Busy(uid types.UID) bool {
	p.mu.Lock()
	busy := p.planning[uid]
	p.mu.Unlock()
	return busy || p.batcher.Has(uid)
}

// Run plans batches until ctx ends.
func (p *Provisioner) Run(ctx context.Context) {
	logger := klog.FromContext(ctx).WithName("provisioner")
	ctx = klog.NewContext(ctx, logger)
	for {
		batch := p.batcher.Next(ctx)
		if batch == nil {
			return
		}
		batch = p.gangs.withHeld(batch)
		p.mu.Lock()
		for _, pod := range batch {
			p.planning[pod.Pod.UID] = true
		}
		p.mu.Unlock()
		p.provision(ctx, batch)
		p.mu.Lock()
		for _, pod := range batch {
			delete(p.planning, pod.Pod.UID)
		}
		p.mu.Unlock()
	}
}

func (p *Provisioner) provision(ctx context.Context, batch []*planning.Pod) {
	logger := klog.FromContext(ctx)
	start := p.clock().Now()
	// A pod may have been placed in the ledger meanwhile, reserved a node by the scheduler (a
	// gang's member waits at Permit on its claim's node), bound, or deleted: plan only pods that
	// still wait.
	pods := batch[:0:0]
	for _, pod := range batch {
		if _, ok := p.Ledger.Lookup(pod.Pod.UID); ok {
			continue
		}
		if _, ok := p.Ledger.Consumed(pod.Pod.UID); ok {
			continue
		}
		if cur, err := p.Pods.Pods(pod.Pod.Namespace).Get(pod.Pod.Name); err != nil || cur.UID != pod.Pod.UID || cur.Spec.NodeName != "" {
			continue
		}
		pods = append(pods, pod)
	}
	if len(pods) == 0 {
		return
	}
	templates, err := p.Offerings.Templates(ctx)
	if err != nil {
		logger.Error(err, "Cannot read the catalog; pods will be retried", "pods", len(pods))
		for _, pod := range pods {
			p.Recorder.Eventf(pod.Pod, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "cannot read the instance catalog: %v", err)
		}
		return
	}
	read := p.clock().Since(start)
	pods, gangs := p.splitGangs(ctx, pods)
	for _, g := range gangs {
		p.provisionGang(ctx, g, templates)
	}
	if len(pods) == 0 {
		return
	}
	index := planning.IndexTemplates(templates)
	if pods = p.fillExpected(ctx, pods, index); len(pods) == 0 {
		return
	}
	if pods = p.fillInFlight(ctx, pods, index); len(pods) == 0 {
		return
	}
	if pods = p.handBack(ctx, pods); len(pods) == 0 {
		return
	}
	filled := p.clock().Since(start)
	expected, shares := p.expected(pods)
	planner := &planning.Planner{Templates: templates, Closed: p.closedPools(ctx, templates)}
	plan := withinReservations(ctx, planner, planner.Plan(ctx, append(pods, expected...)))
	metrics.Batches.Inc()
	metrics.BatchPods.Observe(float64(len(pods)))
	metrics.ExpectedPods.Add(float64(len(expected)))
	metrics.PlanDuration.Observe(p.clock().Since(start).Seconds())
	logger.V(2).Info("Planned batch", "pods", len(pods), "expected", len(expected), "nodes", len(plan.Nodes), "unschedulable", len(plan.Unschedulable),
		"pricePerHour", fmt.Sprintf("%.4f", plan.PricePerHour()), "duration", p.clock().Since(start), "readCatalog", read, "filledInFlight", filled-read)
	for _, d := range plan.Diverted {
		if !strings.HasPrefix(string(d.Pod.UID), expectedUIDPrefix) {
			p.Recorder.Eventf(d.Pod, nil, corev1.EventTypeNormal, "PoolAtLimit", "Provisioning", "planned on the next pool by weight: %s", strings.Join(d.Reasons, "; "))
		}
	}
	for _, u := range plan.Unschedulable {
		if !strings.HasPrefix(string(u.Pod.UID), expectedUIDPrefix) {
			p.Recorder.Eventf(u.Pod, nil, corev1.EventTypeWarning, "ProvisioningFailed", "Provisioning", "Tailor cannot launch capacity for this pod: %s", u.Reason)
		}
	}
	// Recording claims is quick and puts the pods in the ledger before the next batch is
	// planned; the lifecycle launches them as it sees them, so a slow cloud call never holds up
	// planning.
	var wg sync.WaitGroup
	for _, n := range plan.Nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.reservations.Record(ctx, n, shares)
		}()
	}
	wg.Wait()
}

// closedPools are the pools whose limits leave room for none of their types now: the planner
// puts their pods on the next pool by weight, in this batch, rather than plan claims admission
// would refuse. Admission still guards every claim (a batch may fill a pool part way).
func (p *Provisioner) closedPools(ctx context.Context, templates []*planning.Template) map[string]string {
	if !slices.ContainsFunc(p.Args.Pools, func(pool config.Pool) bool { return len(pool.Limits) > 0 }) {
		return nil // the common case: nothing to close, no need to index the templates
	}
	typesOf := map[string][]string{}
	seen := map[[2]string]bool{}
	for _, t := range templates {
		if k := [2]string{t.Pool.Name, t.Type.Name}; !seen[k] {
			seen[k] = true
			typesOf[t.Pool.Name] = append(typesOf[t.Pool.Name], t.Type.Name)
		}
	}
	closed, err := p.reservations.limits.closed(ctx, p.reservations, p.Args.Pools, func(pool string) []string { return typesOf[pool] })
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot tell which pools are at their limits; admission will")
		return nil
	}
	for pool, why := range closed {
		klog.FromContext(ctx).V(2).Info("Pool at its limit: its pods go to the next pool by weight", "pool", pool, "reason", why)
	}
	return closed
}
