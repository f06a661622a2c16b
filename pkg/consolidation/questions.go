package consolidation

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// questions asks the planner where pods would go, with each pod's PreFilter state computed once
// per pass.
type questions struct {
	ctx     context.Context
	fw      *profile.Framework
	cluster *planning.Cluster
	states  map[*corev1.Pod]*planning.Pod
	// planner is shared by the questions that may launch, so template nodes are built once.
	planner *planning.Planner
	// gone are nodes already decided away in this pass.
	gone []string
	// landing are the nodes pods on their way (pending, or leaving a draining node) were placed
	// on: their room is taken.
	landing map[string]bool
	// arriving are the pods on their way, one per controller (its replicas fit the same nodes).
	arriving []*planning.Pod
}

// newQuestions sets the framework's snapshot to s and returns the pass's questions. The pods on
// their way to a node (s.arriving) are placed first, where the Filter plugins let them go, and
// every later question sees them there: room a pending pod needs is never free.
func newQuestions(ctx context.Context, s *snapshot, fw *profile.Framework) *questions {
	q := &questions{ctx: ctx, fw: fw, states: map[*corev1.Pod]*planning.Pod{}, planner: &planning.Planner{Templates: s.templates},
		landing: map[string]bool{}}
	q.setCluster(s, s.pods)
	if len(s.arriving) > 0 {
		if placed := q.placeArriving(s.arriving); len(placed) > 0 {
			q.setCluster(s, append(slices.Clip(s.pods), placed...))
		}
	}
	return q
}

// setCluster makes pods (bound to s's nodes) the cluster the questions are asked of.
func (q *questions) setCluster(s *snapshot, pods []*corev1.Pod) {
	q.fw.SetSnapshot(s.nodes, pods)
	q.cluster = planning.NewCluster(schedulable(s.nodes, s.excluded), pods)
	// A PreFilter state reads the snapshot it was computed on.
	clear(q.states)
}

// placeArriving places unbound pods onto the cluster's nodes as the planner would, and returns
// bound copies of those that fit, noting their nodes in landing. Those that fit nowhere are left
// to provisioning: they need new capacity, not the room there is.
func (q *questions) placeArriving(arriving []*corev1.Pod) []*corev1.Pod {
	moving := make([]*planning.Pod, 0, len(arriving))
	for _, p := range arriving {
		state, err := q.fw.PreFilter(q.ctx, p)
		if err != nil {
			continue
		}
		moving = append(moving, planning.NewPod(p, &planning.FilterState{Plugins: q.fw, State: state, Pod: p}))
	}
	r := (&planning.Planner{}).Repack(q.ctx, q.cluster, nil, moving)
	var placed []*corev1.Pod
	for _, mp := range moving {
		if node, ok := r.Moves[mp.Pod.UID]; ok {
			placed = append(placed, boundTo(mp.Pod, node))
			q.landing[node] = true
		}
	}
	q.arriving = onePerController(moving)
	return placed
}

// couldLand says whether a pod on its way could be bound to node as the cluster is now. The
// scheduler need not pick the node the questions placed the pod on: its scores favour the
// emptiest node that fits, so an empty node any such pod fits is where it may well be going.
func (q *questions) couldLand(node string) bool {
	for _, mp := range q.arriving {
		if q.cluster.Fits(q.ctx, mp, node) {
			return true
		}
	}
	return false
}

// onePerController keeps the first of pods for each controller; pods without one all stay.
func onePerController(pods []*planning.Pod) []*planning.Pod {
	seen := map[types.UID]bool{}
	var out []*planning.Pod
	for _, mp := range pods {
		if ref := metav1.GetControllerOf(mp.Pod); ref != nil {
			if seen[ref.UID] {
				continue
			}
			seen[ref.UID] = true
		}
		out = append(out, mp)
	}
	return out
}

// repack asks where the pods of the decisions' nodes would go if those nodes went away, onto the
// other nodes and new nodes of templates. It returns nil if some pod would have nowhere to go.
func (q *questions) repack(templates []*planning.Template, ds []decision) *planning.Repacked {
	removed := append([]string(nil), q.gone...)
	var moving []*planning.Pod
	for _, d := range ds {
		removed = append(removed, d.node.node.Name)
		for _, p := range d.evict {
			mp, ok := q.states[p]
			if !ok {
				// Asked of an unbound copy: a bound pod fits only its own node.
				c := boundTo(p, "")
				state, err := q.fw.PreFilter(q.ctx, c)
				if err != nil {
					return nil
				}
				mp = planning.NewPod(c, &planning.FilterState{Plugins: q.fw, State: state, Pod: c})
				q.states[p] = mp
			}
			moving = append(moving, mp)
		}
	}
	planner := &planning.Planner{}
	if len(templates) > 0 {
		planner = q.planner
	}
	r := planner.Repack(q.ctx, q.cluster, removed, moving)
	if len(r.Unschedulable) > 0 {
		return nil
	}
	return r
}

// replaceIfNeeded gives d the new nodes its pods need, if they fit nowhere else and templates
// can hold them; else d stays a plain drain, after which its pods are provisioned as usual.
// Later questions of the pass see d's node gone, so two nodes going in one pass never each
// count on the other's room.
func (q *questions) replaceIfNeeded(templates []*planning.Template, d *decision) {
	if r := q.repack(templates, []decision{*d}); r != nil && len(r.Nodes) > 0 {
		d.replacements = r.Nodes
	}
	q.gone = append(q.gone, d.node.node.Name)
}

// cheaper asks whether the nodes of set can go, their pods moving to the other nodes and to new
// nodes cheaper together than set by the fraction minSavings: no churn for pennies. The decision
// it returns takes set (the first as its node) and launches the new nodes; the caller names the
// method and says why. before and after are the hourly prices of set and of the new nodes.
func (q *questions) cheaper(set []*candidate, templates []*planning.Template, minSavings float64) (d decision, before, after float64, ok bool) {
	ds := make([]decision, len(set))
	for i, c := range set {
		ds[i] = decision{node: c.ownedNode, evict: c.evict}
		before += c.price
		d.evict = append(d.evict, c.evict...)
		if i > 0 {
			d.others = append(d.others, c.ownedNode)
		}
	}
	r := q.repack(templates, ds)
	if r == nil {
		return decision{}, 0, 0, false
	}
	after = r.PricePerHour()
	if after > before*(1-minSavings) {
		return decision{}, 0, 0, false
	}
	d.node, d.replacements = set[0].ownedNode, r.Nodes
	return d, before, after, true
}

// boundTo is p as if bound to node ("": unbound), for the questions of a pass. It is a shallow
// copy: the rest is the informer's object, which nobody changes, so a pass that asks about
// every pod of the cluster holds a Pod struct per pod, not a second copy of each.
func boundTo(p *corev1.Pod, node string) *corev1.Pod {
	c := *p
	c.Spec.NodeName = node
	return &c
}
