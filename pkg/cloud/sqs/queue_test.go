package sqs

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

func serve(t *testing.T, sim *ec2sim.Sim) (aws.Config, string) {
	t.Helper()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("k", "s", ""), BaseEndpoint: aws.String(srv.URL)}, srv.URL
}

// A queue given by name is resolved once; given by URL it is not looked up; receive long-polls
// with SQS's limits and delete removes what was received.
func TestQueue(t *testing.T) {
	sim := ec2sim.New(ec2sim.Options{Queues: []string{"tailor-it"}})
	cfg, base := serve(t, sim)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	for _, tc := range []struct {
		name, queue string
		lookups     int
	}{
		{"by name", "tailor-it", 1},
		{"by URL", base + "/123456789012/tailor-it", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := sim.Calls("GetQueueUrl")
			q := New(NewClient(cfg), tc.queue)
			id, err := sim.SendEvent("tailor-it", ec2sim.Event{Kind: ec2sim.SpotInterruption, InstanceID: "i-0123456789abcdef0"})
			if err != nil {
				t.Fatal(err)
			}
			msgs, err := q.Receive(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) != 1 || msgs[0].ID != id || !strings.Contains(msgs[0].Body, "EC2 Spot Instance Interruption Warning") {
				t.Fatalf("received %+v", msgs)
			}
			if err := q.Delete(ctx, msgs[0]); err != nil {
				t.Fatal(err)
			}
			if n := sim.QueueMessages("tailor-it"); n != 0 {
				t.Errorf("%d messages left", n)
			}
			if _, err := q.URL(ctx); err != nil {
				t.Fatal(err)
			}
			if n := sim.Calls("GetQueueUrl") - before; n != tc.lookups {
				t.Errorf("%d GetQueueUrl calls, want %d", n, tc.lookups)
			}
			last := sim.Requests("ReceiveMessage")
			if r := last[len(last)-1]; r.Get("WaitTimeSeconds") != "20" || r.Get("MaxNumberOfMessages") != "10" {
				t.Errorf("ReceiveMessage sent %v", r)
			}
		})
	}

	// A missing queue is an error naming it, and is looked up again next time.
	q := New(NewClient(cfg), "absent")
	if _, err := q.Receive(ctx); err == nil || !strings.Contains(err.Error(), "GetQueueUrl absent") {
		t.Errorf("missing queue: %v", err)
	}
	if err := sim.CreateQueue("absent"); err != nil {
		t.Fatal(err)
	}
	if u, err := q.URL(ctx); err != nil || !strings.HasSuffix(u, "/absent") {
		t.Errorf("after creation: %q %v", u, err)
	}
}
