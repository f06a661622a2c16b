package ec2sim

import (
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

func tags(kv ...string) []ec2types.Tag {
	var out []ec2types.Tag
	for i := 0; i < len(kv); i += 2 {
		out = append(out, ec2types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return out
}

// byAction returns the logged requests of an action.
func byAction(log []AuthorizationRequest, action string) []AuthorizationRequest {
	var out []AuthorizationRequest
	for _, r := range log {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

func resourceOf(r AuthorizationRequest, typ string) (AuthorizedResource, bool) {
	for _, res := range r.Resources {
		if res.Type == typ {
			return res, true
		}
	}
	return AuthorizedResource{}, false
}

// TestAuthorizationLog drives a spot launch, a termination and a template deletion through the
// SDK and checks the authorization requests EC2 would make: who asked, on which resources, with
// which request and resource tags and context keys.
func TestAuthorizationLog(t *testing.T) {
	s, client, ssmClient := newTestSim(t, Options{ClusterName: "c"})
	s.SetInstanceProfileRole("node-profile", "node-role")
	owned := tags("kubernetes.io/cluster/c", "owned", "tailor.dev/pool", "p")
	if _, err := ssmClient.GetParameter(ctx(t), &ssm.GetParameterInput{Name: aws.String("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")}); err != nil {
		t.Fatal(err)
	}
	image, _ := s.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	lt, err := client.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("tailor-c-1"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId: aws.String(image), SecurityGroupIds: []string{s.ClusterSecurityGroupID()},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("node-profile")},
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
				{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: owned},
				{ResourceType: ec2types.ResourceTypeSpotInstancesRequest, Tags: owned},
			},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: owned}},
	})
	if err != nil {
		t.Fatal(err)
	}
	ltID := aws.ToString(lt.LaunchTemplate.LaunchTemplateId)
	claimTags := append(slices.Clone(owned), tags("tailor.dev/claim", "x")...)
	fleet, err := client.CreateFleet(ctx(t), &ec2.CreateFleetInput{
		Type:                        ec2types.FleetTypeInstant,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot},
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(ltID), Version: aws.String("1")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String(s.Subnets()[0].ID)}},
		}},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: claimTags},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: claimTags},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: claimTags},
		},
	})
	if err != nil || len(fleet.Instances) != 1 {
		t.Fatalf("%+v %v", fleet, err)
	}
	id := fleet.Instances[0].InstanceIds[0]
	if _, err := client.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DeleteLaunchTemplate(ctx(t), &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(ltID)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}
	// A repeat with other IDs but the same tags adds nothing.
	if _, err := client.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{}); err != nil {
		t.Fatal(err)
	}

	log := s.AuthorizationLog()
	m := func(kv ...string) map[string]string {
		out := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	ownedTags := m("kubernetes.io/cluster/c", "owned", "tailor.dev/pool", "p")
	claim := m("kubernetes.io/cluster/c", "owned", "tailor.dev/pool", "p", "tailor.dev/claim", "x")
	tests := []struct {
		name    string
		action  string
		context map[string]string
		// resource type → request tags (nil: an existing resource) and resource tags
		resources map[string][2]map[string]string
	}{
		{"template creation", "ec2:CreateLaunchTemplate", nil, map[string][2]map[string]string{"launch-template": {ownedTags, nil}}},
		{"template tagged on creation", "ec2:CreateTags", m("ec2:CreateAction", "CreateLaunchTemplate"), map[string][2]map[string]string{"launch-template": {ownedTags, nil}}},
		{"fleet", "ec2:CreateFleet", nil, map[string][2]map[string]string{
			"fleet": {claim, nil}, "instance": {claim, nil}, "volume": {claim, nil},
			"launch-template": {nil, ownedTags}, "subnet": {nil, s.subnets[0].tags}, "image": {nil, map[string]string{}},
		}},
		{"the fleet's RunInstances", "ec2:RunInstances", nil, map[string][2]map[string]string{
			"instance": {claim, nil}, "volume": {claim, nil}, "network-interface": {ownedTags, nil}, "spot-instances-request": {ownedTags, nil},
			"launch-template": {nil, ownedTags}, "subnet": {nil, s.subnets[0].tags}, "image": {nil, map[string]string{}},
			"security-group": {nil, s.groups[0].tags}, "snapshot": {nil, map[string]string{}},
		}},
		{"fleet tags", "ec2:CreateTags", m("ec2:CreateAction", "CreateFleet"), map[string][2]map[string]string{"fleet": {claim, nil}, "instance": {claim, nil}, "volume": {claim, nil}}},
		{"template tags applied at launch", "ec2:CreateTags", m("ec2:CreateAction", "RunInstances"), map[string][2]map[string]string{"network-interface": {ownedTags, nil}, "spot-instances-request": {ownedTags, nil}}},
		{"role passed", "iam:PassRole", m("iam:PassedToService", "ec2.amazonaws.com"), map[string][2]map[string]string{"role": {nil, nil}}},
		{"termination", "ec2:TerminateInstances", nil, map[string][2]map[string]string{"instance": {nil, claim}}},
		{"template deletion", "ec2:DeleteLaunchTemplate", nil, map[string][2]map[string]string{"launch-template": {nil, ownedTags}}},
		{"describe", "ec2:DescribeInstances", nil, map[string][2]map[string]string{}},
		{"SSM", "ssm:GetParameter", nil, map[string][2]map[string]string{"parameter": {nil, map[string]string{}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var match []AuthorizationRequest
			for _, r := range byAction(log, tt.action) {
				if maps.Equal(r.Context, tt.context) {
					match = append(match, r)
				}
			}
			if len(match) != 1 {
				t.Fatalf("%d %s requests with context %v in %+v", len(match), tt.action, tt.context, log)
			}
			r := match[0]
			if r.Principal != "AKIDEXAMPLE" {
				t.Errorf("principal %q", r.Principal)
			}
			var types []string
			for _, res := range r.Resources {
				types = append(types, res.Type)
				want, ok := tt.resources[res.Type]
				if !ok {
					t.Errorf("unexpected resource %+v", res)
					continue
				}
				if !maps.Equal(res.RequestTags, want[0]) || (want[1] != nil && !maps.Equal(res.Tags, want[1])) {
					t.Errorf("%s: request tags %v tags %v, want %v and %v", res.Type, res.RequestTags, res.Tags, want[0], want[1])
				}
				if res.ID == "" {
					t.Errorf("%s has no ID", res.Type)
				}
			}
			if got := slices.Sorted(slices.Values(slices.Compact(slices.Sorted(slices.Values(types))))); len(got) != len(tt.resources) {
				t.Errorf("resource types %v, want those of %v", got, tt.resources)
			}
		})
	}
	if r, _ := resourceOf(byAction(log, "iam:PassRole")[0], "role"); r.ID != "node-role" {
		t.Errorf("passed role %q, want node-role", r.ID)
	}
	if r, _ := resourceOf(byAction(log, "ec2:TerminateInstances")[0], "instance"); r.ID != id {
		t.Errorf("terminated %q, want %s", r.ID, id)
	}
	if n := len(byAction(log, "ec2:DescribeInstances")); n != 1 {
		t.Errorf("%d DescribeInstances requests, want one for two identical calls", n)
	}
}

// TestCreateFleetTagSpecificationTypes: an instant fleet tags the fleet, its instances and their
// volumes; network interfaces and spot requests are the launch template's to tag, as in EC2.
func TestCreateFleetTagSpecificationTypes(t *testing.T) {
	s, client, _ := newTestSim(t, Options{})
	image, _ := s.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	lt, err := client.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("lt-types"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(image)},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet, ec2types.ResourceTypeNetworkInterface, ec2types.ResourceTypeSpotInstancesRequest} {
		t.Run(string(rt), func(t *testing.T) {
			_, err := client.CreateFleet(ctx(t), &ec2.CreateFleetInput{
				Type:                        ec2types.FleetTypeInstant,
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)},
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId, Version: aws.String("1")},
					Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large"}},
				}},
				TagSpecifications: []ec2types.TagSpecification{{ResourceType: rt, Tags: tags("k", "v")}},
			})
			ok := rt == ec2types.ResourceTypeInstance || rt == ec2types.ResourceTypeVolume || rt == ec2types.ResourceTypeFleet
			if (err == nil) != ok {
				t.Errorf("error %v, want accepted %v", err, ok)
			}
		})
	}
}
