package provisioning

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// fill is pods put onto a claim's room by fillExpected or fillInFlight, decided on the claim as
// cached.
type fill struct {
	cached *v1alpha1.Claim
	pods   []*planning.Pod
}

// refit checks a fill's pods again on the newest version of its claim, when the cached one was
// behind: it returns those the claim still takes, or errNoLongerInFlight.
type refit func(cur *v1alpha1.Claim, pods []*planning.Pod) ([]*planning.Pod, error)

// recordWorkers bounds the claim writes record makes at once.
const recordWorkers = 8

// record writes each fill's pods on its claim, all claims at once, and announces them: under a
// burst every write waits at a busy API server (launches, registrations and binds queue there
// too), and made one after another they held a batch up for seconds. A write that finds its
// claim changed checks its pods again on the newest version (refit) and records those still
// taken. It returns the pods it did not record, to be planned.
func (p *Provisioner) record(ctx context.Context, fills []fill, again refit, why func(*v1alpha1.Claim) string) []*planning.Pod {
	type result struct {
		claim    *v1alpha1.Claim
		recorded []*planning.Pod
	}
	results := make([]result, len(fills))
	workqueue.ParallelizeUntil(ctx, recordWorkers, len(fills), func(i int) {
		f := fills[i]
		var cur *v1alpha1.Claim
		recorded, checked := f.pods, true
		err := p.Claims.UpdateFrom(ctx, f.cached, func(c *v1alpha1.Claim) error {
			if !checked {
				var err error
				if recorded, err = again(c, f.pods); err != nil || len(recorded) == 0 {
					recorded = nil
					return err
				}
			}
			checked = false // a next call is on the newest version, after a conflict
			var err error
			cur, err = p.recordOn(ctx, c, recorded)
			return err
		})
		if err != nil {
			klog.FromContext(ctx).V(2).Info("Cannot put pods on the room kept for them; planning them anew", "claim", f.cached.Name, "pods", len(f.pods), "err", err)
			return
		}
		results[i] = result{claim: cur, recorded: recorded}
	})
	var rest []*planning.Pod
	for i, r := range results {
		done := map[types.UID]bool{}
		if r.claim != nil && len(r.recorded) > 0 {
			klog.FromContext(ctx).V(2).Info("Put pods on the room of a claim not up yet", "claim", r.claim.Name, "pods", len(r.recorded), "why", why(r.claim))
			p.announce(r.claim, r.recorded, why(r.claim))
			for _, pod := range r.recorded {
				done[pod.Pod.UID] = true
			}
		}
		for _, pod := range fills[i].pods {
			if !done[pod.Pod.UID] {
				rest = append(rest, pod)
			}
		}
	}
	return rest
}

// without is pods less those in taken.
func without(pods, taken []*planning.Pod) []*planning.Pod {
	drop := make(map[types.UID]bool, len(taken))
	for _, pod := range taken {
		drop[pod.Pod.UID] = true
	}
	out := pods[:0:0]
	for _, pod := range pods {
		if !drop[pod.Pod.UID] {
			out = append(out, pod)
		}
	}
	return out
}
