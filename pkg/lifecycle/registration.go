package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/metrics"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
)

// The registration stage: a Launched claim's node joins the cluster and is matched to the claim
// by its providerID; one that does not join in time is given up.

// register matches a node to its claim and makes it look as promised. Nodes without a claim are
// not Tailor's and are never touched.
func (c *Controller) register(ctx context.Context, name string) error {
	node, err := c.Nodes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return err
	}
	cl, ok := c.Claims.ByInstanceID(InstanceID(node.Spec.ProviderID))
	if !ok || Deleting(cl, node) {
		return nil // not Tailor's, or going: the sweep and the drain deal with it
	}
	if c.Observed != nil && cl.Status.InstanceType != "" && c.launchedAsConfigured(cl) {
		c.Observed.Record(cl.Spec.Pool, cl.Status.InstanceType, node.Status.Allocatable)
	}
	if cl.Status.Phase == v1alpha1.ClaimRegistered && !hasTaint(node, v1alpha1.TaintUnregistered) && slices.Contains(node.Finalizers, v1alpha1.FinalizerTermination) {
		if cl.Status.InitializedAt == nil {
			// Recorded as soon as the node says so, not at the next sweep: consolidation
			// waits for every claim of a scale-up to be initialized.
			c.recordInitialized(ctx, cl, node, c.clock().Now())
		}
		return nil
	}
	pool := c.Args.Pool(cl.Spec.Pool)
	if pool == nil {
		return fmt.Errorf("claim %s names pool %q, which is not configured", cl.Name, cl.Spec.Pool)
	}
	if err := c.labelRegistered(ctx, node, cl, pool); err != nil {
		return err
	}
	firstRegistration := cl.Status.Phase != v1alpha1.ClaimRegistered
	now := metav1.Now()
	// The launcher or the provisioner may have written the claim since the informer saw it: a
	// conflict reads the claim afresh and writes only its status again, not the node.
	skip := false
	err = c.Claims.UpdateFrom(ctx, cl, func(cur *v1alpha1.Claim) error {
		// Going: the termination stage deals with it. Registered on this node already: an
		// earlier pass wrote it, and the informer had not caught up.
		if skip = Deleting(cur, node) || cur.Status.Phase == v1alpha1.ClaimRegistered && cur.Status.NodeName == node.Name; skip {
			return nil
		}
		cur.Status.Phase, cur.Status.NodeName, cur.Status.RegisteredAt = v1alpha1.ClaimRegistered, node.Name, &now
		updated, err := c.Claims.UpdateStatus(ctx, cur)
		if err == nil {
			cl = updated
		}
		return err
	})
	if err != nil || skip {
		return err
	}
	if firstRegistration && cl.Status.LaunchedAt != nil {
		metrics.RegistrationDuration.WithLabelValues(cl.Spec.Pool).Observe(now.Sub(cl.Status.LaunchedAt.Time).Seconds())
	}
	klog.FromContext(ctx).Info("Registered", "node", node.Name, "claim", cl.Name, "instance", cl.Status.InstanceID)
	c.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "Registered", "Registration", "matched to claim %s (%s, pool %s)", cl.Name, cl.Status.InstanceType, cl.Spec.Pool)
	return nil
}

// labelRegistered gives the claim's node the labels, taints and finalizer the plan promised: the
// planner matched pods against the instance labels of the type, so the node must carry them.
func (c *Controller) labelRegistered(ctx context.Context, node *corev1.Node, cl *v1alpha1.Claim, pool *config.Pool) error {
	name := node.Name
	it, ok, err := c.Cloud.InstanceType(ctx, cl.Status.InstanceType)
	if err != nil {
		return err
	}
	var typeLabels map[string]string
	if ok {
		typeLabels = catalog.Labels(&it)
	}
	// The first try updates the informer's copy; a conflict reads the node afresh. Each round
	// trip counts: the batch's pods wait for this node.
	n := node
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if n == nil {
			if n, err = c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		n = n.DeepCopy()
		n.Labels = nodeshape.RegisteredLabels(n.Labels, pool, typeLabels, cl.Spec.CapacityType, cl.Name)
		// Deleting the node drains it and terminates the instance before the Node goes.
		if !slices.Contains(n.Finalizers, v1alpha1.FinalizerTermination) {
			n.Finalizers = append(n.Finalizers, v1alpha1.FinalizerTermination)
		}
		n.Spec.Taints = nodeshape.RegisteredTaints(n.Spec.Taints, pool)
		_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			n = nil
		}
		return err
	})
}

// checkRegistered gives up a Launched claim whose node has not registered: its instance vanished
// (a minute after the launch, so a just-launched instance not yet listed is not mistaken for
// one), or registrationTimeout passed. Its pods are planned again.
func (c *Controller) checkRegistered(ctx context.Context, cl *v1alpha1.Claim, running map[string]cloud.Instance, now time.Time) {
	if cl.Status.LaunchedAt == nil {
		return
	}
	if _, ok := running[cl.Status.InstanceID]; !ok && now.Sub(cl.Status.LaunchedAt.Time) > time.Minute {
		c.remove(ctx, cl, running, "its instance is gone before its node registered")
	} else if now.Sub(cl.Status.LaunchedAt.Time) > c.Args.RegistrationTimeout.Duration {
		c.remove(ctx, cl, running, fmt.Sprintf("its node did not register within %s", c.Args.RegistrationTimeout.Duration))
	}
}

// launchedAsConfigured says whether the claim's node was launched with the pool's settings as
// they are now: a node of older kubelet settings or volumes (drifted, waiting to be renewed)
// reports an allocatable new nodes of its type will not have.
func (c *Controller) launchedAsConfigured(cl *v1alpha1.Claim) bool {
	pool := c.Args.Pool(cl.Spec.Pool)
	return pool != nil && cl.Annotations[v1alpha1.AnnotationPoolHash] == pool.LaunchHash()
}
