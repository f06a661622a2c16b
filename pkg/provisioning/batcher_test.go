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
