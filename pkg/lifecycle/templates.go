package lifecycle

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

const (
	// DefaultTemplateGCPeriod is how often the sweep looks for launch templates nothing uses
	// (and once on the first sweep of every Run, so a restart with a changed pool cleans up).
	DefaultTemplateGCPeriod = 5 * time.Minute
	// DefaultTemplateGrace is how old an unused template must be before it is deleted: a
	// replica still running an older configuration during a rollout may launch from it for a
	// moment (and would recreate it if it were gone, but need not).
	DefaultTemplateGrace = 10 * time.Minute
)

// collectTemplates deletes the launch templates of this cluster that no pool or claim uses,
// (cls are the current claims) at most every TemplateGCPeriod. Every template Tailor creates carries its pool's name and
// launch fingerprint; the launcher only ever launches with the fingerprint of the pool as
// configured now, so a template of another fingerprint is not launched from again. Templates
// are listed by the cluster's ownership tag and the pool tag, the ones the controller IAM
// policy lets Tailor delete.
func (c *Controller) collectTemplates(ctx context.Context, now time.Time, cls []*v1alpha1.Claim) {
	if !c.lastTemplateGC.IsZero() && now.Sub(c.lastTemplateGC) < c.TemplateGCPeriod {
		return
	}
	logger := klog.FromContext(ctx)
	tmpls, err := c.Cloud.LaunchTemplates(ctx, map[string]string{v1alpha1.TagPool: "*"})
	if err != nil {
		logger.Error(err, "Cannot list launch templates; will retry")
		return
	}
	c.lastTemplateGC = now
	for _, lt := range unusedTemplates(tmpls, c.Args, cls, now, c.TemplateGrace) {
		logger.Info("Deleting unused launch template", "launchTemplate", lt.Name, "id", lt.ID,
			"pool", lt.Tags[v1alpha1.TagPool], "poolHash", lt.Tags[v1alpha1.TagPoolHash])
		if err := c.Cloud.DeleteLaunchTemplate(ctx, lt.ID); err != nil {
			logger.Error(err, "Cannot delete launch template; will retry", "launchTemplate", lt.Name)
			c.lastTemplateGC = time.Time{}
		}
	}
}

// unusedTemplates returns the templates older than grace whose pool is not configured with
// their fingerprint and whose fingerprint no claim of that pool launched with.
func unusedTemplates(tmpls []cloud.LaunchTemplate, args *config.TailorArgs, cls []*v1alpha1.Claim, now time.Time, grace time.Duration) []cloud.LaunchTemplate {
	type use struct{ pool, hash string }
	used := map[use]bool{}
	for i := range args.Pools {
		used[use{args.Pools[i].Name, args.Pools[i].LaunchHash()}] = true
	}
	for _, cl := range cls {
		used[use{cl.Spec.Pool, cl.Annotations[v1alpha1.AnnotationPoolHash]}] = true
	}
	var out []cloud.LaunchTemplate
	for _, lt := range tmpls {
		pool, ok := lt.Tags[v1alpha1.TagPool]
		if !ok || now.Sub(lt.Created) < grace {
			continue
		}
		if !used[use{pool, lt.Tags[v1alpha1.TagPoolHash]}] {
			out = append(out, lt)
		}
	}
	return out
}
