package ec2sim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The EventBridge events an interruption queue receives, as EventBridge delivers them to SQS:
// the message body is the event envelope itself (version, id, detail-type, source, account,
// time, region, resources, detail).

// EventKind is one kind of event the simulator can send.
type EventKind string

const (
	// SpotInterruption is "EC2 Spot Instance Interruption Warning" (two minutes' notice).
	SpotInterruption EventKind = "spot-interruption"
	// RebalanceRecommendation is "EC2 Instance Rebalance Recommendation".
	RebalanceRecommendation EventKind = "rebalance-recommendation"
	// StateChange is "EC2 Instance State-change Notification" (Event.State says which).
	StateChange EventKind = "state-change"
	// ScheduledChange is an AWS Health "AWS Health Event" of category scheduledChange for EC2
	// (an instance retirement).
	ScheduledChange EventKind = "scheduled-change"
	// CapacityBlockDelivered is "Capacity Block Reservation Delivered" (a Capacity Block started)
	// and CapacityBlockExpirationWarning "Capacity Block Reservation Expiration Warning" (it ends
	// in 40 minutes; its instances begin terminating in 10). Both are about the reservation
	// Event.CapacityReservationID names, which must exist; see RouteCapacityBlockEvents.
	CapacityBlockDelivered         EventKind = "capacity-block-delivered"
	CapacityBlockExpirationWarning EventKind = "capacity-block-expiration-warning"
)

// Event is one event for an instance (for the CapacityBlock* kinds, for a Capacity Block).
type Event struct {
	Kind       EventKind `json:"kind"`
	InstanceID string    `json:"instanceId"`
	// State is the new state of a StateChange: pending, running, stopping, stopped,
	// shutting-down or terminated.
	State string `json:"state,omitempty"`
	// CapacityReservationID is the Capacity Block of the CapacityBlock* kinds (which have no
	// instance).
	CapacityReservationID string `json:"capacityReservationId,omitempty"`
}

// states an EC2 state-change notification may report.
var eventStates = map[string]bool{"pending": true, "running": true, "stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// EventBody is the SQS message body EventBridge would deliver for e, stamped with the
// simulator's region, account and clock. The instance need not exist: a queue can carry events
// of instances it does not know.
func (s *Sim) EventBody(e Event) (string, error) {
	if e.Kind == CapacityBlockDelivered || e.Kind == CapacityBlockExpirationWarning {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.reservationByID(e.CapacityReservationID)
		if r == nil || !r.block() {
			return "", fmt.Errorf("ec2sim: no Capacity Block %q", e.CapacityReservationID)
		}
		return s.capacityBlockEventBody(e.Kind, r, s.clock.Now())
	}
	if e.InstanceID == "" {
		return "", fmt.Errorf("ec2sim: an event needs an instance ID")
	}
	s.mu.Lock()
	id := s.newUUID()
	s.mu.Unlock()
	now := s.clock.Now().UTC()
	region, account := s.opts.Region, s.opts.AccountID
	arn := fmt.Sprintf("arn:aws:ec2:%s:%s:instance/%s", region, account, e.InstanceID)
	env := map[string]any{
		"version": "0", "id": id, "account": account, "time": now.Format(time.RFC3339), "region": region,
		"resources": []string{arn}, "source": "aws.ec2",
	}
	switch e.Kind {
	case SpotInterruption:
		env["detail-type"] = "EC2 Spot Instance Interruption Warning"
		env["detail"] = map[string]any{"instance-id": e.InstanceID, "instance-action": "terminate"}
	case RebalanceRecommendation:
		env["detail-type"] = "EC2 Instance Rebalance Recommendation"
		env["detail"] = map[string]any{"instance-id": e.InstanceID}
	case StateChange:
		if !eventStates[e.State] {
			return "", fmt.Errorf("ec2sim: %q is not an instance state", e.State)
		}
		env["detail-type"] = "EC2 Instance State-change Notification"
		env["detail"] = map[string]any{"instance-id": e.InstanceID, "state": e.State}
	case ScheduledChange:
		env["detail-type"] = "AWS Health Event"
		env["source"] = "aws.health"
		env["resources"] = []string{e.InstanceID}
		code := "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
		env["detail"] = map[string]any{
			"eventArn":          fmt.Sprintf("arn:aws:health:%s::event/EC2/%s/%s_%s", region, code, code, id),
			"service":           "EC2",
			"eventTypeCode":     code,
			"eventTypeCategory": "scheduledChange",
			"startTime":         now.Add(14 * 24 * time.Hour).Format(time.RFC1123),
			"endTime":           now.Add(14*24*time.Hour + time.Hour).Format(time.RFC1123),
			"eventDescription": []map[string]string{{"language": "en_US",
				"latestDescription": "EC2 has detected degradation of the underlying hardware hosting your Amazon EC2 instance. Your instance will be retired."}},
			"affectedEntities": []map[string]string{{"entityValue": e.InstanceID}},
		}
	default:
		return "", fmt.Errorf("ec2sim: unknown event kind %q (want %s, %s, %s, %s, %s or %s)", e.Kind, SpotInterruption, RebalanceRecommendation, StateChange, ScheduledChange, CapacityBlockDelivered, CapacityBlockExpirationWarning)
	}
	b, err := json.Marshal(env)
	return string(b), err
}

// SendEvent puts the event on the queue, as an EventBridge rule targeting it would, and returns
// the message ID.
func (s *Sim) SendEvent(queue string, e Event) (string, error) {
	body, err := s.EventBody(e)
	if err != nil {
		return "", err
	}
	return s.SendMessage(queue, body)
}

const sendPath = "/_ec2sim/sqs/"

// serveSend answers POST /_ec2sim/sqs/<queue> with a JSON Event ({"kind": "spot-interruption",
// "instanceId": "i-…"}) or, with ?raw=1, any body sent verbatim (a malformed message), so the
// sandbox or a person (curl) can trigger an interruption. It answers {"messageId": …}.
func (s *Sim) serveSend(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an event", http.StatusMethodNotAllowed)
		return
	}
	queue := strings.TrimPrefix(r.URL.Path, sendPath)
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 256<<10))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var id string
	if r.URL.Query().Get("raw") != "" {
		id, err = s.SendMessage(queue, string(body))
	} else {
		var e Event
		if err = json.Unmarshal(body, &e); err == nil {
			id, err = s.SendEvent(queue, e)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"messageId": id})
}
