package interruption

import (
	"slices"
	"strings"
	"testing"
)

const (
	spotBody = `{"version":"0","id":"e1","detail-type":"EC2 Spot Instance Interruption Warning","source":"aws.ec2","account":"123456789012",
		"time":"2026-03-01T12:00:00Z","region":"us-east-1","resources":["arn:aws:ec2:us-east-1a:instance/i-0123456789abcdef0"],
		"detail":{"instance-id":"i-0123456789abcdef0","instance-action":"terminate"}}`
	rebalanceBody = `{"version":"0","id":"e2","detail-type":"EC2 Instance Rebalance Recommendation","source":"aws.ec2","account":"123456789012",
		"time":"2026-03-01T12:00:00Z","region":"us-east-1","detail":{"instance-id":"i-0123456789abcdef0"}}`
	stateBody = `{"version":"0","id":"e3","detail-type":"EC2 Instance State-change Notification","source":"aws.ec2","account":"123456789012",
		"time":"2026-03-01T12:00:00Z","region":"us-east-1","detail":{"instance-id":"i-0123456789abcdef0","state":"stopping"}}`
	healthBody = `{"version":"0","id":"e4","detail-type":"AWS Health Event","source":"aws.health","account":"123456789012",
		"time":"2026-03-01T12:00:00Z","region":"us-east-1","resources":["i-0123456789abcdef0"],
		"detail":{"eventArn":"arn:aws:health:us-east-1::event/EC2/AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED/x","service":"EC2",
		"eventTypeCode":"AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED","eventTypeCategory":"scheduledChange",
		"affectedEntities":[{"entityValue":"i-0123456789abcdef0"},{"entityValue":"vol-0123456789abcdef0"},{"entityValue":"i-0fedcba9876543210"}]}}`
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name      string
		body      string
		kind      Kind
		instances []string
		state     string
		err       string // substring; "" means no error
	}{
		{name: "spot interruption", body: spotBody, kind: SpotInterruption, instances: []string{"i-0123456789abcdef0"}},
		{name: "rebalance recommendation", body: rebalanceBody, kind: RebalanceRecommendation, instances: []string{"i-0123456789abcdef0"}},
		{name: "state change", body: stateBody, kind: StateChange, instances: []string{"i-0123456789abcdef0"}, state: "stopping"},
		{name: "health scheduled change, instances only", body: healthBody, kind: ScheduledChange, instances: []string{"i-0123456789abcdef0", "i-0fedcba9876543210"}},
		{name: "short instance ID", body: strings.Replace(rebalanceBody, "i-0123456789abcdef0", "i-01234567", 1), kind: RebalanceRecommendation, instances: []string{"i-01234567"}},
		{name: "health event of another service", body: strings.Replace(healthBody, `"service":"EC2"`, `"service":"RDS"`, 1), kind: Unknown},
		{name: "health event of another category", body: strings.Replace(healthBody, `"scheduledChange"`, `"issue"`, 1), kind: Unknown},
		{name: "another detail type", body: strings.Replace(spotBody, "EC2 Spot Instance Interruption Warning", "EC2 Spot Instance Request Fulfillment", 1), kind: Unknown},
		{name: "another source", body: strings.Replace(spotBody, `"aws.ec2"`, `"my.app"`, 1), kind: Unknown},

		{name: "not JSON", body: "hello", err: "not a JSON EventBridge event"},
		{name: "empty", body: "", err: "not a JSON EventBridge event"},
		{name: "JSON array", body: `[1,2]`, err: "not a JSON EventBridge event"},
		{name: "SQS test message", body: `{"Service":"Amazon S3","Event":"s3:TestEvent"}`, err: "no source"},
		{name: "no detail-type", body: `{"source":"aws.ec2","detail":{}}`, err: "no detail-type"},
		{name: "detail not an object", body: `{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation","detail":"i-0123456789abcdef0"}`, err: "detail is not an object"},
		{name: "no detail", body: `{"source":"aws.ec2","detail-type":"EC2 Instance Rebalance Recommendation"}`, err: "detail is not an object"},
		{name: "no instance", body: strings.Replace(spotBody, `"instance-id":"i-0123456789abcdef0",`, "", 1), err: `detail.instance-id "" is not an instance ID`},
		{name: "bad instance ID", body: strings.Replace(spotBody, `"instance-id":"i-0123456789abcdef0"`, `"instance-id":"i-xyz"`, 1), err: `detail.instance-id "i-xyz"`},
		{name: "instance ID of the wrong type", body: strings.Replace(spotBody, `"instance-id":"i-0123456789abcdef0"`, `"instance-id":42`, 1), err: "detail:"},
		{name: "state change without state", body: strings.Replace(stateBody, `,"state":"stopping"`, "", 1), err: `detail.state ""`},
		{name: "state change to nonsense", body: strings.Replace(stateBody, `"stopping"`, `"asleep"`, 1), err: `detail.state "asleep"`},
		{name: "health event without instances", body: `{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{"entityValue":"vol-1"}]}}`,
			err: "names no instance"},
		{name: "health event with an empty entity", body: `{"source":"aws.health","detail-type":"AWS Health Event","detail":{"service":"EC2","eventTypeCategory":"scheduledChange","affectedEntities":[{}]}}`,
			err: "detail.affectedEntities[0].entityValue is empty"},
		{name: "bad time", body: strings.Replace(spotBody, "2026-03-01T12:00:00Z", "yesterday", 1), err: `time "yesterday"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev, err := Parse(tc.body)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Kind != tc.kind || !slices.Equal(ev.InstanceIDs, tc.instances) || ev.State != tc.state {
				t.Errorf("got %s %v %q, want %s %v %q", ev.Kind, ev.InstanceIDs, ev.State, tc.kind, tc.instances, tc.state)
			}
			if tc.kind != Unknown && (ev.Region != "us-east-1" || ev.Account != "123456789012" || ev.Time.IsZero() || ev.ID == "") {
				t.Errorf("envelope not kept: %+v", ev)
			}
		})
	}
}
