// Package sqs reads the interruption queue: the SQS queue EventBridge rules send EC2 spot
// interruption warnings, rebalance recommendations, instance state changes and AWS Health
// events to, as Karpenter's interruption queue. It long-polls (ReceiveMessage with
// WaitTimeSeconds 20, up to 10 messages) and deletes what was handled; a message not deleted
// comes back after the queue's visibility timeout, which is the retry.
//
// The client is the SDK's, built from the one configuration every AWS client of Tailor's uses,
// so its endpoint is overridable the same way (AWS_ENDPOINT_URL_SQS, or aws.Config.BaseEndpoint):
// the sandbox and the tests point it at pkg/sim/ec2sim.
package sqs

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
)

// Long polling: one ReceiveMessage waits up to waitSeconds for a message and returns up to
// maxMessages (SQS's limits for both).
const (
	waitSeconds = 20
	maxMessages = 10
)

// API is the SQS calls the queue makes (the SDK client implements it).
type API interface {
	GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

// NewClient returns the SDK's SQS client for cfg (its endpoint, retryer and credentials), as
// the method values the queue calls: an *sqs.Client converted to an interface would link all of
// its operations into the binary (see pkg/cloud/ec2's api.go).
func NewClient(cfg aws.Config) API {
	c := sqs.NewFromConfig(cfg, func(o *sqs.Options) {
		if o.HTTPClient != nil {
			o.HTTPClient = ec2.PlainBodies(o.HTTPClient)
		}
	})
	return client{getQueueURL: c.GetQueueUrl, receiveMessage: c.ReceiveMessage, deleteMessage: c.DeleteMessage}
}

type client struct {
	getQueueURL    func(context.Context, *sqs.GetQueueUrlInput, ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error)
	receiveMessage func(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	deleteMessage  func(context.Context, *sqs.DeleteMessageInput, ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
}

func (c client) GetQueueUrl(ctx context.Context, in *sqs.GetQueueUrlInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueUrlOutput, error) {
	return c.getQueueURL(ctx, in, optFns...)
}

func (c client) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	return c.receiveMessage(ctx, in, optFns...)
}

func (c client) DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error) {
	return c.deleteMessage(ctx, in, optFns...)
}

// Message is one received message.
type Message struct {
	ID string
	// ReceiptHandle deletes this receipt of the message.
	ReceiptHandle string
	Body          string
}

// Queue is one SQS queue, given by name or URL. It is safe for concurrent use.
type Queue struct {
	api  API
	name string // "" when given by URL

	mu  sync.Mutex
	url string // resolved once
}

// New returns the queue named nameOrURL: a URL (it has a scheme) is used as it is, a name is
// resolved with GetQueueUrl on first use.
func New(api API, nameOrURL string) *Queue {
	q := &Queue{api: api}
	if strings.Contains(nameOrURL, "://") {
		q.url = nameOrURL
	} else {
		q.name = nameOrURL
	}
	return q
}

// URL returns the queue's URL, asking GetQueueUrl for a name until it answers.
func (q *Queue) URL(ctx context.Context) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.url != "" {
		return q.url, nil
	}
	out, err := q.api.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.name)})
	if err != nil {
		return "", fmt.Errorf("sqs:GetQueueUrl %s: %w", q.name, err)
	}
	if aws.ToString(out.QueueUrl) == "" {
		return "", fmt.Errorf("sqs:GetQueueUrl %s returned no URL", q.name)
	}
	q.url = aws.ToString(out.QueueUrl)
	return q.url, nil
}

// Receive long-polls for messages: it returns as soon as some arrive, or empty after 20 seconds.
func (q *Queue) Receive(ctx context.Context) ([]Message, error) {
	u, err := q.URL(ctx)
	if err != nil {
		return nil, err
	}
	out, err := q.api.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(u), MaxNumberOfMessages: maxMessages, WaitTimeSeconds: waitSeconds,
	})
	if err != nil {
		return nil, fmt.Errorf("sqs:ReceiveMessage %s: %w", u, err)
	}
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		msgs = append(msgs, Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body)})
	}
	return msgs, nil
}

// Delete removes a handled message.
func (q *Queue) Delete(ctx context.Context, m Message) error {
	u, err := q.URL(ctx)
	if err != nil {
		return err
	}
	if _, err := q.api.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(u), ReceiptHandle: aws.String(m.ReceiptHandle)}); err != nil {
		return fmt.Errorf("sqs:DeleteMessage %s: %w", m.ID, err)
	}
	return nil
}
