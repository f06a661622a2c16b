package lifecycle

import (
	"context"
	"strings"

	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// resolveImage is the image a launch of the types in the pool would use now: what its alias
// resolves to, its image ID, or the newest image its selector picks.
func (c *Controller) resolveImage(ctx context.Context, pool *config.Pool, types []string) (string, error) {
	if sel := pool.AMISelector; len(sel.IDs) > 0 || len(sel.Tags) > 0 {
		return c.Cloud.ResolveImageSelector(ctx, cloud.Selector{IDs: sel.IDs, Tags: sel.Tags}, types)
	}
	return c.Cloud.ResolveImage(ctx, pool.AMI, types)
}

// checkImageDrift records on a registered claim whether its pool's AMI alias or selector now
// resolves to another image than the one it launched with (AnnotationImageDrift): AWS releases
// EKS AMIs behind the aliases every few weeks, with security fixes (and teams tag new images of
// their own), and a node launched before one runs the old image until it is renewed, which
// consolidation does for a drifted node, within the pool's budgets. A pool with an explicit AMI
// ID drifts through its launch fingerprint instead. A claim without a recorded image (launched
// before Tailor recorded requests) never drifts. The provider caches what an alias or selector
// resolves to, so a sweep costs no call per claim.
func (c *Controller) checkImageDrift(ctx context.Context, cl *v1alpha1.Claim) {
	pool := c.Args.Pool(cl.Spec.Pool)
	if pool == nil || strings.HasPrefix(pool.AMI, "ami-") || cl.Status.Request == nil || cl.Status.Request.ImageID == "" || cl.Status.InstanceType == "" {
		return
	}
	logger := klog.FromContext(ctx).WithValues("claim", cl.Name, "pool", pool.Name, "alias", pool.AMI)
	now, err := c.resolveImage(ctx, pool, []string{cl.Status.InstanceType})
	if err != nil {
		logger.V(2).Info("Cannot resolve the pool's image alias; drift is checked at the next sweep", "err", err)
		return
	}
	want := ""
	if now != cl.Status.Request.ImageID {
		want = now
	}
	if cl.Annotations[v1alpha1.AnnotationImageDrift] == want {
		return
	}
	err = c.Claims.UpdateFrom(ctx, cl, func(cur *v1alpha1.Claim) error {
		if want == "" {
			delete(cur.Annotations, v1alpha1.AnnotationImageDrift)
		} else {
			if cur.Annotations == nil {
				cur.Annotations = map[string]string{}
			}
			cur.Annotations[v1alpha1.AnnotationImageDrift] = want
		}
		_, err := c.Claims.Update(ctx, cur)
		return err
	})
	switch {
	case err != nil:
		logger.Error(err, "Cannot record the claim's image drift; will retry")
	case want != "":
		logger.Info("A new image is behind the pool's alias; the node has drifted", "launchedWith", cl.Status.Request.ImageID, "now", want)
	default:
		logger.Info("The pool's alias is back on the image the node launched with; no longer drifted", "image", now)
	}
}
