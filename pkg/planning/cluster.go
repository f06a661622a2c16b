package planning

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// Cluster is the nodes that run now, with their pods, as the planner sees them when it repacks
// pods onto them (consolidation asks: if these nodes went away, where would their pods go?).
// Build it once per pass; Repack leaves it as it found it, so one Cluster serves many questions.
// Its NodeInfos are also what the plugins' PreFilter reads (profile.Framework.SetNodeInfos): a
// pass holds one NodeInfo per node, not a snapshot's and the planner's.
type Cluster struct {
	dims *dims
	// nodes are those pods may be repacked onto; byName indexes them.
	nodes  []*clusterNode
	byName map[string]*clusterNode
	// all are every node, open to pods or not, by name; infos their NodeInfos in nodes' order.
	all   map[string]*clusterNode
	infos []fwk.NodeInfo
	// scratch are Repack's nodes of the cluster, one per open node in nodes' order, made on the
	// first question and reset for each next one: a pass asks hundreds of questions of the same
	// nodes, and they are asked one at a time (Repack puts trial pods on the shared NodeInfos).
	scratch []openNode
}

type clusterNode struct {
	name     string
	info     *framework.NodeInfo
	capacity vec
	used     vec
}

// NewCluster indexes nodes and the pods bound to them (pods on other nodes are ignored). Pods
// are repacked only onto the nodes open says yes to (nil: every node); the others' pods still
// count for the plugins (topology spread, inter-pod affinity). The pods' PodInfos come from
// infos when given (nil: made here).
func NewCluster(nodes []*corev1.Node, pods []*corev1.Pod, open func(*corev1.Node) bool, infos *PodInfos) *Cluster {
	cl := &Cluster{dims: newDims(), byName: map[string]*clusterNode{}, all: make(map[string]*clusterNode, len(nodes)),
		infos: make([]fwk.NodeInfo, 0, len(nodes))}
	for _, n := range nodes {
		cn := &clusterNode{name: n.Name, info: filterInfo(n), capacity: cl.dims.vec(n.Status.Allocatable, false)}
		cl.all[n.Name] = cn
		cl.infos = append(cl.infos, cn.info)
		if open == nil || open(n) {
			cl.nodes = append(cl.nodes, cn)
			cl.byName[n.Name] = cn
		}
	}
	for _, p := range pods {
		cn, ok := cl.all[p.Spec.NodeName]
		if !ok {
			continue
		}
		if pi := infos.Get(p); pi != nil {
			cn.info.AddPodInfo(pi)
		} else {
			cn.info.AddPod(p)
		}
	}
	for _, cn := range cl.all {
		cn.used = cl.dims.requested(cn.info)
	}
	return cl
}

// Bind adds p, bound to one of the cluster's nodes, to that node; a pod bound elsewhere is
// ignored. A PreFilter state computed before reads the cluster as it was.
func (cl *Cluster) Bind(p *corev1.Pod) {
	cn, ok := cl.all[p.Spec.NodeName]
	if !ok {
		return
	}
	cn.info.AddPod(p)
	cn.used = cl.dims.requested(cn.info)
}

// NodeInfos are every node's NodeInfo, with its pods. Their allocatable is inflated (see
// filterInfo): the planner's own arithmetic decides room, so a PreFilter plugin that reads
// free room from the snapshot (Coscheduling's minResources) sees room without bound.
func (cl *Cluster) NodeInfos() []fwk.NodeInfo { return cl.infos }

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
	if cl.scratch == nil {
		cl.scratch = make([]openNode, len(cl.nodes))
		for i, cn := range cl.nodes {
			cl.scratch[i] = openNode{name: cn.name, template: -1, capacity: cn.capacity, info: cn.info, classes: map[*class]bool{}}
		}
	}
	for i, cn := range cl.nodes {
		if gone[cn.name] {
			continue
		}
		n := &cl.scratch[i]
		n.used = append(n.used[:0], cn.used...)
		n.pods, n.members = n.pods[:0], n.members[:0]
		clear(n.classes)
		ps.nodes = append(ps.nodes, n)
	}
	existing := len(ps.nodes)
	plan := ps.run(pods)
	// The plan state holds the scratch nodes the next question resets: nothing may read it later.
	plan.state = nil
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
