package lifecycle

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// The launch stage: provisioning records a claim (Pending) and launches it; a launch a restart or
// a crash interrupted is launched again here, with the claim's own client token, so EC2 answers
// with the instance it may already have started instead of a second one.

// resumeInterruptedLaunches launches again, when this replica takes over, every claim recorded
// but not yet launched.
func (c *Controller) resumeInterruptedLaunches(ctx context.Context) {
	for _, cl := range c.Claims.List() {
		if pending(cl) && cl.DeletionTimestamp == nil {
			klog.FromContext(ctx).Info("Resuming interrupted launch", "claim", cl.Name)
			c.Launcher.LaunchAsync(ctx, cl)
		}
	}
}

// resumeStuckLaunch launches a Pending claim again once it has waited resumeAfter with no launch
// of it running in this process.
func (c *Controller) resumeStuckLaunch(ctx context.Context, cl *v1alpha1.Claim, now time.Time) {
	if !c.Launcher.InFlight(cl.Name) && now.Sub(cl.CreationTimestamp.Time) > resumeAfter {
		klog.FromContext(ctx).Info("Resuming stuck launch", "claim", cl.Name)
		c.Launcher.LaunchAsync(ctx, cl)
	}
}

// pending says whether the claim is recorded but not launched.
func pending(cl *v1alpha1.Claim) bool {
	return cl.Status.Phase == "" || cl.Status.Phase == v1alpha1.ClaimPending
}
