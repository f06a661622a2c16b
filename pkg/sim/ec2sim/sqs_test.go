package ec2sim

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

func newSQSClient(t *testing.T, s *Sim) (*sqs.Client, string) {
	t.Helper()
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return sqs.NewFromConfig(testConfig(srv.URL, 1)), srv.URL
}

// The real SDK's SQS client (AWS JSON 1.0, MD5 checks on) against the simulator: queue URLs,
// send, long-poll receive, the visibility timeout, delete, and the errors the SDK decodes.
func TestSQSProtocol(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := New(Options{Clock: clock, Queues: []string{"pre"}})
	c, base := newSQSClient(t, s)

	pre, err := c.GetQueueUrl(ctx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("pre")})
	if err != nil {
		t.Fatal(err)
	}
	if want := base + "/123456789012/pre"; aws.ToString(pre.QueueUrl) != want {
		t.Errorf("queue URL %s, want %s", aws.ToString(pre.QueueUrl), want)
	}
	_, err = c.GetQueueUrl(ctx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("absent")})
	if code := apiCode(err); code != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("GetQueueUrl of a missing queue: code %q (%v)", code, err)
	}
	created, err := c.CreateQueue(ctx(t), &sqs.CreateQueueInput{QueueName: aws.String("q"), Attributes: map[string]string{"VisibilityTimeout": "10"}})
	if err != nil {
		t.Fatal(err)
	}
	q := created.QueueUrl

	// An empty queue answers after the wait (bounded), with no messages.
	begin := time.Now()
	out, err := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 1})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("empty receive: %v %v", out, err)
	}
	if d := time.Since(begin); d < 900*time.Millisecond {
		t.Errorf("an empty long poll of 1s returned after %s", d)
	}

	// A long poll returns as soon as a message is sent.
	done := make(chan *sqs.ReceiveMessageOutput, 1)
	go func() {
		out, err := c.ReceiveMessage(ctxBG(), &sqs.ReceiveMessageInput{QueueUrl: q, WaitTimeSeconds: 20, MaxNumberOfMessages: 10})
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	time.Sleep(200 * time.Millisecond)
	sent, err := c.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String(`{"hello":"world"}`)})
	if err != nil {
		t.Fatal(err) // the SDK checks MD5OfMessageBody
	}
	var got *sqs.ReceiveMessageOutput
	select {
	case got = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the long poll did not return when a message arrived")
	}
	if len(got.Messages) != 1 || aws.ToString(got.Messages[0].MessageId) != aws.ToString(sent.MessageId) || aws.ToString(got.Messages[0].Body) != `{"hello":"world"}` {
		t.Fatalf("received %+v", got.Messages)
	}
	first := got.Messages[0]

	// Hidden for the visibility timeout, then back with a new receipt.
	out, err = c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q})
	if err != nil || len(out.Messages) != 0 {
		t.Fatalf("receive within the visibility timeout: %v %v", out.Messages, err)
	}
	clock.Advance(11 * time.Second)
	out, err = c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q})
	if err != nil || len(out.Messages) != 1 {
		t.Fatalf("receive after the visibility timeout: %v %v", out.Messages, err)
	}
	again := out.Messages[0]
	if aws.ToString(again.ReceiptHandle) == aws.ToString(first.ReceiptHandle) {
		t.Error("a second receive has the same receipt handle")
	}
	// The stale receipt deletes nothing (and succeeds), the latest one deletes.
	if _, err := c.DeleteMessage(ctx(t), &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: first.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if n := s.QueueMessages("q"); n != 1 {
		t.Errorf("a stale receipt deleted the message (%d left)", n)
	}
	if _, err := c.DeleteMessage(ctx(t), &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: again.ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if n := s.QueueMessages("q"); n != 0 {
		t.Errorf("%d messages left after delete", n)
	}
	clock.Advance(time.Minute)
	if out, _ := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q}); len(out.Messages) != 0 {
		t.Errorf("a deleted message came back: %v", out.Messages)
	}

	// Errors the SDK decodes by their query-compatible codes.
	for _, tc := range []struct {
		name string
		call func() error
		want string
	}{
		{"receive from a missing queue", func() error {
			_, err := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: aws.String(base + "/123456789012/nope")})
			return err
		}, "AWS.SimpleQueueService.NonExistentQueue"},
		{"too many messages", func() error {
			_, err := c.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q, MaxNumberOfMessages: 11})
			return err
		}, "InvalidParameterValue"},
		{"bad receipt", func() error {
			_, err := c.DeleteMessage(ctx(t), &sqs.DeleteMessageInput{QueueUrl: q, ReceiptHandle: aws.String("!!")})
			return err
		}, "ReceiptHandleIsInvalid"},
		{"empty body", func() error {
			_, err := c.SendMessage(ctx(t), &sqs.SendMessageInput{QueueUrl: q, MessageBody: aws.String("")})
			return err
		}, "MissingParameter"},
	} {
		if code := apiCode(tc.call()); code != tc.want {
			t.Errorf("%s: code %q, want %q", tc.name, code, tc.want)
		}
	}
	if n := s.Calls("ReceiveMessage"); n < 5 {
		t.Errorf("%d ReceiveMessage calls recorded", n)
	}
	if r := s.Requests("ReceiveMessage"); r[1].Get("WaitTimeSeconds") != "20" || r[1].Get("MaxNumberOfMessages") != "10" {
		t.Errorf("recorded %v", r[1])
	}
	// Sending wakes the long poll of its own queue only; the SDK must not hang on a cancelled one.
	cctx, cancel := contextWithTimeout(300 * time.Millisecond)
	defer cancel()
	if _, err := c.ReceiveMessage(cctx, &sqs.ReceiveMessageInput{QueueUrl: pre.QueueUrl, WaitTimeSeconds: 20}); err == nil {
		t.Error("a cancelled long poll returned no error")
	}
}

// The four kinds of EventBridge event, each as EventBridge puts it on the queue.
func TestEventBodies(t *testing.T) {
	s := New(Options{Queues: []string{"events"}})
	for _, tc := range []struct {
		e                  Event
		detailType, source string
		detail             map[string]any
	}{
		{Event{Kind: SpotInterruption, InstanceID: "i-0123456789abcdef0"}, "EC2 Spot Instance Interruption Warning", "aws.ec2",
			map[string]any{"instance-id": "i-0123456789abcdef0", "instance-action": "terminate"}},
		{Event{Kind: RebalanceRecommendation, InstanceID: "i-0123456789abcdef0"}, "EC2 Instance Rebalance Recommendation", "aws.ec2",
			map[string]any{"instance-id": "i-0123456789abcdef0"}},
		{Event{Kind: StateChange, InstanceID: "i-0123456789abcdef0", State: "stopping"}, "EC2 Instance State-change Notification", "aws.ec2",
			map[string]any{"instance-id": "i-0123456789abcdef0", "state": "stopping"}},
		{Event{Kind: ScheduledChange, InstanceID: "i-0123456789abcdef0"}, "AWS Health Event", "aws.health",
			map[string]any{"service": "EC2", "eventTypeCategory": "scheduledChange"}},
	} {
		t.Run(string(tc.e.Kind), func(t *testing.T) {
			body, err := s.EventBody(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			var env map[string]any
			if err := json.Unmarshal([]byte(body), &env); err != nil {
				t.Fatal(err)
			}
			if env["detail-type"] != tc.detailType || env["source"] != tc.source || env["region"] != "us-east-1" || env["account"] != "123456789012" || env["version"] != "0" {
				t.Errorf("envelope %v", env)
			}
			detail := env["detail"].(map[string]any)
			for k, v := range tc.detail {
				if detail[k] != v {
					t.Errorf("detail.%s = %v, want %v", k, detail[k], v)
				}
			}
			if tc.e.Kind == ScheduledChange {
				ents := detail["affectedEntities"].([]any)
				if len(ents) != 1 || ents[0].(map[string]any)["entityValue"] != tc.e.InstanceID {
					t.Errorf("affectedEntities %v", ents)
				}
			}
		})
	}
	for _, bad := range []Event{{Kind: "reboot", InstanceID: "i-1"}, {Kind: StateChange, InstanceID: "i-1", State: "asleep"}, {Kind: SpotInterruption}} {
		if _, err := s.EventBody(bad); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}

	// The HTTP endpoint the sandbox uses: an event, and a raw (malformed) body.
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	post := func(path, body string) (int, string) {
		resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/_ec2sim/sqs/events", `{"kind":"spot-interruption","instanceId":"i-0123456789abcdef0"}`); code != 200 || !strings.Contains(body, "messageId") {
		t.Errorf("event: %d %s", code, body)
	}
	if code, body := post("/_ec2sim/sqs/events?raw=1", `not json`); code != 200 {
		t.Errorf("raw: %d %s", code, body)
	}
	if code, _ := post("/_ec2sim/sqs/nope", `{"kind":"spot-interruption","instanceId":"i-1"}`); code != 400 {
		t.Errorf("missing queue: %d", code)
	}
	if n := s.QueueMessages("events"); n != 2 {
		t.Errorf("%d messages on the queue, want 2", n)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}
