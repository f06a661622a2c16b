package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/tailor-eks/tailor/cmd/internal/simrun"
	"github.com/tailor-eks/tailor/pkg/dryrun"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned"
	"github.com/tailor-eks/tailor/pkg/sim/env"
)

// bench is one run on a started cluster: the burst, its plan and both schedulers.
type bench struct {
	o                     options
	e                     *env.Environment
	objs                  []runtime.Object
	plan                  *dryrun.Result
	tailor, vanilla       *simrun.Child
	tailorRSS, vanillaRSS *peakRSS
	// clientQPS is both schedulers' API client rate limit.
	clientQPS float64
	// consolidationLook is how long the cluster stays quiet after the burst before the
	// fit-existing phase (see consolidationLook).
	consolidationLook time.Duration
}

// vanillaSchedulerName is the profile the vanilla kube-scheduler serves.
const vanillaSchedulerName = "vanilla"

// lookBound bounds the wait for consolidation's first look after a burst: long enough for
// a chain of replacements (each launches, drains and lets its pods land before the next can be
// decided: six took 200 s after the controllers burst). A cluster still changing then (a Job
// still running its pods never goes quiet) is reported, and the run goes on.
func lookBound(look time.Duration) time.Duration { return max(10*look, 10*time.Minute) }

// readyLog is what Tailor's scheduler logs once its instance catalog is loaded.
const readyLog = "Instance catalog loaded"

// prepare reads and plans the burst, then starts Tailor's scheduler with the sandbox's profile
// and, for the fit-existing phase, the vanilla kube-scheduler. The plan runs before either
// scheduler starts, so it takes nothing from what is measured.
func prepare(ctx context.Context, o options, e *env.Environment) (*bench, error) {
	b := &bench{o: o, e: e}
	var err error
	if b.objs, err = readBurst(o.burst, o.namespace); err != nil {
		return nil, err
	}
	config, err := e.WriteSchedulerConfig("tailor-config.yaml", true, benchProfile)
	if err != nil {
		return nil, err
	}
	if o.schedulerQPS > 0 {
		if err := setClientQPS(config, o.schedulerQPS); err != nil {
			return nil, err
		}
	}
	if b.clientQPS, err = clientQPS(config); err != nil {
		return nil, err
	}
	if b.consolidationLook, err = consolidationLook(config); err != nil {
		return nil, err
	}
	progressf("planning %s with %s", o.burst, config)
	if b.plan, err = planBurst(ctx, o.burst, config, e.Sim.Zones()); err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	binaries := []string{o.scheduler}
	if o.fitPods > 0 {
		binaries = append(binaries, o.kubeScheduler)
	}
	if err := evictPageCache(binaries...); err != nil {
		return nil, err
	}
	if b.tailor, err = simrun.StartScheduler("tailor-scheduler", o.scheduler, config, o.dir, e.AWSEnv()); err != nil {
		return nil, err
	}
	// A burst meets a scheduler that has been running, its instance catalog loaded: applied
	// the moment the process starts, the first batch waited for the catalog (a second here).
	if err := b.tailor.WaitForLog(ctx, readyLog, 2*time.Minute); err != nil {
		b.stop()
		return nil, err
	}
	if o.fitPods > 0 {
		vanillaConfig, err := writeVanillaConfig(config, filepath.Join(o.dir, "vanilla-config.yaml"))
		if err != nil {
			b.stop()
			return nil, err
		}
		if b.vanilla, err = simrun.StartScheduler("kube-scheduler", o.kubeScheduler, vanillaConfig, o.dir, nil); err != nil {
			b.stop()
			return nil, err
		}
	}
	return b, nil
}

// benchProfile is the sandbox's profile with the pools' limits lifted: the example caps the
// general pool at 1000 CPUs, which a burst of 5000 pods outgrows (its pods would wait for ever),
// and a limit is a safety net, not what the bench measures. The plan reads the same file.
func benchProfile(args map[string]any) {
	simrun.SandboxProfile(args)
	for _, p := range args["pools"].([]any) {
		delete(p.(map[string]any), "limits")
	}
}

// stop ends the schedulers.
func (b *bench) stop() {
	for _, c := range []*simrun.Child{b.tailor, b.vanilla} {
		if c != nil {
			c.Stop(simrun.StopGrace)
		}
	}
}

// measure applies the burst, waits until it settles, and runs the fit-existing phase. A
// scheduler's exit ends the run at once. The report is returned whenever the burst was applied,
// with the error that ended the run, if any.
func (b *bench) measure(ctx context.Context) (*report, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	b.tailorRSS = watchPeakRSS(ctx, b.tailor.PID())
	b.tailor.CancelOnExit(ctx, cancel)
	if b.vanilla != nil {
		b.vanillaRSS = watchPeakRSS(ctx, b.vanilla.PID())
		b.vanilla.CancelOnExit(ctx, cancel)
	}
	rec := newRecorder(b.e.Client, versioned.NewForConfigOrDie(b.e.CP.Config), b.o.namespace)
	if err := rec.start(ctx); err != nil {
		return nil, err
	}
	expected := plannedPods(b.plan)
	progressf("applying %s: %d pods (DaemonSets aside) into namespace %s", b.o.burst, expected, b.o.namespace)
	applied := time.Now()
	pgConfig := rest.CopyConfig(b.e.CP.Config)
	pgConfig.ContentType = "application/json" // custom resources have no protobuf encoding
	if err := applyBurst(ctx, b.e.Client, pgclientset.NewForConfigOrDie(pgConfig), b.o.namespace, b.objs); err != nil {
		return nil, err
	}
	wctx, cancelWait := context.WithTimeout(ctx, b.o.timeout)
	defer cancelWait()
	allRunning, settled := rec.waitSettled(wctx, expected, b.o.quiet, func(s burstState) {
		progressf("%.0fs: %d/%d pods done, %d pending, %d deleting, %d claims in flight", time.Since(applied).Seconds(),
			s.done, expected, s.pending, s.deleting, s.inFlight)
	})
	rep := b.burstReport(rec, expected, applied, allRunning, settled)
	looked := true
	if settled {
		// Consolidation's first look after the burst: what it moves counts as after the
		// scale-up, and the fit-existing phase does not share the scheduler with its drains.
		progressf("waiting %s for consolidation's first look after the burst", b.consolidationLook)
		lctx, cancelLook := context.WithTimeout(ctx, lookBound(b.consolidationLook))
		_, looked = rec.waitSettled(lctx, expected, b.consolidationLook, func(burstState) {})
		cancelLook()
		rec.disruptions(rep)
	}
	rec.freeze()
	if err := rec.saveTimeline(filepath.Join(b.o.dir, "timeline.tsv"), applied); err != nil {
		progressf("cannot write the pods' timeline: %v", err)
	}
	if exit := simrun.ExitCause(ctx); exit != nil {
		if rep.Pending == nil {
			rep.Pending = &pendingReport{}
		}
		rep.Pending.SchedulerExited = exit.Name + ": " + exit.Status
		return rep, exit
	}
	if !settled {
		if ctx.Err() != nil {
			return rep, fmt.Errorf("interrupted before the burst settled: %w", context.Cause(ctx))
		}
		return rep, fmt.Errorf("the burst did not settle within %s", b.o.timeout)
	}
	progressf("settled %.1fs after the apply: %d pods, %d nodes, $%.4f/h (plan: %d nodes, $%.4f/h), %d evictions and %d drains during the scale-up, %d and %d after",
		rep.AllRunningAfterApplySeconds, rep.Pods, rep.Nodes, rep.FleetPricePerHour, rep.PlanNodes, rep.PlanPricePerHour, rep.Evictions, rep.Drains,
		rep.AfterScaleUp.Evictions, rep.AfterScaleUp.Drains)
	if !looked && ctx.Err() == nil {
		// A Job still running its pods, or consolidation still moving them: said, not fatal.
		progressf("the cluster was still changing %s after the burst settled; the fit-existing phase runs beside it", lookBound(b.consolidationLook))
	}
	if b.o.fitPods == 0 {
		return rep, nil
	}
	progressf("fit-existing: %d pods for Tailor, then %d for the vanilla kube-scheduler", b.o.fitPods, b.o.fitPods)
	fit, err := runFitExisting(ctx, b.e.CP.Config, b.o.fitPods, b.e.Sim.Zones(), b.tailorRSS, b.vanillaRSS)
	if exit := simrun.ExitCause(ctx); exit != nil {
		return rep, exit
	}
	if fit != nil {
		fit.ClientQPS = b.clientQPS
	}
	rep.FitExisting = fit
	return rep, err
}

// burstReport is the report of the burst as it stands: settled, or when the run gave up.
func (b *bench) burstReport(rec *recorder, expected int, applied, allRunning time.Time, settled bool) *report {
	plan := b.plan.Plan
	rep := &report{Burst: b.o.burst, Settled: settled, ExpectedPods: expected,
		PlanPricePerHour: round(plan.PricePerHour(), 4), PlanNodes: len(plan.Nodes),
		PlanLowerBoundPerHour: round(b.plan.LowerBound, 4), PlanUnschedulable: len(plan.Unschedulable)}
	s := rec.state()
	rep.Pods, rep.DaemonPods = s.done, s.daemonRunning
	if !settled {
		rep.Pending = s.pendingReport()
	}
	rep.Nodes, rep.FleetPricePerHour = rec.fleet()
	rep.PriceRatio, rep.NodesRatio = ratio(rep.FleetPricePerHour, rep.PlanPricePerHour), ratio(float64(rep.Nodes), float64(rep.PlanNodes))
	rec.timings(rep, applied, allRunning)
	rep.CreateFleetCalls, rep.FleetsCreated = b.e.Sim.Calls("CreateFleet"), b.e.Sim.FleetRequests()
	rep.SchedulerPeakRSSMiB = b.tailorRSS.MiB()
	return rep
}
