package consolidation

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// questions asks the planner where pods would go, with a PreFilter state computed once per pass
// for each set of alike pods.
type questions struct {
	ctx     context.Context
	fw      *profile.Framework
	s       *snapshot
	cluster *planning.Cluster
	// alike are the pass's moving pods, one per set of alike pods (nil: PreFilter refuses them),
	// with the set's PreFilter state, requests and class key: the planner asks a class's state
	// only of its first pod, and alike pods get the same state and requests, so a pass over
	// thousands of pods holds a handful of each, and a question computes none of them again.
	// keys remembers each pod's key.
	alike map[stateKey]*planning.Pod
	keys  map[*corev1.Pod]stateKey
	// unbound are the pass's unbound copies of bound pods: a pod is asked about in many
	// questions (delete, merge, replace), and nothing changes a copy.
	unbound map[*corev1.Pod]*corev1.Pod
	// planner is shared by the questions that may launch, so template nodes are built once.
	planner *planning.Planner
	// gone are nodes already decided away in this pass.
	gone []string
	// placed says whether the pods on their way are placed (see place); landing are the nodes
	// they were placed on: their room is taken.
	placed  bool
	landing map[string]bool
	// arriving are the distinct pods on their way, with their PreFilter states, for couldLand
	// (nil until asked).
	arriving []*planning.Pod
}

// newQuestions sets the framework's snapshot to s and returns the pass's questions.
func newQuestions(ctx context.Context, s *snapshot, fw *profile.Framework) *questions {
	q := &questions{ctx: ctx, fw: fw, s: s, alike: map[stateKey]*planning.Pod{}, keys: map[*corev1.Pod]stateKey{},
		unbound: map[*corev1.Pod]*corev1.Pod{}, planner: &planning.Planner{Templates: s.templates}, landing: map[string]bool{}}
	if s.podInfos != nil {
		// A round per pass that asks questions: quiet passes keep the infos.
		s.podInfos.Rotate()
	}
	q.setCluster(s.pods)
	return q
}

// setCluster makes pods (bound to the snapshot's nodes) the cluster the questions are asked of.
func (q *questions) setCluster(pods []*corev1.Pod) {
	q.cluster = planning.NewCluster(q.s.nodes, pods, func(n *corev1.Node) bool { return schedulable(n, q.s.excluded) }, q.s.podInfos)
	q.fw.SetNodeInfos(q.cluster.NodeInfos())
	// A PreFilter state reads the snapshot it was computed on.
	clear(q.alike)
}

// place puts the pods on their way to a node (s.arriving) where the Filter plugins let them go,
// once per pass, before the first question that moves pods or asks where they landed: every
// such question sees them there, so room a pending pod needs is never free. Those that fit
// nowhere are left to provisioning: they need new capacity, not the room there is. A pass that
// only asks whether an empty node could take one (couldLand) never places them.
func (q *questions) place() {
	if q.placed {
		return
	}
	q.placed = true
	if len(q.s.arriving) == 0 {
		return
	}
	moving := make([]*planning.Pod, 0, len(q.s.arriving))
	for _, p := range q.s.arriving {
		if mp := q.moving(p); mp != nil {
			moving = append(moving, mp)
		}
	}
	r := (&planning.Planner{}).Repack(q.ctx, q.cluster, nil, moving)
	for _, mp := range moving {
		if node, ok := r.Moves[mp.Pod.UID]; ok {
			q.cluster.Bind(boundTo(mp.Pod, node))
			q.landing[node] = true
		}
	}
	if len(q.landing) > 0 {
		// The states were computed before the pods were placed.
		clear(q.alike)
	}
}

// landed says whether a pod on its way was placed on node.
func (q *questions) landed(node string) bool {
	q.place()
	return q.landing[node]
}

// couldLand says whether a pod on its way could be bound to node as the cluster is now: room
// for its requests and the Filter plugins' leave. The scheduler need not pick the node the
// questions would place the pod on: its scores favour the emptiest node that fits, so an empty
// node any such pod fits is where it may well be going. Only the distinct pods are asked (a
// template's replicas are one), so a burst's thousands of pending pods cost a handful of
// PreFilter runs.
func (q *questions) couldLand(node string) bool {
	if q.arriving == nil {
		q.arriving = []*planning.Pod{}
		seen := map[stateKey]bool{}
		for _, p := range q.s.arriving {
			// moving keys p once per pass; pods of one key share a state and a verdict.
			if mp := q.moving(p); mp != nil && !seen[q.keys[p]] {
				seen[q.keys[p]] = true
				q.arriving = append(q.arriving, mp)
			}
		}
	}
	for _, mp := range q.arriving {
		if q.cluster.Fits(q.ctx, mp, node) {
			return true
		}
	}
	return false
}

// repack asks where the pods of the decisions' nodes would go if those nodes went away, onto the
// other nodes and new nodes of templates. It returns nil if some pod would have nowhere to go.
func (q *questions) repack(templates []*planning.Template, ds []decision) *planning.Repacked {
	q.place()
	removed := append([]string(nil), q.gone...)
	var moving []*planning.Pod
	for _, d := range ds {
		removed = append(removed, d.node.node.Name)
		for _, p := range d.evict {
			mp := q.moving(p)
			if mp == nil {
				return nil
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

// moving is p as a pod to place, unbound (a bound pod fits only its own node), with the PreFilter
// state, requests and class key of its alike pods; nil if PreFilter refuses it. The planning.Pod
// is the question's alone; the unbound copy and what alike pods share are the pass's.
func (q *questions) moving(p *corev1.Pod) *planning.Pod {
	c := p
	if p.Spec.NodeName != "" {
		if c = q.unbound[p]; c == nil {
			c = boundTo(p, "")
			q.unbound[p] = c
		}
	}
	var mp *planning.Pod
	k, keyed := q.keys[p]
	if !keyed {
		mp = planning.Keyed(planning.NewPod(c, nil))
		k = keyOf(mp)
		q.keys[p] = k
	}
	proto, known := q.alike[k]
	if !known {
		if mp == nil {
			mp = planning.Keyed(planning.NewPod(c, nil))
		}
		if state, err := q.fw.PreFilter(q.ctx, c); err == nil {
			mp.Filter = &planning.FilterState{Plugins: q.fw, State: state, Pod: c}
			proto = mp
		}
		q.alike[k] = proto
	}
	if proto == nil {
		return nil
	}
	mp = proto.For(c)
	// The PodInfo of p as the cluster holds it: its requests and terms are computed once (while
	// p is unchanged), not once per question.
	if pi := q.s.podInfos.Get(p); pi != nil {
		mp.WithPodInfo(pi)
	}
	return mp
}

// stateKey names the pods that share a PreFilter state: alike pods, except that a pod whose
// PreFilter reads objects named after it (a generic ephemeral volume's claim, a claim made from
// a ResourceClaim template) has a state of its own.
type stateKey struct {
	alike planning.AlikeKey
	own   types.UID
}

func keyOf(p *planning.Pod) stateKey {
	k := stateKey{alike: planning.Alike(p)}
	if ownsObjects(p.Pod) {
		k.own = p.Pod.UID
	}
	return k
}

// ownsObjects says whether the pod has objects made for it alone.
func ownsObjects(p *corev1.Pod) bool {
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil {
			return true
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Ephemeral != nil {
			return true
		}
	}
	return false
}

// boundTo is p as if bound to node ("": unbound), for the questions of a pass. It is a shallow
// copy: the rest is the informer's object, which nobody changes, so a pass that asks about
// every pod of the cluster holds a Pod struct per pod, not a second copy of each.
func boundTo(p *corev1.Pod, node string) *corev1.Pod {
	c := *p
	c.Spec.NodeName = node
	return &c
}
