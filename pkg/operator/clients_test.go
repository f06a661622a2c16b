package operator

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// countingLimiter counts the requests it is asked to let through.
type countingLimiter struct{ asked atomic.Int32 }

func (l *countingLimiter) TryAccept() bool                { l.asked.Add(1); return true }
func (l *countingLimiter) Accept()                        { l.asked.Add(1) }
func (l *countingLimiter) Stop()                          {}
func (l *countingLimiter) QPS() float32                   { return 1 }
func (l *countingLimiter) Wait(ctx context.Context) error { l.asked.Add(1); return nil }

// handleWith is a framework handle with only a kubeconfig and a clientset.
type handleWith struct {
	framework.Handle
	cfg *rest.Config
	cs  kubernetes.Interface
}

func (h handleWith) KubeConfig() *rest.Config        { return h.cfg }
func (h handleWith) ClientSet() kubernetes.Interface { return h.cs }

// Tailor's controllers and its lease renewals never wait on the scheduler's rate limiter, which
// binds pods: not even when the scheduler's kubeconfig carries a limiter object of its own.
func TestClientsDoNotShareTheSchedulersLimiter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"tailor-controllers"}}`))
	}))
	defer srv.Close()
	scheduler := &countingLimiter{}
	cfg := &rest.Config{Host: srv.URL, QPS: 1, Burst: 1, RateLimiter: scheduler}
	schedClient, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := newClients(handleWith{cfg: cfg, cs: schedClient})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]kubernetes.Interface{"controllers": cs.controllers, "election": cs.election} {
		if c == schedClient {
			t.Errorf("the %s client is the scheduler's", name)
		}
		if _, err := c.CoordinationV1().Leases("kube-system").Get(context.Background(), "tailor-controllers", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if n := scheduler.asked.Load(); n != 0 {
		t.Errorf("the scheduler's rate limiter was asked %d times by Tailor's clients", n)
	}
	// The limiter is the scheduler's all the same.
	if _, err := schedClient.CoordinationV1().Leases("kube-system").Get(context.Background(), "tailor-controllers", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if scheduler.asked.Load() == 0 {
		t.Error("the counting limiter is not consulted at all: the test proves nothing")
	}
}
