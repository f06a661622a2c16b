package profile

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
)

// Cluster is the cluster the plugins see, grown one bound pod at a time and held the way the
// scheduler holds its own: in kube-scheduler's cache, whose UpdateSnapshot copies into the
// plugins' snapshot only the nodes that changed. SetSnapshot builds every NodeInfo anew, so
// binding pods one by one with it costs time and garbage quadratic in the pods (plan's pods
// placed on a manifest's existing nodes).
type Cluster struct {
	cache    cache.Cache
	snapshot *cache.Snapshot
	stop     context.CancelFunc
}

// NewCluster makes nodes, with the pods bound to them, the cluster the plugins see, as
// SetSnapshot does: pods bound to a node not in nodes are left out. It stays theirs until
// SetSnapshot or NewCluster replaces it. Close releases it. It fails where the cache refuses a
// pod: one without a UID, or two with the same UID (the cache's key).
func (f *Framework) NewCluster(ctx context.Context, nodes []*corev1.Node, pods []*corev1.Pod) (*Cluster, error) {
	logger := klog.FromContext(ctx)
	// The cache runs a goroutine that expires assumed pods; nothing is assumed here, and
	// Close stops it.
	ctx, stop := context.WithCancel(ctx)
	c := &Cluster{cache: cache.New(ctx, 0, nil), snapshot: cache.NewEmptySnapshot(), stop: stop}
	for _, n := range nodes {
		c.cache.AddNode(logger, n)
	}
	for _, p := range onNodes(pods, nodes) {
		if err := c.cache.AddPod(logger, p); err != nil {
			stop()
			return nil, fmt.Errorf("pod %s/%s: %w", p.Namespace, p.Name, err)
		}
	}
	if err := c.cache.UpdateSnapshot(logger, c.snapshot); err != nil {
		stop()
		return nil, err
	}
	f.lister.snapshot = c.snapshot
	return c, nil
}

// Bind adds pod, bound to one of the cluster's nodes (spec.nodeName), to what the plugins see.
func (c *Cluster) Bind(ctx context.Context, pod *corev1.Pod) error {
	logger := klog.FromContext(ctx)
	if err := c.cache.AddPod(logger, pod); err != nil {
		return fmt.Errorf("pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return c.cache.UpdateSnapshot(logger, c.snapshot)
}

// Close stops the cache's goroutine. The plugins keep seeing the cluster as it is.
func (c *Cluster) Close() { c.stop() }
