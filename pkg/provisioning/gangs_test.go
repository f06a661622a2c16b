package provisioning

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	schedlisters "sigs.k8s.io/scheduler-plugins/pkg/generated/listers/scheduling/v1alpha1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/fake"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/profile/profiletest"
)

// gangWorld is a Provisioner of a reservations world that knows the PodGroups it is given, with
// a recorder whose events the test reads.
type gangWorld struct {
	*reservationsWorld
	p        *Provisioner
	groups   cache.Indexer
	recorder *events.FakeRecorder
}

func newGangWorld(t *testing.T, opts ...func(*Options)) *gangWorld {
	t.Helper()
	lw := newReservationsWorld(t)
	groups := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	recorder := events.NewFakeRecorder(100)
	o := lw.l.Options
	o.PodGroups = schedlisters.NewPodGroupLister(groups)
	o.Recorder = recorder
	for _, opt := range opts {
		opt(&o)
	}
	lw.l = NewReservations(o)
	return &gangWorld{reservationsWorld: lw, p: New(o), groups: groups, recorder: recorder}
}

// podGroup adds PodGroup default/name wanting minMember pods.
func (w *gangWorld) podGroup(t *testing.T, name string, minMember int32) {
	t.Helper()
	pg := &schedv1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("pg-" + name)},
		Spec: schedv1alpha1.PodGroupSpec{MinMember: minMember}}
	if err := w.groups.Add(pg); err != nil {
		t.Fatal(err)
	}
}

// gangMember is a pod of the test: of PodGroup group ("" for none), in the batch or not, bound
// to a node, or waiting on a claim in the ledger.
type gangMember struct {
	name, group string
	inBatch     bool
	bound       bool
	onClaim     bool
}

// add puts the pod in the pod cache (and the ledger, if on a claim) and returns it as the batch
// holds it.
func (w *gangWorld) add(t *testing.T, m gangMember) *planning.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: m.name, UID: types.UID("uid-" + m.name)}}
	if m.group != "" {
		p.Labels = map[string]string{schedv1alpha1.PodGroupLabel: m.group}
	}
	if m.bound {
		p.Spec.NodeName = "node-1"
	}
	if err := w.pods.Add(p); err != nil {
		t.Fatal(err)
	}
	if m.onClaim {
		w.l.Ledger.Add("claim-"+m.name, "", []types.UID{p.UID})
	}
	return planning.NewPod(p, nil)
}

// drain returns the events recorded so far.
func (w *gangWorld) drain() []string {
	var out []string
	for {
		select {
		case e := <-w.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func podNames(pods []*planning.Pod) []string {
	out := []string{}
	for _, p := range pods {
		out = append(out, p.Pod.Name)
	}
	slices.Sort(out)
	return out
}

// waitingNone is GangsWaiting with no gang waiting.
func waitingNone() map[string]int {
	return map[string]int{GangIncomplete: 0, GangNoPodGroup: 0, GangPoolLimit: 0, GangUnplannable: 0, GangNotRecorded: 0}
}

// waitingWith is GangsWaiting with one gang waiting for reason.
func waitingWith(reason string) map[string]int {
	out := waitingNone()
	out[reason] = 1
	return out
}

// A batch's pods of no PodGroup are planned as they are; a gang is planned on its own once its
// PodGroup exists, minMember of its pods exist and those in the batch and those placed (bound,
// or on a claim) make minMember. A gang whose PodGroup is missing or that has fewer pods than
// minMember is told why (on its PodGroup, if any, and each pod) and counted waiting; one whose
// siblings exist but are not in the batch yet is held for the next batch, and told nothing.
func TestSplitGangs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		groups  map[string]int32 // PodGroup name → minMember
		members []gangMember
		// wantSolo are the pods planned as they are, wantReady each ready gang's pods, wantHeld
		// the pods held for the next batch.
		wantSolo  []string
		wantReady map[string][]string
		wantHeld  []string
		// wantEvents is how many GangNotProvisioned events are recorded, each saying wantWhy.
		wantEvents  int
		wantWhy     string
		wantWaiting map[string]int
	}{
		{
			name:        "pods of no PodGroup stay solo",
			members:     []gangMember{{name: "a", inBatch: true}, {name: "b", inBatch: true}},
			wantSolo:    []string{"a", "b"},
			wantWaiting: waitingNone(),
		},
		{
			name:        "a gang whose PodGroup does not exist gets nothing",
			members:     []gangMember{{name: "solo", inBatch: true}, {name: "t0", group: "train", inBatch: true}, {name: "t1", group: "train", inBatch: true}},
			wantSolo:    []string{"solo"},
			wantEvents:  2, // its pods: there is no PodGroup to tell
			wantWhy:     "PodGroup default/train does not exist",
			wantWaiting: waitingWith(GangNoPodGroup),
		},
		{
			name:        "a gang with fewer pods than minMember gets nothing",
			groups:      map[string]int32{"train": 3},
			members:     []gangMember{{name: "t0", group: "train", inBatch: true}, {name: "t1", group: "train", inBatch: true}},
			wantEvents:  3, // the PodGroup and its two pods
			wantWhy:     "has 2 of its minMember 3 pods",
			wantWaiting: waitingWith(GangIncomplete),
		},
		{
			name:   "a gang whose siblings exist but wait elsewhere is held",
			groups: map[string]int32{"train": 3},
			members: []gangMember{{name: "solo", inBatch: true}, {name: "t0", group: "train", inBatch: true}, {name: "t1", group: "train", inBatch: true},
				{name: "t2", group: "train"}},
			wantSolo:    []string{"solo"},
			wantHeld:    []string{"t0", "t1"},
			wantWaiting: waitingNone(),
		},
		{
			name:   "a sibling bound and one on a claim count toward minMember",
			groups: map[string]int32{"train": 3},
			members: []gangMember{{name: "t0", group: "train", inBatch: true}, {name: "t1", group: "train", bound: true},
				{name: "t2", group: "train", onClaim: true}},
			wantReady:   map[string][]string{"default/train": {"t0"}},
			wantWaiting: waitingNone(),
		},
		{
			name:   "a complete gang is ready, apart from the others",
			groups: map[string]int32{"train": 3, "eval": 2},
			members: []gangMember{{name: "solo", inBatch: true}, {name: "t0", group: "train", inBatch: true}, {name: "t1", group: "train", inBatch: true},
				{name: "t2", group: "train", inBatch: true}, {name: "e0", group: "eval", inBatch: true}, {name: "e1", group: "eval", inBatch: true},
				{name: "t3", group: "train"}},
			wantSolo:    []string{"solo"},
			wantReady:   map[string][]string{"default/train": {"t0", "t1", "t2"}, "default/eval": {"e0", "e1"}},
			wantWaiting: waitingNone(),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newGangWorld(t)
			for name, minMember := range tc.groups {
				w.podGroup(t, name, minMember)
			}
			var batch []*planning.Pod
			for _, m := range tc.members {
				if p := w.add(t, m); m.inBatch {
					batch = append(batch, p)
				}
			}
			solo, gangs := w.p.splitGangs(context.Background(), batch)

			if got := podNames(solo); !slices.Equal(got, append([]string{}, tc.wantSolo...)) {
				t.Errorf("solo pods %v, want %v", got, tc.wantSolo)
			}
			ready := map[string][]string{}
			for _, g := range gangs {
				ready[g.key] = podNames(g.pods)
				ns, name, _ := strings.Cut(g.key, "/")
				if g.group == nil || g.group.Namespace != ns || g.group.Name != name {
					t.Errorf("ready gang %s carries PodGroup %v", g.key, g.group)
				}
			}
			want := tc.wantReady
			if want == nil {
				want = map[string][]string{}
			}
			if !maps.EqualFunc(ready, want, slices.Equal) {
				t.Errorf("ready gangs %v, want %v", ready, want)
			}
			if got := podNames(w.p.gangs.withHeld(nil)); !slices.Equal(got, append([]string{}, tc.wantHeld...)) {
				t.Errorf("held for the next batch %v, want %v", got, tc.wantHeld)
			}
			evs := w.drain()
			if len(evs) != tc.wantEvents {
				t.Errorf("%d events %q, want %d", len(evs), evs, tc.wantEvents)
			}
			for _, e := range evs {
				if !strings.Contains(e, "Warning GangNotProvisioned") || !strings.Contains(e, tc.wantWhy) {
					t.Errorf("event %q, want a GangNotProvisioned warning saying %q", e, tc.wantWhy)
				}
			}
			if got := w.p.GangsWaiting(); !maps.Equal(got, tc.wantWaiting) {
				t.Errorf("gangs waiting %v, want %v", got, tc.wantWaiting)
			}
		})
	}
}

// Pods held for their siblings join the next batch once, the batch's own copy of a pod winning
// over the held one.
func TestGangHeldPodsJoinTheNextBatch(t *testing.T) {
	w := newGangWorld(t)
	w.podGroup(t, "train", 3)
	t0 := w.add(t, gangMember{name: "t0", group: "train"})
	t1 := w.add(t, gangMember{name: "t1", group: "train"})
	t2 := w.add(t, gangMember{name: "t2", group: "train"})
	if solo, gangs := w.p.splitGangs(context.Background(), []*planning.Pod{t0, t1}); len(solo)+len(gangs) != 0 {
		t.Fatalf("%d solo pods and %d gangs from a gang short of its third pod, want it held", len(solo), len(gangs))
	}
	again := planning.NewPod(t1.Pod, nil) // the scheduler's newer attempt of t1
	batch := w.p.gangs.withHeld([]*planning.Pod{t2, again})
	if got := podNames(batch); !slices.Equal(got, []string{"t0", "t1", "t2"}) {
		t.Fatalf("next batch %v, want the held pods with the new ones, each once", got)
	}
	if !slices.Contains(batch, again) || slices.Contains(batch, t1) {
		t.Error("the batch holds the held copy of t1, want the batch's own")
	}
	solo, gangs := w.p.splitGangs(context.Background(), batch)
	if len(solo) != 0 || len(gangs) != 1 || !slices.Equal(podNames(gangs[0].pods), []string{"t0", "t1", "t2"}) {
		t.Errorf("the next batch gives %d solo pods and gangs %v, want the gang ready whole", len(solo), gangs)
	}
	if got := w.p.gangs.withHeld(nil); len(got) != 0 {
		t.Errorf("pods %v still held after they joined a batch", podNames(got))
	}
}

// A gang counted waiting is forgotten once none of its pods waits any more.
func TestGangsWaitingForgetsGangsNoLongerWaiting(t *testing.T) {
	w := newGangWorld(t)
	w.podGroup(t, "train", 3)
	batch := []*planning.Pod{w.add(t, gangMember{name: "t0", group: "train"}), w.add(t, gangMember{name: "t1", group: "train"})}
	w.p.splitGangs(context.Background(), batch)
	if got := w.p.GangsWaiting(); !maps.Equal(got, waitingWith(GangIncomplete)) {
		t.Fatalf("gangs waiting %v, want the incomplete one", got)
	}
	for _, p := range batch {
		bound := p.Pod.DeepCopy()
		bound.Spec.NodeName = "node-1"
		if err := w.pods.Update(bound); err != nil {
			t.Fatal(err)
		}
	}
	if got := w.p.GangsWaiting(); !maps.Equal(got, waitingNone()) {
		t.Errorf("gangs waiting %v once its pods are bound, want none", got)
	}
	w.p.gangs.mu.Lock()
	defer w.p.gangs.mu.Unlock()
	if why, ok := w.p.gangs.waiting["default/train"]; ok {
		t.Errorf("the gang is still remembered waiting (%s) once its pods are bound", why)
	}
}

// gangNodes are n planned nodes of m5.large in pool, one pod t<i> on each.
func gangNodes(pool *config.Pool, n int) []*planning.PlannedNode {
	tmpl := &planning.Template{Pool: pool, Type: &cloud.InstanceType{Name: "m5.large"},
		Offering: cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096}}
	var out []*planning.PlannedNode
	for i := range n {
		name := fmt.Sprintf("t%d", i)
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
			Labels: map[string]string{schedv1alpha1.PodGroupLabel: "train"}}}
		out = append(out, &planning.PlannedNode{Name: "node-" + name, Template: tmpl, Alternatives: []*planning.Template{tmpl},
			Pods: []*planning.Pod{planning.NewPod(pod, nil)}})
	}
	return out
}

// listClaims lists the claims of the fake API, those deleting apart.
func (w *reservationsWorld) listClaims(t *testing.T) (live, deleting []v1alpha1.Claim) {
	t.Helper()
	list, err := w.claims.TailorV1alpha1().Claims().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range list.Items {
		if c.DeletionTimestamp != nil {
			deleting = append(deleting, c)
		} else {
			live = append(live, c)
		}
	}
	return live, deleting
}

// A gang's planned nodes are recorded as claims sharing one spec.gang (its PodGroup, an ID, how
// many claims), each naming its pods, which wait on it in the ledger.
func TestRecordGang(t *testing.T) {
	w := newReservationsWorld(t)
	nodes := gangNodes(&w.l.Args.Pools[0], 3)
	if err := w.l.RecordGang(context.Background(), "default/train", nodes); err != nil {
		t.Fatal(err)
	}
	live, deleting := w.listClaims(t)
	if len(live) != 3 || len(deleting) != 0 {
		t.Fatalf("%d claims (%d deleting), want 3", len(live)+len(deleting), len(deleting))
	}
	gang := live[0].Spec.Gang
	if gang == nil || gang.ID == "" || gang.PodGroup != "default/train" || gang.Claims != 3 {
		t.Fatalf("spec.gang %+v, want PodGroup default/train, an ID and 3 claims", gang)
	}
	var pods []string
	names := map[string]bool{}
	for _, c := range live {
		if c.Spec.Gang == nil || *c.Spec.Gang != *gang {
			t.Errorf("claim %s has spec.gang %+v, want the shared %+v", c.Name, c.Spec.Gang, gang)
		}
		if names[c.Name] || !strings.HasPrefix(c.Name, "general-") {
			t.Errorf("claim name %q: want a name of its own generated for the pool", c.Name)
		}
		names[c.Name] = true
		if c.Spec.PodCount != 1 || len(c.Spec.Pods) != 1 || c.Spec.Pool != "general" || c.Spec.Zone != "us-east-1a" ||
			!slices.Equal(c.Spec.InstanceTypes, []string{"m5.large"}) || !slices.Contains(c.Finalizers, v1alpha1.FinalizerTermination) {
			t.Errorf("claim %s: %+v (finalizers %v), want one pod on an m5.large of general in us-east-1a, with the termination finalizer", c.Name, c.Spec, c.Finalizers)
			continue
		}
		ref := c.Spec.Pods[0]
		pods = append(pods, ref.Name)
		if r, ok := w.l.Ledger.Lookup(types.UID(ref.UID)); !ok || r.Claim != c.Name {
			t.Errorf("pod %s waits on %+v in the ledger, want claim %s", ref.Name, r, c.Name)
		}
	}
	slices.Sort(pods)
	if !slices.Equal(pods, []string{"t0", "t1", "t2"}) {
		t.Errorf("the claims name pods %v, want t0, t1 and t2", pods)
	}

	// Another plan of the same gang is another gang ID.
	if err := w.l.RecordGang(context.Background(), "default/train", gangNodes(&w.l.Args.Pools[0], 1)); err != nil {
		t.Fatal(err)
	}
	live, _ = w.listClaims(t)
	for _, c := range live {
		if c.Spec.Gang.Claims == 1 && c.Spec.Gang.ID == gang.ID {
			t.Errorf("a second plan of the gang shares the first one's ID %s", gang.ID)
		}
	}
}

// A gang's claims are admitted under their pool's limits together: a limit with room for one of
// its nodes but not all records none and says which limit (the room stays for a gang that fits).
// A claim the API refuses undoes those recorded before it.
func TestRecordGangAllOrNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		// cpuLimit is the pool's cpu limit ("": none); failCreate fails that create (1-based).
		cpuLimit   string
		failCreate int
		nodes      int
		wantLimit  bool
		wantErr    string
	}{
		// An m5.large holds 2 cpu: 3 cpu hold one, not two.
		{name: "over the pool's limit together", cpuLimit: "3", nodes: 2, wantLimit: true, wantErr: "pool general is at its cpu limit"},
		{name: "the API refuses the second claim", failCreate: 2, nodes: 3, wantErr: "recording claim 2 of 3"},
		{name: "the API refuses the first claim", failCreate: 1, nodes: 2, wantErr: "recording claim 1 of 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newReservationsWorld(t)
			pool := &w.l.Args.Pools[0]
			if tc.cpuLimit != "" {
				pool.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.cpuLimit)}
			}
			creates := 0
			w.claims.PrependReactor("create", "claims", func(k8stesting.Action) (bool, runtime.Object, error) {
				creates++
				if creates == tc.failCreate {
					return true, nil, apierrors.NewInternalError(errors.New("etcd is away"))
				}
				return false, nil, nil
			})
			err := w.l.RecordGang(context.Background(), "default/train", gangNodes(pool, tc.nodes))
			var limit *LimitError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &limit) != tc.wantLimit {
				t.Fatalf("RecordGang: %v, want an error saying %q (a LimitError: %v)", err, tc.wantErr, tc.wantLimit)
			}
			live, deleting := w.listClaims(t)
			if len(live)+len(deleting) != 0 {
				t.Errorf("%d claims left of a gang that could not be whole (%d deleting), want none", len(live)+len(deleting), len(deleting))
			}
			var deleted []string
			for _, a := range w.claims.Actions() {
				if d, ok := a.(k8stesting.DeleteAction); ok && a.GetResource().Resource == "claims" {
					deleted = append(deleted, d.GetName())
				}
			}
			if wantDeleted := max(tc.failCreate-1, 0); len(deleted) != wantDeleted {
				t.Errorf("claims %v deleted again, want the %d recorded before the refusal", deleted, wantDeleted)
			}
			if creates != min(tc.failCreate, tc.nodes) && tc.failCreate > 0 {
				t.Errorf("%d claims created, want none after the refusal", creates)
			}
			for _, i := range []int{0, 1, 2} {
				if r, ok := w.l.Ledger.Lookup(types.UID(fmt.Sprintf("uid-t%d", i))); ok {
					t.Errorf("pod t%d waits on claim %s of a gang that was not recorded", i, r.Claim)
				}
			}
			if tc.wantLimit {
				if err := w.l.RecordGang(context.Background(), "default/train", gangNodes(pool, 1)); err != nil {
					t.Errorf("a gang of one node under the same limit: %v; the refused gang must hold no room", err)
				}
			}
		})
	}
}

// twoZones is a pool general over a fake cloud in us-east-1a and us-east-1b, with its templates:
// m5.large is cheaper in 1a, m5.xlarge in 1b.
func twoZones(t *testing.T) (*config.TailorArgs, *fake.Provider, []*planning.Template) {
	t.Helper()
	args := &config.TailorArgs{ClusterName: "demo", Pools: []config.Pool{{Name: "general", AMI: "al2023", InstanceProfile: "node", CapacityTypes: []string{"on-demand"}}}}
	fc := fake.New([]cloud.InstanceType{
		{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192, Offerings: []cloud.Offering{
			{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.05}, {Zone: "us-east-1b", CapacityType: cloud.OnDemand, PricePerHour: 0.10}}},
		{Name: "m5.xlarge", Arch: "amd64", VCPUs: 4, MemoryMiB: 16384, Offerings: []cloud.Offering{
			{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.30}, {Zone: "us-east-1b", CapacityType: cloud.OnDemand, PricePerHour: 0.15}}},
	}, []cloud.Subnet{{ID: "subnet-a", Zone: "us-east-1a", AvailableIPs: 100}, {ID: "subnet-b", Zone: "us-east-1b", AvailableIPs: 100}}, []string{"sg-1"})
	templates, err := offerings.New(offerings.Options{Args: args, Cloud: fc}).Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var zones []string
	for _, tm := range templates {
		if !slices.Contains(zones, tm.Offering.Zone) {
			zones = append(zones, tm.Offering.Zone)
		}
	}
	slices.Sort(zones)
	if !slices.Equal(zones, []string{"us-east-1a", "us-east-1b"}) {
		t.Fatalf("templates in zones %v, want us-east-1a and us-east-1b", zones)
	}
	return args, fc, templates
}

// gangPods are pending pods of PodGroup default/train requesting the cpu given, in the pod cache,
// each with its PreFilter state.
func (w *gangWorld) gangPods(t *testing.T, cpus ...string) []*planning.Pod {
	t.Helper()
	_, fw := profiletest.Example(t)
	var out []*planning.Pod
	for i, cpu := range cpus {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("w%d", i), UID: types.UID(fmt.Sprintf("uid-w%d", i)),
			Labels: map[string]string{schedv1alpha1.PodGroupLabel: "train"}},
			Spec: corev1.PodSpec{SchedulerName: "tailor", Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("256Mi")}}}}}}
		if err := w.pods.Add(p); err != nil {
			t.Fatal(err)
		}
		state, err := fw.PreFilter(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, planning.NewPod(p, &planning.FilterState{Plugins: fw, State: state, Pod: p}))
	}
	return out
}

// planZones are the zones of a plan's nodes.
func planZones(plan *planning.Plan) []string {
	var zones []string
	for _, n := range plan.Nodes {
		if !slices.Contains(zones, n.Template.Offering.Zone) {
			zones = append(zones, n.Template.Offering.Zone)
		}
	}
	slices.Sort(zones)
	return zones
}

// A ready gang is planned on its own and recorded whole, in the cheapest single zone that holds
// it even when a plan across zones would cost less: claims sharing spec.gang, one per planned
// node, every pod on one. A gang that cannot be whole (a pod fits nowhere, or its nodes together
// pass the pool's limit) gets no claim: its PodGroup and pods are told why, it is counted waiting,
// and its pods are sent back to the scheduler after the gang's backoff, not before.
func TestProvisionGang(t *testing.T) {
	for _, tc := range []struct {
		name     string
		cpus     []string
		cpuLimit string // the pool's ("": none)
		// wantZone is the zone of every claim ("": no claim), wantWaiting why the gang waits
		// otherwise, and wantWhy what its events say.
		wantZone    string
		wantWaiting string
		wantWhy     string
	}{
		// Alone, the two 1.5-cpu pods are cheapest on two m5.large in 1a and the 3-cpu pod on an
		// m5.xlarge in 1b; in one zone, 1b (m5.xlarge) is cheaper than 1a.
		{name: "recorded whole in the cheapest single zone", cpus: []string{"1500m", "1500m", "3"}, wantZone: "us-east-1b"},
		{name: "a pod fits nowhere", cpus: []string{"1", "64"}, wantWaiting: GangUnplannable, wantWhy: "cannot launch capacity for the whole gang default/train"},
		// An m5.xlarge (4 cpu) fits the 5-cpu limit, so the pool is open; the gang's two do not.
		{name: "its nodes together pass the pool's limit", cpus: []string{"3", "3"}, cpuLimit: "5", wantWaiting: GangPoolLimit, wantWhy: "pool general is at its cpu limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args, fc, templates := twoZones(t)
			if tc.cpuLimit != "" {
				args.Pools[0].Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(tc.cpuLimit)}
			}
			clk := clocktesting.NewFakeClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
			var activated []string
			w := newGangWorld(t, func(o *Options) {
				o.Args, o.Cloud, o.Clock = args, fc, clk
				o.Activate = func(ps []*corev1.Pod) {
					for _, p := range ps {
						activated = append(activated, p.Name)
					}
				}
			})
			w.podGroup(t, "train", int32(len(tc.cpus)))
			pods := w.gangPods(t, tc.cpus...)
			pg, err := w.p.PodGroups.PodGroups("default").Get("train")
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()

			w.p.provisionGang(ctx, &gang{key: "default/train", group: pg, pods: pods}, templates)

			live, _ := w.listClaims(t)
			evs := w.drain()
			if tc.wantZone != "" {
				if free := (&planning.Planner{Templates: templates}).Plan(ctx, pods); len(planZones(free)) < 2 {
					t.Fatalf("planned over every zone, the gang lands in %v: the case no longer tells one zone from the cheapest plan", planZones(free))
				}
				var placed []string
				for _, c := range live {
					if c.Spec.Zone != tc.wantZone {
						t.Errorf("claim %s is in %s, want every claim in %s", c.Name, c.Spec.Zone, tc.wantZone)
					}
					if c.Spec.Gang == nil || c.Spec.Gang.PodGroup != "default/train" || c.Spec.Gang.Claims != len(live) || c.Spec.Gang.ID != live[0].Spec.Gang.ID {
						t.Errorf("claim %s has spec.gang %+v, want PodGroup default/train, %d claims and the ID of the others", c.Name, c.Spec.Gang, len(live))
					}
					for _, ref := range c.Spec.Pods {
						placed = append(placed, ref.Name)
					}
				}
				slices.Sort(placed)
				if want := podNames(pods); len(live) == 0 || !slices.Equal(placed, want) {
					t.Errorf("%d claims placing %v, want claims placing every pod %v", len(live), placed, want)
				}
				if len(evs) != 0 {
					t.Errorf("events %q for a gang that got its claims", evs)
				}
				if got := w.p.GangsWaiting(); !maps.Equal(got, waitingNone()) {
					t.Errorf("gangs waiting %v, want none", got)
				}
				return
			}
			if len(live) != 0 {
				t.Errorf("%d claims recorded for a gang that cannot be whole, want none", len(live))
			}
			if len(evs) != len(pods)+1 {
				t.Errorf("%d events %q, want one for the PodGroup and one per pod", len(evs), evs)
			}
			for _, e := range evs {
				if !strings.Contains(e, "Warning GangNotProvisioned") || !strings.Contains(e, tc.wantWhy) {
					t.Errorf("event %q, want a GangNotProvisioned warning saying %q", e, tc.wantWhy)
				}
			}
			if got := w.p.GangsWaiting(); !maps.Equal(got, waitingWith(tc.wantWaiting)) {
				t.Errorf("gangs waiting %v, want the gang waiting for %s", got, tc.wantWaiting)
			}
			clk.Step(gangBackoffStart * 8 / 10)
			if len(activated) != 0 {
				t.Fatalf("pods %v sent back to the scheduler before the gang's backoff", activated)
			}
			clk.Step(gangBackoffStart * 5 / 10) // past the backoff and its 20% jitter
			slices.Sort(activated)
			if want := podNames(pods); !slices.Equal(activated, want) {
				t.Errorf("sent back %v after the gang's backoff, want its pods %v", activated, want)
			}
			if tc.cpuLimit == "" {
				return
			}
			// The limit raised, the gang's next attempt is recorded, and it no longer waits.
			args.Pools[0].Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")}
			w.p.provisionGang(ctx, &gang{key: "default/train", group: pg, pods: pods}, templates)
			if live, _ := w.listClaims(t); len(live) == 0 {
				t.Fatal("no claim recorded once the limit was raised")
			}
			if got := w.p.GangsWaiting(); !maps.Equal(got, waitingNone()) {
				t.Errorf("gangs waiting %v once the gang got its claims, want none", got)
			}
		})
	}
}

// A gang's pod planned onto a claim keeps to that claim's node; pods of no gang, and gang pods on
// no claim, go anywhere.
func TestGangRefusal(t *testing.T) {
	w := newGangWorld(t)
	member := w.add(t, gangMember{name: "t0", group: "train", onClaim: true}).Pod
	loose := w.add(t, gangMember{name: "t1", group: "train"}).Pod
	solo := w.add(t, gangMember{name: "s", onClaim: true}).Pod
	if why := w.p.GangRefusal(member, "node-1"); !strings.Contains(why, "not launched yet") {
		t.Errorf("before its claim launched: %q, want a refusal", why)
	}
	w.l.Ledger.SetNodeName("claim-t0", "node-2")
	for node, refused := range map[string]bool{"node-1": true, "node-2": false} {
		if why := w.p.GangRefusal(member, node); (why != "") != refused {
			t.Errorf("%s: %q, want refused %v", node, why, refused)
		}
	}
	if why := w.p.GangRefusal(loose, "node-1") + w.p.GangRefusal(solo, "node-1"); why != "" {
		t.Errorf("a gang pod on no claim or a pod of no gang is refused: %q", why)
	}
	// node-3 was launched for gang infer, whose pod still waits for it: no other gang's pod
	// takes its room; pods of no gang, and once infer's pod is there, anyone may.
	w.add(t, gangMember{name: "i0", group: "infer", onClaim: true})
	w.l.Ledger.SetNodeName("claim-i0", "node-3")
	infer := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "claim-i0"}, Spec: v1alpha1.ClaimSpec{Gang: &v1alpha1.Gang{PodGroup: "default/infer", ID: "g", Claims: 1}},
		Status: v1alpha1.ClaimStatus{NodeName: "node-3"}}
	w.p.FollowGangClaim(infer, false)
	if why := w.p.GangRefusal(loose, "node-3"); !strings.Contains(why, "launched for gang default/infer") {
		t.Errorf("another gang's pod on node-3: %q, want a refusal", why)
	}
	if why := w.p.GangRefusal(solo, "node-3"); why != "" {
		t.Errorf("a pod of no gang on node-3: %q", why)
	}
	w.l.Ledger.Consume("uid-i0")
	if why := w.p.GangRefusal(loose, "node-3"); why != "" {
		t.Errorf("node-3's gang is there, yet another gang's pod is refused: %q", why)
	}
	w.p.FollowGangClaim(infer, true)
}

// Pods Coscheduling's PreFilter turned away before any node was tried go back to the scheduler
// once their gang is whole, to try the nodes that are up; failing again, they are planned.
func TestGangUntriedPodsTryNodesThatAreUpFirst(t *testing.T) {
	w := newGangWorld(t)
	var activated []string
	w.p.Activate = func(ps []*corev1.Pod) {
		for _, p := range ps {
			activated = append(activated, p.Name)
		}
	}
	w.podGroup(t, "train", 2)
	batch := []*planning.Pod{w.add(t, gangMember{name: "t0", group: "train"}), w.add(t, gangMember{name: "t1", group: "train"})}
	for _, p := range batch {
		w.p.gangs.markUntried(p.Pod)
	}
	if _, ready := w.p.splitGangs(context.Background(), batch); len(ready) != 0 || !slices.Equal(activated, []string{"t0", "t1"}) {
		t.Fatalf("first batch: %d gangs ready, %v activated; want none ready, both handed back", len(ready), activated)
	}
	for _, p := range batch {
		w.p.gangs.markUntried(p.Pod) // turned away again (the gang backed off)
	}
	if _, ready := w.p.splitGangs(context.Background(), batch); len(ready) != 1 || len(activated) != 2 {
		t.Errorf("second batch: %d gangs ready, %v activated; want the gang planned, nothing handed back again", len(ready), activated)
	}
}

// A member the scheduler reserved a node for (waiting at Permit) is planned with the pods of its
// gang that failed, and its reservation sends siblings held for it back to the batcher.
func TestGangMemberAtPermitIsPlannedWithTheRest(t *testing.T) {
	w := newGangWorld(t)
	w.podGroup(t, "train", 3)
	t0 := w.add(t, gangMember{name: "t0", group: "train"})
	t1 := w.add(t, gangMember{name: "t1", group: "train"})
	t2 := w.add(t, gangMember{name: "t2", group: "train"})
	if _, ready := w.p.splitGangs(context.Background(), []*planning.Pod{t0}); len(ready) != 0 {
		t.Fatal("one pod of three made a gang")
	}
	w.p.GangMemberReserved(t2)
	if w.p.batcher.Len() != 1 || !w.p.batcher.Has(t0.Pod.UID) {
		t.Errorf("the held pod is not back in the batcher (%d pods there)", w.p.batcher.Len())
	}
	_, ready := w.p.splitGangs(context.Background(), []*planning.Pod{t0, t1})
	if len(ready) != 1 || !slices.Equal(podNames(ready[0].pods), []string{"t0", "t1", "t2"}) {
		t.Fatalf("ready %v, want the gang t0, t1 and t2 (at Permit)", ready)
	}
	// Turned away at Permit since (a sibling failed), it is still planned with the rest; bound,
	// it is forgotten.
	w.p.GangMemberBound(t2.Pod)
	if _, ready := w.p.splitGangs(context.Background(), []*planning.Pod{t0, t1}); len(ready) != 0 {
		t.Error("a member whose kept state was dropped, and is not bound, still counts")
	}
}
