package provisioning

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A claim takes pods that arrive while its node is not up: launched, or registered but not yet
// initialized (the scheduler cannot place a pod there before). Once up, or going, it takes none.
func TestInFlight(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name        string
		phase       v1alpha1.ClaimPhase
		initialized bool
		deleting    bool
		want        bool
	}{
		{name: "launching", phase: v1alpha1.ClaimPending},
		{name: "launched", phase: v1alpha1.ClaimLaunched, want: true},
		{name: "registered, starting", phase: v1alpha1.ClaimRegistered, want: true},
		{name: "registered, up", phase: v1alpha1.ClaimRegistered, initialized: true},
		{name: "launched, deleted", phase: v1alpha1.ClaimLaunched, deleting: true},
		{name: "failed", phase: v1alpha1.ClaimFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &v1alpha1.Claim{Status: v1alpha1.ClaimStatus{Phase: tc.phase}}
			if tc.initialized {
				c.Status.InitializedAt = &now
			}
			if tc.deleting {
				c.DeletionTimestamp = &now
			}
			if got := inFlight(c); got != tc.want {
				t.Errorf("inFlight = %v, want %v", got, tc.want)
			}
		})
	}
}
