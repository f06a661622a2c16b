package operator

import (
	"context"
	"os"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"
)

// leaseNamespace holds Tailor's lease: the namespace Tailor runs in (POD_NAMESPACE, set by the
// chart from the downward API), where its RBAC grants the lease and nothing wider; kube-system
// outside a pod.
func leaseNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return metav1.NamespaceSystem
}

// runLeaderElected runs f while this process holds the named lease, until ctx ends.
func runLeaderElected(ctx context.Context, client kubernetes.Interface, name string, f func(context.Context)) {
	logger := klog.FromContext(ctx)
	host, _ := os.Hostname()
	id := host + "_" + string(uuid.NewUUID())
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: leaseNamespace(), Name: name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	var term sync.Mutex
	for ctx.Err() == nil {
		leaderelection.RunOrDie(ctx, leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   15 * time.Second,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     2 * time.Second,
			ReleaseOnCancel: true,
			Name:            name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					// RunOrDie returns when the lease is lost, possibly before f has: a new term
					// waits here for the previous one to end, so two never overlap.
					term.Lock()
					defer term.Unlock()
					f(ctx)
				},
				OnStoppedLeading: func() { logger.Info("Lost lease", "lease", name) },
			},
		})
	}
}
