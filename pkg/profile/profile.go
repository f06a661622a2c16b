// Package profile builds a scheduler profile's plugins without a running scheduler, from the same
// KubeSchedulerConfiguration the scheduler reads. The plan command, the planner's property test
// and its benchmarks use it to get each pod's PreFilter state, so every verdict they see comes
// from the real Filter plugins with the profile's own arguments.
package profile

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/scheme"
)

// TailorPlugin is the name of Tailor's plugin in profiles.
const TailorPlugin = "Tailor"

// Profile is one profile of a KubeSchedulerConfiguration: the one that runs Tailor.
type Profile struct {
	Config *schedconfig.KubeSchedulerProfile
	Tailor *config.TailorArgs
}

// LoadFile reads a KubeSchedulerConfiguration file; see Load.
func LoadFile(path, schedulerName string) (*Profile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	p, err := Load(data, schedulerName)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}

// Load decodes a KubeSchedulerConfiguration strictly and defaulted, as the scheduler does, and
// returns the profile named schedulerName, or, if that is empty, the profile whose plugin
// config has Tailor's args.
func Load(data []byte, schedulerName string) (*Profile, error) {
	codecs := serializer.NewCodecFactory(scheme.Scheme, serializer.EnableStrict)
	obj, _, err := codecs.UniversalDecoder().Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("want a KubeSchedulerConfiguration, got %T", obj)
	}
	for i := range cfg.Profiles {
		prof := &cfg.Profiles[i]
		if schedulerName != "" && prof.SchedulerName != schedulerName {
			continue
		}
		for _, pc := range prof.PluginConfig {
			if args, ok := pc.Args.(*config.TailorArgs); ok {
				return &Profile{Config: prof, Tailor: args}, nil
			}
		}
		if schedulerName != "" {
			return nil, fmt.Errorf("profiles[%d] (%s) has no %s plugin args", i, prof.SchedulerName, TailorPlugin)
		}
	}
	if schedulerName != "" {
		return nil, fmt.Errorf("no profile has schedulerName %q", schedulerName)
	}
	return nil, fmt.Errorf("no profile configures the %s plugin", TailorPlugin)
}

// Enables says whether the profile enables the named plugin at some extension point, multiPoint
// included.
func (p *Profile) Enables(plugin string) bool {
	if p.Config.Plugins == nil {
		return false
	}
	pl := p.Config.Plugins
	for _, set := range []*schedconfig.PluginSet{&pl.MultiPoint, &pl.QueueSort, &pl.PreFilter, &pl.Filter, &pl.PostFilter, &pl.Reserve, &pl.Permit} {
		for _, e := range set.Enabled {
			if e.Name == plugin {
				return true
			}
		}
	}
	return false
}

// Framework is the profile's in-tree plugins over a snapshot of nodes and pods that the caller
// sets. It has no API server: informer-backed listers stay empty (no PVCs, no namespaces beyond
// what pods name), which is what an offline plan assumes.
type Framework struct {
	framework.Framework
	lister *snapshotLister
}

// NewFramework instantiates the profile's in-tree plugins with no cluster behind them: their
// informer-backed listers stay empty. Plugins that are not in-tree (Tailor itself, out-of-tree
// ones) are left out and named in skipped.
func (p *Profile) NewFramework(ctx context.Context) (fw *Framework, skipped []string, err error) {
	// A client that is never used: nothing here talks to an API server, and informers are
	// never started, so listers answer from empty caches.
	client := kubernetes.NewForConfigOrDie(&restclient.Config{Host: "http://offline.invalid"})
	return p.NewFrameworkFor(ctx, client, informers.NewSharedInformerFactory(client, 0))
}

// NewFrameworkFor instantiates the profile's in-tree plugins on a cluster's client and informers
// (the scheduler's own, so they share caches). Call it before the factory starts: the plugins
// ask for their informers when built.
func (p *Profile) NewFrameworkFor(ctx context.Context, client kubernetes.Interface, factory informers.SharedInformerFactory) (fw *Framework, skipped []string, err error) {
	// The framework counts plugin calls in the scheduler's metrics, which must exist.
	metrics.Register()
	registry := plugins.NewInTreeRegistry()
	prof := p.Config.DeepCopy()
	keep := func(set *schedconfig.PluginSet) {
		var enabled []schedconfig.Plugin
		for _, pl := range set.Enabled {
			if _, ok := registry[pl.Name]; ok {
				enabled = append(enabled, pl)
			} else if pl.Name != TailorPlugin {
				skipped = append(skipped, pl.Name)
			}
		}
		set.Enabled = enabled
	}
	if prof.Plugins != nil {
		for _, set := range []*schedconfig.PluginSet{&prof.Plugins.MultiPoint, &prof.Plugins.PreEnqueue, &prof.Plugins.QueueSort, &prof.Plugins.PreFilter, &prof.Plugins.Filter,
			&prof.Plugins.PostFilter, &prof.Plugins.PreScore, &prof.Plugins.Score, &prof.Plugins.Reserve, &prof.Plugins.Permit, &prof.Plugins.PreBind, &prof.Plugins.Bind, &prof.Plugins.PostBind} {
			keep(set)
		}
		if len(prof.Plugins.QueueSort.Enabled) == 0 && len(skipped) > 0 {
			// The profile sorts its queue with an out-of-tree plugin (Coscheduling's), left
			// out, in place of the default one it disables: this framework has no queue, but a
			// profile needs one sort plugin, and the default (multiPoint's PrioritySort) will do.
			prof.Plugins.QueueSort.Disabled = nil
		}
	}
	var pcs []schedconfig.PluginConfig
	for _, pc := range prof.PluginConfig {
		if _, ok := registry[pc.Name]; ok {
			pcs = append(pcs, pc)
		}
	}
	prof.PluginConfig = pcs
	lister := &snapshotLister{snapshot: cache.NewEmptySnapshot()}
	f, err := frameworkruntime.NewFramework(ctx, registry, prof,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(factory),
		frameworkruntime.WithSnapshotSharedLister(lister),
		frameworkruntime.WithEventRecorder(events.NewFakeRecorder(0)),
	)
	if err != nil {
		return nil, skipped, fmt.Errorf("building profile %s: %w", p.Config.SchedulerName, err)
	}
	return &Framework{Framework: f, lister: lister}, skipped, nil
}

// SetSnapshot makes nodes (with the pods bound to them) the cluster the plugins see. Pods bound
// to a node not in nodes (deleted meanwhile, or not yet in the caller's cache) are left out:
// cache.NewSnapshot would give them a NodeInfo without a Node, which in-tree plugins (topology
// spread's PreFilter among them) dereference without a check, as the scheduler's own cache never
// lists one.
func (f *Framework) SetSnapshot(nodes []*corev1.Node, pods []*corev1.Pod) {
	f.lister.snapshot = cache.NewSnapshot(onNodes(pods, nodes), nodes)
}

// SetNodeInfos makes infos the cluster the plugins see. They stay the caller's, who built them
// (planning.Cluster's, so that a consolidation pass holds one NodeInfo per node, not two) and may
// add pods to them between plugin calls. Each must have its Node, as SetSnapshot ensures.
func (f *Framework) SetNodeInfos(infos []fwk.NodeInfo) {
	f.lister.snapshot = newInfoLister(infos)
}

// onNodes returns the pods bound to one of nodes.
func onNodes(pods []*corev1.Pod, nodes []*corev1.Node) []*corev1.Pod {
	names := make(map[string]bool, len(nodes))
	for _, n := range nodes {
		names[n.Name] = true
	}
	out := make([]*corev1.Pod, 0, len(pods))
	for _, p := range pods {
		if names[p.Spec.NodeName] {
			out = append(out, p)
		}
	}
	return out
}

// PreFilter runs the profile's PreFilter plugins for pod against the snapshot and returns the
// state its Filter plugins read. A pod the PreFilter plugins reject gets an error saying why, and
// so does one a plugin panics on: that fails this question, never the process (a panic in a
// plugin's parallel workers excepted: kube-scheduler's parallelizer crashes the process on it).
func (f *Framework) PreFilter(ctx context.Context, pod *corev1.Pod) (state fwk.CycleState, err error) {
	defer func() {
		if r := recover(); r != nil {
			klog.FromContext(ctx).Error(fmt.Errorf("%v", r), "A scheduler plugin panicked in PreFilter; this question fails",
				"pod", klog.KObj(pod), "stack", string(debug.Stack()))
			state, err = nil, fmt.Errorf("a scheduler plugin panicked in PreFilter: %v", r)
		}
	}()
	cs := framework.NewCycleState()
	if _, s, _ := f.RunPreFilterPlugins(ctx, cs, pod); !s.IsSuccess() && !s.IsSkip() {
		return nil, fmt.Errorf("%s", s.Message())
	}
	return cs, nil
}

// snapshotLister lets the snapshot change under a framework built once.
type snapshotLister struct{ snapshot framework.SharedLister }

func (l *snapshotLister) NodeInfos() framework.NodeInfoLister       { return l.snapshot.NodeInfos() }
func (l *snapshotLister) StorageInfos() framework.StorageInfoLister { return l.snapshot.StorageInfos() }
