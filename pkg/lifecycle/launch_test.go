package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	k8smetrics "k8s.io/component-base/metrics"
	k8stestutil "k8s.io/component-base/metrics/testutil"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
	"github.com/tailor-eks/tailor/pkg/metrics"
)

// throttled is a throttling error as a provider reports it.
var throttled = &cloud.Error{Kind: cloud.KindTransient, Err: errors.New("api error RequestLimitExceeded: Request limit exceeded.")}

// recorded is a claim for pod p-<name> as provisioning records it: Pending, with a UID (the
// client token), created at testNow.
func recorded(name string) *v1alpha1.Claim {
	cl := claimIn(name, v1alpha1.ClaimPending, "", testNow, time.Time{})
	cl.UID = types.UID("claim-uid-" + name)
	return cl
}

// launchedStatus waits for the launches in flight and reads the claim's status.
func (h *harness) launchedStatus(t *testing.T, name string) v1alpha1.ClaimStatus {
	t.Helper()
	h.c.launches.workers.Wait()
	return h.claim(t, name).Status
}

func TestResumeStuckLaunch(t *testing.T) {
	tests := []struct {
		name     string
		created  time.Time
		inFlight bool
		want     bool
	}{
		{name: "waited longer than resumeAfter", created: testNow.Add(-resumeAfter - time.Second), want: true},
		{name: "recorded a moment ago: its launch may still be starting", created: testNow.Add(-time.Second)},
		{name: "launching in this process", created: testNow.Add(-time.Hour), inFlight: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := recorded("a")
			cl.CreationTimestamp = metav1.NewTime(tc.created)
			h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
			if tc.inFlight {
				h.markInFlight("a")
			}
			h.c.sweep(context.Background())
			h.c.launches.workers.Wait()
			if got := h.cloud.Launches() > 0; got != tc.want {
				t.Errorf("launched again: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResumeInterruptedLaunches(t *testing.T) {
	deleting := recorded("deleting")
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	unphased := recorded("recorded")
	unphased.Status.Phase = ""
	h := newHarness(t, []*v1alpha1.Claim{unphased, recorded("pending"), claimIn("launched", v1alpha1.ClaimLaunched, "i-1", testNow, testNow), deleting}, nil, nil)
	h.c.resumeInterruptedLaunches(context.Background())
	for name, want := range map[string]v1alpha1.ClaimPhase{"recorded": v1alpha1.ClaimLaunched, "pending": v1alpha1.ClaimLaunched, "launched": v1alpha1.ClaimLaunched, "deleting": v1alpha1.ClaimPending} {
		if got := h.launchedStatus(t, name).Phase; got != want {
			t.Errorf("claim %s is %q, want %q: every claim recorded but not launched is launched, unless deleting", name, got, want)
		}
	}
	if n := h.cloud.Launches(); n != 2 {
		t.Errorf("%d launches, want 2", n)
	}
}

// A claim recorded while this replica runs the lifecycle is launched as the informer sees it;
// one recorded while it does not is left to the replica that does (or to this one's resume once
// it takes over), and a claim launched or being deleted is not launched again.
func TestLaunchRecorded(t *testing.T) {
	tests := []struct {
		name    string
		claim   func() *v1alpha1.Claim
		running bool
		want    bool
	}{
		{name: "recorded while running", claim: func() *v1alpha1.Claim { return recorded("a") }, running: true, want: true},
		{name: "recorded while another replica runs the lifecycle", claim: func() *v1alpha1.Claim { return recorded("a") }},
		{name: "launched already", running: true, claim: func() *v1alpha1.Claim { return claimIn("a", v1alpha1.ClaimLaunched, "i-1", testNow, testNow) }},
		{name: "being deleted", running: true, claim: func() *v1alpha1.Claim {
			cl := recorded("a")
			cl.DeletionTimestamp = &metav1.Time{Time: testNow}
			return cl
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cl := tc.claim()
			h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
			if tc.running {
				h.c.runCtx = context.Background()
			}
			h.c.launchRecorded(cl)
			h.c.launches.workers.Wait()
			if got := h.cloud.Launches() == 1; got != tc.want {
				t.Errorf("launched: %v, want %v", got, tc.want)
			}
		})
	}
}

// A claim nobody wants any more (its pods gone, its workloads scaled back) is deleted, not
// launched; one that is wanted launches and records its instance.
func TestLaunchDropsUnwantedClaims(t *testing.T) {
	h := newHarness(t, []*v1alpha1.Claim{recorded("unwanted"), recorded("wanted")}, nil, nil)
	h.demand.unwanted["unwanted"] = true
	h.c.launch(context.Background(), recorded("unwanted"))
	h.c.launch(context.Background(), recorded("wanted"))
	if !h.claimGone(t, "unwanted") {
		t.Error("the unwanted claim is still there")
	}
	st := h.claim(t, "wanted").Status
	if st.Phase != v1alpha1.ClaimLaunched || st.InstanceID == "" || st.NodeName == "" || st.PricePerHour != "0.0960" || st.LaunchedAt == nil {
		t.Errorf("wanted claim's status %+v, want Launched with its instance, node name, price and launch time", st)
	}
	if n := h.cloud.Launches(); n != 1 {
		t.Errorf("%d launches, want 1", n)
	}
}

// Throttled launches fail their claims and start the shared backoff once per wave, not once
// per claim, and each failed claim says its pods are planned again once the backoff is over;
// the next launch that succeeds resets it. Each claim's client token is its UID, so launching a
// claim again creates no second instance.
func TestLaunchBacksOffOnThrottling(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	var cls []*v1alpha1.Claim
	for _, n := range names {
		cls = append(cls, recorded(n))
	}
	h := newHarness(t, cls, nil, nil)
	ctx := context.Background()
	h.cloud.Fail("Launch", throttled, 0)
	for _, cl := range cls[:3] {
		h.c.launch(ctx, cl)
		st := h.claim(t, cl.Name).Status
		if st.Phase != v1alpha1.ClaimFailed {
			t.Fatalf("claim %s is %q after a throttled launch, want Failed", cl.Name, st.Phase)
		}
		if wait := st.RetryAt.Sub(testNow); wait < transientBackoffMin || wait > transientBackoffMin*12/10 {
			t.Errorf("claim %s retries %s after the failure, want %s plus at most 20%% jitter", cl.Name, wait, transientBackoffMin)
		}
	}
	if got := h.c.transientBackoff().Get(transientBackoffKey); got < transientBackoffMin || got > transientBackoffMin*12/10 {
		t.Errorf("backoff %s after one wave of three failures, want %s plus at most 20%% jitter", got, transientBackoffMin)
	}

	h.cloud.ClearFailures()
	h.c.launch(ctx, cls[3])
	h.c.launch(ctx, cls[3])
	if got := h.claim(t, "d").Status.Phase; got != v1alpha1.ClaimLaunched {
		t.Fatalf("claim d is %q, want Launched", got)
	}
	if got := h.c.transientBackoff().Get(transientBackoffKey); got != 0 {
		t.Errorf("backoff %s after a successful launch, want none", got)
	}
	if n := h.cloud.Launches(); n != 1 {
		t.Errorf("%d instances for one claim launched twice, want 1", n)
	}
}

// A claim's launch request is resolved from its pool once and recorded on the claim before it is
// sent. An attempt after a crash sends the recorded request, even from a copy of the claim read
// before it was recorded and after the pool's image alias moved to a new AMI: with the same
// client token, EC2 then answers with the first attempt's instance instead of refusing the
// token. A new claim resolves anew.
func TestResumedLaunchSendsTheRecordedRequest(t *testing.T) {
	resumed, fresh := recorded("resumed"), recorded("fresh")
	h := newHarness(t, []*v1alpha1.Claim{resumed, fresh}, nil, nil)
	ctx := context.Background()
	h.cloud.SetImage("al2023", "ami-first")
	// The first attempt resolves and records its request; the crash comes before CreateFleet.
	first, err := h.c.request(ctx, resumed, h.c.Args.Pool("default"))
	if err != nil {
		t.Fatal(err)
	}
	want := v1alpha1.LaunchRequest{ImageID: "ami-first", SubnetIDs: []string{"subnet-a"}, SecurityGroupIDs: []string{"sg-1"}}
	stored := h.claim(t, "resumed")
	if stored.Status.Request == nil || !equalRequests(*stored.Status.Request, want) || !equalRequests(*first, want) {
		t.Fatalf("recorded request %+v, returned %+v, want %+v", stored.Status.Request, first, want)
	}
	if stored.Status.Phase != v1alpha1.ClaimPending {
		t.Errorf("recording the request made the claim %q; it has not launched", stored.Status.Phase)
	}

	h.cloud.SetImage("al2023", "ami-second") // a new release behind the alias while down
	h.c.launch(ctx, resumed)                 // read before the request was recorded
	h.c.launch(ctx, fresh)

	images := map[string]string{}
	for _, in := range h.live(t) {
		images[in.Tags[v1alpha1.TagClaim]] = in.ImageID
	}
	if images["resumed"] != "ami-first" || images["fresh"] != "ami-second" {
		t.Errorf("instances run images %v, want ami-first for the resumed claim and ami-second for the new one", images)
	}
	for name, image := range map[string]string{"resumed": "ami-first", "fresh": "ami-second"} {
		got := h.claim(t, name)
		if got.Status.Phase != v1alpha1.ClaimLaunched || got.Status.Request == nil || got.Status.Request.ImageID != image {
			t.Errorf("claim %s: phase %q, request %+v; want Launched with image %s recorded", name, got.Status.Phase, got.Status.Request, image)
		}
	}
}

func equalRequests(a, b v1alpha1.LaunchRequest) bool {
	return a.ImageID == b.ImageID && slices.Equal(a.SubnetIDs, b.SubnetIDs) && slices.Equal(a.SecurityGroupIDs, b.SecurityGroupIDs)
}

// A failed launch records when its pods are planned again and what it found unavailable, for
// every replica's plans to leave out, and counts the launch as what EC2 said: an account quota
// refusing spot, or spot not enabled for the account, marks the capacity type and retries at once
// (onto on-demand, where the pool allows it); offerings without capacity are named and retried at
// once; a configuration or permission refusal marks nothing and backs off per pool; an on-demand
// quota or another error marks nothing and waits retryAfterFailure. The claim and the pods still
// waiting are told why, quoting the error.
func TestLaunchFailureRecordsWhatWasUnavailable(t *testing.T) {
	launchesCounted.Do(func() { k8smetrics.NewKubeRegistry().MustRegister(metrics.Launches) })
	quota := &cloud.Error{Kind: cloud.KindQuota, Err: errors.New("an account quota refused the launch")}
	badVolume := &cloud.Error{Kind: cloud.KindConfiguration, Err: errors.New("InvalidParameterValue: Volume of size 8GB is smaller than snapshot")}
	denied := &cloud.Error{Kind: cloud.KindPermission, Err: errors.New("UnauthorizedOperation: You are not authorized to perform this operation.")}
	noSpotRole := &cloud.Error{Kind: cloud.KindPermission, Err: fmt.Errorf("%w: create the role", cloud.ErrSpotNotEnabled)}
	for _, tt := range []struct {
		name          string
		capacityType  string
		fail          error // the launch call's error; nil: no capacity in any offering
		wantRetry     time.Duration
		jitter        bool // wantRetry plus at most 20%
		wantType      string
		wantOfferings []v1alpha1.UnavailableOffering
		wantResult    string
		wantClaimSays string
	}{
		{name: "spot quota", capacityType: "spot", fail: quota, wantType: "SpotQuota", wantResult: metrics.ResultQuota, wantClaimSays: "launch failed (quota)"},
		{name: "spot not enabled", capacityType: "spot", fail: noSpotRole, wantType: "SpotNotEnabled", wantResult: metrics.ResultError, wantClaimSays: "launch failed (permission)"},
		{name: "on-demand quota", capacityType: "on-demand", fail: quota, wantRetry: retryAfterFailure, wantResult: metrics.ResultQuota, wantClaimSays: "an account quota"},
		{name: "no capacity", capacityType: "on-demand", wantResult: metrics.ResultInsufficientCapacity, wantClaimSays: "launch failed (insufficient capacity)",
			wantOfferings: []v1alpha1.UnavailableOffering{{InstanceType: "m5.large", Zone: "us-east-1a", Code: "InsufficientInstanceCapacity"}}},
		{name: "a configuration error", capacityType: "on-demand", fail: badVolume, wantRetry: refusalBackoffMin, jitter: true,
			wantResult: metrics.ResultError, wantClaimSays: "launch failed (configuration), pods planned again at 2026-05-01T12:00:"},
		{name: "a permission error", capacityType: "spot", fail: denied, wantRetry: refusalBackoffMin, jitter: true,
			wantResult: metrics.ResultError, wantClaimSays: "UnauthorizedOperation: You are not authorized to perform this operation."},
		{name: "an unclassified error", capacityType: "on-demand", fail: errors.New("something new"), wantRetry: retryAfterFailure, wantResult: metrics.ResultFailed, wantClaimSays: "launch failed (other)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cl := recorded("refused")
			cl.Spec.CapacityType = tt.capacityType
			h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
			recorder := events.NewFakeRecorder(10)
			h.c.Recorder = recorder
			h.demand.waiting["refused"] = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-refused"}}}
			if tt.fail != nil {
				h.cloud.Fail("Launch", tt.fail, 0)
			} else {
				h.cloud.SetCapacity("m5.large", "us-east-1a", cloud.CapacityType(tt.capacityType), 0)
			}
			counted := metrics.Launches.WithLabelValues("default", "", tt.capacityType, tt.wantResult)
			before, _ := k8stestutil.GetCounterMetricValue(counted)
			h.c.launch(context.Background(), cl)
			st := h.claim(t, cl.Name).Status
			if st.Phase != v1alpha1.ClaimFailed || st.RetryAt == nil {
				t.Fatalf("claim is %q (retry at %v), want Failed with a retry time", st.Phase, st.RetryAt)
			}
			if got := st.RetryAt.Sub(testNow); got < tt.wantRetry || got > tt.wantRetry && !tt.jitter || got > tt.wantRetry*12/10 {
				t.Errorf("pods planned again %s after the failure, want %s (jitter %v)", got, tt.wantRetry, tt.jitter)
			}
			if st.CapacityTypeUnavailable != tt.wantType {
				t.Errorf("capacity type unavailable %q, want %q", st.CapacityTypeUnavailable, tt.wantType)
			}
			if fmt.Sprint(st.UnavailableOfferings) != fmt.Sprint(tt.wantOfferings) {
				t.Errorf("unavailable offerings %v, want %v", st.UnavailableOfferings, tt.wantOfferings)
			}
			if after, _ := k8stestutil.GetCounterMetricValue(counted); after != before+1 {
				t.Errorf("launches counted as %q: %v, want %v", tt.wantResult, after, before+1)
			}
			if e := nextEvent(t, recorder); !strings.Contains(e, "LaunchFailed") || !strings.Contains(e, tt.wantClaimSays) {
				t.Errorf("the claim was told %q, want a LaunchFailed event saying %q", e, tt.wantClaimSays)
			}
			if e := nextEvent(t, recorder); !strings.Contains(e, "ProvisioningFailed") || tt.fail != nil && !strings.Contains(e, tt.fail.Error()) {
				t.Errorf("the waiting pod was told %q, want why the launch failed", e)
			}
		})
	}
}

// launchesCounted registers the launch counter once in a registry of its own: an unregistered
// component-base metric counts nothing.
var launchesCounted sync.Once

// Refusals back off per pool, doubling once per wave of claims failing together, and a launch of
// the pool that succeeds ends its backoff; another pool's refusals do not make it wait.
func TestRefusalsBackOffPerPool(t *testing.T) {
	denied := &cloud.Error{Kind: cloud.KindPermission, Err: errors.New("UnauthorizedOperation")}
	cl := recorded("a")
	h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
	clk := clocktesting.NewFakeClock(testNow)
	h.c.Clock = clk
	wait := func(pool string) time.Duration {
		d, _, _ := h.c.retryAfter(&v1alpha1.Claim{Spec: v1alpha1.ClaimSpec{Pool: pool, CapacityType: "on-demand"}}, denied, nil)
		return d
	}
	first := wait("default")
	if again := wait("default"); again != first || first < refusalBackoffMin || first > refusalBackoffMin*12/10 {
		t.Errorf("one wave waits %s then %s, want the same wait of %s plus at most 20%%", first, again, refusalBackoffMin)
	}
	if other := wait("spot"); other > refusalBackoffMin*12/10 {
		t.Errorf("another pool's first refusal waits %s, want %s plus at most 20%%", other, refusalBackoffMin)
	}
	clk.Step(refusalBackoffMin * 12 / 10)
	if next := wait("default"); next < 2*refusalBackoffMin {
		t.Errorf("the next wave waits %s, want at least %s", next, 2*refusalBackoffMin)
	}
	h.c.launch(context.Background(), cl)
	if got := h.c.refusalBackoff().Get("default"); got != 0 {
		t.Errorf("backoff %s after the pool launched, want none", got)
	}
}

// A launch that succeeds tells the pods still waiting what was launched where for them.
func TestLaunchedTellsTheWaitingPods(t *testing.T) {
	h := newHarness(t, []*v1alpha1.Claim{recorded("a")}, nil, nil)
	recorder := events.NewFakeRecorder(10)
	h.c.Recorder = recorder
	h.demand.waiting["a"] = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p-a"}}}
	h.c.launch(context.Background(), recorded("a"))
	st := h.claim(t, "a").Status
	if len(recorder.Events) != 1 {
		t.Fatalf("%d events, want one for the waiting pod", len(recorder.Events))
	}
	if e := nextEvent(t, recorder); !strings.Contains(e, "Launched") || !strings.Contains(e, "m5.large "+st.InstanceID+" in us-east-1a (on-demand, $0.0960/h) as node "+st.NodeName) {
		t.Errorf("event %q does not say what was launched where", e)
	}
}

// nextEvent is the next event recorded; none is an error, not a wait.
func nextEvent(t *testing.T, r *events.FakeRecorder) string {
	t.Helper()
	select {
	case e := <-r.Events:
		return e
	default:
		t.Fatal("no event recorded")
		return ""
	}
}

// A claim deleted, or launched by another replica, while it waited its turn is not launched.
func TestLaunchSkipsClaimsNoLongerPending(t *testing.T) {
	deleting := recorded("deleting")
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	launched := claimIn("launched", v1alpha1.ClaimLaunched, "i-1", testNow, testNow)
	// Its request recorded: a launch of it would reach EC2.
	launched.Status.Request = &v1alpha1.LaunchRequest{ImageID: "ami-1", SubnetIDs: []string{"subnet-a"}, SecurityGroupIDs: []string{"sg-1"}}
	h := newHarness(t, []*v1alpha1.Claim{deleting, launched}, nil, nil)
	waitUntil(t, "the claims in the cache", func() bool { return len(h.c.Claims.List()) == 2 })
	// Queued while they were still Pending.
	h.c.launch(context.Background(), recorded("deleting"))
	h.c.launch(context.Background(), recorded("launched"))
	if n := h.cloud.Launches(); n != 0 {
		t.Errorf("%d launches, want none", n)
	}
	if got := h.claim(t, "launched").Status; got.Phase != v1alpha1.ClaimLaunched || got.InstanceID != "i-1" {
		t.Errorf("the launched claim's status became %+v", got)
	}
}

// gatedCloud holds every launch until the gate opens, noting the order launches reach EC2.
type gatedCloud struct {
	*cloudfake.Provider
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

// gatedHarness is a harness whose launches wait at a gate, with the claims named (those in kept
// recorded for expected pods only, as a rollout's claims are before its pods exist).
func gatedHarness(t *testing.T, names []string, kept ...string) (*harness, *gatedCloud, map[string]*v1alpha1.Claim) {
	t.Helper()
	byName := map[string]*v1alpha1.Claim{}
	var cls []*v1alpha1.Claim
	for _, n := range names {
		cl := recorded(n)
		if slices.Contains(kept, n) {
			cl.Spec.Pods = nil
		}
		byName[n] = cl
		cls = append(cls, cl)
	}
	h := newHarness(t, cls, nil, nil)
	gated := &gatedCloud{Provider: h.cloud, gate: make(chan struct{})}
	h.c.Cloud = gated
	return h, gated, byName
}

// Claims handed to the launch stage go to EC2 in that order, maxLaunchesInFlight at a time, and
// a claim pods wait on goes before claims only kept for pods still to come, even ones handed
// over earlier: whatever the scheduling of goroutines.
func TestLaunchesKeepTheOrder(t *testing.T) {
	var names []string
	for i := 0; i < maxLaunchesInFlight; i++ {
		names = append(names, "c"+strconv.Itoa(i))
	}
	names = append(names, "kept-a", "kept-b", "waited")
	h, gated, cls := gatedHarness(t, names, "kept-a", "kept-b")
	for _, n := range names {
		h.c.launchAsync(context.Background(), cls[n])
	}
	waitUntil(t, "the first launches to reach EC2", func() bool { return len(gated.seen()) == maxLaunchesInFlight })
	got := gated.seen()
	var first []string
	for _, n := range names[:maxLaunchesInFlight] {
		first = append(first, string(cls[n].UID))
	}
	slices.Sort(got)
	slices.Sort(first)
	if !slices.Equal(got, first) {
		t.Fatalf("first launches %v, want the first %d claims %v", got, maxLaunchesInFlight, first)
	}
	// One launch at a time from here: each freed worker takes the next claim in line.
	gated.releaseInOrder(t, string(cls["waited"].UID), string(cls["kept-a"].UID), string(cls["kept-b"].UID))
	h.c.launches.workers.Wait()
}

// TestLaunchesPutNewlyWaitedClaimsFirst: a claim queued for expected pods only goes before the
// other such claims once pods of the rollout fill its room and wait on it.
func TestLaunchesPutNewlyWaitedClaimsFirst(t *testing.T) {
	var names []string
	for i := 0; i < maxLaunchesInFlight; i++ {
		names = append(names, "c"+strconv.Itoa(i))
	}
	names = append(names, "kept-a", "kept-b")
	h, gated, cls := gatedHarness(t, names, "kept-a", "kept-b")
	for _, n := range names {
		h.c.launchAsync(context.Background(), cls[n])
	}
	waitUntil(t, "the first launches to reach EC2", func() bool { return len(gated.seen()) == maxLaunchesInFlight })
	h.demand.mu.Lock()
	h.demand.waits["kept-b"] = true // a pod of the rollout filled kept-b
	h.demand.mu.Unlock()
	gated.releaseInOrder(t, string(cls["kept-b"].UID), string(cls["kept-a"].UID))
	h.c.launches.workers.Wait()
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

// The pool's tags go on the instance under Tailor's own (Name included), and its launch
// settings reach the request as the cloud takes them.
func TestLaunchCarriesThePoolsSettings(t *testing.T) {
	cl := recorded("tagged")
	h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
	pool := &h.c.Args.Pools[0]
	pool.Tags = map[string]string{"team": "ml", "Name": "mine"}
	pool.BlockDeviceMappings = []config.BlockDeviceMapping{{DeviceName: "/dev/xvda", VolumeSize: resource.MustParse("100Gi"), VolumeType: "gp3", Encrypted: true, DeleteOnTermination: true}}
	pool.MetadataOptions = config.MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 2}
	h.c.launch(context.Background(), cl)
	live := slices.Collect(maps.Values(h.live(t)))
	if len(live) != 1 || live[0].Tags["team"] != "ml" || live[0].Tags["Name"] != "tagged" || live[0].Tags[v1alpha1.TagClaim] != "tagged" {
		t.Errorf("instances %+v, want one tagged team=ml under Tailor's Name and claim tags", live)
	}
	got := launchSettings(pool)
	want := cloud.LaunchSettings{HTTPTokens: "required", HopLimit: 2,
		BlockDevices: []cloud.BlockDevice{{DeviceName: "/dev/xvda", SizeGiB: 100, VolumeType: "gp3", Encrypted: true, DeleteOnTermination: true}}}
	if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
		t.Errorf("launch settings %+v, want %+v", got, want)
	}
}
