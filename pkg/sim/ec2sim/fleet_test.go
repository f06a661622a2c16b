package ec2sim

import (
	"encoding/base64"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

func amiFor(t *testing.T, s *Sim, arch string) string {
	t.Helper()
	id, ok := s.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/" + arch + "/standard/recommended/image_id")
	if !ok {
		t.Fatal("no AMI")
	}
	return id
}

func mustCreateLT(t *testing.T, c *ec2.Client, name, sg, ami string) string {
	t.Helper()
	out, err := c.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(ami),
			SecurityGroupIds:   []string{sg},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("node-profile")},
			UserData:           aws.String(base64.StdEncoding.EncodeToString([]byte("#!/bin/true"))),
			TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{{
				ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("from-template"), Value: aws.String("yes")}},
			}},
		},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{{Key: aws.String("owner"), Value: aws.String("test")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

// launch makes n instances of typ in the first subnet with one fleet request.
func launch(t *testing.T, c *ec2.Client, s *Sim, n int32, ct ec2types.DefaultTargetCapacityType, typ string) *ec2.CreateFleetOutput {
	t.Helper()
	name := fmt.Sprintf("launch-%d", s.Calls("CreateFleet"))
	mustCreateLT(t, c, name, s.ClusterSecurityGroupID(), amiFor(t, s, "x86_64"))
	out, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
			Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(s.Subnets()[0].ID)}},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ct},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// typeMissingFrom finds an x86_64 type with a price that the simulator leaves out of one zone.
func typeMissingFrom(t *testing.T, s *Sim) (typ, zone string) {
	t.Helper()
	for _, n := range s.typeNames {
		if _, ok := s.prices[n]; !ok || !slices.Contains(s.archOf(n), "x86_64") || !s.supportsSpot(n) {
			continue
		}
		for _, z := range s.opts.Zones {
			if !s.Offered(n, z) {
				return n, z
			}
		}
	}
	t.Fatal("every type is offered everywhere")
	return "", ""
}

func subnetIn(s *Sim, zone string) string {
	for _, sn := range s.Subnets() {
		if sn.Zone == zone {
			return sn.ID
		}
	}
	return ""
}

func TestCreateFleet(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s, c, _ := newTestSim(t, Options{Clock: clock, PendingFor: 2 * time.Second, ShuttingDownFor: 3 * time.Second, ClusterName: "demo"})
	ami := amiFor(t, s, "x86_64")
	ltID := mustCreateLT(t, c, "nodes", s.ClusterSecurityGroupID(), ami)
	missingType, missingZone := typeMissingFrom(t, s)
	zoneA := s.Zones()[0]

	type ov struct{ typ, zone string }
	tests := []struct {
		name       string
		capType    ec2types.DefaultTargetCapacityType
		overrides  []ov
		capacity   func()
		wantType   string // "" = nothing launched
		wantErrors []string
	}{
		{
			name: "cheapest override wins", capType: "on-demand",
			overrides: []ov{{"m5.2xlarge", zoneA}, {"m5.large", zoneA}, {"m5.xlarge", zoneA}},
			wantType:  "m5.large",
		},
		{
			name: "not offered in zone is Unsupported", capType: "on-demand",
			overrides:  []ov{{missingType, missingZone}, {"m5.4xlarge", zoneA}},
			wantType:   "m5.4xlarge",
			wantErrors: []string{"Unsupported/" + missingType},
		},
		{
			name: "exhausted cheapest reports ICE and the next launches", capType: "on-demand",
			overrides: []ov{{"c5.large", zoneA}, {"c5.xlarge", zoneA}},
			capacity:  func() { s.SetCapacity("c5.large", zoneA, cloud.OnDemand, 0) },
			wantType:  "c5.xlarge", wantErrors: []string{"InsufficientInstanceCapacity/c5.large"},
		},
		{
			name: "all exhausted launches nothing", capType: "spot",
			overrides:  []ov{{"r5.large", zoneA}},
			capacity:   func() { s.SetCapacity("r5.large", "", cloud.Spot, 0) },
			wantErrors: []string{"InsufficientInstanceCapacity/r5.large"},
		},
		{
			name: "arm type with x86 image", capType: "on-demand",
			overrides:  []ov{{"m6g.large", zoneA}, {"m5.8xlarge", zoneA}},
			wantType:   "m5.8xlarge",
			wantErrors: []string{"InvalidParameterValue/m6g.large"},
		},
		{
			name: "spot picks cheapest spot price", capType: "spot",
			overrides: []ov{{"m5.large", s.Zones()[0]}, {"m5.large", s.Zones()[1]}, {"m5.large", s.Zones()[2]}},
			wantType:  "m5.large",
		},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.capacity != nil {
				tt.capacity()
			}
			var ovs []ec2types.FleetLaunchTemplateOverridesRequest
			for _, o := range tt.overrides {
				ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(o.typ), SubnetId: aws.String(subnetIn(s, o.zone))})
			}
			before := len(s.Instances())
			out, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
				Type:        ec2types.FleetTypeInstant,
				ClientToken: aws.String(fmt.Sprintf("case-%d", i)),
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(ltID), Version: aws.String("$Latest")},
					Overrides:                   ovs,
				}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: tt.capType},
				TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
					{Key: aws.String("kubernetes.io/cluster/demo"), Value: aws.String("owned")}, {Key: aws.String("case"), Value: aws.String(tt.name)},
				}}},
			})
			if err != nil {
				t.Fatal(err)
			}
			var gotErrs []string
			for _, e := range out.Errors {
				gotErrs = append(gotErrs, aws.ToString(e.ErrorCode)+"/"+string(e.LaunchTemplateAndOverrides.Overrides.InstanceType))
				if aws.ToString(e.LaunchTemplateAndOverrides.Overrides.SubnetId) == "" || aws.ToString(e.ErrorMessage) == "" {
					t.Errorf("error without subnet or message: %+v", e)
				}
			}
			if !slices.Equal(gotErrs, tt.wantErrors) {
				t.Errorf("errors = %v, want %v", gotErrs, tt.wantErrors)
			}
			if tt.wantType == "" {
				if len(out.Instances) != 0 || len(s.Instances()) != before {
					t.Fatalf("launched %+v", out.Instances)
				}
				return
			}
			if len(out.Instances) != 1 || len(out.Instances[0].InstanceIds) != 1 {
				t.Fatalf("instances = %+v", out.Instances)
			}
			fi := out.Instances[0]
			if string(fi.InstanceType) != tt.wantType {
				t.Errorf("launched %s, want %s", fi.InstanceType, tt.wantType)
			}
			if string(fi.Lifecycle) != string(tt.capType) {
				t.Errorf("lifecycle %q", fi.Lifecycle)
			}
			if aws.ToString(fi.LaunchTemplateAndOverrides.LaunchTemplateSpecification.LaunchTemplateId) != ltID {
				t.Errorf("template %+v", fi.LaunchTemplateAndOverrides.LaunchTemplateSpecification)
			}
			in, ok := s.Instance(fi.InstanceIds[0])
			if !ok {
				t.Fatal("instance not in sim")
			}
			if in.State != cloud.StatePending || in.Tags["case"] != tt.name || in.Tags["from-template"] != "yes" || in.Tags["aws:ec2:fleet-id"] != aws.ToString(out.FleetId) {
				t.Errorf("instance %+v", in)
			}
			if string(in.CapacityType) != string(tt.capType) {
				t.Errorf("capacity type %s", in.CapacityType)
			}
			if tt.capType == "spot" {
				want := math.Inf(1)
				for _, z := range s.Zones() {
					p, _ := s.SpotPrice("m5.large", z)
					want = math.Min(want, p)
				}
				if got, _ := s.SpotPrice("m5.large", in.Zone); got != want {
					t.Errorf("spot launched in %s at %v, cheapest is %v", in.Zone, got, want)
				}
			}
		})
	}

	t.Run("describe and lifecycle", func(t *testing.T) {
		out := launch(t, c, s, 1, "spot", "m5.large")
		id := out.Instances[0].InstanceIds[0]
		get := func() ec2types.Instance {
			d, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			return d.Reservations[0].Instances[0]
		}
		in := get()
		if in.State.Name != "pending" || in.InstanceLifecycle != "spot" || aws.ToString(in.SpotInstanceRequestId) == "" {
			t.Errorf("state %s lifecycle %s", in.State.Name, in.InstanceLifecycle)
		}
		ip := aws.ToString(in.PrivateIpAddress)
		wantDNS := fmt.Sprintf("ip-%s.ec2.internal", replaceDots(ip))
		if aws.ToString(in.PrivateDnsName) != wantDNS || aws.ToString(in.Placement.AvailabilityZone) != s.Zones()[0] {
			t.Errorf("ip %s dns %s zone %s", ip, aws.ToString(in.PrivateDnsName), aws.ToString(in.Placement.AvailabilityZone))
		}
		if aws.ToString(in.ImageId) != ami || len(in.SecurityGroups) != 1 || in.IamInstanceProfile == nil {
			t.Errorf("image %s groups %v profile %v", aws.ToString(in.ImageId), in.SecurityGroups, in.IamInstanceProfile)
		}
		if !in.LaunchTime.Equal(clock.Now()) {
			t.Errorf("launch time %v", in.LaunchTime)
		}
		clock.Advance(2 * time.Second)
		if st := get().State; st.Name != "running" || aws.ToInt32(st.Code) != 16 {
			t.Errorf("after pending: %v", st.Name)
		}
		term, err := c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		if ch := term.TerminatingInstances[0]; ch.PreviousState.Name != "running" || ch.CurrentState.Name != "shutting-down" {
			t.Errorf("terminate %s → %s", ch.PreviousState.Name, ch.CurrentState.Name)
		}
		clock.Advance(3 * time.Second)
		in = get()
		if in.State.Name != "terminated" || in.PrivateIpAddress != nil || aws.ToString(in.PrivateDnsName) != "" {
			t.Errorf("terminated instance: %s ip %v dns %q", in.State.Name, in.PrivateIpAddress, aws.ToString(in.PrivateDnsName))
		}
		// Terminating again is fine and reports terminated.
		term, err = c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		if err != nil || term.TerminatingInstances[0].CurrentState.Name != "terminated" {
			t.Errorf("second terminate: %v %+v", err, term)
		}
		clock.Advance(time.Hour)
		if _, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{id}}); apiCode(err) != "InvalidInstanceID.NotFound" {
			t.Errorf("an hour after termination: %v", err)
		}
	})

	t.Run("filters", func(t *testing.T) {
		tests := []struct {
			filters []ec2types.Filter
			want    int
		}{
			{[]ec2types.Filter{{Name: aws.String("tag:case"), Values: []string{"cheapest override wins"}}}, 1},
			{[]ec2types.Filter{{Name: aws.String("tag:case"), Values: []string{"*exhausted*"}}}, 1},
			{[]ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/demo"}}}, 5},
			{[]ec2types.Filter{{Name: aws.String("instance-state-name"), Values: []string{"running"}}}, 5},
			{[]ec2types.Filter{{Name: aws.String("instance-type"), Values: []string{"m5.large"}}, {Name: aws.String("instance-lifecycle"), Values: []string{"spot"}}}, 1},
			{[]ec2types.Filter{{Name: aws.String("tag:nope"), Values: []string{"*"}}}, 0},
		}
		for _, tt := range tests {
			out, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{Filters: tt.filters})
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range out.Reservations {
				n += len(r.Instances)
			}
			if n != tt.want {
				t.Errorf("%s=%v: %d instances, want %d", aws.ToString(tt.filters[0].Name), tt.filters[0].Values, n, tt.want)
			}
		}
	})
}

func replaceDots(ip string) string {
	b := []byte(ip)
	for i := range b {
		if b[i] == '.' {
			b[i] = '-'
		}
	}
	return string(b)
}

func TestCreateFleetIdempotent(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	mustCreateLT(t, c, "nodes", s.ClusterSecurityGroupID(), amiFor(t, s, "x86_64"))
	in := func(typ string) *ec2.CreateFleetInput {
		return &ec2.CreateFleetInput{
			Type:        ec2types.FleetTypeInstant,
			ClientToken: aws.String("claim-1"),
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("nodes"), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(s.Subnets()[1].ID)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)},
		}
	}
	first, err := c.CreateFleet(ctx(t), in("m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.CreateFleet(ctx(t), in("m5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(first.FleetId) != aws.ToString(second.FleetId) || first.Instances[0].InstanceIds[0] != second.Instances[0].InstanceIds[0] {
		t.Errorf("second answer differs: %s/%v vs %s/%v", aws.ToString(first.FleetId), first.Instances[0].InstanceIds, aws.ToString(second.FleetId), second.Instances[0].InstanceIds)
	}
	if n := len(s.Instances()); n != 1 || s.FleetRequests() != 1 || s.Calls("CreateFleet") != 2 {
		t.Errorf("instances %d fleets %d calls %d", n, s.FleetRequests(), s.Calls("CreateFleet"))
	}
	if _, err := c.CreateFleet(ctx(t), in("m5.xlarge")); apiCode(err) != "IdempotentParameterMismatch" {
		t.Errorf("same token, other parameters: %v", err)
	}
}

func TestFaults(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	srvURL := c.Options().BaseEndpoint
	retrying := ec2.NewFromConfig(testConfig(aws.ToString(srvURL), 3))
	tests := []struct {
		name      string
		fault     Fault
		client    *ec2.Client
		wantCode  string
		wantCalls int
	}{
		{"throttled twice then served", Fault{Action: "DescribeSubnets", Code: "RequestLimitExceeded", Times: 2}, retrying, "", 3},
		{"throttled without retries", Fault{Action: "DescribeSubnets", Code: "RequestLimitExceeded", Times: 1}, c, "RequestLimitExceeded", 1},
		{"other action untouched", Fault{Action: "CreateFleet", Code: "InternalError"}, c, "", 1},
		{"latency only", Fault{Action: "DescribeSubnets", Latency: 20 * time.Millisecond, Times: 1}, c, "", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s.ClearFaults()
			s.InjectFault(tt.fault)
			before := s.Calls("DescribeSubnets")
			start := time.Now()
			_, err := tt.client.DescribeSubnets(ctx(t), &ec2.DescribeSubnetsInput{})
			if got := apiCode(err); got != tt.wantCode {
				t.Errorf("error %v, want code %q", err, tt.wantCode)
			}
			if n := s.Calls("DescribeSubnets") - before; n != tt.wantCalls {
				t.Errorf("%d calls, want %d", n, tt.wantCalls)
			}
			if time.Since(start) < tt.fault.Latency {
				t.Error("latency not applied")
			}
		})
	}
}

func TestSSMAndImages(t *testing.T) {
	s, c, sc := newTestSim(t, Options{})
	tests := []struct {
		name     string
		param    string
		wantArch string
		wantCode string
	}{
		{"al2023 amd64", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id", "x86_64", ""},
		{"al2023 arm64", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id", "arm64", ""},
		{"al2023 nvidia", "/aws/service/eks/optimized-ami/1.33/amazon-linux-2023/x86_64/nvidia/recommended/image_id", "x86_64", ""},
		{"future version", "/aws/service/eks/optimized-ami/1.40/amazon-linux-2023/arm64/standard/recommended/image_id", "arm64", ""},
		{"bottlerocket", "/aws/service/bottlerocket/aws-k8s-1.34/arm64/latest/image_id", "arm64", ""},
		{"unknown", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2/recommended/image_id", "", "ParameterNotFound"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := sc.GetParameter(ctx(t), &ssm.GetParameterInput{Name: aws.String(tt.param)})
			if tt.wantCode != "" {
				if apiCode(err) != tt.wantCode {
					t.Fatalf("error %v, want %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			id := aws.ToString(out.Parameter.Value)
			again, _ := s.SSMParameter(tt.param)
			if again != id || !imageIDRe.MatchString(id) {
				t.Errorf("parameter %q, then %q", id, again)
			}
			img, err := c.DescribeImages(ctx(t), &ec2.DescribeImagesInput{ImageIds: []string{id}})
			if err != nil {
				t.Fatal(err)
			}
			if got := string(img.Images[0].Architecture); got != tt.wantArch {
				t.Errorf("architecture %s, want %s", got, tt.wantArch)
			}
		})
	}
	if n := s.Calls("GetParameter"); n != len(tests) {
		t.Errorf("GetParameter calls %d", n)
	}
	s.InjectFault(Fault{Action: "GetParameter", Code: "ThrottlingException", Times: 1})
	if _, err := sc.GetParameter(ctx(t), &ssm.GetParameterInput{Name: aws.String(tests[0].param)}); apiCode(err) != "ThrottlingException" {
		t.Errorf("injected SSM fault: %v", err)
	}
}

func TestNetworkSelection(t *testing.T) {
	s, c, _ := newTestSim(t, Options{ClusterName: "blue", Zones: []string{"us-east-1a", "us-east-1d"}, SubnetsPerZone: 3})
	tests := []struct {
		name        string
		filters     []ec2types.Filter
		wantSubnets int
		wantGroups  int
	}{
		{"discovery tag", []ec2types.Filter{{Name: aws.String("tag:" + DiscoveryTagKey), Values: []string{"blue"}}}, 6, 1},
		{"cluster tag key", []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/blue"}}}, 6, 1},
		{"other cluster", []ec2types.Filter{{Name: aws.String("tag:" + DiscoveryTagKey), Values: []string{"green"}}}, 0, 0},
		{"everything", nil, 6, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sn, err := c.DescribeSubnets(ctx(t), &ec2.DescribeSubnetsInput{Filters: tt.filters})
			if err != nil {
				t.Fatal(err)
			}
			sg, err := c.DescribeSecurityGroups(ctx(t), &ec2.DescribeSecurityGroupsInput{Filters: tt.filters})
			if err != nil {
				t.Fatal(err)
			}
			if len(sn.Subnets) != tt.wantSubnets || len(sg.SecurityGroups) != tt.wantGroups {
				t.Errorf("%d subnets, %d groups", len(sn.Subnets), len(sg.SecurityGroups))
			}
		})
	}
	subs := s.Subnets()
	out, err := c.DescribeSubnets(ctx(t), &ec2.DescribeSubnetsInput{SubnetIds: []string{subs[4].ID}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.Subnets[0]
	if aws.ToString(got.AvailabilityZone) != "us-east-1d" || aws.ToString(got.CidrBlock) != "10.0.64.0/20" || aws.ToInt32(got.AvailableIpAddressCount) != 4091 {
		t.Errorf("subnet %s %s %d", aws.ToString(got.AvailabilityZone), aws.ToString(got.CidrBlock), aws.ToInt32(got.AvailableIpAddressCount))
	}
}

func TestCatalogRules(t *testing.T) {
	s := New(Options{})
	missing := 0
	for _, typ := range s.typeNames {
		n := len(s.zonesOffering(typ))
		if n < 2 {
			t.Fatalf("%s offered in %d zones", typ, n)
		}
		if n == 2 {
			missing++
		}
		for _, z := range s.Zones() {
			p, ok := s.SpotPrice(typ, z)
			if !ok {
				continue
			}
			od := s.prices[typ]
			if f := p / od; f < 0.2499 || f > 0.6501 {
				t.Errorf("%s in %s: spot %v is %v of on-demand %v", typ, z, p, f, od)
			}
		}
	}
	if missing < 60 || missing > 180 {
		t.Errorf("%d types miss a zone, want about a tenth of 1166", missing)
	}
	one := New(Options{Zones: []string{"us-east-1a"}})
	for _, typ := range one.typeNames {
		if !one.Offered(typ, "us-east-1a") {
			t.Fatalf("%s not offered in the only zone", typ)
		}
	}
	if a, b := New(Options{}), New(Options{}); a.Subnets()[0].ID != b.Subnets()[0].ID {
		t.Error("subnet IDs are not deterministic")
	}
}

func TestWildcard(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"abc", "abc", true},
		{"abc", "abcd", false},
		{"a*", "abcd", true},
		{"*d", "abcd", true},
		{"a?c", "abc", true},
		{"a?c", "ac", false},
		{`a\*`, "a*", true},
		{`a\*`, "ab", false},
		{"a.c", "abc", false},
	}
	for _, tt := range tests {
		if got := wildcard(tt.pattern, tt.s); got != tt.want {
			t.Errorf("wildcard(%q, %q) = %v", tt.pattern, tt.s, got)
		}
	}
}

func TestConcurrentLaunches(t *testing.T) {
	s, c, _ := newTestSim(t, Options{SubnetsPerZone: 1})
	mustCreateLT(t, c, "nodes", s.ClusterSecurityGroupID(), amiFor(t, s, "x86_64"))
	sub := s.Subnets()[0].ID
	const n = 12
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
				Type:        ec2types.FleetTypeInstant,
				ClientToken: aws.String(fmt.Sprintf("tok-%d", i%6)), // pairs share a token
				LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
					LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("nodes"), Version: aws.String("$Latest")},
					Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: "m5.large", SubnetId: aws.String(sub)}},
				}},
				TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)},
			})
			if err == nil {
				_, err = c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{})
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	ins := s.Instances()
	ids, ips := map[string]bool{}, map[string]bool{}
	for _, in := range ins {
		ids[in.ID], ips[in.PrivateIP] = true, true
	}
	if len(ins) != 6 || len(ids) != 6 || len(ips) != 6 || s.FleetRequests() != 6 {
		t.Errorf("%d instances, %d IDs, %d IPs, %d fleets", len(ins), len(ids), len(ips), s.FleetRequests())
	}
	if got := s.Subnets()[0].AvailableIPs; got != 4091-6 {
		t.Errorf("available IPs %d", got)
	}
}

// An AfterEffect fault answers with an error although the call took effect: the client cannot
// tell whether it happened, as when a real request times out after EC2 acted.
func TestAfterEffectFault(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	s.InjectFault(Fault{Action: "CreateLaunchTemplate", Code: "InternalError", AfterEffect: true, Times: 1})
	_, err := c.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String("lt-after-effect"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String("ami-0123456789abcdef0")},
	})
	if apiCode(err) != "InternalError" {
		t.Fatalf("error %v, want InternalError", err)
	}
	out, err := c.DescribeLaunchTemplates(ctx(t), &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"lt-after-effect"}})
	if err != nil || len(out.LaunchTemplates) != 1 {
		t.Fatalf("the failed call did not take effect: %v, %+v", err, out)
	}
}
