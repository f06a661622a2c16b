package provisioning

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/pkg/planning"
)

func TestBatcherGathersBurstAndDedupes(t *testing.T) {
	b := NewBatcher(50*time.Millisecond, 5*time.Second)
	mk := func(i int) *planning.Pod {
		return &planning.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i))}}}
	}
	go func() {
		for i := 0; i < 20; i++ {
			b.Add(mk(i))
			b.Add(mk(i)) // a pod retried while waiting is one pod
			time.Sleep(time.Millisecond)
		}
	}()
	got := b.Next(context.Background())
	if len(got) != 20 {
		t.Fatalf("batch has %d pods, want 20", len(got))
	}
	if b.Has("3") {
		t.Fatal("batch not emptied")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if got := b.Next(ctx); got != nil {
		t.Fatalf("Next after cancel = %v", got)
	}
}

// A batch whose pods are all covered (their pods still to come are planned with them) closes
// Idle after it opened, though pods keep coming; one pod not covered keeps it open until the
// pods stop.
func TestBatcherClosesCoveredBatchEarly(t *testing.T) {
	mk := func(i int) *planning.Pod {
		return &planning.Pod{Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint(i), UID: types.UID(fmt.Sprint(i))}}}
	}
	for _, tc := range []struct {
		name      string
		uncovered string
		pods      int // the sender stops after this many (0: only when the batch closed)
	}{
		{name: "every pod covered"},
		{name: "one pod not covered", uncovered: "7", pods: 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBatcher(20*time.Millisecond, time.Hour)
			b.Covered = func(ps []*planning.Pod) bool {
				for _, p := range ps {
					if p.Pod.Name == tc.uncovered {
						return false
					}
				}
				return true
			}
			done := make(chan struct{})
			sent := make(chan struct{})
			go func() {
				i := 0
				defer close(sent)
				for ; tc.pods == 0 || i < tc.pods; i++ {
					select {
					case <-done:
						return
					default:
					}
					b.Add(mk(i))
					time.Sleep(time.Millisecond)
				}
			}()
			// Max is an hour: only the early close ends a batch while pods keep coming.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			got := b.Next(ctx)
			close(done)
			<-sent
			if got == nil {
				t.Fatal("the batch did not close while pods kept coming")
			}
			if tc.pods > 0 && len(got) != tc.pods {
				t.Errorf("batch of %d pods, want all %d: a pod not covered keeps the batch open while pods come", len(got), tc.pods)
			}
		})
	}
}
