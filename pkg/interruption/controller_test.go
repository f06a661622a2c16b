package interruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/sqs"
	"github.com/tailor-eks/tailor/pkg/consolidation"
)

type fakeQueue struct {
	mu       sync.Mutex
	pending  [][]sqs.Message
	deleted  []string
	failRecv int
}

func (q *fakeQueue) Receive(ctx context.Context) ([]sqs.Message, error) {
	q.mu.Lock()
	if q.failRecv > 0 {
		q.failRecv--
		q.mu.Unlock()
		return nil, errors.New("AccessDenied")
	}
	if len(q.pending) > 0 {
		b := q.pending[0]
		q.pending = q.pending[1:]
		q.mu.Unlock()
		return b, nil
	}
	q.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (q *fakeQueue) Delete(_ context.Context, m sqs.Message) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleted = append(q.deleted, m.ID)
	return nil
}

type fakeClaims map[string]*v1alpha1.Claim

func (f fakeClaims) ByInstanceID(id string) (*v1alpha1.Claim, bool) {
	c, ok := f[id]
	return c, ok
}

// fakeDisrupter remembers which claims it was handed, as the node annotation does.
type fakeDisrupter struct {
	marked map[string]string
	calls  []string
	err    error
}

func (d *fakeDisrupter) Interrupt(_ context.Context, claim, kind string, first func()) (bool, error) {
	d.calls = append(d.calls, claim+"/"+kind)
	if d.err != nil {
		return false, d.err
	}
	if prev, ok := d.marked[claim]; ok && (prev == kind || !strings.HasPrefix(kind, consolidation.InterruptionStoppedPrefix)) {
		return false, nil
	}
	first()
	d.marked[claim] = kind
	return true, nil
}

func (d *fakeDisrupter) RecommendRebalance(_ context.Context, claim string, replace bool, first func()) (bool, error) {
	mode := "advise"
	if replace {
		mode = "replace"
	}
	d.calls = append(d.calls, claim+"/rebalance-"+mode)
	if d.err != nil {
		return false, d.err
	}
	if _, ok := d.marked[claim]; ok || !replace {
		return !ok, nil
	}
	first()
	d.marked[claim] = "rebalance"
	return true, nil
}

type fakeOfferings struct{ marked []string }

func (o *fakeOfferings) MarkUnavailable(it, zone string, ct cloud.CapacityType, code string) {
	o.marked = append(o.marked, fmt.Sprintf("%s/%s/%s/%s", it, zone, ct, code))
}

func claim(name, instance, capacityType string) *v1alpha1.Claim {
	c := &v1alpha1.Claim{}
	c.Name = name
	c.Spec.CapacityType = capacityType
	c.Status = v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, InstanceID: instance, InstanceType: "m5.large", Zone: "us-east-1a",
		CapacityType: capacityType, NodeName: "ip-10-0-0-1.ec2.internal"}
	return c
}

func TestHandle(t *testing.T) {
	spotOther := strings.ReplaceAll(spotBody, "i-0123456789abcdef0", "i-0aaaaaaaaaaaaaaa0")
	onDemand := strings.ReplaceAll(spotBody, "i-0123456789abcdef0", "i-0bbbbbbbbbbbbbbb0")
	for _, tc := range []struct {
		name        string
		bodies      []string
		disruptErr  error
		replace     bool // rebalanceRecommendations: Replace
		wantCalls   []string
		wantMarked  []string
		wantDeleted int
	}{
		{name: "spot interruption: offering unavailable, node handed over", bodies: []string{spotBody},
			wantCalls: []string{"spot-1/spot-interruption"}, wantMarked: []string{"m5.large/us-east-1a/spot/SpotInterruption"}, wantDeleted: 1},
		{name: "a second copy does nothing new", bodies: []string{spotBody, spotBody},
			wantCalls: []string{"spot-1/spot-interruption", "spot-1/spot-interruption"}, wantMarked: []string{"m5.large/us-east-1a/spot/SpotInterruption"}, wantDeleted: 2},
		{name: "rebalance is advice: no offering marked", bodies: []string{rebalanceBody},
			wantCalls: []string{"spot-1/rebalance-advise"}, wantDeleted: 1},
		{name: "rebalance renews when asked", bodies: []string{rebalanceBody}, replace: true,
			wantCalls: []string{"spot-1/rebalance-replace"}, wantMarked: []string{"m5.large/us-east-1a/spot/RebalanceRecommendation"}, wantDeleted: 1},
		{name: "warning after warning: nothing new", bodies: []string{spotBody, rebalanceBody}, replace: true,
			wantCalls: []string{"spot-1/spot-interruption", "spot-1/rebalance-replace"}, wantMarked: []string{"m5.large/us-east-1a/spot/SpotInterruption"}, wantDeleted: 2},
		{name: "stopping: removed, no offering marked", bodies: []string{stateBody},
			wantCalls: []string{"spot-1/instance-stopping"}, wantDeleted: 1},
		{name: "running: nothing", bodies: []string{strings.Replace(stateBody, `"stopping"`, `"running"`, 1)}, wantDeleted: 1},
		{name: "scheduled change of two instances, one of them not Tailor's", bodies: []string{healthBody},
			wantCalls: []string{"spot-1/scheduled-change"}, wantMarked: []string{"m5.large/us-east-1a/spot/ScheduledChange"}, wantDeleted: 1},
		{name: "on-demand interruption marks no spot offering", bodies: []string{onDemand},
			wantCalls: []string{"od-1/spot-interruption"}, wantDeleted: 1},
		{name: "not Tailor's instance", bodies: []string{spotOther}, wantDeleted: 1},
		{name: "another region", bodies: []string{strings.Replace(spotBody, `"region":"us-east-1"`, `"region":"eu-west-1"`, 1)}, wantDeleted: 1},
		{name: "malformed", bodies: []string{"{not json", `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{}}`}, wantDeleted: 2},
		{name: "unknown kind", bodies: []string{strings.Replace(spotBody, `"aws.ec2"`, `"aws.s3"`, 1)}, wantDeleted: 1},
		{name: "failed handling stays on the queue", bodies: []string{spotBody}, disruptErr: errors.New("apiserver down"),
			wantCalls: []string{"spot-1/spot-interruption"}, wantDeleted: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &fakeQueue{}
			d := &fakeDisrupter{marked: map[string]string{}, err: tc.disruptErr}
			o := &fakeOfferings{}
			c := &Controller{Queue: q, Disrupter: d, Offerings: o, Region: "us-east-1", RebalanceReplace: tc.replace, Claims: fakeClaims{
				"i-0123456789abcdef0": claim("spot-1", "i-0123456789abcdef0", "spot"),
				"i-0bbbbbbbbbbbbbbb0": claim("od-1", "i-0bbbbbbbbbbbbbbb0", "on-demand"),
			}}
			for i, b := range tc.bodies {
				c.Handle(context.Background(), sqs.Message{ID: fmt.Sprint(i), ReceiptHandle: "r", Body: b})
			}
			if !slices.Equal(d.calls, tc.wantCalls) {
				t.Errorf("disrupter calls %v, want %v", d.calls, tc.wantCalls)
			}
			if !slices.Equal(o.marked, tc.wantMarked) {
				t.Errorf("offerings marked %v, want %v", o.marked, tc.wantMarked)
			}
			if len(q.deleted) != tc.wantDeleted {
				t.Errorf("%d messages deleted, want %d", len(q.deleted), tc.wantDeleted)
			}
		})
	}
}

// Run keeps going through receive errors and malformed messages, and stops with its context.
func TestRun(t *testing.T) {
	q := &fakeQueue{failRecv: 1, pending: [][]sqs.Message{{{ID: "a", Body: "junk"}, {ID: "b", Body: spotBody}}}}
	d := &fakeDisrupter{marked: map[string]string{}}
	c := &Controller{Queue: q, Disrupter: d, Offerings: &fakeOfferings{}, ReceiveBackoff: 10 * time.Millisecond,
		Claims: fakeClaims{"i-0123456789abcdef0": claim("spot-1", "i-0123456789abcdef0", "spot")}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error)
	go func() { done <- c.Run(ctx) }()
	for {
		q.mu.Lock()
		n := len(q.deleted)
		q.mu.Unlock()
		if n == 2 {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("messages not handled: %v", q.deleted)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.calls, []string{"spot-1/spot-interruption"}) {
		t.Errorf("calls %v", d.calls)
	}
}
