package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/metrics"
)

// A gang's claims (spec.gang, recorded together by provisioning for a Coscheduling PodGroup) are
// launched together or not at all: once all are recorded, in one go; if any launch fails, the
// instances launched for the others are terminated and every claim of the gang is failed, so its
// pods are planned again, whole. A gang left short of claims (provisioning stopped while
// recording them) is failed once it has waited resumeAfter.

// gangKey keys a gang's launch in the launch queue's in-flight set.
func gangKey(g *v1alpha1.Gang) string { return "gang/" + g.ID }

// gangClaims are the cached claims of the gang, by name.
func (c *Controller) gangClaims(g *v1alpha1.Gang) []*v1alpha1.Claim {
	var out []*v1alpha1.Claim
	for _, cl := range c.Claims.View() {
		if cl.Spec.Gang != nil && cl.Spec.Gang.ID == g.ID {
			out = append(out, cl)
		}
	}
	slices.SortFunc(out, func(a, b *v1alpha1.Claim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// gangRecorded says whether every claim of the claim's gang is recorded.
func (c *Controller) gangRecorded(cl *v1alpha1.Claim) bool {
	return len(c.gangClaims(cl.Spec.Gang)) >= cl.Spec.Gang.Claims
}

// gangLaunch is one claim's launch within its gang's.
type gangLaunch struct {
	claim        *v1alpha1.Claim
	inst         *cloud.Instance
	price        float64
	offeringErrs []cloud.OfferingError
	err          error
	// interrupted: the call was cut short (shutdown, or launchTimeout); EC2 may have acted.
	interrupted bool
}

// launchGang launches the gang of cl whole, or fails it whole.
func (c *Controller) launchGang(ctx context.Context, cl *v1alpha1.Claim) {
	g := cl.Spec.Gang
	logger := klog.FromContext(ctx).WithValues("podGroup", g.PodGroup, "gang", g.ID)
	ctx = klog.NewContext(ctx, logger)
	claims := c.gangClaims(g)
	marked := c.launches.mark(claims)
	defer c.launches.unmark(marked)
	toLaunch, broken := c.sortGang(g, claims)
	if broken != "" {
		c.abandonGang(ctx, claims, nil, fmt.Errorf("gang %s cannot be whole: %s", g.PodGroup, broken), retryAfterFailure)
		return
	}
	if len(toLaunch) == 0 || ctx.Err() != nil {
		return
	}
	if !slices.ContainsFunc(claims, c.Demand.Wanted) {
		for _, s := range toLaunch {
			c.dropUnwanted(ctx, s)
		}
		return
	}
	results := c.launchAll(ctx, toLaunch)
	var failed []gangLaunch
	interrupted := false
	for _, r := range results {
		switch {
		case r.interrupted:
			interrupted = true
		case r.err != nil:
			failed = append(failed, r)
		}
	}
	if len(failed) > 0 {
		c.failGang(ctx, claims, results, failed)
		return
	}
	// Record what launched, on a context of its own: a shutdown mid-launch must not lose it. A
	// launch interrupted (shutting down, or timed out) leaves its claim Pending, resumed with its
	// client token, which returns any instance EC2 started; the gang waits for it whole.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), launchTimeout)
	defer cancel()
	for _, r := range results {
		if r.err == nil {
			c.launched(rctx, r.claim, r.inst, r.price, r.offeringErrs)
		}
	}
	if !interrupted {
		logger.Info("Launched gang", "claims", len(claims))
	}
}

// sortGang sorts the gang's claims: those to launch (Pending), and why the gang cannot be whole
// ("" if it can): a claim failed or going, or claims never recorded (after resumeAfter; before,
// the rest are being recorded and the last one's arrival launches the gang, so nothing is to
// launch yet).
func (c *Controller) sortGang(g *v1alpha1.Gang, claims []*v1alpha1.Claim) (toLaunch []*v1alpha1.Claim, broken string) {
	for _, s := range claims {
		switch {
		case s.DeletionTimestamp != nil || s.Status.Phase == v1alpha1.ClaimFailed:
			broken = fmt.Sprintf("claim %s of the gang failed or was deleted", s.Name)
		case pending(s):
			toLaunch = append(toLaunch, s)
		}
	}
	if broken == "" && len(claims) < g.Claims {
		if c.clock().Since(oldest(claims)) < resumeAfter {
			return nil, ""
		}
		broken = fmt.Sprintf("only %d of its %d claims were recorded", len(claims), g.Claims)
	}
	return toLaunch, broken
}

// launchAll launches the claims at once, each within launchTimeout, taking the launch slots
// every launch shares (maxLaunchesInFlight), and returns each one's result in the claims' order.
func (c *Controller) launchAll(ctx context.Context, claims []*v1alpha1.Claim) []gangLaunch {
	results := make([]gangLaunch, len(claims))
	var wg sync.WaitGroup
	for i, cl := range claims {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := gangLaunch{claim: cl}
			if !c.launches.takeSlot(ctx) {
				r.err, r.interrupted = ctx.Err(), true
				results[i] = r
				return
			}
			defer c.launches.giveSlot()
			lctx, cancel := context.WithTimeout(ctx, launchTimeout)
			defer cancel()
			r.inst, r.price, r.offeringErrs, r.err = c.createInstance(lctx, cl)
			r.interrupted = r.err != nil && lctx.Err() != nil
			results[i] = r
		}()
	}
	wg.Wait()
	return results
}

// failGang gives up a gang one of whose launches failed: the instances the others launched are
// terminated and every claim is failed, its pods planned again (whole) when the failed launches
// say (at once after insufficient capacity, whose offerings the claims record).
func (c *Controller) failGang(ctx context.Context, claims []*v1alpha1.Claim, results []gangLaunch, failed []gangLaunch) {
	var delay time.Duration
	for _, f := range failed {
		d, result, capacityType := c.retryAfter(f.claim, f.err, f.offeringErrs)
		delay = max(delay, d)
		metrics.Launches.WithLabelValues(f.claim.Spec.Pool, "", f.claim.Spec.CapacityType, result).Inc()
		klog.FromContext(ctx).Info("Launch of a gang's claim failed; the gang is given up", "claim", f.claim.Name, "err", f.err)
		c.recordFailed(ctx, f.claim, f.err, f.offeringErrs, d, capacityType, nil)
	}
	cause := fmt.Errorf("gang %s given up: claim %s failed: %w", claims[0].Spec.Gang.PodGroup, failed[0].claim.Name, failed[0].err)
	c.abandonGang(ctx, claims, results, cause, delay)
}

// abandonGang fails every claim of the gang not failed yet: the instances just launched (results)
// and those launched before are terminated first, and each claim records its instance, so the
// sweep terminates any that termination missed. Registered claims are handed to termination.
func (c *Controller) abandonGang(ctx context.Context, claims []*v1alpha1.Claim, results []gangLaunch, cause error, delay time.Duration) {
	logger := klog.FromContext(ctx)
	launched := map[string]*gangLaunch{}
	for i := range results {
		if results[i].err == nil && results[i].inst != nil {
			launched[results[i].claim.Name] = &results[i]
		}
	}
	var ids []string
	for _, r := range launched {
		ids = append(ids, r.inst.ID)
	}
	for _, s := range claims {
		if s.DeletionTimestamp == nil && (s.Status.Phase == v1alpha1.ClaimLaunched || s.Status.Phase == v1alpha1.ClaimRegistered) {
			// Launched earlier (a gang launch resumed after a restart): termination's to end.
			if err := c.Claims.Terminate(ctx, s.Name); err != nil {
				logger.Error(err, "Cannot hand a claim of a broken gang to termination; will retry", "claim", s.Name)
			}
		}
	}
	if len(ids) > 0 {
		if err := c.Cloud.Terminate(ctx, ids...); err != nil {
			logger.Error(err, "Cannot terminate a broken gang's instances; the sweep will", "instances", ids)
		}
	}
	for _, s := range claims {
		if s.DeletionTimestamp != nil || !pending(s) {
			continue
		}
		var inst *cloud.Instance
		var offeringErrs []cloud.OfferingError
		if r, ok := launched[s.Name]; ok {
			inst, offeringErrs = r.inst, r.offeringErrs
		} else if slices.ContainsFunc(results, func(r gangLaunch) bool { return r.claim.Name == s.Name && r.err != nil && !r.interrupted }) {
			continue // recorded with its own failure
		}
		c.recordFailed(ctx, s, cause, offeringErrs, delay, "", inst)
	}
	logger.Info("Gang given up: no claim of it is left to run", "claims", len(claims), "instancesTerminated", len(ids), "reason", cause, "retryAfter", delay)
	if len(claims) > 0 {
		ns, name, _ := strings.Cut(claims[0].Spec.Gang.PodGroup, "/")
		ref := &corev1.ObjectReference{APIVersion: "scheduling.x-k8s.io/v1alpha1", Kind: "PodGroup", Namespace: ns, Name: name}
		c.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, "GangNotProvisioned", "Provisioning", "%v; its pods are planned again, whole, in %s", cause, delay.Round(time.Second))
	}
}

// oldest is the creation time of the oldest claim.
func oldest(claims []*v1alpha1.Claim) time.Time {
	var t time.Time
	for _, cl := range claims {
		if t.IsZero() || cl.CreationTimestamp.Time.Before(t) {
			t = cl.CreationTimestamp.Time
		}
	}
	return t
}
