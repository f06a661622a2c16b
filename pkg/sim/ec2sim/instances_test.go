package ec2sim

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// A page of DescribeInstances continues after the last instance of the page before: an instance
// that leaves the filter between two pages (terminated while a caller pages through the running
// ones) neither shifts the next page nor hides an instance that never changed. A node agent
// that took a hidden instance for gone deleted a node full of pods.
func TestDescribeInstancesPagesHoldWhileInstancesLeave(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, c, _ := newTestSim(t, Options{Clock: clock, PendingFor: time.Second, ShuttingDownFor: time.Second, ClusterName: "demo"})
	var launched []string
	for range 12 {
		out := launch(t, c, s, 1, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large")
		launched = append(launched, out.Instances[0].InstanceIds...)
	}
	clock.Advance(2 * time.Second)
	running := []ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}}
	page := func(token *string) ([]string, *string) {
		t.Helper()
		out, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{Filters: running, MaxResults: aws.Int32(5), NextToken: token})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				ids = append(ids, aws.ToString(in.InstanceId))
			}
		}
		return ids, out.NextToken
	}
	seen := map[string]bool{}
	first, token := page(nil)
	for _, id := range first {
		seen[id] = true
	}
	if _, err := c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{launched[1]}}); err != nil {
		t.Fatal(err)
	}
	for token != nil {
		var ids []string
		ids, token = page(token)
		for _, id := range ids {
			seen[id] = true
		}
	}
	for i, id := range launched {
		if !seen[id] {
			t.Errorf("instance %d (%s), running all along, is on no page", i, id)
		}
	}
	if _, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{NextToken: aws.String("garbage")}); err == nil {
		t.Error("a garbage NextToken was accepted")
	}
}
