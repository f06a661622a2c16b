package ec2sim

import (
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SQS, the queue EventBridge delivers interruption events to. The SDK speaks AWS JSON 1.0 to it
// (X-Amz-Target AmazonSQS.<Operation>, Content-Type application/x-amz-json-1.0), with the
// query-compatible error codes in X-Amzn-Query-Error. Simulated: CreateQueue, GetQueueUrl,
// SendMessage, ReceiveMessage (long polling up to maxReceiveWait, visibility timeouts on the
// simulator's clock) and DeleteMessage.

// Queue limits and defaults, as SQS has them.
const (
	defaultVisibilityTimeout = 30 * time.Second
	maxVisibilityTimeout     = 12 * time.Hour
	maxWaitSeconds           = 20
	maxReceiveBatch          = 10
	// maxReceiveWait bounds a long poll in real time, whatever WaitTimeSeconds asks, so a test
	// never waits 20 s for an empty answer.
	maxReceiveWait = 20 * time.Second
	// receivePoll is how often a long poll looks again without a send waking it (a message's
	// visibility timeout may have run out on the simulator's clock).
	receivePoll = 100 * time.Millisecond
)

var queueNameRe = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$|^[A-Za-z0-9_-]{1,75}\.fifo$`)

type sqsQueue struct {
	name       string
	visibility time.Duration
	messages   []*sqsMessage // in send order; deleted ones are dropped
}

type sqsMessage struct {
	id, body, md5 string
	sent          time.Time
	visibleAt     time.Time // the simulator's time from which it may be received again
	receives      int
	receipt       string // of the latest receive
}

// sqsHandler answers one SQS operation. It runs without s.mu held; r is the request (its
// context ends a long poll, its Host makes queue URLs).
type sqsHandler func(s *Sim, r *http.Request, params map[string]any) (any, *apiError)

var sqsHandlers = map[string]sqsHandler{
	"AmazonSQS.CreateQueue":    (*Sim).createQueue,
	"AmazonSQS.GetQueueUrl":    (*Sim).getQueueURL,
	"AmazonSQS.SendMessage":    (*Sim).sendMessageOp,
	"AmazonSQS.ReceiveMessage": (*Sim).receiveMessage,
	"AmazonSQS.DeleteMessage":  (*Sim).deleteMessage,
}

// sqsError is an SQS error: the JSON 1.0 shape name, its query-protocol code (which the SDK
// reports as the error code) and status.
func sqsError(shape, queryCode string, status int, format string, args ...any) *apiError {
	return &apiError{status: status, code: shape, message: fmt.Sprintf(format, args...), queryCode: queryCode}
}

func sqsNoQueue() *apiError {
	return sqsError("QueueDoesNotExist", "AWS.SimpleQueueService.NonExistentQueue", 400, "The specified queue does not exist.")
}

func sqsMissing(member string) *apiError {
	return sqsError("MissingParameter", "MissingParameter", 400, "The request must contain the parameter %s.", member)
}

func sqsInvalid(format string, args ...any) *apiError {
	return sqsError("InvalidParameterValue", "InvalidParameterValue", 400, format, args...)
}

// CreateQueue makes a queue (nothing if it exists).
func (s *Sim) CreateQueue(name string) error {
	if !queueNameRe.MatchString(name) {
		return fmt.Errorf("ec2sim: %q is not a valid queue name", name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		s.queues[name] = &sqsQueue{name: name, visibility: defaultVisibilityTimeout}
	}
	return nil
}

// queueURL is the queue's URL as SQS forms it, on the endpoint the client reached.
func (s *Sim) queueURL(r *http.Request, name string) string {
	host := "sqs." + s.opts.Region + ".amazonaws.com"
	scheme := "https"
	if r != nil && r.Host != "" {
		host, scheme = r.Host, "http"
	}
	return fmt.Sprintf("%s://%s/%s/%s", scheme, host, s.opts.AccountID, name)
}

// queueByURL finds a queue by the account and name at the end of its URL (any host: the
// client may reach the simulator under several names). Callers hold s.mu.
func (s *Sim) queueByURL(u string) (*sqsQueue, *apiError) {
	if u == "" {
		return nil, sqsMissing("QueueUrl")
	}
	parsed, err := url.Parse(u)
	if err != nil {
		return nil, sqsNoQueue()
	}
	parts := strings.Split(strings.Trim(parsed.Path, "/"), "/")
	if len(parts) != 2 || parts[0] != s.opts.AccountID {
		return nil, sqsNoQueue()
	}
	q, ok := s.queues[parts[1]]
	if !ok {
		return nil, sqsNoQueue()
	}
	return q, nil
}

func (s *Sim) createQueue(r *http.Request, params map[string]any) (any, *apiError) {
	name, _ := params["QueueName"].(string)
	if name == "" {
		return nil, sqsMissing("QueueName")
	}
	if !queueNameRe.MatchString(name) {
		return nil, sqsInvalid("Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	visibility := defaultVisibilityTimeout
	if attrs, ok := params["Attributes"].(map[string]any); ok {
		if v, ok := attrs["VisibilityTimeout"].(string); ok {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 || time.Duration(n)*time.Second > maxVisibilityTimeout {
				return nil, sqsError("InvalidAttributeValue", "InvalidAttributeValue", 400, "Invalid value for the parameter VisibilityTimeout.")
			}
			visibility = time.Duration(n) * time.Second
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[name]; ok {
		if q.visibility != visibility {
			return nil, sqsError("QueueNameExists", "QueueAlreadyExists", 400, "A queue already exists with the same name and a different value for attribute VisibilityTimeout")
		}
	} else {
		s.queues[name] = &sqsQueue{name: name, visibility: visibility}
	}
	return map[string]any{"QueueUrl": s.queueURL(r, name)}, nil
}

func (s *Sim) getQueueURL(r *http.Request, params map[string]any) (any, *apiError) {
	name, _ := params["QueueName"].(string)
	if name == "" {
		return nil, sqsMissing("QueueName")
	}
	if owner, _ := params["QueueOwnerAWSAccountId"].(string); owner != "" && owner != s.opts.AccountID {
		return nil, sqsNoQueue()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.queues[name]; !ok {
		return nil, sqsNoQueue()
	}
	return map[string]any{"QueueUrl": s.queueURL(r, name)}, nil
}

func (s *Sim) sendMessageOp(_ *http.Request, params map[string]any) (any, *apiError) {
	u, _ := params["QueueUrl"].(string)
	body, _ := params["MessageBody"].(string)
	if body == "" {
		return nil, sqsMissing("MessageBody")
	}
	delay := 0
	if d, ok := params["DelaySeconds"].(json.Number); ok {
		n, err := strconv.Atoi(d.String())
		if err != nil || n < 0 || n > 900 {
			return nil, sqsInvalid("Value %s for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", d)
		}
		delay = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, aerr := s.queueByURL(u)
	if aerr != nil {
		return nil, aerr
	}
	m := s.enqueue(q, body, time.Duration(delay)*time.Second)
	return map[string]any{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
}

// enqueue adds a message and wakes the long polls. Callers hold s.mu.
func (s *Sim) enqueue(q *sqsQueue, body string, delay time.Duration) *sqsMessage {
	sum := md5.Sum([]byte(body))
	now := s.clock.Now()
	m := &sqsMessage{id: s.newUUID(), body: body, md5: hex.EncodeToString(sum[:]), sent: now, visibleAt: now.Add(delay)}
	q.messages = append(q.messages, m)
	close(s.queueSignal)
	s.queueSignal = make(chan struct{})
	return m
}

// SendMessage puts a message with any body (well-formed or not) on a queue and returns its ID.
func (s *Sim) SendMessage(queue, body string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q, ok := s.queues[queue]
	if !ok {
		return "", fmt.Errorf("ec2sim: no queue %q", queue)
	}
	if body == "" {
		return "", fmt.Errorf("ec2sim: SQS refuses an empty message body")
	}
	return s.enqueue(q, body, 0).id, nil
}

// QueueMessages says how many messages a queue holds (received but not deleted ones included).
func (s *Sim) QueueMessages(queue string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if q, ok := s.queues[queue]; ok {
		return len(q.messages)
	}
	return 0
}

func (s *Sim) receiveMessage(r *http.Request, params map[string]any) (any, *apiError) {
	u, _ := params["QueueUrl"].(string)
	limit, wait := 1, 0
	var visibility *time.Duration
	if v, ok := params["MaxNumberOfMessages"].(json.Number); ok {
		n, err := strconv.Atoi(v.String())
		if err != nil || n < 1 || n > maxReceiveBatch {
			return nil, sqsInvalid("Value %s for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", v)
		}
		limit = n
	}
	if v, ok := params["WaitTimeSeconds"].(json.Number); ok {
		n, err := strconv.Atoi(v.String())
		if err != nil || n < 0 || n > maxWaitSeconds {
			return nil, sqsInvalid("Value %s for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", v)
		}
		wait = n
	}
	if v, ok := params["VisibilityTimeout"].(json.Number); ok {
		n, err := strconv.Atoi(v.String())
		if err != nil || n < 0 || time.Duration(n)*time.Second > maxVisibilityTimeout {
			return nil, sqsInvalid("Value %s for parameter VisibilityTimeout is invalid. Reason: Must be between 0 and 43200, if provided.", v)
		}
		d := time.Duration(n) * time.Second
		visibility = &d
	}
	deadline := time.Now().Add(min(time.Duration(wait)*time.Second, maxReceiveWait))
	for {
		s.mu.Lock()
		s.advanceCapacityBlocks() // a Capacity Block event may be due on the clock
		q, aerr := s.queueByURL(u)
		if aerr != nil {
			s.mu.Unlock()
			return nil, aerr
		}
		msgs := s.take(q, limit, visibility)
		signal := s.queueSignal
		s.mu.Unlock()
		left := time.Until(deadline)
		if len(msgs) > 0 || left <= 0 {
			if len(msgs) == 0 {
				return map[string]any{}, nil
			}
			return map[string]any{"Messages": msgs}, nil
		}
		t := time.NewTimer(min(left, receivePoll))
		select {
		case <-signal:
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return map[string]any{}, nil
		}
		t.Stop()
	}
}

// take receives up to limit visible messages, oldest first, hiding each for the visibility
// timeout. Callers hold s.mu.
func (s *Sim) take(q *sqsQueue, limit int, visibility *time.Duration) []map[string]any {
	now := s.clock.Now()
	hide := q.visibility
	if visibility != nil {
		hide = *visibility
	}
	var out []map[string]any
	for _, m := range q.messages {
		if len(out) == limit {
			break
		}
		if now.Before(m.visibleAt) {
			continue
		}
		m.receives++
		m.visibleAt = now.Add(hide)
		m.receipt = base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf("%s/%s/%d", q.name, m.id, m.receives)))
		out = append(out, map[string]any{
			"MessageId": m.id, "ReceiptHandle": m.receipt, "MD5OfBody": m.md5, "Body": m.body,
			"Attributes": map[string]string{
				"SentTimestamp":           strconv.FormatInt(m.sent.UnixMilli(), 10),
				"ApproximateReceiveCount": strconv.Itoa(m.receives),
			},
		})
	}
	return out
}

func (s *Sim) deleteMessage(_ *http.Request, params map[string]any) (any, *apiError) {
	u, _ := params["QueueUrl"].(string)
	handle, _ := params["ReceiptHandle"].(string)
	if handle == "" {
		return nil, sqsMissing("ReceiptHandle")
	}
	raw, err := base64.RawURLEncoding.DecodeString(handle)
	parts := strings.Split(string(raw), "/")
	if err != nil || len(parts) != 3 {
		return nil, sqsError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", 400, "The input receipt handle \"%s\" is not a valid receipt handle.", handle)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, aerr := s.queueByURL(u)
	if aerr != nil {
		return nil, aerr
	}
	if parts[0] != q.name {
		return nil, sqsError("ReceiptHandleIsInvalid", "ReceiptHandleIsInvalid", 400, "The input receipt handle \"%s\" is not a valid receipt handle.", handle)
	}
	// As SQS documents: only the latest receipt deletes; an older one (the message was received
	// again since) succeeds and deletes nothing, and so does one of a message already gone.
	q.messages = slices.DeleteFunc(q.messages, func(m *sqsMessage) bool { return m.id == parts[1] && m.receipt == handle })
	return map[string]any{}, nil
}
