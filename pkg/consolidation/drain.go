package consolidation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// A drain is: taint and cordon the node (mark) → evict its pods through the Eviction API, which
// honours PodDisruptionBudgets (evictStep, once per pass, until the pods are gone) → delete the
// claim and mark the node drained (finish), which hands it to the lifecycle's termination stage:
// terminate the instance, delete the Node, let the claim go. The taint and its annotations are
// the drain's whole state: after a crash at any step the next leader finds the tainted node and
// carries on, or, past the timeout, rolls the taint back; a drained node is the lifecycle's.

// evictTimeout bounds one eviction request.
const evictTimeout = 10 * time.Second

// mark taints and cordons the node, so nothing new lands on it, and notes when the drain began.
// The decision's node becomes the marked one.
func (c *Controller) mark(ctx context.Context, d decision) error {
	marked, err := c.updateNode(ctx, d.node.node.Name, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if !disrupting(n) {
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: v1alpha1.TaintDisrupting, Value: d.method, Effect: corev1.TaintEffectNoSchedule})
			if n.Spec.Unschedulable {
				n.Annotations[v1alpha1.AnnotationWasCordoned] = "true"
			}
		}
		n.Spec.Unschedulable = true
		n.Annotations[v1alpha1.AnnotationDisruptingSince] = c.now().UTC().Format(time.RFC3339)
	})
	if err != nil {
		return err
	}
	d.node.node = marked
	c.remember(marked.Name)
	decisions.WithLabelValues(d.method).Inc()
	c.Recorder.Eventf(d.node.node, nil, corev1.EventTypeNormal, "Disrupting", "Consolidate",
		"Tailor is taking this node away (%s): %s", d.method, d.why)
	return nil
}

// drainStep moves one disrupting node along: evict what is left, or finish once nothing is.
func (c *Controller) drainStep(ctx context.Context, o *ownedNode, pods []*corev1.Pod) {
	if o.node.Annotations[v1alpha1.AnnotationDoNotDisrupt] == "true" {
		c.rollback(ctx, o, "the node was annotated "+v1alpha1.AnnotationDoNotDisrupt)
		return
	}
	since, err := time.Parse(time.RFC3339, o.node.Annotations[v1alpha1.AnnotationDisruptingSince])
	if err != nil {
		// Tainted but never annotated (a crash in between, or someone else's hand): start the
		// clock now, and write it down so it runs out.
		since = c.now()
		if _, err := c.updateNode(ctx, o.node.Name, func(n *corev1.Node) {
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[v1alpha1.AnnotationDisruptingSince] = since.UTC().Format(time.RFC3339)
		}); err != nil {
			return
		}
	}
	var remaining []*corev1.Pod
	for _, p := range pods {
		switch v, why := judge(p, ruleInput{now: c.now(), gangs: c.Gangs}); v {
		case block:
			c.rollback(ctx, o, "a pod arrived that blocks it: "+why)
			return
		case evict:
			remaining = append(remaining, p)
		}
	}
	if len(remaining) > 0 && disruptedBy(o.node) == methodEmpty {
		c.rollback(ctx, o, arrivedOnEmpty(remaining[0]))
		return
	}
	if len(remaining) == 0 {
		c.finish(ctx, o, true)
		return
	}
	if c.now().Sub(since) > c.DrainTimeout {
		c.rollback(ctx, o, fmt.Sprintf("%d pods did not leave within %s (e.g. %s/%s; a PodDisruptionBudget may refuse)", len(remaining), c.DrainTimeout, remaining[0].Namespace, remaining[0].Name))
		return
	}
	c.evictAll(ctx, o, remaining)
}

// evictAll asks the Eviction API to evict each pod not already leaving; a PodDisruptionBudget's
// refusal is asked again next pass, never worked around.
func (c *Controller) evictAll(ctx context.Context, o *ownedNode, pods []*corev1.Pod) {
	logger := klog.FromContext(ctx).WithValues("node", o.node.Name)
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue // already leaving
		}
		// Bounded: an eviction the API server sits on is asked again next pass.
		ectx, cancel := context.WithTimeout(ctx, evictTimeout)
		err := c.Client.PolicyV1().Evictions(p.Namespace).Evict(ectx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}})
		cancel()
		switch {
		case err == nil:
			evictions.WithLabelValues("evicted").Inc()
			c.Recorder.Eventf(p, nil, corev1.EventTypeNormal, "Evicted", "Consolidate", "Tailor evicted this pod to take node %s away", o.node.Name)
		case apierrors.IsNotFound(err):
		case apierrors.IsTooManyRequests(err):
			// A PodDisruptionBudget refuses for now; ask again next pass, never around it.
			evictions.WithLabelValues("refused").Inc()
			c.eventOnce(p, "EvictionRefused", fmt.Sprintf("Tailor is draining node %s; the eviction was refused: %v", o.node.Name, err))
		default:
			// Forbidden by a policy, a server error, a timeout: nothing is worked around; the
			// next pass asks again, and the drain timeout rolls it back if it never passes.
			evictions.WithLabelValues("failed").Inc()
			logger.Error(err, "Cannot evict; will ask again", "pod", klog.KObj(p))
			c.eventOnce(p, "EvictionFailed", fmt.Sprintf("Tailor is draining node %s; the eviction failed: %v", o.node.Name, err))
		}
	}
}

// finish hands a drained node over to the lifecycle's termination stage, which terminates the
// instance (only if its own tags name the claim), deletes the Node and lets the claim go: the
// node is marked drained, then the claim deleted with its finalizer on (claims.Store.Terminate).
// With checkPods it first asks the API server, not the cache, whether a pod is still on the
// node: one bound just before the cordon would die with the instance. (Without: the instance is
// already gone, and its pods with it.) After a crash between the two writes, the next pass finds
// the node marked and deletes the claim (handOver).
func (c *Controller) finish(ctx context.Context, o *ownedNode, checkPods bool) {
	logger := klog.FromContext(ctx).WithValues("node", o.node.Name, "claim", o.claim.Name)
	if checkPods {
		live, err := c.Client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + o.node.Name})
		if err != nil {
			logger.Error(err, "Cannot list the node's pods; will retry")
			return
		}
		for i := range live.Items {
			if v, _ := judge(&live.Items[i], ruleInput{now: c.now(), gangs: c.Gangs}); v != skip {
				if disruptedBy(o.node) == methodEmpty {
					c.rollback(ctx, o, arrivedOnEmpty(&live.Items[i]))
				}
				return // not empty after all; the next pass evicts it (or waits for it)
			}
		}
	}
	if _, err := c.updateNode(ctx, o.node.Name, func(n *corev1.Node) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[v1alpha1.AnnotationDrained] = c.now().UTC().Format(time.RFC3339)
	}); err != nil && !apierrors.IsNotFound(err) {
		logger.Error(err, "Cannot mark node drained; will retry")
		return
	}
	if err := c.Claims.Terminate(ctx, o.claim.Name); err != nil {
		logger.Error(err, "Cannot delete claim; the next pass will")
		return
	}
	method := "unknown"
	if lifecycle.Deleting(o.claim, o.node) {
		method = "deleted" // the claim or its node was deleted (by a user, or the orphan sweep)
	}
	if interruption(o.node) != "" {
		method = methodInterruption // an instance already going is removed without a taint
	}
	if m := disruptedBy(o.node); m != "" {
		method = m
	}
	removed.WithLabelValues(method).Inc()
	saved.Add(o.price)
	logger.Info("Node drained; handed over for termination", "method", method, "instance", o.claim.Status.InstanceID, "savedPerHour", o.price)
}

// handOver deletes the claim of a node marked drained if that did not happen yet (a crash, or an
// error, came between the two writes of finish).
func (c *Controller) handOver(ctx context.Context, o *ownedNode) {
	if o.claim.DeletionTimestamp != nil {
		return
	}
	if err := c.Claims.Terminate(ctx, o.claim.Name); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot delete the drained node's claim; will retry", "node", o.node.Name, "claim", o.claim.Name)
	}
}

// disruptedBy is the method whose decision tainted the node ("" if none did).
func disruptedBy(n *corev1.Node) string {
	for _, t := range n.Spec.Taints {
		if t.Key == v1alpha1.TaintDisrupting {
			return t.Value
		}
	}
	return ""
}

// arrivedOnEmpty says why a node taken away as empty is kept after all: a pod was bound to it
// between the decision and the cordon (the scheduler had it on its way there). An empty node's
// decision moved no pod and asked no budget for one, so its drain never evicts one.
func arrivedOnEmpty(p *corev1.Pod) string {
	return fmt.Sprintf("pod %s/%s arrived after the node was found empty", p.Namespace, p.Name)
}

// rollback takes the taint and the cordon away again and says why.
func (c *Controller) rollback(ctx context.Context, o *ownedNode, why string) {
	_, err := c.updateNode(ctx, o.node.Name, func(n *corev1.Node) {
		taints := n.Spec.Taints[:0]
		for _, t := range n.Spec.Taints {
			if t.Key != v1alpha1.TaintDisrupting {
				taints = append(taints, t)
			}
		}
		n.Spec.Taints = taints
		n.Spec.Unschedulable = n.Annotations[v1alpha1.AnnotationWasCordoned] == "true"
		delete(n.Annotations, v1alpha1.AnnotationDisruptingSince)
		delete(n.Annotations, v1alpha1.AnnotationWasCordoned)
		delete(n.Annotations, v1alpha1.AnnotationDrained)
	})
	if err != nil {
		klog.FromContext(ctx).Error(err, "Cannot roll back disruption; will retry", "node", o.node.Name)
		return
	}
	rollbacks.Inc()
	c.Recorder.Eventf(o.node, nil, corev1.EventTypeWarning, "DisruptionRolledBack", "Consolidate", "Tailor keeps this node: %s", why)
}

func (c *Controller) updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) (*corev1.Node, error) {
	var updated *corev1.Node
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := c.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		mutate(n)
		updated, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		return err
	})
	if err == nil && (updated == nil || updated.Name != name) {
		// Seen once as the leader lost its lease mid-call: no error, and no node back. Acting
		// on it would take a node nobody named.
		err = fmt.Errorf("updating node %s: no node in the answer (context: %v)", name, ctx.Err())
	}
	return updated, err
}
