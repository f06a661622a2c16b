// Command bench-e2e measures Tailor end to end under a burst: it starts the sandbox's cluster
// (control plane, EC2 simulator, kwok, node agent) with Tailor's scheduler binary and the
// example profile, applies a burst of workloads from a YAML file, watches pods, claims and nodes
// until every pod runs, and prints one JSON object: the fleet next to `plan` on the same
// manifests, evictions and drains during the scale-up, latencies, CreateFleet calls and the
// scheduler's peak memory. A second phase schedules pods that fit existing nodes once with
// Tailor and once with the vanilla kube-scheduler of the same Kubernetes module, side by side.
//
//	bench-e2e --burst hack/bench-e2e/burst-1000.yaml [--fit-existing 2000] [--timeout 15m]
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

	"github.com/tailor-eks/tailor/cmd/internal/simrun"
	"github.com/tailor-eks/tailor/pkg/sim/controlplane"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
	"github.com/tailor-eks/tailor/pkg/sim/env"
)

func init() {
	// The API server's test harness, linked in for the control plane, turns klog up to -v=5.
	ktesting.SetDefaultVerbosity(1)
}

// options are the command's flags.
type options struct {
	burst, scheduler, kubeScheduler, kwok, nodeadm, dir, namespace string
	timeout, quiet, pendingFor                                     time.Duration
	fitPods                                                        int
	schedulerQPS                                                   float64
}

func main() {
	var o options
	flag.StringVar(&o.burst, "burst", "", "YAML file of the burst: Deployments, StatefulSets, Jobs, DaemonSets (and ReplicaSets, Pods, Services, PodDisruptionBudgets), applied into --namespace")
	flag.StringVar(&o.scheduler, "scheduler", "bin/tailor-scheduler", "path of Tailor's scheduler binary")
	flag.StringVar(&o.kubeScheduler, "kube-scheduler", "bin/kube-scheduler", "path of the vanilla kube-scheduler binary (make bin/kube-scheduler), for the fit-existing phase")
	flag.StringVar(&o.kwok, "kwok", "bin/kwok", "path of the kwok binary (make tools)")
	flag.StringVar(&o.nodeadm, "nodeadm", "bin/nodeadm", "path of the nodeadm binary (make tools)")
	flag.StringVar(&o.dir, "dir", "", "working directory for data, logs and kubeconfig (default: a new temporary one, removed after a settled run)")
	flag.StringVar(&o.namespace, "namespace", "burst", "namespace the burst's objects are created in")
	flag.DurationVar(&o.timeout, "timeout", 15*time.Minute, "how long the burst may take to settle")
	flag.DurationVar(&o.quiet, "settle-quiet", 5*time.Second, "how long every pod must stay Running, with no pod created or lost, no node drained and no claim in flight, to count as settled")
	flag.Float64Var(&o.schedulerQPS, "scheduler-qps", 0, "both schedulers' API client QPS (burst twice that); 0 keeps the sandbox's 100, which bounds the fit-existing phase's pods/s")
	flag.DurationVar(&o.pendingFor, "pending-for", 0, "how long the EC2 simulator keeps a new instance pending (0: it runs at once, as the p99 bar's instant boot assumes; the sandbox's is 1s)")
	flag.IntVar(&o.fitPods, "fit-existing", 2000, "pods of the fit-existing phase, per scheduler (0: skip it)")
	flag.Parse()
	if o.burst == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: bench-e2e --burst FILE [flags]")
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-e2e:", err)
		os.Exit(1)
	}
}

func run(o options) (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.dir == "" {
		if o.dir, err = os.MkdirTemp("", "tailor-bench-e2e-"); err != nil {
			return err
		}
		defer func() {
			if err == nil {
				os.RemoveAll(o.dir)
			} else {
				progressf("logs kept in %s", o.dir)
			}
		}()
	}
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return err
	}
	closeLog, err := simrun.LogToFile(filepath.Join(o.dir, "bench.log"))
	if err != nil {
		return err
	}
	defer closeLog()
	tb := &controlplane.ProcessTB{Dir: o.dir}
	defer tb.RunCleanups()
	progressf("starting the cluster (logs in %s)", o.dir)
	pendingFor := o.pendingFor
	if pendingFor <= 0 {
		pendingFor = ec2sim.Immediately
	}
	e, err := env.Start(ctx, env.Options{Dir: o.dir, ClusterName: "bench", KwokPath: o.kwok, NodeadmPath: o.nodeadm, TB: tb,
		Sim: ec2sim.Options{PendingFor: pendingFor}})
	if err != nil {
		return err
	}
	defer e.Stop()
	b, err := prepare(ctx, o, e)
	if err != nil {
		return err
	}
	defer b.stop()
	rep, err := b.measure(ctx)
	if rep != nil {
		if werr := rep.write(os.Stdout); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

func progressf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%s] %s\n", time.Now().Format("15:04:05.0"), fmt.Sprintf(format, args...))
}
