// Package dryrun plans a set of Kubernetes manifests without a cluster: the same planner, the
// same scheduler plugins (built offline from the scheduler's configuration) and the same
// template-building code as the running scheduler, over the shipped catalog or the live one.
package dryrun

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"slices"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
	"github.com/tailor-eks/tailor/pkg/workload"
)

// Options say what to plan and against what.
type Options struct {
	// Files are manifest files, directories or "-" for Stdin.
	Files []string
	Stdin io.Reader
	// Config is a KubeSchedulerConfiguration file; empty means the shipped example.
	// SchedulerName picks its profile; empty means the one that configures Tailor.
	Config, SchedulerName string
	// Catalog is "shipped" (the us-east-1 data in the binary, served by the simulator in
	// process) or "aws" (the live EC2 and Pricing APIs). Zones are the zones the pools have
	// subnets in, for the shipped catalog.
	Catalog string
	Zones   []string
	// Warnings receives what the plan leaves out (plugins not run offline, DaemonSets not
	// counted).
	Warnings io.Writer
}

// Result is a plan and what it was made from.
type Result struct {
	Plan *planning.Plan
	// Existing maps a node given in the manifests to the pending pods that fit it.
	Existing map[string][]*corev1.Pod
	// LowerBound is the plan's LP lower bound in $/h.
	LowerBound float64
	// Skipped lists documents that create no pods.
	Skipped []string
}

// Plan reads the manifests and plans them.
func Plan(ctx context.Context, o Options) (*Result, error) {
	stderr := o.Warnings
	if stderr == nil {
		stderr = io.Discard
	}
	var prof *profile.Profile
	var err error
	if o.Config == "" {
		var example []byte
		if example, err = manifests.LoadSchedulerConfig(); err == nil {
			prof, err = profile.Load(example, o.SchedulerName)
		}
	} else {
		prof, err = profile.LoadFile(o.Config, o.SchedulerName)
	}
	if err != nil {
		return nil, fmt.Errorf("--config: %w", err)
	}
	// The catalog is fetched while the manifests are read: neither needs the other, and each
	// takes a while (HTTP round trips to the simulator or to AWS; YAML parsing).
	fetchCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	fetched := make(chan fetchedCatalog, 1)
	go func() { fetched <- fetchCatalog(fetchCtx, o, prof) }()
	w, err := workload.ReadPaths(o.Files, o.Stdin)
	if err != nil {
		return nil, err
	}
	fw, skippedPlugins, err := prof.NewFramework(ctx)
	if err != nil {
		return nil, err
	}
	slices.Sort(skippedPlugins)
	for _, name := range slices.Compact(skippedPlugins) {
		if name == coscheduling.Name {
			fmt.Fprintf(stderr, "plugin %s is not run offline: the pods of each PodGroup given are placed whole, or listed unschedulable\n", name)
			continue
		}
		fmt.Fprintf(stderr, "plugin %s is not in-tree and is not run offline\n", name)
	}
	cat := <-fetched
	if cat.err != nil {
		return nil, fmt.Errorf("catalog %s: %w", o.Catalog, cat.err)
	}

	pending, existing := scheduleOnExisting(ctx, fw, w)
	var daemons []*planning.Pod
	for _, d := range w.Daemons {
		state, err := fw.PreFilter(ctx, d)
		if err != nil {
			fmt.Fprintf(stderr, "DaemonSet pod %s/%s is not counted on new nodes: %v\n", d.Namespace, d.Name, err)
			continue
		}
		daemons = append(daemons, planning.NewPod(d, &planning.FilterState{Plugins: fw, State: state, Pod: d}))
	}
	cat.offerings.Daemons = func(context.Context) []*planning.Pod { return daemons }
	templates, err := cat.offerings.Templates(ctx)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	res := &Result{Existing: existing, Skipped: w.Skipped}
	var unschedulable []planning.Unschedulable
	var pods []*planning.Pod
	for _, p := range pending {
		if p.err != nil {
			unschedulable = append(unschedulable, planning.Unschedulable{Pod: p.pod, Reason: p.err.Error()})
			continue
		}
		pods = append(pods, planning.NewPod(p.pod, &planning.FilterState{Plugins: fw, State: p.state, Pod: p.pod}))
	}
	pods, gangs, refused := splitGangs(pods, w, existing)
	planner := &planning.Planner{Templates: templates}
	res.Plan = planner.Plan(ctx, pods)
	res.Plan.Unschedulable = append(append(unschedulable, refused...), res.Plan.Unschedulable...)
	if res.LowerBound, err = res.Plan.LowerBound(); err != nil {
		return nil, fmt.Errorf("lower bound: %w", err)
	}
	gangsBound, err := planGangs(ctx, planner, prof.Tailor.GangZonePolicy != config.GangAnyZone, gangs, res.Plan, existing)
	if err != nil {
		return nil, fmt.Errorf("lower bound: %w", err)
	}
	res.LowerBound += gangsBound
	return res, nil
}

// fetchedCatalog is the profile's offerings over the catalog, their caches warmed.
type fetchedCatalog struct {
	offerings *offerings.Cache
	err       error
}

// fetchCatalog builds the profile's offerings over the catalog and loads what their Templates
// read (instance types and prices, each pool's subnets and security groups) into the caches, so
// that Templates later only combines them. A failed load is left for Templates, which tries
// again and reports it as it always has.
func fetchCatalog(ctx context.Context, o Options, prof *profile.Profile) fetchedCatalog {
	provider, err := catalog(ctx, o, prof)
	if err != nil {
		return fetchedCatalog{err: err}
	}
	offs := offerings.New(offerings.Options{Args: prof.Tailor, Cloud: provider})
	if _, err := provider.InstanceTypes(ctx); err == nil {
		for i := range prof.Tailor.Pools {
			if _, err := offs.Network(ctx, &prof.Tailor.Pools[i]); err != nil {
				break
			}
		}
	}
	return fetchedCatalog{offerings: offs}
}

// catalog is the cloud the templates come from: the EC2 simulator serving the shipped data, in
// process, or the real EC2. Either way the catalog is read through the SDK by the same provider
// the scheduler uses.
func catalog(ctx context.Context, o Options, prof *profile.Profile) (cloud.Provider, error) {
	opts := ec2.Options{Region: prof.Tailor.Region, ClusterName: prof.Tailor.ClusterName, KubernetesVersion: prof.Tailor.KubernetesVersion}
	switch o.Catalog {
	case "aws":
		return ec2.New(ctx, opts)
	case "shipped", "":
	default:
		return nil, fmt.Errorf("unsupported catalog %q (shipped or aws)", o.Catalog)
	}
	zones := o.Zones
	if len(zones) == 0 {
		return nil, fmt.Errorf("no zones given for the shipped catalog")
	}
	region := prof.Tailor.Region
	if region == "" {
		region = "us-east-1"
	}
	srv := httptest.NewServer(ec2sim.New(ec2sim.Options{Region: region, ClusterName: prof.Tailor.ClusterName, Zones: zones}))
	// The server lives as long as the command.
	cfg := aws.Config{Region: region, BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}}
	return ec2.NewFromConfig(cfg, opts)
}

// prefiltered is a pending pod with the answer of the profile's PreFilter plugins over the
// snapshot the planner starts from.
type prefiltered struct {
	pod   *corev1.Pod
	state fwk.CycleState
	err   error
	binds int // pods bound to existing nodes when it was asked
}

// scheduleOnExisting binds, as the scheduler would first, every pending pod that the profile's
// Filter plugins accept on a node given in the manifests; the rest are left for the planner,
// with their PreFilter answers over the cluster of those nodes and pods.
func scheduleOnExisting(ctx context.Context, fw *profile.Framework, w *workload.Workload) (pending []prefiltered, existing map[string][]*corev1.Pod) {
	existing = map[string][]*corev1.Pod{}
	var bound, waiting []*corev1.Pod
	for _, p := range w.Pods {
		if p.Spec.NodeName != "" {
			bound = append(bound, p)
		} else {
			waiting = append(waiting, p)
		}
	}
	// Each bound pod changes what the next one sees. The cluster updates the plugins' snapshot
	// by the one node that changed; should the scheduler's cache refuse a pod (two pods of one
	// UID), the snapshot is rebuilt from all the pods instead, as it always was.
	var cluster *profile.Cluster
	if len(w.Nodes) > 0 {
		cluster, _ = fw.NewCluster(ctx, w.Nodes, bound)
	}
	if cluster != nil {
		defer cluster.Close()
	} else {
		fw.SetSnapshot(w.Nodes, bound)
	}
	bind := func(p *corev1.Pod) {
		bound = append(bound, p)
		if cluster != nil && cluster.Bind(ctx, p) == nil {
			return
		}
		cluster = nil
		fw.SetSnapshot(w.Nodes, bound)
	}
	names := make([]string, 0, len(w.Nodes))
	for _, n := range w.Nodes {
		names = append(names, n.Name)
	}
	sort.Strings(names)
	binds := 0
	for _, p := range waiting {
		state, err := fw.PreFilter(ctx, p)
		if err == nil {
			// Filter gets a copy: the planner gets the state as PreFilter left it.
			if name := firstFit(ctx, fw, names, p, state.Clone()); name != "" {
				b := p.DeepCopy()
				b.Spec.NodeName = name
				bind(b)
				binds++
				existing[name] = append(existing[name], p)
				continue
			}
		}
		pending = append(pending, prefiltered{pod: p, state: state, err: err, binds: binds})
	}
	// PreFilter's answer is a function of the pod and the snapshot: one given before the last
	// bind is asked again, the others stand (most pods, once the existing nodes are full).
	for i := range pending {
		if pending[i].binds != binds {
			pending[i].state, pending[i].err = fw.PreFilter(ctx, pending[i].pod)
		}
	}
	return pending, existing
}

// firstFit is the first of the nodes (by name) that the profile's Filter plugins accept p on,
// given its PreFilter state, or "".
func firstFit(ctx context.Context, fw *profile.Framework, names []string, p *corev1.Pod, state fwk.CycleState) string {
	for _, name := range names {
		ni, err := fw.SnapshotSharedLister().NodeInfos().Get(name)
		if err == nil && fw.RunFilterPlugins(ctx, state, p, ni).IsSuccess() {
			return name
		}
	}
	return ""
}
