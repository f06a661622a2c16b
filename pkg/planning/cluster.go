package planning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Cluster is the nodes that run now, with their pods, as the planner sees them when it repacks
// pods onto them (consolidation asks: if these nodes went away, where would their pods go?).
// Build it once per pass; Repack leaves it as it found it, so one Cluster serves many questions.
type Cluster struct {
	dims   *dims
	nodes  []*clusterNode
	byName map[string]*clusterNode
}

type clusterNode struct {
	name     string
	info     *framework.NodeInfo
	capacity vec
	used     vec
}

// NewCluster indexes nodes and the pods bound to them (pods on other nodes are ignored).
func NewCluster(nodes []*corev1.Node, pods []*corev1.Pod) *Cluster {
	cl := &Cluster{dims: newDims(), byName: make(map[string]*clusterNode, len(nodes))}
	for _, n := range nodes {
		cn := &clusterNode{name: n.Name, info: filterInfo(n), capacity: cl.dims.vec(n.Status.Allocatable, false)}
		cl.nodes = append(cl.nodes, cn)
		cl.byName[n.Name] = cn
	}
	for _, p := range pods {
		cn, ok := cl.byName[p.Spec.NodeName]
		if !ok {
			continue
		}
		cn.info.AddPod(p)
		cn.used = cn.used.add(cl.dims.vec(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}), true))
	}
	return cl
}

// Fits says whether p fits the cluster's node as it is now: its requests within the node's free
// room, and the Filter plugins letting it on.
func (cl *Cluster) Fits(ctx context.Context, p *Pod, node string) bool {
	cn, ok := cl.byName[node]
	return ok && p.Filter != nil && fits(cn.capacity, cn.used, cl.dims.vec(p.Requests, true)) && p.Filter.Filter(ctx, cn.info) == ""
}

// Repacked is where pods would go.
type Repacked struct {
	*Plan
	// Moves maps a pod to the node of the cluster it fits on.
	Moves map[types.UID]string
}

// Repack places pods, which run on the removed nodes, onto the cluster's other nodes and, where
// they do not fit, onto new nodes of the planner's templates (none: no new nodes). Every
// placement is the Filter plugins' verdict with the removed nodes' pods taken out of each pod's
// state (the PreFilter extensions' RemovePod) and the pods placed so far added.
func (pl *Planner) Repack(ctx context.Context, cl *Cluster, removed []string, pods []*Pod) *Repacked {
	ps := pl.newPlanState(ctx, cl)
	if pl.verdictsOf != cl {
		pl.verdicts, pl.verdictsOf = map[uint64]*verdict{}, cl
	}
	ps.verdicts = pl.verdicts
	gone := make(map[string]bool, len(removed))
	for _, name := range removed {
		if cn, ok := cl.byName[name]; ok {
			gone[name] = true
			ps.removed = append(ps.removed, cn)
		}
	}
	for _, cn := range cl.nodes {
		if !gone[cn.name] {
			ps.nodes = append(ps.nodes, &openNode{name: cn.name, template: -1, capacity: cn.capacity, info: cn.info,
				used: append(vec(nil), cn.used...), classes: map[*class]bool{}})
		}
	}
	existing := len(ps.nodes)
	plan := ps.run(pods)
	out := &Repacked{Plan: plan, Moves: map[types.UID]string{}}
	logger := klog.FromContext(ctx)
	for _, n := range ps.nodes[:existing] {
		for _, p := range n.pods {
			out.Moves[p.Pod.UID] = n.name
			// The cluster's NodeInfo is shared between questions: take the trial pods off again.
			if err := n.info.RemovePod(logger, p.Pod); err != nil {
				logger.Error(err, "Cannot undo a trial placement", "node", n.name, "pod", klog.KObj(p.Pod))
			}
		}
	}
	return out
}
