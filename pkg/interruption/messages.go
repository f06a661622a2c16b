package interruption

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// Kind is what an event says about an instance (the kind label of the metrics).
type Kind string

// The events an interruption queue carries, as Karpenter's EventBridge rules send them.
const (
	// SpotInterruption is EC2's two-minute warning before it reclaims a spot instance.
	SpotInterruption Kind = "spot_interruption"
	// RebalanceRecommendation says a spot instance is at elevated risk of interruption.
	RebalanceRecommendation Kind = "rebalance_recommendation"
	// ScheduledChange is an AWS Health scheduled change for EC2 (an instance retirement).
	ScheduledChange Kind = "scheduled_change"
	// StateChange is an instance state-change notification (Event.State).
	StateChange Kind = "state_change"
	// Unknown is a well-formed event Tailor does not act on (another source, detail type,
	// service or category).
	Unknown Kind = "unknown"
	// Malformed is a message that is not an event at all (for the metrics; Parse returns an
	// error).
	Malformed Kind = "malformed"
)

// Event is one parsed EventBridge event.
type Event struct {
	Kind            Kind
	ID              string
	Region, Account string
	Time            time.Time
	// InstanceIDs are the instances the event is about (an AWS Health event may name several).
	InstanceIDs []string
	// State is a StateChange's new state: pending, running, stopping, stopped, shutting-down,
	// terminated.
	State string
}

// envelope is the part of an EventBridge event every kind shares.
type envelope struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Detail     json.RawMessage `json:"detail"`
}

// ec2Detail is the detail of the aws.ec2 events.
type ec2Detail struct {
	InstanceID     string `json:"instance-id"`
	InstanceAction string `json:"instance-action"`
	State          string `json:"state"`
}

// healthDetail is the detail of an AWS Health event.
type healthDetail struct {
	Service           string `json:"service"`
	EventTypeCode     string `json:"eventTypeCode"`
	EventTypeCategory string `json:"eventTypeCategory"`
	AffectedEntities  []struct {
		EntityValue string `json:"entityValue"`
	} `json:"affectedEntities"`
}

var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)

// states a state-change notification may report.
var states = map[string]bool{"pending": true, "running": true, "stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// Parse decodes the body of an interruption queue message. A body that is not an EventBridge
// event, or an event of a known kind missing what Tailor needs, is an error naming the field;
// a well-formed event of another kind is Unknown.
func Parse(body string) (Event, error) {
	var env envelope
	if err := json.Unmarshal([]byte(body), &env); err != nil {
		return Event{}, fmt.Errorf("not a JSON EventBridge event: %w", err)
	}
	switch {
	case env.Source == "":
		return Event{}, errors.New("no source")
	case env.DetailType == "":
		return Event{}, errors.New("no detail-type")
	case len(env.Detail) == 0 || env.Detail[0] != '{':
		return Event{}, errors.New("detail is not an object")
	}
	ev := Event{Kind: Unknown, ID: env.ID, Region: env.Region, Account: env.Account}
	if env.Time != "" {
		t, err := time.Parse(time.RFC3339, env.Time)
		if err != nil {
			return Event{}, fmt.Errorf("time %q is not RFC 3339", env.Time)
		}
		ev.Time = t
	}
	switch {
	case env.Source == "aws.ec2" && env.DetailType == "EC2 Spot Instance Interruption Warning":
		ev.Kind = SpotInterruption
	case env.Source == "aws.ec2" && env.DetailType == "EC2 Instance Rebalance Recommendation":
		ev.Kind = RebalanceRecommendation
	case env.Source == "aws.ec2" && env.DetailType == "EC2 Instance State-change Notification":
		ev.Kind = StateChange
	case env.Source == "aws.health" && env.DetailType == "AWS Health Event":
		var d healthDetail
		if err := json.Unmarshal(env.Detail, &d); err != nil {
			return Event{}, fmt.Errorf("detail: %w", err)
		}
		if d.Service != "EC2" || d.EventTypeCategory != "scheduledChange" {
			return ev, nil // another service's or category's health event
		}
		ev.Kind = ScheduledChange
		for i, e := range d.AffectedEntities {
			// Entities of EC2 events are instances, but an event may also name other resources
			// (volumes): only instances are Tailor's business.
			if instanceIDPattern.MatchString(e.EntityValue) {
				ev.InstanceIDs = append(ev.InstanceIDs, e.EntityValue)
			} else if e.EntityValue == "" {
				return Event{}, fmt.Errorf("detail.affectedEntities[%d].entityValue is empty", i)
			}
		}
		if len(ev.InstanceIDs) == 0 {
			return Event{}, errors.New("detail.affectedEntities names no instance")
		}
		return ev, nil
	default:
		return ev, nil
	}
	var d ec2Detail
	if err := json.Unmarshal(env.Detail, &d); err != nil {
		return Event{}, fmt.Errorf("detail: %w", err)
	}
	if !instanceIDPattern.MatchString(d.InstanceID) {
		return Event{}, fmt.Errorf("detail.instance-id %q is not an instance ID", d.InstanceID)
	}
	ev.InstanceIDs = []string{d.InstanceID}
	if ev.Kind == StateChange {
		if !states[d.State] {
			return Event{}, fmt.Errorf("detail.state %q is not an instance state", d.State)
		}
		ev.State = d.State
	}
	return ev, nil
}

// going says whether a state-change's state means the instance is stopping or gone.
func going(state string) bool {
	switch state {
	case "stopping", "stopped", "shutting-down", "terminated":
		return true
	}
	return false
}
