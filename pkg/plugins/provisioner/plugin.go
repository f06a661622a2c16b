// Package provisioner is the Tailor scheduler plugin: a thin adapter that hands pods the
// scheduler could not place to the provisioner (PostFilter), nominates them to the capacity
// launched for them, and keeps the ledger of in-flight capacity true (Reserve/Unreserve).
package provisioner

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/cloud/eks"
	"github.com/tailor-eks/tailor/pkg/cloud/sqs"
	"github.com/tailor-eks/tailor/pkg/consolidation"
	"github.com/tailor-eks/tailor/pkg/interruption"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/provisioning"
)

// Name is the plugin's name in profiles; its args kind is TailorArgs.
const Name = "Tailor"

// Plugin implements PostFilter, Reserve and Unreserve.
type Plugin struct {
	handle  framework.Handle
	args    *config.TailorArgs
	ledger  *ledger.Ledger
	prov    *provisioning.Provisioner
	daemons *daemons
	ready   atomic.Bool

	// starting holds pods that failed while Tailor was starting; they are activated once it is
	// ready instead of waiting for the scheduler's periodic flush.
	startingMu sync.Mutex
	starting   []*corev1.Pod
}

var (
	_ framework.PostFilterPlugin = &Plugin{}
	_ framework.ReservePlugin    = &Plugin{}
)

// NewFactory returns the plugin's factory. configFile is the scheduler's --config: consolidation
// builds the profile's plugins again from it, to ask them where pods would go if a node went
// away (the scheduler does not hand plugins its profile).
func NewFactory(configFile string) func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return func(ctx context.Context, obj runtime.Object, h framework.Handle) (framework.Plugin, error) {
		args, ok := obj.(*config.TailorArgs)
		if !ok {
			return nil, fmt.Errorf("%s: want args of type TailorArgs, got %T", Name, obj)
		}
		if err := validation.ValidateTailorArgs(field.NewPath("TailorArgs"), args); err != nil {
			return nil, fmt.Errorf("%s: invalid plugin args: %w", Name, err)
		}
		cfg, err := ec2.LoadConfig(ctx, args.Region)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		// Nodes cannot join without these, so Tailor does not start without them either.
		cluster, err := eks.Resolve(ctx, eks.NewClient(cfg), args.ClusterName, eks.Cluster{
			Endpoint: args.ClusterEndpoint, CABundle: args.ClusterCABundle, ServiceCIDR: args.ServiceCIDR, IPFamily: args.IPFamily,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		provider, err := ec2.NewFromConfig(cfg, ec2.Options{
			ClusterName: args.ClusterName, KubernetesVersion: args.KubernetesVersion,
			ClusterEndpoint: cluster.Endpoint, ClusterCertificateAuthority: cluster.CABundle,
			ClusterCIDR: cluster.ServiceCIDR, IPFamily: cluster.IPFamily,
		})
		if err != nil {
			return nil, fmt.Errorf("%s: EC2 client: %w", Name, err)
		}
		klog.FromContext(ctx).Info("Cluster bootstrap settings", "endpoint", cluster.Endpoint, "serviceCIDR", cluster.ServiceCIDR, "ipFamily", cluster.IPFamily)
		var queue interruption.Queue
		if args.InterruptionQueue != "" {
			queue = sqs.New(sqs.NewClient(cfg), args.InterruptionQueue)
		}
		return NewWithCloud(ctx, args, h, provider, queue, cfg.Region, configFile)
	}
}

// NewWithCloud builds the plugin on a given cloud provider. queue is the interruption queue
// (nil: interruption handling off), region the cluster's.
func NewWithCloud(ctx context.Context, args *config.TailorArgs, h framework.Handle, provider cloud.Provider, queue interruption.Queue, region, configFile string) (*Plugin, error) {
	logger := klog.FromContext(ctx).WithName(Name)
	ctx = klog.NewContext(ctx, logger)
	store, err := claims.NewStore(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("%s: claims client: %w", Name, err)
	}
	pods := h.SharedInformerFactory().Core().V1().Pods()
	nodes := h.SharedInformerFactory().Core().V1().Nodes()
	daemonSets := h.SharedInformerFactory().Apps().V1().DaemonSets()
	pdbs := h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets()
	// Informers must be requested here, before the scheduler starts the factory, or they never
	// run; the consolidation framework's plugins ask for theirs as they are built.
	daemonSets.Informer()
	pdbs.Informer()
	if configFile == "" {
		return nil, fmt.Errorf("%s: the scheduler needs --config (the profile's plugins are rebuilt from it for consolidation)", Name)
	}
	profileName := ""
	if named, ok := h.(interface{ ProfileName() string }); ok {
		profileName = named.ProfileName()
	}
	prof, err := profile.LoadFile(configFile, profileName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	consolidationFramework, skipped, err := prof.NewFrameworkFor(ctx, h.ClientSet(), h.SharedInformerFactory())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	if len(skipped) > 0 {
		logger.Info("Consolidation runs without the out-of-tree plugins of the profile", "plugins", skipped)
	}
	pl := &Plugin{handle: h, args: args, ledger: ledger.New(), daemons: &daemons{handle: h, lister: daemonSets.Lister()}}
	observed := &catalog.Observed{}
	activate := func(ps []*corev1.Pod) {
		m := make(map[string]*corev1.Pod, len(ps))
		for _, p := range ps {
			m[p.Namespace+"/"+p.Name] = p
		}
		if len(m) > 0 {
			h.Activate(logger, m)
		}
	}
	offs := offerings.New(offerings.Options{Args: args, Cloud: provider, Daemons: pl.daemons.list, Observed: observed})
	pl.prov = provisioning.New(provisioning.Options{
		Args: args, Cloud: provider, Claims: store, Ledger: pl.ledger,
		Recorder: h.EventRecorder(), Pods: pods.Lister(), Activate: activate,
		Offerings: offs,
	})
	// Every replica serves the metrics from the start, leader or not.
	poolNames := make([]string, len(args.Pools))
	for i := range args.Pools {
		poolNames[i] = args.Pools[i].Name
	}
	metrics.Register(metrics.State{PodsWaiting: pl.prov.Waiting, Claims: store.List, Pools: poolNames})
	consolidation.RegisterMetrics()
	interruption.RegisterMetrics()
	if _, err := pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				pl.ledger.Forget(p.UID)
			}
		},
	}); err != nil {
		return nil, err
	}
	lc := &lifecycle.Controller{
		Args: args, Cloud: provider, Claims: store, Ledger: pl.ledger, Launcher: pl.prov.Launcher(),
		Client: h.ClientSet(), Nodes: nodes.Lister(), NodeInformer: nodes.Informer(),
		Recorder: h.EventRecorder(), Activate: activate, Observed: observed,
	}
	cons := &consolidation.Controller{
		Args: args, Cloud: provider, Claims: store, Client: h.ClientSet(),
		Nodes: nodes.Lister(), NodeInformer: nodes.Informer(), Pods: pods.Lister(), PodInformer: pods.Informer(), PDBs: pdbs.Lister(),
		Framework: consolidationFramework, Offerings: offs, Launcher: pl.prov.Launcher(), Recorder: h.EventRecorder(),
	}
	var interruptions *interruption.Controller
	if queue != nil {
		interruptions = &interruption.Controller{Queue: queue, Claims: store, Disrupter: cons, Offerings: offs, Region: region}
	}
	// The ledger follows the claims: every replica (leader or standby) knows which pods wait on
	// which claim, and a claim deleted by anyone releases its pods.
	launcher := pl.prov.Launcher()
	if err := store.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { launcher.Rebuild([]*v1alpha1.Claim{obj.(*v1alpha1.Claim)}) },
		UpdateFunc: func(old, obj interface{}) {
			cl := obj.(*v1alpha1.Claim)
			launcher.Follow(old.(*v1alpha1.Claim), cl)
			if cl.DeletionTimestamp != nil {
				cons.Prompt() // someone deleted it: drain its node now
			}
		},
		DeleteFunc: func(obj interface{}) { launcher.Release(obj.(*v1alpha1.Claim)) },
	}); err != nil {
		return nil, err
	}
	go func() {
		if err := store.Run(ctx); err != nil {
			logger.Error(err, "Claims cache did not start")
			return
		}
		if !cache.WaitForCacheSync(ctx.Done(), pods.Informer().HasSynced, nodes.Informer().HasSynced, daemonSets.Informer().HasSynced) {
			return
		}
		launcher.Rebuild(store.List())
		pl.ready.Store(true)
		logger.Info("Tailor ready", "cluster", args.ClusterName, "pools", len(args.Pools))
		pl.startingMu.Lock()
		activate(pl.starting)
		pl.starting = nil
		pl.startingMu.Unlock()
		go pl.prov.Run(ctx)
		// Launch resumption, registration and garbage collection act on the cloud: one replica
		// at a time, under Tailor's own lease (the scheduler's lease only covers scheduling).
		runLeaderElected(ctx, h, "tailor-controllers", func(ctx context.Context) {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := cons.Run(ctx); err != nil {
					logger.Error(err, "Consolidation stopped")
				}
			}()
			// Interruptions are acted on by the same leader as consolidation, whose loop
			// replaces and drains the nodes.
			if interruptions != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := interruptions.Run(ctx); err != nil {
						logger.Error(err, "Interruption handling stopped")
					}
				}()
			}
			if err := lc.Run(ctx); err != nil {
				logger.Error(err, "Lifecycle controller stopped")
			}
			wg.Wait()
		})
	}()
	return pl, nil
}

// Name returns the plugin name.
func (pl *Plugin) Name() string { return Name }

// PostFilter runs when no existing node fits the pod. A pod already planned onto a claim is
// nominated to its node; any other pod goes to the batcher. It never blocks the scheduling loop.
func (pl *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, _ framework.NodeToStatusReader) (*framework.PostFilterResult, *fwk.Status) {
	if r, ok := pl.ledger.Lookup(pod.UID); ok {
		switch {
		case r.NodeName == "":
			return nil, fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("waiting for claim %s to launch", r.Claim))
		case pl.failedOnRegisteredNode(r.NodeName):
			// The node it was planned for is up and still refused it (others took the room):
			// plan it again.
			pl.ledger.Forget(pod.UID)
			pl.handle.EventRecorder().Eventf(pod, nil, corev1.EventTypeNormal, "Replanning", "Provisioning",
				"node %s of claim %s is ready but no longer holds this pod; planning again", r.NodeName, r.Claim)
		default:
			return &framework.PostFilterResult{NominatingInfo: &framework.NominatingInfo{NominatedNodeName: r.NodeName, NominatingMode: framework.ModeOverride}},
				fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("waiting for node %s of claim %s", r.NodeName, r.Claim))
		}
	}
	if !pl.ready.Load() {
		pl.startingMu.Lock()
		pl.starting = append(pl.starting, pod)
		pl.startingMu.Unlock()
		return nil, fwk.NewStatus(fwk.Unschedulable, "Tailor is starting")
	}
	pl.daemons.refresh(ctx)
	// The planner asks the profile's Filter plugins with the state this cycle computed.
	pl.prov.Enqueue(planning.NewPod(pod, &planning.FilterState{Plugins: pl.handle, State: state.Clone(), Pod: pod}))
	return nil, fwk.NewStatus(fwk.Unschedulable, "waiting for capacity: Tailor is planning a launch")
}

// failedOnRegisteredNode tells whether the pod's planned node is up, Ready and free of every
// taint that marks a node still starting (Tailor's, the pool's startup taints, the node
// lifecycle's not-ready/uninitialized ones), so this scheduling attempt really tried it and the
// pod no longer fits there.
func (pl *Plugin) failedOnRegisteredNode(name string) bool {
	ni, err := pl.handle.SnapshotSharedLister().NodeInfos().Get(name)
	if err != nil || ni.Node() == nil {
		return false
	}
	return lifecycle.Ready(ni.Node()) && !lifecycle.Starting(pl.args, ni.Node())
}

// Reserve takes the pod off its claim: it has a node now.
func (pl *Plugin) Reserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) *fwk.Status {
	pl.ledger.Consume(pod.UID)
	return nil
}

// Unreserve puts the pod back on its claim: binding failed.
func (pl *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *corev1.Pod, _ string) {
	pl.ledger.Unconsume(pod.UID)
}
