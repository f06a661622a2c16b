package consolidation

import (
	"context"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/lifecycle"
)

// A merge or replacement launches its new nodes first (claims whose spec.replacement names the
// nodes they replace) and drains the old nodes only once every new node is up: the pods never
// wait for capacity. spec.replacement is the whole state: a restarted loop finds the claims and
// carries on. If a replacement fails, the old nodes stay and the claims lose their
// spec.replacement (a new node without pods is then an empty node like any other).

// launchReplacements records a decision's new nodes, which the lifecycle launches; false if they
// could not be recorded (the nodes stay).
func (c *Controller) launchReplacements(ctx context.Context, d decision) bool {
	logger := klog.FromContext(ctx)
	var names []string
	for _, n := range d.nodes() {
		names = append(names, n.node.Name)
	}
	// A group is recorded whole or not at all. The lifecycle launches each claim as it sees it,
	// so a claim of a group that then failed may have launched: the termination stage ends it.
	var recorded []*v1alpha1.Claim
	for _, pn := range d.replacements {
		cl, err := c.Replacements.RecordReplacement(ctx, pn, names, len(d.replacements))
		if err != nil {
			logger.Info("Cannot launch a replacement; the nodes stay", "nodes", names, "err", err)
			for _, r := range recorded {
				_ = c.Claims.Terminate(ctx, r.Name) // launched already, the lifecycle terminates it
			}
			return false
		}
		recorded = append(recorded, cl)
	}
	c.remember(names...)
	decisions.WithLabelValues(d.method).Inc()
	logger.Info("Launching replacements", "method", d.method, "nodes", names, "replacements", len(d.replacements), "reason", d.why)
	for _, n := range d.nodes() {
		c.Recorder.Eventf(n.node, nil, corev1.EventTypeNormal, "Replacing", "Consolidate", "Tailor is replacing this node (%s): %s", d.method, d.why)
	}
	return true
}

// replacedBy lists the nodes a claim was launched to replace.
func replacedBy(cl *v1alpha1.Claim) []string {
	if cl.Spec.Replacement == nil {
		return nil
	}
	return cl.Spec.Replacement.Nodes
}

// replacements moves every replacement along: once all new nodes of a group are up, its old
// nodes start draining; once the old nodes are gone (or a new node failed), the claims are
// released from it. It returns the nodes no other decision may touch meanwhile: the old nodes
// and the new ones.
func (c *Controller) replacements(ctx context.Context, s *snapshot, podsOn map[string][]*corev1.Pod) map[string]bool {
	logger := klog.FromContext(ctx)
	groups := map[string][]*v1alpha1.Claim{}
	for _, cl := range c.Claims.List() {
		if r := cl.Spec.Replacement; r != nil {
			key := strings.Join(r.Nodes, ",")
			groups[key] = append(groups[key], cl)
		}
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range s.nodes {
		nodes[n.Name] = n
	}
	owned := map[string]*ownedNode{}
	for _, o := range s.owned {
		owned[o.node.Name] = o
	}
	reserved := map[string]bool{}
	for _, cls := range groups {
		olds := cls[0].Spec.Replacement.Nodes
		left, up, failed := c.replacementState(cls, nodes, s.now)
		for _, cl := range cls {
			reserved[cl.Status.NodeName] = true
		}
		switch {
		case left == 0 || failed:
			if failed {
				logger.Info("A replacement failed; the old nodes stay unless EC2 takes them", "nodes", olds)
				c.keepReplaced(ctx, olds, owned)
			}
			for _, cl := range cls {
				c.release(ctx, cl)
			}
			continue
		case up == len(cls):
			for _, name := range olds {
				if o, ok := owned[name]; ok {
					c.markReplaced(ctx, o, "its replacement is up")
				}
				// The pass drains it with the other disrupting nodes.
			}
		default:
			// An interrupted spot node, or one of an ending Capacity Block, waits only so long for
			// its replacements.
			for _, name := range olds {
				if o, ok := owned[name]; ok && c.impatient(o.node) {
					c.markReplaced(ctx, o, "its replacements are not up in the time left before EC2 reclaims it")
				}
			}
		}
		for _, name := range olds {
			reserved[name] = true
		}
	}
	return reserved
}

// replacementState reads a group of replacement claims (cls, replacing the same old nodes):
// how many of the old nodes are left, how many replacements are up, and whether the group has
// failed: a member failed or gone (the lifecycle controller removes failed launches), or the
// group is past its deadline.
func (c *Controller) replacementState(cls []*v1alpha1.Claim, nodes map[string]*corev1.Node, now time.Time) (left, up int, failed bool) {
	failed = len(cls) < cls[0].Spec.Replacement.Claims
	for _, name := range cls[0].Spec.Replacement.Nodes {
		if _, ok := nodes[name]; ok {
			left++
		}
	}
	for _, cl := range cls {
		if now.Sub(cl.CreationTimestamp.Time) > c.Args.RegistrationTimeout.Duration+5*time.Minute {
			failed = true
		}
		switch cl.Status.Phase {
		case v1alpha1.ClaimFailed:
			failed = true
		case v1alpha1.ClaimRegistered:
			// A replacement someone is deleting is not up: the old nodes must not drain onto it.
			if n, ok := nodes[cl.Status.NodeName]; ok && !lifecycle.Deleting(cl, n) && lifecycle.Ready(n) && !lifecycle.Starting(c.Args, n) {
				up++
			}
		}
	}
	return left, up, failed
}

// keepReplaced keeps the old nodes of a failed replacement, saying so on each, but for those
// EC2 takes anyway: they drain, their pods provisioned as usual.
func (c *Controller) keepReplaced(ctx context.Context, olds []string, owned map[string]*ownedNode) {
	for _, name := range olds {
		o, ok := owned[name]
		switch {
		case !ok:
		case interruption(o.node) != "":
			c.markReplaced(ctx, o, "its replacement failed to launch")
		default:
			c.Recorder.Eventf(o.node, nil, corev1.EventTypeWarning, "ReplacementFailed", "Consolidate", "Tailor keeps this node: a replacement node failed to launch")
		}
	}
}

// markReplaced starts the drain of a node whose replacement is settled (unless it is already
// draining).
func (c *Controller) markReplaced(ctx context.Context, o *ownedNode, why string) {
	if disrupting(o.node) {
		return
	}
	d := decision{node: o, method: methodReplace, why: why}
	if interruption(o.node) != "" {
		d.method = methodInterruption
	}
	if err := c.mark(ctx, d); err != nil {
		klog.FromContext(ctx).Error(err, "Cannot mark replaced node", "node", o.node.Name)
	}
}

// release ends a claim's part in a replacement: it is a claim like any other.
func (c *Controller) release(ctx context.Context, cl *v1alpha1.Claim) {
	cur, err := c.Claims.Fetch(ctx, cl.Name)
	if err != nil {
		return
	}
	cur.Spec.Replacement = nil
	if _, err := c.Claims.Update(ctx, cur); err != nil {
		klog.FromContext(ctx).V(2).Info("Cannot release replacement claim; will retry", "claim", cl.Name, "err", err)
	}
}
