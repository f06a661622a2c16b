package provisioning

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/fake"
	"github.com/tailor-eks/tailor/pkg/ledger"
	"github.com/tailor-eks/tailor/pkg/offerings"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// throttled is a throttling error as a provider reports it.
var throttled = &cloud.Error{Kind: cloud.KindTransient, Err: errors.New("api error RequestLimitExceeded: Request limit exceeded.")}

// launcherWorld is a Launcher on the fake cloud, a fake claims API and a pod lister.
type launcherWorld struct {
	l     *Launcher
	cloud *fake.Provider
	pods  cache.Indexer
}

func newLauncherWorld(t *testing.T) *launcherWorld {
	t.Helper()
	args := &config.TailorArgs{ClusterName: "demo", Pools: []config.Pool{{Name: "general", AMI: "al2023", InstanceProfile: "node", CapacityTypes: []string{"on-demand", "spot"}}}}
	fc := fake.New([]cloud.InstanceType{{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192,
		Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096}, {Zone: "us-east-1a", CapacityType: cloud.Spot, PricePerHour: 0.04}}}},
		[]cloud.Subnet{{ID: "subnet-a", Zone: "us-east-1a", AvailableIPs: 100}}, []string{"sg-1"})
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	o := Options{Args: args, Cloud: fc, Claims: claims.NewStoreForClient(claimstest.NewClientset()), Ledger: ledger.New(), Recorder: events.NewFakeRecorder(100),
		Pods: corelisters.NewPodLister(pods), Activate: func([]*corev1.Pod) {}, Offerings: offerings.New(offerings.Options{Args: args, Cloud: fc})}
	return &launcherWorld{l: NewLauncher(o), cloud: fc, pods: pods}
}

// claim records a claim for one pending pod, as Record would.
func (w *launcherWorld) claim(t *testing.T, name string) *v1alpha1.Claim {
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

func (w *launcherWorld) phase(t *testing.T, name string) v1alpha1.ClaimPhase {
	t.Helper()
	c, err := w.l.Claims.Fetch(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return c.Status.Phase
}

// Throttled launches fail their claims and start the shared backoff once per wave, not once
// per claim; the next launch that succeeds resets it. Each claim's client token is its UID, so
// launching a claim again creates no second instance.
func TestLaunchBacksOffOnThrottling(t *testing.T) {
	w := newLauncherWorld(t)
	ctx := context.Background()
	w.cloud.Fail("Launch", throttled, 0)
	for _, name := range []string{"a", "b", "c"} {
		w.l.Launch(ctx, w.claim(t, name))
		if got := w.phase(t, name); got != v1alpha1.ClaimFailed {
			t.Fatalf("claim %s is %q after a throttled launch, want Failed", name, got)
		}
	}
	if got := w.l.backoff.Get(transientBackoffKey); got < transientBackoffMin || got > transientBackoffMin*12/10 {
		t.Errorf("backoff %s after one wave of three failures, want %s plus at most 20%% jitter", got, transientBackoffMin)
	}

	w.cloud.ClearFailures()
	d := w.claim(t, "d")
	w.l.Launch(ctx, d)
	w.l.Launch(ctx, d)
	if got := w.phase(t, "d"); got != v1alpha1.ClaimLaunched {
		t.Fatalf("claim d is %q, want Launched", got)
	}
	if got := w.l.backoff.Get(transientBackoffKey); got != 0 {
		t.Errorf("backoff %s after a successful launch, want none", got)
	}
	if n := w.cloud.Launches(); n != 1 {
		t.Errorf("%d instances for one claim launched twice, want 1", n)
	}
}

// newWaitingClaim is a launcher world with claim "waits" for pod waits, and two more of its pods:
// moved (which the caller may plan onto another claim) and bound (bound to node-1). The pods
// the launcher activates are recorded, by name.
func newWaitingClaim(t *testing.T) (*launcherWorld, *v1alpha1.Claim, *[]string) {
	t.Helper()
	w := newLauncherWorld(t)
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

// A claim's launch request is resolved from its pool once and recorded on the claim before it is
// sent. An attempt after a crash sends the recorded request, even from a copy of the claim read
// before it was recorded and after the pool's image alias moved to a new AMI: with the same
// client token, EC2 then answers with the first attempt's instance instead of refusing the
// token. A new claim resolves anew.
func TestResumedLaunchSendsTheRecordedRequest(t *testing.T) {
	w := newLauncherWorld(t)
	ctx := context.Background()
	w.cloud.SetImage("al2023", "ami-first")
	c := w.claim(t, "resumed")
	// The first attempt resolves and records its request; the crash comes before CreateFleet.
	first, err := w.l.request(ctx, c, w.l.Args.Pool("general"))
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.LaunchRequest{ImageID: "ami-first", SubnetIDs: []string{"subnet-a"}, SecurityGroupIDs: []string{"sg-1"}}
	stored, err := w.l.Claims.Fetch(ctx, c.Name)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Status.Request == nil || !equalRequests(*stored.Status.Request, want) || !equalRequests(*first, want) {
		t.Fatalf("recorded request %+v, returned %+v, want %+v", stored.Status.Request, first, want)
	}
	if stored.Status.Phase != "" {
		t.Errorf("recording the request made the claim %q; it has not launched", stored.Status.Phase)
	}

	w.cloud.SetImage("al2023", "ami-second") // a new release behind the alias while down
	w.l.Launch(ctx, c)                       // c was read before the request was recorded
	fresh := w.claim(t, "fresh")
	w.l.Launch(ctx, fresh)

	images := map[string]string{}
	insts, err := w.cloud.Instances(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		images[in.Tags[v1alpha1.TagClaim]] = in.ImageID
	}
	if images["resumed"] != "ami-first" || images["fresh"] != "ami-second" {
		t.Errorf("instances run images %v, want ami-first for the resumed claim and ami-second for the new one", images)
	}
	for name, image := range map[string]string{"resumed": "ami-first", "fresh": "ami-second"} {
		got, err := w.l.Claims.Fetch(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status.Phase != v1alpha1.ClaimLaunched || got.Status.Request == nil || got.Status.Request.ImageID != image {
			t.Errorf("claim %s: phase %q, request %+v; want Launched with image %s recorded", name, got.Status.Phase, got.Status.Request, image)
		}
	}
}

func equalRequests(a, b v1alpha1.LaunchRequest) bool {
	return a.ImageID == b.ImageID && slices.Equal(a.SubnetIDs, b.SubnetIDs) && slices.Equal(a.SecurityGroupIDs, b.SecurityGroupIDs)
}

// An account quota refusing a spot launch leaves spot out of plans and plans the claim's pods
// again at once (onto on-demand, where their pool allows it). An on-demand quota marks nothing:
// its pods are planned again later on the same capacity type.
func TestSpotQuotaLeavesSpotOut(t *testing.T) {
	for _, tt := range []struct {
		capacityType string
		wantSpot     bool
	}{
		{"spot", false},
		{"on-demand", true},
	} {
		t.Run(tt.capacityType, func(t *testing.T) {
			w := newLauncherWorld(t)
			ctx := context.Background()
			activated := make(chan string, 1)
			w.l.Activate = func(ps []*corev1.Pod) {
				for _, p := range ps {
					activated <- p.Name
				}
			}
			w.cloud.Fail("Launch", &cloud.Error{Kind: cloud.KindQuota, Err: errors.New("an account quota refused the launch")}, 0)
			c := w.claim(t, "refused")
			c.Spec.CapacityType = tt.capacityType
			w.l.Launch(ctx, c)
			if got := w.phase(t, c.Name); got != v1alpha1.ClaimFailed {
				t.Fatalf("claim is %q after the quota refused its launch, want Failed", got)
			}
			ts, err := w.l.Offerings.Templates(ctx)
			if err != nil {
				t.Fatal(err)
			}
			spot := false
			for _, tm := range ts {
				spot = spot || tm.Offering.CapacityType == cloud.Spot
			}
			if spot != tt.wantSpot {
				t.Errorf("spot templates offered: %v, want %v", spot, tt.wantSpot)
			}
			if tt.capacityType == "spot" {
				select {
				case <-activated:
				case <-time.After(10 * time.Second):
					t.Error("the spot claim's pod was not planned again at once")
				}
			}
		})
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

// gatedCloud holds every launch until the gate opens, noting the order launches reach EC2.
type gatedCloud struct {
	*fake.Provider
	gate    chan struct{}
	mu      sync.Mutex
	reached []string
}

func (g *gatedCloud) Launch(ctx context.Context, req cloud.LaunchRequest) (*cloud.LaunchResult, error) {
	g.mu.Lock()
	g.reached = append(g.reached, req.ClientToken)
	g.mu.Unlock()
	<-g.gate
	return g.Provider.Launch(ctx, req)
}

func (g *gatedCloud) seen() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.reached)
}

// launchAsync records a claim for one pod (kept: for expected pods only, as a rollout's claims
// are before its pods exist) and hands it to LaunchAsync; it returns the claim's UID, which the
// gated cloud sees.
func (w *launcherWorld) launchAsync(t *testing.T, name string, kept bool) string {
	t.Helper()
	c := w.claim(t, name)
	if kept {
		c.Spec.Pods = nil
	}
	w.l.LaunchAsync(context.Background(), c)
	return string(c.UID)
}

// Claims given to LaunchAsync go to EC2 in that order, maxLaunchesInFlight at a time, and a
// claim pods wait on goes before claims only kept for pods still to come, even ones given
// earlier: whatever the scheduling of goroutines.
func TestLaunchAsyncKeepsTheOrder(t *testing.T) {
	w := newLauncherWorld(t)
	gated := &gatedCloud{Provider: w.cloud, gate: make(chan struct{})}
	w.l.Cloud = gated
	launch := func(name string, kept bool) string { return w.launchAsync(t, name, kept) }
	var first []string
	for i := 0; i < maxLaunchesInFlight; i++ {
		first = append(first, launch("c"+strconv.Itoa(i), false))
	}
	keptA, keptB := launch("kept-a", true), launch("kept-b", true)
	waited := launch("waited", false)
	waitUntil(t, "the first launches to reach EC2", func() bool { return len(gated.seen()) == maxLaunchesInFlight })
	got := gated.seen()
	slices.Sort(got)
	slices.Sort(first)
	if !slices.Equal(got, first) {
		t.Fatalf("first launches %v, want the first %d claims %v", got, maxLaunchesInFlight, first)
	}
	// One launch at a time from here: each freed worker takes the next claim in line.
	gated.releaseInOrder(t, waited, keptA, keptB)
}

// TestLaunchAsyncPutsNewlyWaitedClaimsFirst: a claim queued for expected pods only goes before
// the other such claims once pods of the rollout fill its room and wait on it.
func TestLaunchAsyncPutsNewlyWaitedClaimsFirst(t *testing.T) {
	w := newLauncherWorld(t)
	gated := &gatedCloud{Provider: w.cloud, gate: make(chan struct{})}
	w.l.Cloud = gated
	launch := func(name string, kept bool) string { return w.launchAsync(t, name, kept) }
	for i := 0; i < maxLaunchesInFlight; i++ {
		launch("c"+strconv.Itoa(i), false)
	}
	keptA, keptB := launch("kept-a", true), launch("kept-b", true)
	waitUntil(t, "the first launches to reach EC2", func() bool { return len(gated.seen()) == maxLaunchesInFlight })
	w.l.Ledger.Add("kept-b", "", []types.UID{"uid-arrived"}) // a pod of the rollout filled kept-b
	gated.releaseInOrder(t, keptB, keptA)
}

// releaseInOrder lets one launch through at a time and checks that the claims reach EC2 in the
// order given (by UID), then lets every other launch through.
func (g *gatedCloud) releaseInOrder(t *testing.T, want ...string) {
	t.Helper()
	for _, uid := range want {
		n := len(g.seen())
		g.gate <- struct{}{}
		waitUntil(t, "the next launch to reach EC2", func() bool { return len(g.seen()) == n+1 })
		if next := g.seen()[n]; next != uid {
			t.Fatalf("launch %d was %s, want %s", n+1, next, uid)
		}
	}
	close(g.gate)
}

// waitUntil polls cond until it holds, failing the test if it never does.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: it never came", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
