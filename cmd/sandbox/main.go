// Command sandbox runs Tailor end to end on one machine: a real control plane, the EC2
// simulator, kwok and the node agent, Tailor's scheduler binary with the shipped example profile,
// and a sample workload, with a live view of pods and launches.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/cmd/internal/simrun"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/controlplane"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
	"github.com/tailor-eks/tailor/pkg/sim/env"
)

func init() {
	// The API server's test harness, linked in for the control plane, turns klog up to -v=5.
	ktesting.SetDefaultVerbosity(1)
}

func main() {
	var (
		scheduler    = flag.String("scheduler", "bin/tailor-scheduler", "path of Tailor's scheduler binary")
		kwok         = flag.String("kwok", "bin/kwok", "path of the kwok binary (make tools)")
		nodeadm      = flag.String("nodeadm", "bin/nodeadm", "path of the nodeadm binary the node agent checks AL2023 user data with (make tools)")
		dir          = flag.String("dir", "", "working directory for data, logs and kubeconfig (default: a new temporary one)")
		untilSettled = flag.Bool("until-settled", false, "exit 0 once every sample pod is Running; non-zero with the reason after --timeout")
		noSample     = flag.Bool("no-sample", false, "start everything but apply no sample workload")
		timeout      = flag.Duration("timeout", 8*time.Minute, "with --until-settled, how long to wait")
		interrupt    = flag.Bool("interrupt", false, "once the sample settles, send a spot interruption warning for one spot instance through the simulated interruption queue, and watch Tailor replace, drain and terminate it")
	)
	flag.Parse()
	if err := run(*scheduler, *kwok, *nodeadm, *dir, *untilSettled, *noSample, *interrupt, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "sandbox:", err)
		os.Exit(1)
	}
}

// interruptionQueue is the simulated SQS queue the sandbox's Tailor reads interruption events
// from.
const interruptionQueue = "tailor-sandbox-interruptions"

func run(schedulerPath, kwokPath, nodeadmPath, dir string, untilSettled, noSample, interrupt bool, timeout time.Duration) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if dir == "" {
		d, mkErr := os.MkdirTemp("", "tailor-sandbox-")
		if mkErr != nil {
			return mkErr
		}
		dir = d
		// Kept when the sandbox fails: the scheduler's and the control plane's logs say why.
		defer func() {
			if err == nil {
				os.RemoveAll(d)
			} else {
				fmt.Fprintln(os.Stderr, "sandbox: logs kept in", d)
			}
		}()
	}
	// The control plane's own logs go to a file; the terminal shows the live view.
	closeLog, err := simrun.LogToFile(filepath.Join(dir, "sandbox.log"))
	if err != nil {
		return err
	}
	defer closeLog()
	tb := &controlplane.ProcessTB{Dir: dir}
	defer tb.RunCleanups()

	fmt.Println("Starting etcd, kube-apiserver, kube-controller-manager, the EC2 simulator, kwok and the node agent…")
	e, err := env.Start(ctx, env.Options{Dir: dir, ClusterName: "sandbox", KwokPath: kwokPath, NodeadmPath: nodeadmPath, TB: tb})
	if err != nil {
		return err
	}
	defer e.Stop()
	fmt.Printf("Control plane up. Use it while the sandbox runs:\n  export KUBECONFIG=%s\n  kubectl get claims,nodes,pods -A\n", e.CP.Kubeconfig)
	fmt.Printf("EC2 simulator: %s   logs: %s\n", e.SimURL, dir)
	if err := e.Sim.CreateQueue(interruptionQueue); err != nil {
		return err
	}
	fmt.Printf("Interrupt an instance (kinds: spot-interruption, rebalance-recommendation, scheduled-change, state-change with \"state\"):\n"+
		"  curl -X POST %s/_ec2sim/sqs/%s -d '{\"kind\": \"spot-interruption\", \"instanceId\": \"i-…\"}'\n", e.SimURL, interruptionQueue)

	// The example profile, consolidating after 10 quiet seconds instead of 30, so the
	// scale-down demo is quick.
	cfg, err := e.WriteSchedulerConfig("scheduler-config.yaml", true, func(args map[string]any) {
		args["interruptionQueue"] = interruptionQueue
		simrun.SandboxProfile(args)
	})
	if err != nil {
		return err
	}
	sched, err := simrun.StartScheduler("tailor-scheduler", schedulerPath, cfg, dir, e.AWSEnv())
	if err != nil {
		return err
	}
	defer sched.Stop(simrun.StopGrace)
	// Without its scheduler the sandbox shows nothing worth watching: its exit ends the sandbox
	// at once, with the status and the log's tail.
	ctx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	sched.CancelOnExit(ctx, cancelRun)
	defer func() {
		if exit := simrun.ExitCause(ctx); exit != nil {
			err = exit
		}
	}()
	fmt.Printf("Tailor's scheduler started (profile %s, log %s)\n", cfg, sched.LogPath)

	if !noSample {
		n, err := applySamples(ctx, e.Client)
		if err != nil {
			return err
		}
		fmt.Printf("Applied the sample workload: %d Deployments in namespace sample\n", n)
	}
	view := newLiveView(e.Client, e.CP.Config)
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !untilSettled {
		wctx = ctx
	}
	settled := noSample || view.watch(wctx, func(s *snapshot) bool { return s.samplePods > 0 && s.sampleRunning == s.samplePods })
	if !settled {
		view.summary(ctx)
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("not settled after %s: %s", timeout, view.pendingReasons(ctx))
	}
	if !noSample {
		fmt.Println("Settled: every sample pod is Running on launched capacity.")
		view.summary(ctx)
		if interrupt {
			id, err := interruptSpot(e)
			if err != nil {
				return err
			}
			fmt.Printf("\nSent a spot interruption warning for %s; Tailor replaces the node, drains it, then terminates it:\n", id)
			replaced := view.watch(wctx, func(s *snapshot) bool {
				_, terminated := e.Sim.TerminatedAt(id)
				return terminated && s.disrupting == 0 && s.sampleRunning == s.samplePods
			})
			if untilSettled && !replaced {
				view.summary(ctx)
				return fmt.Errorf("the interrupted instance %s was not replaced and terminated within %s", id, timeout)
			}
			fmt.Printf("Interrupted instance %s terminated; every sample pod runs elsewhere.\n", id)
		}
		before := view.fleetPrice(ctx)
		if err := scaleSample(ctx, e.Client, scaleDownDeployment, scaleDownTo); err != nil {
			return err
		}
		fmt.Printf("\nScaled sample/%s down to %d; consolidation gives back what is no longer needed:\n", scaleDownDeployment, scaleDownTo)
		shrunk := view.watch(wctx, func(s *snapshot) bool { return s.pricePerHour < before && s.disrupting == 0 && s.pending == 0 })
		if untilSettled {
			view.summary(ctx)
			if !shrunk {
				return fmt.Errorf("the fleet did not shrink after the scale-down within %s", timeout)
			}
			fmt.Printf("Consolidated: fleet $%.4f/h -> $%.4f/h.\n", before, view.fleetPrice(ctx))
			return nil
		}
	}
	view.watch(ctx, func(s *snapshot) bool { return false })
	view.summary(ctx)
	return nil
}

// interruptSpot sends a spot interruption warning for one running spot instance Tailor
// launched, and returns its ID.
func interruptSpot(e *env.Environment) (string, error) {
	for _, in := range e.Sim.Instances() {
		if in.CapacityType == cloud.Spot && in.State == cloud.StateRunning && in.Tags[v1alpha1.TagClaim] != "" {
			_, err := e.Sim.SendEvent(interruptionQueue, ec2sim.Event{Kind: ec2sim.SpotInterruption, InstanceID: in.ID})
			return in.ID, err
		}
	}
	return "", fmt.Errorf("no running spot instance to interrupt")
}
