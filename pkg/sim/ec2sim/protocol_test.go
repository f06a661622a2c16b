package ec2sim

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"
)

// TestSDKRequestParams records what the real SDK sends for the calls Tailor makes, so the
// simulator's parameter names are checked against the SDK rather than assumed.
func TestSDKRequestParams(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	sub := s.Subnets()
	mustCreateLT(t, c, "params", s.ClusterSecurityGroupID(), amiFor(t, s, "x86_64"))
	_, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
		Type:        ec2types.FleetTypeInstant,
		ClientToken: aws.String("tok-params"),
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("params"), Version: aws.String("$Latest")},
			Overrides: []ec2types.FleetLaunchTemplateOverridesRequest{
				{InstanceType: "m5.large", SubnetId: aws.String(sub[0].ID), AvailabilityZone: aws.String(sub[0].Zone)},
				{InstanceType: "m5.xlarge", SubnetId: aws.String(sub[2].ID), Priority: aws.Float64(2)},
			},
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeOnDemand},
		OnDemandOptions:             &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{{Key: aws.String("a"), Value: aws.String("1")}}},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: []ec2types.Tag{{Key: aws.String("b"), Value: aws.String("2")}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{
		Filters:    []ec2types.Filter{{Name: aws.String("tag:a"), Values: []string{"1"}}, {Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}}},
		MaxResults: aws.Int32(5),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{s.Instances()[0].ID}})
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		action string
		index  int
		want   []string
	}{
		{"CreateFleet", 0, []string{
			"Version=2016-11-15", "Type=instant", "ClientToken=tok-params",
			"LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=params",
			"LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version=$Latest",
			"LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large",
			"LaunchTemplateConfigs.1.Overrides.1.SubnetId=" + sub[0].ID,
			"LaunchTemplateConfigs.1.Overrides.1.AvailabilityZone=" + sub[0].Zone,
			"LaunchTemplateConfigs.1.Overrides.2.InstanceType=m5.xlarge",
			"LaunchTemplateConfigs.1.Overrides.2.Priority=2",
			"TargetCapacitySpecification.TotalTargetCapacity=1",
			"TargetCapacitySpecification.DefaultTargetCapacityType=on-demand",
			"OnDemandOptions.AllocationStrategy=lowest-price",
			"SpotOptions.AllocationStrategy=price-capacity-optimized",
			"TagSpecification.1.ResourceType=instance", "TagSpecification.1.Tag.1.Key=a", "TagSpecification.1.Tag.1.Value=1",
			"TagSpecification.2.ResourceType=fleet",
		}},
		{"DescribeInstances", 0, []string{
			"Filter.1.Name=tag:a", "Filter.1.Value.1=1", "Filter.2.Name=instance-state-name",
			"Filter.2.Value.1=pending", "Filter.2.Value.2=running", "MaxResults=5",
		}},
		{"DescribeInstances", 1, []string{"InstanceId.1=" + s.Instances()[0].ID}},
		{"CreateLaunchTemplate", 0, []string{
			"LaunchTemplateName=params", "LaunchTemplateData.ImageId=" + amiFor(t, s, "x86_64"),
			"LaunchTemplateData.SecurityGroupId.1=" + s.ClusterSecurityGroupID(),
			"LaunchTemplateData.IamInstanceProfile.Name=node-profile",
			"LaunchTemplateData.TagSpecification.1.ResourceType=instance",
			"TagSpecification.1.ResourceType=launch-template",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.action, func(t *testing.T) {
			reqs := s.Requests(tt.action)
			if len(reqs) <= tt.index {
				t.Fatalf("%d requests recorded", len(reqs))
			}
			got := reqs[tt.index]
			t.Logf("%s sent: %s", tt.action, formatParams(got))
			for _, kv := range tt.want {
				k, v, _ := strings.Cut(kv, "=")
				if got.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, got.Get(k), v)
				}
			}
		})
	}
}

func formatParams(v url.Values) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("\n  " + k + "=" + v.Get(k))
	}
	return b.String()
}

func TestRawProtocol(t *testing.T) {
	s := New(Options{PendingFor: Immediately})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	tests := []struct {
		name       string
		form       string
		status     int
		contains   []string
		contentTyp string
	}{
		{"unknown action", "Action=RunFoo&Version=2016-11-15", 400,
			[]string{"<Response><Errors><Error><Code>InvalidAction</Code><Message>The action RunFoo is not valid for this web service.</Message></Error></Errors><RequestID>"}, "text/xml"},
		{"no action", "Version=2016-11-15", 400, []string{"<Code>MissingParameter</Code>"}, "text/xml"},
		{"describe subnets", "Action=DescribeSubnets&Version=2016-11-15", 200,
			[]string{`<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>`, "<subnetSet><item>", "<tagSet><item><key>"}, "text/xml"},
		{"instance types by name", "Action=DescribeInstanceTypes&Version=2016-11-15&InstanceType.1=m5.large", 200,
			[]string{"<instanceTypeSet><item>", "<instanceType>m5.large</instanceType>", "<vCpuInfo><defaultCores>1</defaultCores><defaultThreadsPerCore>2</defaultThreadsPerCore><defaultVCpus>2</defaultVCpus>"}, "text/xml"},
		{"bad max results", "Action=DescribeInstanceTypes&Version=2016-11-15&MaxResults=1000", 400,
			[]string{"<Code>InvalidParameterValue</Code>"}, "text/xml"},
		{"bad next token", "Action=DescribeInstanceTypes&Version=2016-11-15&NextToken=zzz", 400,
			[]string{"<Code>InvalidParameterValue</Code>"}, "text/xml"},
		{"bad filter", "Action=DescribeInstances&Version=2016-11-15&Filter.1.Name=colour&Filter.1.Value.1=red", 400,
			[]string{"<Message>The filter &#39;colour&#39; is invalid</Message>"}, "text/xml"},
		{"malformed instance id", "Action=TerminateInstances&Version=2016-11-15&InstanceId.1=foo", 400,
			[]string{"<Code>InvalidInstanceID.Malformed</Code>"}, "text/xml"},
		{"dry run", "Action=TerminateInstances&Version=2016-11-15&InstanceId.1=i-0123456789abcdef0&DryRun=true", 412,
			[]string{"<Code>DryRunOperation</Code>"}, "text/xml"},
		{"missing instance id", "Action=TerminateInstances&Version=2016-11-15", 400,
			[]string{"<Code>MissingParameter</Code>"}, "text/xml"},
		{"fleet without capacity", "Action=CreateFleet&Version=2016-11-15&Type=instant&LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateName=x", 400,
			[]string{"<Code>MissingParameter</Code><Message>The request must contain the parameter TargetCapacitySpecification.TotalTargetCapacity</Message>"}, "text/xml"},
		{"template without name", "Action=CreateLaunchTemplate&Version=2016-11-15&LaunchTemplateData.ImageId=ami-0123456789abcdef0", 400,
			[]string{"<Code>MissingParameter</Code>"}, "text/xml"},
		{"create tags", "Action=CreateTags&Version=2016-11-15&ResourceId.1=" + s.ClusterSecurityGroupID() + "&Tag.1.Key=k&Tag.1.Value=v", 200,
			[]string{"<return>true</return>"}, "text/xml"},
		{"reserved tag", "Action=CreateTags&Version=2016-11-15&ResourceId.1=" + s.ClusterSecurityGroupID() + "&Tag.1.Key=aws:x&Tag.1.Value=v", 400,
			[]string{"<Code>InvalidParameterValue</Code>"}, "text/xml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := http.Post(srv.URL+"/", "application/x-www-form-urlencoded; charset=utf-8", strings.NewReader(tt.form))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Errorf("status = %d, want %d; body %s", resp.StatusCode, tt.status, body)
			}
			if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, tt.contentTyp) {
				t.Errorf("content type = %q", ct)
			}
			for _, c := range tt.contains {
				if !strings.Contains(string(body), c) {
					t.Errorf("body lacks %q:\n%.2000s", c, body)
				}
			}
		})
	}
}

// apiCode returns the EC2 error code of an SDK error.
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func TestSDKErrors(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	sub := s.Subnets()
	ami := amiFor(t, s, "x86_64")
	mustCreateLT(t, c, "exists", s.ClusterSecurityGroupID(), ami)
	fleet := func(lt *ec2types.FleetLaunchTemplateSpecificationRequest, typ, subnet string) error {
		_, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: lt,
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(subnet)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)},
		})
		return err
	}
	byName := func(n string) *ec2types.FleetLaunchTemplateSpecificationRequest {
		return &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(n), Version: aws.String("$Latest")}
	}
	tests := []struct {
		name string
		call func() error
		code string
	}{
		{"fleet unknown template name", func() error { return fleet(byName("nope"), "m5.large", sub[0].ID) }, "InvalidLaunchTemplateName.NotFoundException"},
		{"fleet unknown template id", func() error {
			return fleet(&ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String("lt-0123456789abcdef0"), Version: aws.String("1")}, "m5.large", sub[0].ID)
		}, "InvalidLaunchTemplateId.NotFound"},
		{"fleet unknown instance type", func() error { return fleet(byName("exists"), "m5.huge", sub[0].ID) }, "InvalidParameterValue"},
		{"fleet unknown subnet", func() error { return fleet(byName("exists"), "m5.large", "subnet-0123456789abcdef0") }, "InvalidSubnetID.NotFound"},
		{"fleet maintain", func() error {
			_, err := c.CreateFleet(ctx(t), &ec2.CreateFleetInput{Type: ec2types.FleetTypeMaintain, LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{LaunchTemplateSpecification: byName("exists")}}, TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1)}})
			return err
		}, "InvalidParameterValue"},
		{"describe unknown template", func() error {
			_, err := c.DescribeLaunchTemplates(ctx(t), &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{"nope"}})
			return err
		}, "InvalidLaunchTemplateName.NotFoundException"},
		{"delete unknown template id", func() error {
			_, err := c.DeleteLaunchTemplate(ctx(t), &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String("lt-0123456789abcdef0")})
			return err
		}, "InvalidLaunchTemplateId.NotFound"},
		{"duplicate template", func() error {
			_, err := c.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("exists"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(ami)}})
			return err
		}, "InvalidLaunchTemplateName.AlreadyExistsException"},
		{"template bad user data", func() error {
			_, err := c.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("bad-ud"), LaunchTemplateData: &ec2types.RequestLaunchTemplateData{UserData: aws.String("not base64!")}})
			return err
		}, "InvalidUserData.Malformed"},
		{"unknown subnet", func() error {
			_, err := c.DescribeSubnets(ctx(t), &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
			return err
		}, "InvalidSubnetID.NotFound"},
		{"unknown group", func() error {
			_, err := c.DescribeSecurityGroups(ctx(t), &ec2.DescribeSecurityGroupsInput{GroupIds: []string{"sg-0123456789abcdef0"}})
			return err
		}, "InvalidGroup.NotFound"},
		{"unknown image", func() error {
			_, err := c.DescribeImages(ctx(t), &ec2.DescribeImagesInput{ImageIds: []string{"ami-0123456789abcdef0"}})
			return err
		}, "InvalidAMIID.NotFound"},
		{"unknown instance", func() error {
			_, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"terminate unknown instance", func() error {
			_, err := c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"ids with max results", func() error {
			_, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}, MaxResults: aws.Int32(5)})
			return err
		}, "InvalidParameterCombination"},
		{"unknown instance type", func() error {
			_, err := c.DescribeInstanceTypes(ctx(t), &ec2.DescribeInstanceTypesInput{InstanceTypes: []ec2types.InstanceType{"m5.huge"}})
			return err
		}, "InvalidInstanceType"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if got := apiCode(err); got != tt.code {
				t.Errorf("error = %v, want code %s", err, tt.code)
			}
		})
	}
	if n := s.FleetRequests(); n != 0 {
		t.Errorf("invalid CreateFleet requests created %d fleets", n)
	}
}

func TestPagination(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	t.Run("instance types", func(t *testing.T) {
		p := ec2.NewDescribeInstanceTypesPaginator(c, &ec2.DescribeInstanceTypesInput{})
		pages, n := 0, 0
		seen := map[ec2types.InstanceType]bool{}
		for p.HasMorePages() {
			out, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			pages++
			for _, it := range out.InstanceTypes {
				if seen[it.InstanceType] {
					t.Errorf("%s twice", it.InstanceType)
				}
				seen[it.InstanceType] = true
				n++
			}
		}
		if n != 1166 || pages != 12 {
			t.Errorf("got %d types in %d pages, want 1166 in 12", n, pages)
		}
	})
	t.Run("offerings", func(t *testing.T) {
		p := ec2.NewDescribeInstanceTypeOfferingsPaginator(c, &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(500)})
		n := 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range out.InstanceTypeOfferings {
				if !s.Offered(string(o.InstanceType), aws.ToString(o.Location)) {
					t.Errorf("offering %s in %s not offered", o.InstanceType, aws.ToString(o.Location))
				}
			}
			n += len(out.InstanceTypeOfferings)
		}
		want := 0
		for _, typ := range s.typeNames {
			want += len(s.zonesOffering(typ))
		}
		if n != want || n >= 3*1166 || n < 3*1166*85/100 {
			t.Errorf("got %d offerings, want %d (some but not many below %d)", n, want, 3*1166)
		}
	})
	t.Run("instances", func(t *testing.T) {
		launch(t, c, s, 7, ec2types.DefaultTargetCapacityTypeOnDemand, "m5.large")
		p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
		var sizes []int
		for p.HasMorePages() {
			out, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for _, r := range out.Reservations {
				k += len(r.Instances)
			}
			sizes = append(sizes, k)
		}
		if !slices.Equal(sizes, []int{5, 2}) {
			t.Errorf("page sizes %v, want [5 2]", sizes)
		}
	})
	t.Run("spot prices", func(t *testing.T) {
		p := ec2.NewDescribeSpotPriceHistoryPaginator(c, &ec2.DescribeSpotPriceHistoryInput{ProductDescriptions: []string{"Linux/UNIX"}})
		n, pages := 0, 0
		for p.HasMorePages() {
			out, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			pages++
			n += len(out.SpotPriceHistory)
		}
		if n < 3000 || pages < 4 {
			t.Errorf("%d spot prices in %d pages", n, pages)
		}
	})
}
