package lifecycle

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

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
			cl := claimIn("a", v1alpha1.ClaimPending, "", tc.created, time.Time{})
			h := newHarness(t, []*v1alpha1.Claim{cl}, nil, nil)
			h.launcher.inFlight["a"] = tc.inFlight
			h.c.sweep(context.Background())
			if got := slices.Contains(h.launcher.launched, "a"); got != tc.want {
				t.Errorf("launched again: %v, want %v", got, tc.want)
			}
		})
	}
}

func TestResumeInterruptedLaunches(t *testing.T) {
	deleting := claimIn("deleting", v1alpha1.ClaimPending, "", testNow, time.Time{})
	deleting.DeletionTimestamp = &metav1.Time{Time: testNow}
	h := newHarness(t, []*v1alpha1.Claim{
		claimIn("recorded", "", "", testNow, time.Time{}),
		claimIn("pending", v1alpha1.ClaimPending, "", testNow, time.Time{}),
		claimIn("launched", v1alpha1.ClaimLaunched, "i-1", testNow, testNow),
		deleting,
	}, nil, nil)
	h.c.resumeInterruptedLaunches(context.Background())
	slices.Sort(h.launcher.launched)
	if want := []string{"pending", "recorded"}; !slices.Equal(h.launcher.launched, want) {
		t.Errorf("launched %v, want %v: every claim recorded but not launched, unless deleting", h.launcher.launched, want)
	}
}
