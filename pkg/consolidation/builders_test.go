package consolidation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// world builds the snapshots of decision tests by hand: nodes of the example profile's general
// pool (in us-east-1a, with a disruption setting each test may change), pods on them, and the
// pool's templates for replacements.
type world struct {
	t         testing.TB
	fw        *profile.Framework
	pool      *config.Pool
	templates []*planning.Template
	now       time.Time
}

func newWorld(t testing.TB) *world {
	t.Helper()
	prof, fw, its := exampleProfile(t)
	pool := *prof.Tailor.Pool("general")
	pool.Disruption = config.Disruption{ConsolidationPolicy: config.WhenEmptyOrUnderutilized, ConsolidateAfter: metav1.Duration{Duration: 30 * time.Second}}
	tmpls, err := planning.Templates([]config.Pool{pool}, its, map[string][]string{"general": {"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	return &world{t: t, fw: fw, pool: &pool, templates: tmpls, now: time.Now()}
}

// nodeOpt changes a node as built.
type nodeOpt func(w *world, o *ownedNode)

// node is a Registered node of type typ (its template's price), an hour old and idle as long.
func (w *world) node(name, typ string, opts ...nodeOpt) *ownedNode {
	w.t.Helper()
	var tm *planning.Template
	for _, c := range w.templates {
		if c.Type.Name == typ && c.Offering.CapacityType == cloud.OnDemand {
			tm = c
		}
	}
	if tm == nil {
		w.t.Fatalf("no on-demand %s template", typ)
	}
	n := tm.Node.DeepCopy()
	n.Name = name
	n.Labels[corev1.LabelHostname] = name
	n.Labels[v1alpha1.LabelClaim] = name
	n.CreationTimestamp = metav1.NewTime(w.now.Add(-time.Hour))
	price := tm.Offering.PricePerHour
	cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{v1alpha1.AnnotationPoolHash: w.pool.LaunchHash()}},
		Spec:   v1alpha1.ClaimSpec{Pool: w.pool.Name},
		Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: name, PricePerHour: fmt.Sprint(price)}}
	o := &ownedNode{node: n, claim: cl, pool: w.pool, price: price, idleSince: w.now.Add(-time.Hour)}
	for _, opt := range opts {
		opt(w, o)
	}
	return o
}

// drifted: launched with other settings than the pool's now.
func drifted(_ *world, o *ownedNode) {
	o.claim.Annotations[v1alpha1.AnnotationPoolHash] = "launched-before"
}

// busy: a pod arrived just now.
func busy(w *world, o *ownedNode) { o.idleSince = w.now }

// annotated puts an annotation on the node.
func annotated(key, value string) nodeOpt {
	return func(_ *world, o *ownedNode) {
		if o.node.Annotations == nil {
			o.node.Annotations = map[string]string{}
		}
		o.node.Annotations[key] = value
	}
}

// createdAgo says when the node was created.
func createdAgo(d time.Duration) nodeOpt {
	return func(w *world, o *ownedNode) { o.node.CreationTimestamp = metav1.NewTime(w.now.Add(-d)) }
}

// podOpt changes a pod as built.
type podOpt func(p *corev1.Pod)

// pod is a running ReplicaSet pod on node asking for cpu and 1Gi.
func (w *world) pod(name, node, cpu string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{"app": name},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: name, Controller: ptrTrue()}}},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning},
	}
	for _, opt := range opts {
		opt(p)
	}
	return p
}

// annotatedPod puts an annotation on the pod.
func annotatedPod(key, value string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[key] = value
	}
}

// ownedBy makes kind the pod's controller; "" leaves it bare.
func ownedBy(kind string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = nil
		if kind != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: ptrTrue()}}
		}
	}
}

// snapshot is a pass's view of owned and pods, the pool allowed budget more disruptions.
func (w *world) snapshot(budget int, owned []*ownedNode, pods ...*corev1.Pod) *snapshot {
	s := &snapshot{now: w.now, pods: pods, owned: owned, budget: map[string]int{w.pool.Name: budget}, templates: w.templates,
		minSavings: 0.1, excluded: map[string]bool{}}
	for _, o := range owned {
		s.nodes = append(s.nodes, o.node)
	}
	return s
}

// summary is one line per decision: method, nodes, pods evicted and replacements.
func summary(ds []decision) string {
	var out []string
	for _, d := range ds {
		var names []string
		for _, o := range d.nodes() {
			names = append(names, o.node.Name)
		}
		out = append(out, fmt.Sprintf("%s %s (%d pods, %d new)", d.method, strings.Join(names, "+"), len(d.evict), len(d.replacements)))
	}
	return strings.Join(out, "; ")
}

// keptSummary is one line per node kept: its name and why.
func keptSummary(kept []skipped) string {
	var out []string
	for _, k := range kept {
		out = append(out, k.node.node.Name+": "+k.why)
	}
	return strings.Join(out, "; ")
}

// checkDecisions fails unless ds and kept are as summarised; a kept reason need only contain
// the wanted text.
func checkDecisions(t *testing.T, ds []decision, kept []skipped, want string, wantKept ...string) {
	t.Helper()
	if got := summary(ds); got != want {
		t.Errorf("decisions %q, want %q", got, want)
	}
	if len(kept) != len(wantKept) {
		t.Fatalf("kept %q, want %d: %q", keptSummary(kept), len(wantKept), wantKept)
	}
	for i, k := range kept {
		if got := k.node.node.Name + ": " + k.why; !strings.HasPrefix(got, strings.SplitN(wantKept[i], ": ", 2)[0]+": ") || !strings.Contains(got, strings.SplitN(wantKept[i], ": ", 2)[1]) {
			t.Errorf("kept[%d] %q, want %q", i, got, wantKept[i])
		}
	}
}

// decisionCase is a hand-built cluster and what deciding about it gives: the decisions as
// summary has them, and the nodes kept as checkDecisions wants them.
type decisionCase struct {
	name string
	// pool, if set, changes the pool's disruption settings for the case.
	pool   func(w *world)
	budget int
	build  func(w *world) ([]*ownedNode, []*corev1.Pod)
	want   string
	kept   []string
}

// run checks each case against decideIn, the pool restored after each.
func (w *world) run(t *testing.T, cases []decisionCase, decideIn func(s *snapshot) ([]decision, []skipped)) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			saved := *w.pool
			defer func() { *w.pool = saved }()
			if tc.pool != nil {
				tc.pool(w)
			}
			// Each case is decided as tests build snapshots (every question makes its own
			// PodInfos) and as the controller does (one PodInfo per pod, shared by the cluster
			// and the questions): the answers must not differ.
			for _, infos := range []*planning.PodInfos{nil, planning.NewPodInfos()} {
				name := "own PodInfos"
				if infos != nil {
					name = "shared PodInfos"
				}
				t.Run(name, func(t *testing.T) {
					owned, pods := tc.build(w)
					s := w.snapshot(tc.budget, owned, pods...)
					s.podInfos = infos
					ds, kept := decideIn(s)
					checkDecisions(t, ds, kept, tc.want, tc.kept...)
				})
			}
		})
	}
}

// decide is decide() over s.
func (w *world) decide(s *snapshot) ([]decision, []skipped) {
	return decide(context.Background(), s, w.fw)
}

// only runs the method m alone over s, as decide would: on the candidates it wants, in a pass
// of its own.
func (w *world) only(m method) func(s *snapshot) ([]decision, []skipped) {
	return func(s *snapshot) ([]decision, []skipped) {
		cs, _ := candidates(s)
		return m.compute(newPass(context.Background(), s, w.fw), wanted(m, s, cs))
	}
}

// expiring gives the pool an expireAfter of 30 minutes (the world's nodes are an hour old).
func expiring(w *world) { w.pool.Disruption.ExpireAfter = metav1.Duration{Duration: 30 * time.Minute} }

// whenEmpty consolidates the pool only when its nodes are empty.
func whenEmpty(w *world) { w.pool.Disruption.ConsolidationPolicy = config.WhenEmpty }

// nodes is its arguments, so that a case's build reads as one line.
func nodes(os ...*ownedNode) []*ownedNode { return os }

// pods is its arguments.
func pods(ps ...*corev1.Pod) []*corev1.Pod { return ps }
