// Package operator is Tailor's composition root: from the plugin args and the scheduler's
// handle it builds every part (the AWS clients, the claims store, the ledger, the provisioner,
// the lifecycle, consolidation and interruption controllers), wires them to each other and to
// the informers, and runs the controllers under their lease. Nothing else constructs them, so
// each package depends only on the narrow interfaces it is handed here; the scheduler plugin
// (pkg/plugins/provisioner) is a thin adapter over what this builds.
package operator

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
	pginformers "sigs.k8s.io/scheduler-plugins/pkg/generated/informers/externalversions"
	pglisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/apis/config"
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
	"github.com/tailor-eks/tailor/pkg/rollout"
	"github.com/tailor-eks/tailor/pkg/serverversion"
	"github.com/tailor-eks/tailor/pkg/trim"
)

// Operator is every part of Tailor, built and wired.
type Operator struct {
	Args        *config.TailorArgs
	Ledger      *ledger.Ledger
	Provisioner *provisioning.Provisioner
	// Expectations are the claims keeping room for pods still to come, for the plugin's Score.
	Expectations *provisioning.Expectations
	// Rollouts finds the profile's workloads and the pods they still owe.
	Rollouts *rollout.Lister

	handle framework.Handle
	// election renews the tailor-controllers lease (see clients).
	election kubernetes.Interface
	store    *claims.Store
	pods     cache.SharedIndexInformer
	nodes    cache.SharedIndexInformer
	// podGroups informs on Coscheduling's PodGroups, when the profile runs it (else nil).
	podGroups       pginformers.SharedInformerFactory
	podGroupsSynced func() bool
	daemonSets      cache.SharedIndexInformer
	// workloads are the ReplicaSets, StatefulSets and Jobs, whose pods still to come are a
	// scale-up under way, and the Deployments, whose ReplicaSets may still come.
	workloads     []cache.SharedIndexInformer
	offerings     *offerings.Cache
	lifecycle     *lifecycle.Controller
	consolidation *consolidation.Controller
	interruptions *interruption.Controller
}

// Activate moves pods back to the scheduler's active queue.
func Activate(h framework.Handle, logger klog.Logger, ps []*corev1.Pod) {
	m := make(map[string]*corev1.Pod, len(ps))
	for _, p := range ps {
		m[p.Namespace+"/"+p.Name] = p
	}
	if len(m) > 0 {
		h.Activate(logger, m)
	}
}

// NewFromArgs builds Tailor on AWS: the SDK configuration (environment, shared files, IMDS;
// endpoints overridable by AWS_ENDPOINT_URL_*), the EKS cluster's bootstrap settings (which
// nodes cannot join without, so Tailor does not start without them either), the EC2 provider
// and, if configured, the interruption queue. daemons lists the DaemonSet pods new nodes will
// run, upcoming a pod of each workload that has yet to create one (provisioning's Upcoming);
// configFile is the scheduler's --config.
func NewFromArgs(ctx context.Context, args *config.TailorArgs, h framework.Handle, daemons func(context.Context) []*planning.Pod, upcoming func() []*planning.Pod, configFile string) (*Operator, error) {
	// First: on a control plane too old for this scheduler nothing else would work, and the
	// scheduler would wait for caches of APIs it does not serve, saying nothing.
	controlPlane, err := serverversion.Start(ctx, h.ClientSet().Discovery())
	if err != nil {
		return nil, err
	}
	go controlPlane.Run(ctx)
	cfg, err := ec2.LoadConfig(ctx, args.Region)
	if err != nil {
		return nil, err
	}
	cluster, err := eks.Resolve(ctx, eks.NewClient(cfg), args.ClusterName, eks.Cluster{
		Endpoint: args.ClusterEndpoint, CABundle: args.ClusterCABundle, ServiceCIDR: args.ServiceCIDR, IPFamily: args.IPFamily,
	})
	if err != nil {
		return nil, err
	}
	provider, err := ec2.NewFromConfig(cfg, ec2.Options{
		ClusterName: args.ClusterName, KubernetesVersion: args.KubernetesVersion, KubernetesVersionFrom: controlPlane.Current,
		ClusterEndpoint: cluster.Endpoint, ClusterCertificateAuthority: cluster.CABundle,
		ClusterCIDR: cluster.ServiceCIDR, IPFamily: cluster.IPFamily,
	})
	if err != nil {
		return nil, fmt.Errorf("EC2 client: %w", err)
	}
	klog.FromContext(ctx).Info("Cluster bootstrap settings", "endpoint", cluster.Endpoint, "serviceCIDR", cluster.ServiceCIDR, "ipFamily", cluster.IPFamily)
	var queue interruption.Queue
	if args.InterruptionQueue != "" {
		queue = sqs.New(sqs.NewClient(cfg), args.InterruptionQueue)
	}
	return New(ctx, args, h, provider, queue, cfg.Region, daemons, upcoming, configFile)
}

// New builds Tailor on a given cloud provider. queue is the interruption queue (nil:
// interruption handling off), region the cluster's.
func New(ctx context.Context, args *config.TailorArgs, h framework.Handle, provider cloud.Provider, queue interruption.Queue, region string, daemons func(context.Context) []*planning.Pod, upcoming func() []*planning.Pod, configFile string) (*Operator, error) {
	logger := klog.FromContext(ctx)
	store, err := claims.NewStore(h.KubeConfig())
	if err != nil {
		return nil, fmt.Errorf("claims client: %w", err)
	}
	cs, err := newClients(h)
	if err != nil {
		return nil, err
	}
	pods := h.SharedInformerFactory().Core().V1().Pods()
	nodes := h.SharedInformerFactory().Core().V1().Nodes()
	daemonSets := h.SharedInformerFactory().Apps().V1().DaemonSets()
	pdbs := h.SharedInformerFactory().Policy().V1().PodDisruptionBudgets()
	// Informers must be requested here, before the scheduler starts the factory, or they never
	// run; the consolidation framework's plugins ask for theirs as they are built.
	daemonSets.Informer()
	pdbs.Informer()
	if err := indexByNamespace(pods.Informer()); err != nil {
		return nil, fmt.Errorf("indexing pods by namespace: %w", err)
	}
	replicaSets, statefulSets, jobs := h.SharedInformerFactory().Apps().V1().ReplicaSets(), h.SharedInformerFactory().Apps().V1().StatefulSets(),
		h.SharedInformerFactory().Batch().V1().Jobs()
	deployments := h.SharedInformerFactory().Apps().V1().Deployments()
	trimManagedFields(logger, pods.Informer(), nodes.Informer(), daemonSets.Informer(), pdbs.Informer(), replicaSets.Informer(),
		statefulSets.Informer(), jobs.Informer(), deployments.Informer())
	rollouts := &rollout.Lister{ReplicaSets: replicaSets.Lister(), StatefulSets: statefulSets.Lister(), Jobs: jobs.Lister(), Deployments: deployments.Lister(), Pods: pods.Lister()}
	prof, consolidationFramework, err := consolidationProfile(ctx, h, configFile)
	if err != nil {
		return nil, err
	}
	rollouts.SchedulerName = prof.Config.SchedulerName
	// The room kept for a workload's pods still to come stands while it has pods to place.
	expectations := &provisioning.Expectations{Waiting: func(x v1alpha1.ExpectedPods) bool {
		w, ok := rollouts.Get(x.Kind, x.Namespace, x.Name, types.UID(x.UID))
		return ok && w.Wants > rollouts.Placed(w)
	}, DaemonSetExists: func(d v1alpha1.DaemonPod) bool {
		ds, err := daemonSets.Lister().DaemonSets(d.Namespace).Get(d.Name)
		return err == nil && string(ds.UID) == d.UID && ds.DeletionTimestamp == nil
	}}
	o := &Operator{Args: args, Ledger: ledger.New(), Expectations: expectations, Rollouts: rollouts, handle: h, election: cs.election, store: store,
		pods: pods.Informer(), nodes: nodes.Informer(), daemonSets: daemonSets.Informer(),
		workloads: []cache.SharedIndexInformer{replicaSets.Informer(), statefulSets.Informer(), jobs.Informer(), deployments.Informer()}}
	observed := &catalog.Observed{}
	recorder := boundedRecorder{h.EventRecorder()}
	activate := func(ps []*corev1.Pod) { Activate(h, logger, ps) }
	offs := offerings.New(offerings.Options{Args: args, Cloud: provider, Daemons: daemons, Observed: observed, ReservedInFlight: store.ReservedInFlight})
	o.offerings = offs
	podGroups, err := o.watchPodGroups(h, prof)
	if err != nil {
		return nil, err
	}
	o.Provisioner = provisioning.New(provisioning.Options{
		Args: args, Cloud: provider, Claims: store, Ledger: o.Ledger,
		Recorder: recorder, Pods: pods.Lister(), Nodes: nodes.Lister(), Activate: activate,
		Offerings: offs, Rollouts: rollouts, Upcoming: upcoming, PodGroups: podGroups, PodGroupsSynced: o.podGroupsSynced,
	})
	o.registerMetrics()
	if err := o.forgetDeletedPods(); err != nil {
		return nil, err
	}
	reservations := o.Provisioner.Reservations()
	o.lifecycle = &lifecycle.Controller{
		Args: args, Cloud: provider, Claims: store, Demand: reservations, Offerings: offs,
		Client: cs.controllers, Nodes: nodes.Lister(), NodeInformer: nodes.Informer(),
		Recorder: recorder, Observed: observed,
	}
	o.consolidation = &consolidation.Controller{
		Args: args, Cloud: provider, Claims: store, Client: cs.controllers,
		Nodes: nodes.Lister(), NodeInformer: nodes.Informer(), Pods: pods.Lister(), PodInformer: pods.Informer(), PDBs: pdbs.Lister(),
		Framework: consolidationFramework, Offerings: offs, Replacements: reservations, Recorder: recorder,
		SchedulerName: prof.Config.SchedulerName, Provisioning: o.Provisioner.Active, Rollouts: rollouts,
		Gangs: podGroups != nil,
	}
	o.lifecycle.EndingCapacityBlock = func(ctx context.Context, claim string, late bool) error {
		kind := consolidation.InterruptionCapacityBlock
		if late {
			kind = consolidation.InterruptionCapacityBlockLate
		}
		_, err := o.consolidation.Interrupt(ctx, claim, kind, func() {})
		return err
	}
	if queue != nil {
		o.interruptions = &interruption.Controller{Queue: queue, Claims: store, Disrupter: o.consolidation, Offerings: offs, Region: region,
			RebalanceReplace: args.RebalanceRecommendations == config.RebalanceReplace}
	}
	if err := o.followClaims(reservations); err != nil {
		return nil, err
	}
	return o, nil
}

// watchPodGroups starts an informer on Coscheduling's PodGroups if the profile runs Coscheduling,
// and returns their lister (nil otherwise: gangs are then pods like any other).
func (o *Operator) watchPodGroups(h framework.Handle, prof *profile.Profile) (pglisters.PodGroupLister, error) {
	if !prof.Enables(coscheduling.Name) || h.KubeConfig() == nil {
		return nil, nil
	}
	cfg := rest.CopyConfig(h.KubeConfig())
	cfg.ContentType = "application/json" // custom resources have no protobuf encoding
	client, err := pgclientset.NewForConfig(ownLimiter(cfg, "tailor-podgroups"))
	if err != nil {
		return nil, fmt.Errorf("PodGroups client: %w", err)
	}
	o.podGroups = pginformers.NewSharedInformerFactory(client, 0)
	podGroups := o.podGroups.Scheduling().V1alpha1().PodGroups()
	o.podGroupsSynced = podGroups.Informer().HasSynced
	return podGroups.Lister(), nil
}

// consolidationProfile loads the scheduler's profile from its configuration file (the handle
// names the profile) and builds its plugins again, for consolidation's own questions.
func consolidationProfile(ctx context.Context, h framework.Handle, configFile string) (*profile.Profile, *profile.Framework, error) {
	if configFile == "" {
		return nil, nil, fmt.Errorf("the scheduler needs --config (the profile's plugins are rebuilt from it for consolidation)")
	}
	profileName := ""
	if named, ok := h.(interface{ ProfileName() string }); ok {
		profileName = named.ProfileName()
	}
	prof, err := profile.LoadFile(configFile, profileName)
	if err != nil {
		return nil, nil, err
	}
	fw, skipped, err := prof.NewFrameworkFor(ctx, h.ClientSet(), h.SharedInformerFactory())
	if err != nil {
		return nil, nil, err
	}
	if len(skipped) > 0 {
		klog.FromContext(ctx).Info("Consolidation runs without the out-of-tree plugins of the profile", "plugins", skipped)
	}
	return prof, fw, nil
}

// registerMetrics registers every metric: every replica serves them from the start, leader or
// not.
func (o *Operator) registerMetrics() {
	poolNames := make([]string, len(o.Args.Pools))
	for i := range o.Args.Pools {
		poolNames[i] = o.Args.Pools[i].Name
	}
	metrics.Register(metrics.State{PodsWaiting: o.Provisioner.Waiting, Claims: o.store.List, Pools: poolNames, GangsWaiting: o.Provisioner.GangsWaiting})
	consolidation.RegisterMetrics()
	interruption.RegisterMetrics()
}

// forgetDeletedPods has provisioning forget a pod once it is deleted.
func (o *Operator) forgetDeletedPods() error {
	_, err := o.pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: func(obj interface{}) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if p, ok := obj.(*corev1.Pod); ok {
				o.Provisioner.Forget(p.UID)
			}
		},
	})
	return err
}

// followClaims keeps the ledger and the expectations on the claims: every replica (leader or
// standby) knows which pods wait on which claim, and a claim deleted by anyone releases its pods.
func (o *Operator) followClaims(reservations *provisioning.Reservations) error {
	return o.store.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			cl := obj.(*v1alpha1.Claim)
			reservations.Rebuild([]*v1alpha1.Claim{cl})
			o.Expectations.Follow(cl)
			o.Provisioner.FollowGangClaim(cl, false)
		},
		UpdateFunc: func(old, obj interface{}) {
			cl := obj.(*v1alpha1.Claim)
			reservations.Follow(old.(*v1alpha1.Claim), cl)
			o.Expectations.Follow(cl)
			o.Provisioner.FollowGangClaim(cl, false)
			if cl.DeletionTimestamp != nil {
				o.consolidation.Prompt() // someone deleted it: drain its node now
			}
		},
		DeleteFunc: func(obj interface{}) {
			cl := obj.(*v1alpha1.Claim)
			reservations.Release(cl)
			o.Expectations.Forget(cl.Name)
			o.Provisioner.FollowGangClaim(cl, true)
		},
	})
}

// Start runs Tailor in the background until ctx ends: the claims cache, then, once the caches
// have synced, onReady, the provisioner, and (on the replica holding the tailor-controllers
// lease) lifecycle, consolidation and interruption handling.
func (o *Operator) Start(ctx context.Context, onReady func()) {
	logger := klog.FromContext(ctx)
	go func() {
		if err := o.store.Run(ctx); err != nil {
			logger.Error(err, "Claims cache did not start")
			return
		}
		synced := []cache.InformerSynced{o.pods.HasSynced, o.nodes.HasSynced, o.daemonSets.HasSynced}
		for _, inf := range o.workloads {
			synced = append(synced, inf.HasSynced)
		}
		if o.podGroups != nil {
			// Not waited for: without the PodGroup CRD it never syncs, and Tailor must still
			// serve every other pod. Until it has, gangs are held (provisioning/gangs.go).
			o.podGroups.Start(ctx.Done())
		}
		if !cache.WaitForCacheSync(ctx.Done(), synced...) {
			return
		}
		o.Provisioner.Reservations().Rebuild(o.store.List())
		logger.Info("Tailor ready", "cluster", o.Args.ClusterName, "pools", len(o.Args.Pools))
		onReady()
		go o.warmOfferings(ctx)
		go o.Provisioner.Run(ctx)
		// Launches, registration and garbage collection act on the cloud: one replica at a time,
		// under Tailor's own lease (the scheduler's lease only covers scheduling).
		runLeaderElected(ctx, o.election, "tailor-controllers", func(ctx context.Context) {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := o.consolidation.Run(ctx); err != nil {
					logger.Error(err, "Consolidation stopped")
				}
			}()
			// Interruptions are acted on by the same leader as consolidation, whose loop
			// replaces and drains the nodes.
			if o.interruptions != nil {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := o.interruptions.Run(ctx); err != nil {
						logger.Error(err, "Interruption handling stopped")
					}
				}()
			}
			if err := o.lifecycle.Run(ctx); err != nil {
				logger.Error(err, "Lifecycle controller stopped")
			}
			wg.Wait()
		})
	}()
}

// warmOfferings loads the instance catalog, prices and pools' networks, and builds the
// templates, as soon as the caches have synced. Left to the first batch, its pods waited for
// them (several AWS calls, some paginated), and the catalog's decoding garbage added to the
// batch's own planning at the scheduler's memory peak. A failure is only logged: the first
// batch asks again.
func (o *Operator) warmOfferings(ctx context.Context) {
	start := time.Now()
	for {
		templates, err := o.offerings.Templates(ctx)
		if err == nil {
			klog.FromContext(ctx).Info("Instance catalog loaded", "templates", len(templates), "duration", time.Since(start))
			return
		}
		if ctx.Err() != nil {
			return
		}
		klog.FromContext(ctx).Error(err, "Could not load the instance catalog yet; trying again (a batch meanwhile tries too)", "after", warmRetry)
		select {
		case <-ctx.Done():
			return
		case <-time.After(warmRetry):
		}
	}
}

// warmRetry is how long warmOfferings waits after a failed load.
const warmRetry = 10 * time.Second

// indexByNamespace gives an informer a namespace index unless it has one. kube-scheduler's pod
// informer has none, and the rollout lister lists pods by namespace: without the index each
// list scans every pod of the cluster.
// trimManagedFields has the informers Tailor reads, the scheduler's own among them, drop managed
// fields (trim.ManagedFields). The factory has not started them yet; one started already (a
// second profile's plugin) keeps the transform it was given then.
func trimManagedFields(logger klog.Logger, infs ...cache.SharedIndexInformer) {
	for _, inf := range infs {
		if err := inf.SetTransform(trim.ManagedFields); err != nil {
			logger.V(2).Info("Informer keeps its managed fields", "err", err)
		}
	}
}

func indexByNamespace(informer cache.SharedIndexInformer) error {
	if _, ok := informer.GetIndexer().GetIndexers()[cache.NamespaceIndex]; ok {
		return nil
	}
	return informer.AddIndexers(cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}
