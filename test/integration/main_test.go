// Package integration runs Tailor on real parts: embedded etcd, kube-apiserver and
// kube-controller-manager, the real scheduler with Tailor's profile, the EC2 simulator reached by
// the real AWS SDK over HTTP, kwok as the kubelets and the node agent. Nothing here fakes the
// Kubernetes API or the SDK.
package integration

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/test/utils/ktesting"

	"github.com/tailor-eks/tailor/pkg/plugins"
	"github.com/tailor-eks/tailor/pkg/sim/controlplane"
	"github.com/tailor-eks/tailor/pkg/sim/env"
	"github.com/tailor-eks/tailor/pkg/sim/iamcheck"
)

const clusterName = "it"

// world is shared by every test of the package: starting the control plane costs seconds.
var world *env.Environment

func init() {
	// The API server's test harness turns klog up to -v=5 when imported.
	ktesting.SetDefaultVerbosity(1)
}

func TestMain(m *testing.M) {
	flag.Parse()
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "tailor-it-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	tb := &controlplane.ProcessTB{Dir: dir}
	defer tb.RunCleanups()
	kwok := os.Getenv("KWOK")
	if kwok == "" {
		kwok, _ = filepath.Abs("../../bin/kwok")
	}
	// The scheduler's controllers take their lease where the chart's Role grants it, as in the
	// chart's pod (POD_NAMESPACE from the downward API).
	if err := os.Setenv("POD_NAMESPACE", env.InstallNamespace); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	nodeadm := os.Getenv("NODEADM")
	if nodeadm == "" {
		nodeadm, _ = filepath.Abs("../../bin/nodeadm")
	}
	world, err = env.Start(context.Background(), env.Options{Dir: dir, ClusterName: clusterName, KwokPath: kwok, NodeadmPath: nodeadm, TB: tb})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the environment:", err)
		return 1
	}
	defer world.Stop()
	// The scheduler stops before the control plane, or the API server waits a minute for its
	// watches to end.
	defer func() { stopScheduler() }()
	// Consolidation stays out of the other tests' way; its own tests turn it on.
	path, err := world.WriteSchedulerConfig("scheduler.yaml", false, quietConsolidation)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	schedulerConfig = path
	if err := startScheduler(); err != nil {
		fmt.Fprintln(os.Stderr, "starting the scheduler:", err)
		return 1
	}
	code := m.Run()
	if err := checkBootstraps(); err != nil && code == 0 {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	// Stop the scheduler first: every call it makes is in the log before the check reads it.
	stopScheduler()
	stopScheduler = func() {}
	if err := checkIAMPolicy(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	fmt.Printf("%d instances bootstrapped from the user data Tailor sent (nodeadm check and rules); %d refused as a test expected\n",
		world.Agent.Bootstrapped(), len(world.Agent.Rejected()))
	return code
}

// checkIAMPolicy proves the controller IAM policy on everything Tailor did in the suite: the
// simulator logged the authorization every call signed with Tailor's key needed (the harness
// signs with its own), and the IAM policy simulator must allow each one, while every action the
// policy allows must have been needed (see pkg/sim/iamcheck for what this does not prove).
func checkIAMPolicy() error {
	v := iamcheck.TestValues(clusterName, nodeRole)
	v.QueueARN = fmt.Sprintf("arn:%s:sqs:%s:%s:%s", iamcheck.TestPartition, iamcheck.TestRegion, iamcheck.TestAccountID, interruptionQueue)
	c, err := iamcheck.New(v)
	if err != nil {
		return err
	}
	log := iamcheck.Of(world.Sim.AuthorizationLog(), env.TailorAccessKeyID)
	if f := flag.Lookup("test.run"); f != nil && f.Value.String() != "" {
		// Part of the suite: its calls must be allowed, but it need not use every action.
		if err := c.VerifyAllowed(log); err != nil {
			return err
		}
		fmt.Printf("controller IAM policy: the simulator allowed all %d distinct authorization requests (a -run subset: unused actions not checked)\n", len(log))
		return nil
	}
	if err := c.Verify(log); err != nil {
		return err
	}
	fmt.Printf("controller IAM policy: the simulator allowed all %d distinct authorization requests Tailor's calls needed, and every action it allows was needed\n", len(log))
	return nil
}

// nodeRole is the role behind the pools' instance profile tailor-node: the simulator's default,
// a role of the profile's name.
const nodeRole = "tailor-node"

// setupScheduler builds Tailor's scheduler from a config file the way the binary does.
func setupScheduler(ctx context.Context, configPath string) (func(), error) {
	opts := options.NewOptions()
	opts.ConfigFile = configPath
	// The secure port (healthz, readyz, metrics) on a free loopback port.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	opts.SecureServing.Listener, opts.SecureServing.BindPort = ln, ln.Addr().(*net.TCPAddr).Port
	opts.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	// In a pod, the scheduler checks who may read /metrics with its in-cluster identity
	// (TokenReview, SubjectAccessReview); here that identity comes from its kubeconfig.
	opts.Authentication.RemoteKubeConfigFile = world.SchedulerKubeconfig
	opts.Authorization.RemoteKubeConfigFile = world.SchedulerKubeconfig
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	cc, sched, err := app.Setup(ctx, opts, plugins.SchedulerOptions(configPath)...)
	if err != nil {
		return nil, err
	}
	schedulerAddr.Store(cc.SecureServing.Listener.Addr().String())
	schedulerInformers.Store(cc.InformerFactory)
	return func() {
		if err := app.Run(ctx, cc, sched); err != nil {
			fmt.Fprintln(os.Stderr, "scheduler stopped:", err)
		}
		// app.Run registers its config in a process-wide registry; a restarted scheduler in the
		// same process registers it again.
		configz.Delete("componentconfig")
	}, nil
}

var (
	// schedulerAddr is the running scheduler's secure port (healthz, readyz, metrics).
	schedulerAddr atomic.Value
	// schedulerInformers is the running scheduler's informers.SharedInformerFactory: what it
	// has seen of the cluster.
	schedulerInformers atomic.Value
	schedulerConfig    string
	// stopScheduler stops the running scheduler and waits until it has returned.
	stopScheduler = func() {}
)

// startScheduler starts Tailor's scheduler in this process; stopScheduler ends it, as a crash
// would end the process (nothing is cleaned up beyond what context cancellation stops).
func startScheduler() error {
	ctx, cancel := context.WithCancel(context.Background())
	run, err := setupScheduler(ctx, schedulerConfig)
	if err != nil {
		cancel()
		return err
	}
	done := make(chan struct{})
	go func() { defer close(done); run() }()
	stopScheduler = func() { cancel(); <-done }
	return nil
}

// restartScheduler runs the rest of the test with a scheduler whose Tailor args mutate edits,
// and brings the shared configuration back afterwards.
func restartScheduler(t *testing.T, mutate func(args map[string]any)) {
	t.Helper()
	// A subtest's name has a slash: the file is named for the whole path, flattened.
	path, err := world.WriteSchedulerConfig(strings.ReplaceAll(t.Name(), "/", "_")+".yaml", false, func(args map[string]any) {
		quietConsolidation(args)
		mutate(args)
	})
	if err != nil {
		t.Fatal(err)
	}
	stopScheduler()
	shared := schedulerConfig
	schedulerConfig = path
	if err := startScheduler(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopScheduler()
		schedulerConfig = shared
		if err := startScheduler(); err != nil {
			t.Fatal(err)
		}
	})
}

// quietConsolidation gives every pool a consolidateAfter no test outlasts.
func quietConsolidation(args map[string]any) {
	for _, p := range args["pools"].([]any) {
		p.(map[string]any)["disruption"] = map[string]any{"consolidateAfter": "1h"}
	}
}
