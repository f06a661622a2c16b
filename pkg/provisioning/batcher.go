package provisioning

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/pkg/planning"
)

// Batcher gathers pods that fail together: a batch closes after Idle without a new pod, or Max
// after it opened, so 20 replicas created at once are planned as one batch, not 20. A batch
// that is Covered (asked every Idle) closes then, however fast pods keep coming.
type Batcher struct {
	Idle, Max time.Duration
	// Covered, if set, says whether the pods still to come of every pod's workload are planned
	// with the batch (their owners are still creating them): waiting for them gains the plan
	// nothing and costs every pod of the batch the wait.
	Covered func([]*planning.Pod) bool

	mu      sync.Mutex
	pending map[types.UID]*planning.Pod
	order   []types.UID
	wake    chan struct{}
}

// NewBatcher returns an empty batcher.
func NewBatcher(idle, max time.Duration) *Batcher {
	return &Batcher{Idle: idle, Max: max, pending: map[types.UID]*planning.Pod{}, wake: make(chan struct{}, 1)}
}

// Add puts a pod into the open batch; a pod already there is replaced by its newer state.
func (b *Batcher) Add(p *planning.Pod) {
	b.mu.Lock()
	if _, ok := b.pending[p.Pod.UID]; !ok {
		b.order = append(b.order, p.Pod.UID)
	}
	b.pending[p.Pod.UID] = p
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// Len counts the pods in the open batch.
func (b *Batcher) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.pending)
}

// Has reports whether the pod waits in the open batch.
func (b *Batcher) Has(uid types.UID) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.pending[uid]
	return ok
}

// Next blocks until a batch closes and returns it, or returns nil when ctx ends.
func (b *Batcher) Next(ctx context.Context) []*planning.Pod {
	select {
	case <-ctx.Done():
		return nil
	case <-b.wake:
	}
	deadline := time.NewTimer(b.Max)
	defer deadline.Stop()
	idle := time.NewTimer(b.Idle)
	defer idle.Stop()
	covered := time.NewTimer(b.Idle)
	defer covered.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.wake:
			if !idle.Stop() {
				<-idle.C
			}
			idle.Reset(b.Idle)
			continue
		case <-covered.C:
			if !b.allCovered() {
				covered.Reset(b.Idle) // asked again: a Deployment's ReplicaSet may come meanwhile
				continue
			}
		case <-idle.C:
		case <-deadline.C:
		}
		return b.take()
	}
}

// allCovered says whether Covered holds for the open batch.
func (b *Batcher) allCovered() bool {
	if b.Covered == nil {
		return false
	}
	b.mu.Lock()
	pods := make([]*planning.Pod, 0, len(b.pending))
	for _, p := range b.pending {
		pods = append(pods, p)
	}
	b.mu.Unlock()
	return len(pods) > 0 && b.Covered(pods)
}

func (b *Batcher) take() []*planning.Pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*planning.Pod, 0, len(b.order))
	for _, uid := range b.order {
		out = append(out, b.pending[uid])
	}
	b.pending, b.order = map[types.UID]*planning.Pod{}, nil
	return out
}
