package consolidation

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// An interrupted node is decided about whatever would keep another node: no budget, no
// do-not-disrupt annotation, no PodDisruptionBudget at zero, no recent activity holds it. Its
// pods get replacements when they fit nowhere else, and none when they do.
func TestDecideInterrupted(t *testing.T) {
	ctx := context.Background()
	prof, fw, its := exampleProfile(t)
	general := prof.Tailor.Pool("general")
	tmpls, err := planning.Templates([]config.Pool{*general}, its, map[string][]string{"general": {"us-east-1a", "us-east-1b"}})
	if err != nil {
		t.Fatal(err)
	}
	var large *planning.Template
	for _, tm := range tmpls {
		if tm.Type.Name == "m6g.xlarge" && tm.Offering.Zone == "us-east-1a" {
			large = tm
		}
	}
	if large == nil {
		t.Fatal("no m6g.xlarge template")
	}
	now := time.Now()
	node := func(name string, interrupted bool, annotations map[string]string) *ownedNode {
		n := large.Node.DeepCopy()
		n.Name = name
		n.Labels[corev1.LabelHostname] = name
		n.Labels[v1alpha1.LabelClaim] = name
		n.CreationTimestamp = metav1.NewTime(now)
		n.Annotations = annotations
		if interrupted {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[v1alpha1.AnnotationInterrupted] = InterruptionSpot
		}
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ClaimSpec{Pool: "general"},
			Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: name, PricePerHour: "0.154"}}
		// Busy just now: consolidation would not look at it for consolidateAfter.
		return &ownedNode{node: n, claim: cl, pool: general, price: 0.154, idleSince: now}
	}
	pod := func(name, nodeName, cpu string, annotations map[string]string, owner string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Labels: map[string]string{"app": "web"}, Annotations: annotations},
			Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("1Gi")}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		if owner != "" {
			p.OwnerReferences = []metav1.OwnerReference{{Kind: owner, Name: "x", Controller: ptrTrue()}}
		}
		return p
	}
	zeroPDB := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec:   policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0}}

	for _, tc := range []struct {
		name         string
		owned        []*ownedNode
		pods         []*corev1.Pod
		pdbs         []*policyv1.PodDisruptionBudget
		wantNode     string // "" means no decision
		wantEvict    int
		replacements bool
	}{
		{name: "pods fit nowhere: replacements first", owned: []*ownedNode{node("a", true, nil)},
			pods:     []*corev1.Pod{pod("p1", "a", "1", nil, "ReplicaSet"), pod("p2", "a", "1", nil, "ReplicaSet")},
			wantNode: "a", wantEvict: 2, replacements: true},
		{name: "pods fit on the other node: a plain drain", owned: []*ownedNode{node("a", true, nil), node("b", false, nil)},
			pods:     []*corev1.Pod{pod("p1", "a", "1", nil, "ReplicaSet")},
			wantNode: "a", wantEvict: 1},
		{name: "nothing keeps it: node and pod do-not-disrupt, a bare pod, a PDB at zero, a DaemonSet pod stays",
			owned: []*ownedNode{node("a", true, map[string]string{v1alpha1.AnnotationDoNotDisrupt: "true"})},
			pods: []*corev1.Pod{pod("p1", "a", "500m", map[string]string{v1alpha1.AnnotationDoNotDisrupt: "true"}, "ReplicaSet"),
				pod("bare", "a", "500m", nil, ""), pod("ds", "a", "100m", nil, "DaemonSet")},
			pdbs:     []*policyv1.PodDisruptionBudget{zeroPDB},
			wantNode: "a", wantEvict: 2, replacements: true},
		{name: "empty interrupted node: drained at once", owned: []*ownedNode{node("a", true, nil)}, wantNode: "a"},
		{name: "not interrupted and busy: kept", owned: []*ownedNode{node("a", false, nil)},
			pods: []*corev1.Pod{pod("p1", "a", "1", nil, "ReplicaSet")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var nodes []*corev1.Node
			for _, o := range tc.owned {
				nodes = append(nodes, o.node)
			}
			// No budget at all: an interruption is not a voluntary disruption.
			s := &snapshot{now: now, nodes: nodes, pods: tc.pods, pdbs: tc.pdbs, owned: tc.owned, budget: map[string]int{"general": 0},
				templates: tmpls, minSavings: 0.1, excluded: map[string]bool{}}
			ds, _ := decide(ctx, s, fw)
			if tc.wantNode == "" {
				if len(ds) != 0 {
					t.Fatalf("decisions %v, want none", describe(ds))
				}
				return
			}
			if len(ds) != 1 || ds[0].node.node.Name != tc.wantNode || ds[0].method != methodInterruption {
				t.Fatalf("decisions %v, want one interruption of %s", describe(ds), tc.wantNode)
			}
			if d := ds[0]; len(d.evict) != tc.wantEvict || (len(d.replacements) > 0) != tc.replacements {
				t.Errorf("evict %d pods, %d replacements; want %d pods, replacements %v", len(d.evict), len(d.replacements), tc.wantEvict, tc.replacements)
			}
		})
	}
}

func describe(ds []decision) []string {
	var out []string
	for _, d := range ds {
		out = append(out, fmt.Sprintf("%s %s (%d pods, %d replacements)", d.method, d.node.node.Name, len(d.evict), len(d.replacements)))
	}
	return out
}

// A rebalance recommendation is an event on the node unless replace, which calls first, marks the
// node for the renew method, and does so once; a node EC2 is already taking away, or one not
// registered, is left alone.
func TestRecommendRebalance(t *testing.T) {
	ctx := context.Background()
	w := newWorld(t)
	for _, tc := range []struct {
		name        string
		replace     bool
		prepare     func(o *ownedNode)
		wantActed   bool
		wantFirst   bool
		wantMarked  bool
		wantEventIn string
	}{
		{name: "advisory", wantActed: true, wantEventIn: "it keeps running (rebalanceRecommendations: Advisory)"},
		{name: "replace", replace: true, wantActed: true, wantFirst: true, wantMarked: true, wantEventIn: "Tailor renews it within pool"},
		{name: "already interrupted", replace: true, prepare: func(o *ownedNode) {
			o.node.Annotations = map[string]string{v1alpha1.AnnotationInterrupted: InterruptionSpot}
		}},
		{name: "already marked", replace: true, prepare: func(o *ownedNode) {
			o.node.Annotations = map[string]string{v1alpha1.AnnotationRebalanceRecommended: "2026-05-01T12:00:00Z"}
		}, wantMarked: true},
		{name: "not registered", replace: true, prepare: func(o *ownedNode) { o.claim.Status.Phase = v1alpha1.ClaimLaunched }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := w.node("a", "m6g.xlarge")
			if tc.prepare != nil {
				tc.prepare(o)
			}
			tw := newTriageWorld(t, w, o)
			firsts := 0
			acted, err := tw.c.RecommendRebalance(ctx, o.claim.Name, tc.replace, func() { firsts++ })
			if err != nil || acted != tc.wantActed {
				t.Fatalf("acted %v, error %v; want %v", acted, err, tc.wantActed)
			}
			if (firsts == 1) != tc.wantFirst || firsts > 1 {
				t.Errorf("first called %d times, want it %v", firsts, tc.wantFirst)
			}
			if marked := tw.node(t).Annotations[v1alpha1.AnnotationRebalanceRecommended] != ""; marked != tc.wantMarked {
				t.Errorf("node marked %v, want %v", marked, tc.wantMarked)
			}
			if tc.wantEventIn == "" {
				return
			}
			select {
			case e := <-tw.c.Recorder.(*events.FakeRecorder).Events:
				if !strings.Contains(e, "RebalanceRecommended") || !strings.Contains(e, tc.wantEventIn) {
					t.Errorf("event %q, want a RebalanceRecommended event saying %q", e, tc.wantEventIn)
				}
			default:
				t.Error("no event on the node")
			}
		})
	}
}
