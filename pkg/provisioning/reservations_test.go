package provisioning

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/fake"
	claimsfake "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// reservationsWorld is a Reservations on the fake cloud, a fake claims API and a pod lister.
type reservationsWorld struct {
	l      *Reservations
	cloud  *fake.Provider
	claims *claimsfake.Clientset
	pods   cache.Indexer
}

func newReservationsWorld(t *testing.T) *reservationsWorld {
	t.Helper()
	args := &config.TailorArgs{ClusterName: "demo", Pools: []config.Pool{{Name: "general", AMI: "al2023", InstanceProfile: "node", CapacityTypes: []string{"on-demand", "spot"}}}}
	fc := fake.New([]cloud.InstanceType{{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192,
		Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096}, {Zone: "us-east-1a", CapacityType: cloud.Spot, PricePerHour: 0.04}}}},
		[]cloud.Subnet{{ID: "subnet-a", Zone: "us-east-1a", AvailableIPs: 100}}, []string{"sg-1"})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	cs := claimstest.NewClientset()
	o := Options{Args: args, Cloud: fc, Claims: claims.NewStoreForClient(cs), Ledger: ledger.New(), Recorder: events.NewFakeRecorder(100),
		Pods: corelisters.NewPodLister(pods), Activate: func([]*corev1.Pod) {}, Offerings: offerings.New(offerings.Options{Args: args, Cloud: fc})}
	return &reservationsWorld{l: NewReservations(o), cloud: fc, claims: cs, pods: pods}
}

// claim records a claim for one pending pod, as Record would.
func (w *reservationsWorld) claim(t *testing.T, name string) *v1alpha1.Claim {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
	if err := w.pods.Add(p); err != nil {
		t.Fatal(err)
	}
	c := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("claim-uid-" + name)}, Spec: v1alpha1.ClaimSpec{
		Pool: "general", CapacityType: "on-demand", Zone: "us-east-1a", InstanceTypes: []string{"m5.large"},
		Pods: []v1alpha1.PodRef{{Namespace: "default", Name: name, UID: string(p.UID)}}}}
	created, err := w.l.Claims.Create(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return created
}

// newWaitingClaim is a reservations world with claim "waits" for pod waits, and two more of its pods:
// moved (which the caller may plan onto another claim) and bound (bound to node-1). The pods
// it activates are recorded, by name.
func newWaitingClaim(t *testing.T) (*reservationsWorld, *v1alpha1.Claim, *[]string) {
	t.Helper()
	w := newReservationsWorld(t)
	activated := &[]string{}
	w.l.Activate = func(ps []*corev1.Pod) {
		for _, p := range ps {
			*activated = append(*activated, p.Name)
		}
	}
	c := w.claim(t, "waits")
	for _, name := range []string{"moved", "bound"} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}
		if name == "bound" {
			p.Spec.NodeName = "node-1"
		}
		if err := w.pods.Add(p); err != nil {
			t.Fatal(err)
		}
		c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{Namespace: "default", Name: name, UID: string(p.UID)})
	}
	return w, c, activated
}

// Once a claim's node is initialized (Ready, no startup taint left), the pods still waiting for
// it in the ledger are tried again: one the node refused while it was starting waits for no
// event the scheduler retries it on. Pods bound meanwhile, or planned onto another claim, are
// left alone, and so is every other change of the claim.
func TestFollowActivatesWaitingPodsOnceInitialized(t *testing.T) {
	w, c, activated := newWaitingClaim(t)
	w.l.Ledger.Add(c.Name, "node-1", []types.UID{"uid-waits", "uid-moved"})
	w.l.Ledger.Add("other", "", []types.UID{"uid-moved"})

	version := 0
	next := func(prev *v1alpha1.Claim, mutate func(*v1alpha1.ClaimStatus)) *v1alpha1.Claim {
		cur := prev.DeepCopy()
		version++
		cur.ResourceVersion = strconv.Itoa(version)
		mutate(&cur.Status)
		w.l.Follow(prev, cur)
		return cur
	}
	launched := next(c, func(st *v1alpha1.ClaimStatus) { st.Phase, st.NodeName = v1alpha1.ClaimLaunched, "node-1" })
	registered := next(launched, func(st *v1alpha1.ClaimStatus) { st.Phase = v1alpha1.ClaimRegistered })
	if len(*activated) != 0 {
		t.Fatalf("activated %v before the node was initialized", *activated)
	}
	now := metav1.Now()
	initialized := next(registered, func(st *v1alpha1.ClaimStatus) { st.InitializedAt = &now })
	if !slices.Equal(*activated, []string{"waits"}) {
		t.Errorf("activated %v once the node was initialized, want only the pod still waiting on the claim", *activated)
	}
	next(initialized, func(st *v1alpha1.ClaimStatus) { st.PricePerHour = "0.1" })
	if len(*activated) != 1 {
		t.Errorf("activated %v, want the waiting pod once", *activated)
	}
}

// Once a claim launched, its pods still waiting are sent back to the scheduler, to be nominated
// to the node coming up; pods bound meanwhile are not. The offerings its launch found without
// capacity are left out of this replica's plans (the launch ran where the lifecycle runs). A
// later change of the claim sends nobody back again.
func TestFollowSendsPodsBackOnceLaunched(t *testing.T) {
	w, c, activated := newWaitingClaim(t)
	w.l.Ledger.Add(c.Name, "", []types.UID{"uid-waits", "uid-moved"})
	launched := c.DeepCopy()
	launched.ResourceVersion = "2"
	launched.Spec.CapacityType = "spot"
	launched.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched, InstanceID: "i-1", InstanceType: "m5.large", Zone: "us-east-1a",
		CapacityType: "spot", NodeName: "node-1",
		UnavailableOfferings: []v1alpha1.UnavailableOffering{{InstanceType: "m5.large", Zone: "us-east-1a", Code: "InsufficientInstanceCapacity"}}}
	w.l.Follow(c, launched)
	slices.Sort(*activated)
	if want := []string{"moved", "waits"}; !slices.Equal(*activated, want) {
		t.Errorf("activated %v once the claim launched, want its unbound pods %v", *activated, want)
	}
	if r, ok := w.l.Ledger.Lookup("uid-waits"); !ok || r.NodeName != "node-1" {
		t.Errorf("the waiting pod's ledger entry is %+v, want node-1", r)
	}
	if got := offered(t, w); !slices.Equal(got, []cloud.CapacityType{cloud.OnDemand}) {
		t.Errorf("m5.large in us-east-1a offered as %v, want on-demand alone (spot had no capacity)", got)
	}
	changedAgain(t, w, launched, activated)
}

// offered lists the capacity types the world's offerings plan now.
func offered(t *testing.T, w *reservationsWorld) []cloud.CapacityType {
	t.Helper()
	ts, err := w.l.Offerings.Templates(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []cloud.CapacityType
	for _, tm := range ts {
		if !slices.Contains(out, tm.Offering.CapacityType) {
			out = append(out, tm.Offering.CapacityType)
		}
	}
	slices.Sort(out)
	return out
}

// changedAgain follows one more change of the claim and checks that it sends no pod back.
func changedAgain(t *testing.T, w *reservationsWorld, prev *v1alpha1.Claim, activated *[]string) {
	t.Helper()
	*activated = nil
	next := prev.DeepCopy()
	next.ResourceVersion += "+1"
	w.l.Follow(prev, next)
	if len(*activated) != 0 {
		t.Errorf("activated %v on a later change of the claim", *activated)
	}
}

// A failed launch leaves what it found unavailable out of this replica's plans, releases the
// claim's pods from the ledger and has them planned again at the claim's retryAt: at once when
// it is past, otherwise when it comes. The claim's later changes (its deletion) do nothing more.
func TestFollowReplansPodsOfAFailedLaunch(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		retry time.Duration
	}{{"at once", 0}, {"after a backoff", 30 * time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			w, c, activated := newWaitingClaim(t)
			clk := clocktesting.NewFakeClock(now)
			w.l.Clock = clk
			w.l.Ledger.Add(c.Name, "", []types.UID{"uid-waits"})
			failed := c.DeepCopy()
			failed.ResourceVersion = "2"
			at := metav1.NewTime(now.Add(tc.retry))
			failed.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimFailed, Message: "spot quota", RetryAt: &at, CapacityTypeUnavailable: "SpotQuota"}
			failed.Spec.CapacityType = "spot"
			w.l.Follow(c, failed)
			if got := offered(t, w); !slices.Equal(got, []cloud.CapacityType{cloud.OnDemand}) {
				t.Errorf("capacity types offered %v, want on-demand alone: the spot quota refused the launch", got)
			}
			if _, ok := w.l.Ledger.Lookup("uid-waits"); ok {
				t.Error("the failed claim's pod still waits on it")
			}
			if tc.retry > 0 {
				if len(*activated) != 0 {
					t.Fatalf("activated %v before the claim's retry time", *activated)
				}
				clk.Step(tc.retry)
			}
			slices.Sort(*activated)
			if want := []string{"moved", "waits"}; !slices.Equal(*activated, want) {
				t.Errorf("activated %v, want the failed claim's unbound pods %v", *activated, want)
			}
			changedAgain(t, w, failed, activated)
		})
	}
}

// A claim is wanted while one of its pods still waits for a node; once they are all bound or
// gone, and no workload it was planned for owes pods, it is not.
func TestWantedWhilePodsWait(t *testing.T) {
	w, c, _ := newWaitingClaim(t)
	if !w.l.Wanted(c) {
		t.Fatal("a claim with pods waiting is not wanted")
	}
	for _, name := range []string{"waits", "moved"} {
		if err := w.pods.Delete(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}); err != nil {
			t.Fatal(err)
		}
	}
	if w.l.Wanted(c) {
		t.Error("a claim whose pods are bound or gone is still wanted")
	}
}

// TestReleaseReplansTheWaitingPods: a deleted claim, whoever deleted it (the lifecycle's
// timeouts, a user, a drain), is released from the ledger and the pods still waiting on it are
// planned again; pods that bound or wait on another claim stay as they are.
func TestReleaseReplansTheWaitingPods(t *testing.T) {
	w, c, activated := newWaitingClaim(t)
	w.l.Ledger.Add(c.Name, "", []types.UID{"uid-waits", "uid-moved"})
	w.l.Ledger.Add("other", "", []types.UID{"uid-moved"})
	w.l.Release(c)
	if !slices.Equal(*activated, []string{"waits"}) {
		t.Errorf("activated %v, want the pod still waiting on the released claim", *activated)
	}
	if r, ok := w.l.Ledger.Lookup("uid-waits"); ok {
		t.Errorf("the released claim's pod still waits on %s", r.Claim)
	}
	if r, ok := w.l.Ledger.Lookup("uid-moved"); !ok || r.Claim != "other" {
		t.Errorf("the pod planned onto another claim waits on %+v, want other", r)
	}
	*activated = nil
	w.l.Release(c) // released twice (a relist's tombstone): nothing waits on it any more
	if len(*activated) != 0 {
		t.Errorf("a second release activated %v", *activated)
	}
}

// A claim names the DaemonSets whose pods its plan counted, with what each pod requests, so its
// node keeps their room (Expectations) until the DaemonSet controller creates them.
func TestClaimNamesTheDaemonSetsItsPlanCounted(t *testing.T) {
	daemon := func(name string, controlled bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name + "-daemon", UID: types.UID(name)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}}}}
		if controlled {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: name, UID: types.UID(name), Controller: ptr.To(true)}}
		}
		return p
	}
	pool := &config.Pool{Name: "general"}
	tmpl := &planning.Template{Pool: pool, Type: &cloud.InstanceType{Name: "m6g.large"}, Offering: cloud.Offering{Zone: "us-east-1a", CapacityType: cloud.OnDemand},
		Daemons: []*corev1.Pod{daemon("agent", true), daemon("no-owner", false)}}
	got := newClaim(&planning.PlannedNode{Template: tmpl}).Spec.Daemons
	if len(got) != 1 || got[0].Name != "agent" || got[0].UID != "agent" || got[0].Namespace != "kube-system" {
		t.Fatalf("daemons %+v, want the agent DaemonSet alone", got)
	}
	if mem := got[0].Requests[corev1.ResourceMemory]; mem.String() != "128Mi" {
		t.Errorf("agent's pod requests %s memory, want 128Mi", mem.String())
	}
}
