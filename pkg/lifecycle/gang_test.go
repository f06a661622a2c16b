package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
)

// testGang is the gang of the lifecycle's gang tests: PodGroup default/train.
const testGang = "default/train"

// gangOf is the spec.gang of a plan of the test gang with n claims.
func gangOf(id string, n int) *v1alpha1.Gang {
	return &v1alpha1.Gang{PodGroup: testGang, ID: id, Claims: n}
}

// gangClaimsRecorded are the claims named, recorded (Pending, created at testNow) as one plan of a
// gang of size claims: fewer names than size make a gang recorded in part.
func gangClaimsRecorded(id string, size int, names ...string) []*v1alpha1.Claim {
	var out []*v1alpha1.Claim
	for _, n := range names {
		cl := recorded(n)
		cl.Spec.Gang = gangOf(id, size)
		out = append(out, cl)
	}
	return out
}

// gangCloud is the fake cloud counting the launches (CreateFleet calls) each claim's client token
// makes, and refusing those of the tokens given an error.
type gangCloud struct {
	*cloudfake.Provider
	mu     sync.Mutex
	calls  map[string]int
	refuse map[string]error
}

func newGangCloud(h *harness) *gangCloud {
	g := &gangCloud{Provider: h.cloud, calls: map[string]int{}, refuse: map[string]error{}}
	h.c.Cloud = g
	return g
}

func (g *gangCloud) Launch(ctx context.Context, req cloud.LaunchRequest) (*cloud.LaunchResult, error) {
	g.mu.Lock()
	g.calls[req.ClientToken]++
	err := g.refuse[req.ClientToken]
	g.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return g.Provider.Launch(ctx, req)
}

// launchCalls is how many launches the claim's token made, and how many all tokens made.
func (g *gangCloud) launchCalls(cl *v1alpha1.Claim) (int, int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	total := 0
	for _, n := range g.calls {
		total += n
	}
	return g.calls[string(cl.UID)], total
}

// A gang whose claims are all recorded is launched whole from the launch of any one of them:
// every claim Launched on an instance of its own, with one launch (CreateFleet) per claim, even
// past maxLaunchesInFlight claims at once.
func TestLaunchGangLaunchesTheWholeGang(t *testing.T) {
	for _, size := range []int{1, 3, maxLaunchesInFlight + 1} {
		t.Run(fmt.Sprintf("%d claims", size), func(t *testing.T) {
			var names []string
			for i := range size {
				names = append(names, fmt.Sprintf("g%d", i))
			}
			cls := gangClaimsRecorded("plan-1", size, names...)
			h := newHarness(t, cls, nil, nil)
			counting := newGangCloud(h)
			h.c.launch(context.Background(), cls[size-1])

			live := h.live(t)
			seen := map[string]bool{}
			for _, cl := range cls {
				st := h.claim(t, cl.Name).Status
				if st.Phase != v1alpha1.ClaimLaunched || st.InstanceID == "" || st.NodeName == "" {
					t.Errorf("claim %s: phase %q, instance %q, node %q; want Launched with its instance", cl.Name, st.Phase, st.InstanceID, st.NodeName)
					continue
				}
				if seen[st.InstanceID] {
					t.Errorf("claim %s shares instance %s with another claim", cl.Name, st.InstanceID)
				}
				seen[st.InstanceID] = true
				if in, ok := live[st.InstanceID]; !ok || in.Tags[v1alpha1.TagClaim] != cl.Name {
					t.Errorf("claim %s's instance %s: running %v, tagged %q", cl.Name, st.InstanceID, ok, in.Tags[v1alpha1.TagClaim])
				}
				if mine, _ := counting.launchCalls(cl); mine != 1 {
					t.Errorf("claim %s was launched %d times, want once", cl.Name, mine)
				}
			}
			if _, total := counting.launchCalls(cls[0]); total != size {
				t.Errorf("%d launches for a gang of %d claims, want one per claim", total, size)
			}
			if n := h.cloud.Launches(); n != size {
				t.Errorf("%d instances, want %d", n, size)
			}
			if len(live) != size {
				t.Errorf("%d instances running, want %d", len(live), size)
			}
			if h.c.InFlight(cls[0].Name) {
				t.Error("the gang's claims are still marked in flight after its launch")
			}
		})
	}
}

// A gang recorded in part (provisioning stopped between its claims) is not launched: while it is
// younger than resumeAfter the rest may still come, and nothing happens; once it has waited
// resumeAfter the sweep fails its claims, with nothing launched, their pods planned again after
// retryAfterFailure.
func TestLaunchGangShortOfClaims(t *testing.T) {
	cls := gangClaimsRecorded("plan-1", 3, "g0", "g1")
	h := newHarness(t, cls, nil, nil)
	clk := h.c.Clock.(*clocktesting.FakePassiveClock)
	counting := newGangCloud(h)
	ctx := context.Background()

	for _, age := range []time.Duration{0, resumeAfter / 2, resumeAfter - time.Second} {
		clk.SetTime(testNow.Add(age))
		h.c.launch(ctx, cls[0])
		h.c.sweep(ctx)
		h.c.launches.workers.Wait()
		for _, cl := range cls {
			if st := h.claim(t, cl.Name).Status; st.Phase != v1alpha1.ClaimPending || st.RetryAt != nil {
				t.Fatalf("%s after the gang was recorded in part: claim %s is %q (retry at %v), want still Pending", age, cl.Name, st.Phase, st.RetryAt)
			}
		}
		if _, total := counting.launchCalls(cls[0]); total != 0 {
			t.Fatalf("%s after the gang was recorded in part: %d launches, want none", age, total)
		}
	}

	now := testNow.Add(resumeAfter + time.Second)
	clk.SetTime(now)
	h.c.sweep(ctx)
	h.c.launches.workers.Wait()
	for _, cl := range cls {
		st := h.claim(t, cl.Name).Status
		if st.Phase != v1alpha1.ClaimFailed {
			t.Errorf("claim %s is %q once the gang waited resumeAfter, want Failed", cl.Name, st.Phase)
			continue
		}
		if !strings.Contains(st.Message, "only 2 of its 3 claims were recorded") || !strings.Contains(st.Message, testGang) {
			t.Errorf("claim %s failed with %q, want it to say the gang %s had only 2 of its 3 claims", cl.Name, st.Message, testGang)
		}
		if st.RetryAt == nil || !st.RetryAt.Time.Equal(now.Add(retryAfterFailure)) {
			t.Errorf("claim %s retries at %v, want %v", cl.Name, st.RetryAt, now.Add(retryAfterFailure))
		}
		if st.InstanceID != "" {
			t.Errorf("claim %s records instance %s; none was launched", cl.Name, st.InstanceID)
		}
	}
	if _, total := counting.launchCalls(cls[0]); total != 0 || h.cloud.Launches() != 0 {
		t.Errorf("%d launches (%d instances) for a gang recorded in part, want none", total, h.cloud.Launches())
	}
}

// When one claim of a gang cannot launch, the instances launched for the others are terminated
// and every claim is failed: the one that failed with its own error (and what it found without
// capacity), the others saying the gang was given up and recording the instance they had, each
// with status.retryAt (at once after insufficient capacity, after retryAfterFailure after another
// error). A sibling launched before (a gang launch resumed after a restart) is handed to
// termination.
func TestLaunchGangFailsWhole(t *testing.T) {
	refused := errors.New("InvalidParameterValue: refused")
	for _, tc := range []struct {
		name string
		// spot makes claim g1 a spot claim, and refuse makes its launch fail.
		spot           bool
		refuse         func(h *harness, counting *gangCloud, cl *v1alpha1.Claim)
		launchedBefore bool // g2 launched before, on instance i-before
		wantOwn        string
		wantRetry      time.Duration
		wantOfferings  []v1alpha1.UnavailableOffering
	}{
		{
			name: "no capacity for its offering",
			spot: true,
			refuse: func(h *harness, _ *gangCloud, _ *v1alpha1.Claim) {
				h.cloud.SetCapacity("m5.large", "us-east-1a", cloud.Spot, 0)
			},
			wantOwn:       "no offering could be launched",
			wantOfferings: []v1alpha1.UnavailableOffering{{InstanceType: "m5.large", Zone: "us-east-1a", Code: "InsufficientInstanceCapacity"}},
		},
		{
			name:      "EC2 refuses its launch",
			refuse:    func(_ *harness, counting *gangCloud, cl *v1alpha1.Claim) { counting.refuse[string(cl.UID)] = refused },
			wantOwn:   refused.Error(),
			wantRetry: retryAfterFailure,
		},
		{
			name:           "a sibling launched before a restart",
			refuse:         func(_ *harness, counting *gangCloud, cl *v1alpha1.Claim) { counting.refuse[string(cl.UID)] = refused },
			launchedBefore: true,
			wantOwn:        refused.Error(),
			wantRetry:      retryAfterFailure,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cls := gangClaimsRecorded("plan-1", 3, "g0", "g1", "g2")
			if tc.spot {
				cls[1].Spec.CapacityType = string(cloud.Spot)
			}
			var before []cloud.Instance
			if tc.launchedBefore {
				cls[2].Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimLaunched, InstanceID: "i-before", InstanceType: "m5.large", LaunchedAt: &metav1.Time{Time: testNow}}
				before = append(before, instanceOf("i-before", "g2", testNow))
			}
			h := newHarness(t, cls, nil, before)
			counting := newGangCloud(h)
			tc.refuse(h, counting, cls[1])

			h.c.launch(context.Background(), cls[0])

			live := h.live(t)
			failed := h.claim(t, "g1").Status
			if failed.Phase != v1alpha1.ClaimFailed || !strings.Contains(failed.Message, tc.wantOwn) || strings.Contains(failed.Message, "given up") {
				t.Errorf("the claim whose launch failed: phase %q, message %q; want Failed with its own error %q", failed.Phase, failed.Message, tc.wantOwn)
			}
			if fmt.Sprint(failed.UnavailableOfferings) != fmt.Sprint(tc.wantOfferings) {
				t.Errorf("the claim whose launch failed records unavailable offerings %v, want %v", failed.UnavailableOfferings, tc.wantOfferings)
			}
			if failed.InstanceID != "" {
				t.Errorf("the claim whose launch failed records instance %s", failed.InstanceID)
			}
			others := []string{"g0"}
			if !tc.launchedBefore {
				others = append(others, "g2")
			}
			for _, name := range others {
				st := h.claim(t, name).Status
				if st.Phase != v1alpha1.ClaimFailed {
					t.Errorf("claim %s is %q after its sibling's launch failed, want Failed", name, st.Phase)
					continue
				}
				if !strings.Contains(st.Message, "gang "+testGang+" given up") || !strings.Contains(st.Message, "claim g1 failed") {
					t.Errorf("claim %s failed with %q, want it to say the gang was given up for g1", name, st.Message)
				}
				if st.InstanceID == "" {
					t.Errorf("claim %s does not record the instance it launched, for the sweep to terminate", name)
				} else if _, ok := live[st.InstanceID]; ok {
					t.Errorf("claim %s's instance %s still runs: the gang was given up", name, st.InstanceID)
				}
			}
			for _, name := range append(others, "g1") {
				st := h.claim(t, name).Status
				if st.RetryAt == nil || !st.RetryAt.Time.Equal(testNow.Add(tc.wantRetry)) {
					t.Errorf("claim %s retries at %v, want %v", name, st.RetryAt, testNow.Add(tc.wantRetry))
				}
			}
			if len(live) != len(before) {
				t.Errorf("%d instances run after the gang was given up, want %d (those launched before it, termination's)", len(live), len(before))
			}
			if tc.launchedBefore {
				if cl := h.claim(t, "g2"); cl.DeletionTimestamp == nil {
					t.Errorf("the sibling launched before is %q and not deleting; want it handed to termination", cl.Status.Phase)
				}
			}
			if _, total := counting.launchCalls(cls[0]); total != len(others)+1 {
				t.Errorf("%d launches, want one per pending claim (%d)", total, len(others)+1)
			}
		})
	}
}

// A gang one of whose claims failed or is being deleted cannot be whole: its pending claims are
// failed at once, and nothing is launched.
func TestLaunchGangBrokenBySibling(t *testing.T) {
	for _, tc := range []struct {
		name      string
		breakGang func(cl *v1alpha1.Claim)
	}{
		{name: "a sibling failed", breakGang: func(cl *v1alpha1.Claim) {
			cl.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimFailed, Message: "earlier"}
		}},
		{name: "a sibling is being deleted", breakGang: func(cl *v1alpha1.Claim) {
			cl.DeletionTimestamp = &metav1.Time{Time: testNow}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cls := gangClaimsRecorded("plan-1", 3, "g0", "g1", "g2")
			tc.breakGang(cls[2])
			h := newHarness(t, cls, nil, nil)
			counting := newGangCloud(h)
			h.c.launch(context.Background(), cls[0])
			for _, name := range []string{"g0", "g1"} {
				st := h.claim(t, name).Status
				if st.Phase != v1alpha1.ClaimFailed || !strings.Contains(st.Message, "cannot be whole") || !strings.Contains(st.Message, "g2") {
					t.Errorf("claim %s: phase %q, message %q; want Failed saying g2 keeps the gang from being whole", name, st.Phase, st.Message)
				}
				if st.RetryAt == nil || !st.RetryAt.Time.Equal(testNow.Add(retryAfterFailure)) {
					t.Errorf("claim %s retries at %v, want %v", name, st.RetryAt, testNow.Add(retryAfterFailure))
				}
			}
			if _, total := counting.launchCalls(cls[0]); total != 0 {
				t.Errorf("%d launches for a gang that cannot be whole, want none", total)
			}
		})
	}
}

// The informer's add of a gang's claim launches nothing until the cache holds every claim of the
// gang; the add of the last one launches the gang whole, once, whichever sibling's add comes then.
func TestLaunchRecordedWaitsForTheWholeGang(t *testing.T) {
	cls := gangClaimsRecorded("plan-1", 3, "g0", "g1", "g2")
	h := newHarness(t, cls[:2], nil, nil)
	counting := newGangCloud(h)
	h.c.runCtx = context.Background()
	// Every worker busy: a launch queued stays in the queue, for the test to see.
	h.c.launches.mu.Lock()
	h.c.launches.running = maxLaunchesInFlight
	h.c.launches.mu.Unlock()
	for _, cl := range cls[:2] {
		h.c.launchRecorded(cl)
	}
	h.c.launches.mu.Lock()
	queued := len(h.c.launches.waited) + len(h.c.launches.kept)
	h.c.launches.running = 0
	h.c.launches.mu.Unlock()
	if queued != 0 {
		t.Fatalf("%d launches queued with 2 of the gang's 3 claims in the cache, want none", queued)
	}
	if _, total := counting.launchCalls(cls[0]); total != 0 {
		t.Fatalf("%d launches with 2 of the gang's 3 claims in the cache, want none", total)
	}
	if h.c.InFlight(gangKey(cls[0].Spec.Gang)) {
		t.Fatal("the gang's launch is queued with 2 of its 3 claims in the cache")
	}
	for _, cl := range cls[:2] {
		if st := h.claim(t, cl.Name).Status; st.Phase != v1alpha1.ClaimPending {
			t.Fatalf("claim %s is %q before the gang was wholly recorded, want Pending", cl.Name, st.Phase)
		}
	}

	if _, err := h.claims.TailorV1alpha1().Claims().Create(context.Background(), cls[2], metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "the last claim in the cache", func() bool { _, ok := h.c.Claims.Get("g2"); return ok })
	// Every sibling's add after the last one is in the cache, as informers may deliver them.
	for _, cl := range []*v1alpha1.Claim{cls[2], cls[0], cls[1]} {
		h.c.launchRecorded(cl)
	}
	h.c.launches.workers.Wait()
	for _, cl := range cls {
		if st := h.claim(t, cl.Name).Status; st.Phase != v1alpha1.ClaimLaunched {
			t.Errorf("claim %s is %q once the gang was wholly recorded, want Launched", cl.Name, st.Phase)
		}
		if mine, _ := counting.launchCalls(cl); mine != 1 {
			t.Errorf("claim %s was launched %d times, want once", cl.Name, mine)
		}
	}
	if n := h.cloud.Launches(); n != 3 {
		t.Errorf("%d instances, want 3", n)
	}
}
