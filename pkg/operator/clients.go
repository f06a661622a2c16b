package operator

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// clients are the API clients of Tailor's own parts, each with its own client-side rate limiter
// (the QPS and burst of the scheduler's kubeconfig), as kube-scheduler gives its events and its
// leader election clients of their own. The scheduler's client binds pods: during a burst its
// limiter queues binds for seconds, and a lease renewal waiting behind them loses the lease, and
// with it lifecycle and consolidation mid-step; a drain's evictions or a claim's node updates
// queued there would slow binding in turn.
type clients struct {
	// controllers is lifecycle's and consolidation's (nodes, evictions, pods).
	controllers kubernetes.Interface
	// election renews the tailor-controllers lease.
	election kubernetes.Interface
}

// newClients builds the clients from the handle's kubeconfig. A handle without one (a test's) has
// its own clientset serve all.
func newClients(h framework.Handle) (clients, error) {
	cfg := h.KubeConfig()
	if cfg == nil {
		return clients{controllers: h.ClientSet(), election: h.ClientSet()}, nil
	}
	var c clients
	var err error
	if c.controllers, err = kubernetes.NewForConfig(ownLimiter(cfg, "tailor-controllers")); err != nil {
		return c, fmt.Errorf("controllers client: %w", err)
	}
	if c.election, err = kubernetes.NewForConfig(ownLimiter(cfg, "tailor-leader-election")); err != nil {
		return c, fmt.Errorf("leader election client: %w", err)
	}
	return c, nil
}

// ownLimiter is a copy of cfg for a client of its own: a rate limiter set on cfg would be shared
// by every copy, so it is dropped and the client makes one from cfg's QPS and burst.
func ownLimiter(cfg *rest.Config, userAgent string) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = nil
	return rest.AddUserAgent(c, userAgent)
}
