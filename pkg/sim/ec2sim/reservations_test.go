package ec2sim

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

var reservationsT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func mustAddReservation(t *testing.T, s *Sim, r CapacityReservation) string {
	t.Helper()
	id, err := s.AddCapacityReservation(r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// crTemplate creates a launch template like mustCreateLT's with a
// CapacityReservationSpecification (a target and a preference, each optional) and an
// InstanceMarketOptions.MarketType (optional), as the SDK sends them.
func crTemplate(t *testing.T, c *ec2.Client, s *Sim, name, target, pref, market string) error {
	t.Helper()
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:            aws.String(amiFor(t, s, "x86_64")),
		SecurityGroupIds:   []string{s.ClusterSecurityGroupID()},
		IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("node-profile")},
	}
	if target != "" || pref != "" {
		spec := &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{CapacityReservationPreference: ec2types.CapacityReservationPreference(pref)}
		if target != "" {
			spec.CapacityReservationTarget = &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(target)}
		}
		data.CapacityReservationSpecification = spec
	}
	if market != "" {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketType(market)}
	}
	_, err := c.CreateLaunchTemplate(ctx(t), &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name), LaunchTemplateData: data})
	return err
}

func mustCRTemplate(t *testing.T, c *ec2.Client, s *Sim, name, target, pref, market string) {
	t.Helper()
	if err := crTemplate(t, c, s, name, target, pref, market); err != nil {
		t.Fatal(err)
	}
}

// offering is one override of a fleet: an instance type in a zone.
type offering struct{ typ, zone string }

// fleetFrom asks for total instances from the named template, one override per offering.
func fleetFrom(t *testing.T, c *ec2.Client, s *Sim, template string, ct ec2types.DefaultTargetCapacityType, total int32, ofs ...offering) (*ec2.CreateFleetOutput, error) {
	t.Helper()
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, o := range ofs {
		ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(o.typ), SubnetId: aws.String(subnetIn(s, o.zone))})
	}
	return c.CreateFleet(ctx(t), &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(template), Version: aws.String("$Latest")},
			Overrides:                   ovs,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(total), DefaultTargetCapacityType: ct},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags(
			"kubernetes.io/cluster/tailor", "owned", "tailor.dev/pool", "gpu")}},
	})
}

// launchedIDs and fleetErrors summarize a fleet's answer.
func launchedIDs(out *ec2.CreateFleetOutput) []string {
	var ids []string
	for _, fi := range out.Instances {
		ids = append(ids, fi.InstanceIds...)
	}
	return ids
}

func fleetErrors(out *ec2.CreateFleetOutput) []string {
	var errs []string
	for _, e := range out.Errors {
		errs = append(errs, aws.ToString(e.ErrorCode)+"/"+string(e.LaunchTemplateAndOverrides.Overrides.InstanceType))
	}
	return errs
}

func describeOne(t *testing.T, c *ec2.Client, id string) ec2types.Instance {
	t.Helper()
	out, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Reservations[0].Instances[0]
}

func availableIn(t *testing.T, s *Sim, id string) int {
	t.Helper()
	r, ok := s.CapacityReservation(id)
	if !ok {
		t.Fatalf("no reservation %s", id)
	}
	return r.AvailableInstanceCount
}

// The wire shapes the provider sends for reserved capacity, recorded from the real SDK.
func TestReservationRequestParams(t *testing.T) {
	clock := NewFakeClock(reservationsT0)
	s, c, _ := newTestSim(t, Options{Clock: clock})
	zone := s.Zones()[0]
	blk := mustAddReservation(t, s, CapacityReservation{InstanceType: "p5.48xlarge", AvailabilityZone: zone, TotalInstanceCount: 1,
		Type: ReservationTypeCapacityBlock, StartDate: reservationsT0.Add(-time.Hour), EndDate: reservationsT0.Add(23 * time.Hour)})
	mustCRTemplate(t, c, s, "block", blk, "capacity-reservations-only", "capacity-block")
	if _, err := fleetFrom(t, c, s, "block", ec2types.DefaultTargetCapacityTypeCapacityBlock, 1, offering{"p5.48xlarge", zone}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeCapacityReservations(ctx(t), &ec2.DescribeCapacityReservationsInput{
		Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{"active"}}, {Name: aws.String("tag:team"), Values: []string{"ml"}}}, MaxResults: aws.Int32(1000),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DescribeCapacityReservations(ctx(t), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{blk}}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		action string
		index  int
		want   []string
	}{
		{"CreateLaunchTemplate", 0, []string{
			"LaunchTemplateData.CapacityReservationSpecification.CapacityReservationPreference=capacity-reservations-only",
			"LaunchTemplateData.CapacityReservationSpecification.CapacityReservationTarget.CapacityReservationId=" + blk,
			"LaunchTemplateData.InstanceMarketOptions.MarketType=capacity-block",
		}},
		{"CreateFleet", 0, []string{"TargetCapacitySpecification.DefaultTargetCapacityType=capacity-block"}},
		{"DescribeCapacityReservations", 0, []string{"Filter.1.Name=state", "Filter.1.Value.1=active", "Filter.2.Name=tag:team", "MaxResults=1000"}},
		{"DescribeCapacityReservations", 1, []string{"CapacityReservationId.1=" + blk}},
	} {
		reqs := s.Requests(tt.action)
		if len(reqs) <= tt.index {
			t.Fatalf("%s: %d requests recorded", tt.action, len(reqs))
		}
		for _, kv := range tt.want {
			k, v, _ := strings.Cut(kv, "=")
			if got := reqs[tt.index].Get(k); got != v {
				t.Errorf("%s: %s = %q, want %q (sent: %s)", tt.action, k, got, v, formatParams(reqs[tt.index]))
			}
		}
	}
}

func TestDescribeCapacityReservations(t *testing.T) {
	clock := NewFakeClock(reservationsT0)
	s, c, _ := newTestSim(t, Options{Clock: clock})
	z := s.Zones()
	odcr := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.large", AvailabilityZone: z[0], TotalInstanceCount: 3,
		Tags: map[string]string{"team": "ml", "tailor.dev/pool": "general"}})
	targeted := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.xlarge", AvailabilityZone: z[1], TotalInstanceCount: 2,
		InstanceMatchCriteria: "targeted", EndDate: reservationsT0.Add(48 * time.Hour), Tags: map[string]string{"team": "web"}})
	cancelled := mustAddReservation(t, s, CapacityReservation{InstanceType: "c5.large", AvailabilityZone: z[0], TotalInstanceCount: 1, State: "cancelled"})
	scheduled := mustAddReservation(t, s, CapacityReservation{InstanceType: "p5.48xlarge", AvailabilityZone: z[0], TotalInstanceCount: 4,
		Type: ReservationTypeCapacityBlock, StartDate: reservationsT0.Add(2 * time.Hour), EndDate: reservationsT0.Add(26 * time.Hour), Tags: map[string]string{"team": "ml"}})
	active := mustAddReservation(t, s, CapacityReservation{InstanceType: "p5.48xlarge", AvailabilityZone: z[0], TotalInstanceCount: 2,
		Type: ReservationTypeCapacityBlock, StartDate: reservationsT0.Add(-time.Hour), EndDate: reservationsT0.Add(23 * time.Hour)})
	shared := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.large", AvailabilityZone: z[2], TotalInstanceCount: 1, OwnerID: "210987654321"})
	all := []string{odcr, targeted, cancelled, scheduled, active, shared}
	for _, id := range all {
		if !regexp.MustCompile(`^cr-[0-9a-f]{17}$`).MatchString(id) {
			t.Errorf("reservation ID %q is not shaped like EC2's", id)
		}
	}
	filter := func(kv ...string) []ec2types.Filter {
		var out []ec2types.Filter
		for i := 0; i < len(kv); i += 2 {
			out = append(out, ec2types.Filter{Name: aws.String(kv[i]), Values: strings.Split(kv[i+1], ",")})
		}
		return out
	}
	tests := []struct {
		name string
		in   ec2.DescribeCapacityReservationsInput
		want []string
		code string
	}{
		{name: "everything", want: all},
		{name: "by id", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{targeted, odcr, targeted}}, want: []string{targeted, odcr}},
		{name: "tag", in: ec2.DescribeCapacityReservationsInput{Filters: filter("tag:team", "ml")}, want: []string{odcr, scheduled}},
		{name: "tag-key", in: ec2.DescribeCapacityReservationsInput{Filters: filter("tag-key", "tailor.dev/pool")}, want: []string{odcr}},
		{name: "active", in: ec2.DescribeCapacityReservationsInput{Filters: filter("state", "active")}, want: []string{odcr, targeted, active, shared}},
		{name: "scheduled or cancelled", in: ec2.DescribeCapacityReservationsInput{Filters: filter("state", "scheduled,cancelled")}, want: []string{cancelled, scheduled}},
		{name: "type and zone", in: ec2.DescribeCapacityReservationsInput{Filters: filter("instance-type", "m5.large", "availability-zone", z[0])}, want: []string{odcr}},
		{name: "wildcard type", in: ec2.DescribeCapacityReservationsInput{Filters: filter("instance-type", "m5.*")}, want: []string{odcr, targeted, shared}},
		{name: "targeted", in: ec2.DescribeCapacityReservationsInput{Filters: filter("instance-match-criteria", "targeted")}, want: []string{targeted, scheduled, active}},
		{name: "limited", in: ec2.DescribeCapacityReservationsInput{Filters: filter("end-date-type", "limited")}, want: []string{targeted, scheduled, active}},
		{name: "owner", in: ec2.DescribeCapacityReservationsInput{Filters: filter("owner-id", "210987654321")}, want: []string{shared}},
		{name: "platform and tenancy", in: ec2.DescribeCapacityReservationsInput{Filters: filter("instance-platform", "Linux/UNIX", "tenancy", "dedicated")}},
		{name: "no such tag", in: ec2.DescribeCapacityReservationsInput{Filters: filter("tag:team", "none")}},
		{name: "undocumented filter", in: ec2.DescribeCapacityReservationsInput{Filters: filter("reservation-type", "capacity-block")}, code: "InvalidParameterValue"},
		{name: "unknown id", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-0123456789abcdef0"}}, code: "InvalidCapacityReservationId.NotFound"},
		{name: "malformed id", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-1"}}, code: "InvalidCapacityReservationId.Malformed"},
		{name: "ids and MaxResults", in: ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{odcr}, MaxResults: aws.Int32(5)}, code: "InvalidParameterCombination"},
		{name: "MaxResults too big", in: ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(1001)}, code: "InvalidParameterValue"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := c.DescribeCapacityReservations(ctx(t), &tt.in)
			if tt.code != "" {
				if got := apiCode(err); got != tt.code {
					t.Fatalf("error %v, want code %s", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range out.CapacityReservations {
				got = append(got, aws.ToString(r.CapacityReservationId))
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("fields", func(t *testing.T) {
		out, err := c.DescribeCapacityReservations(ctx(t), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{targeted, scheduled}})
		if err != nil {
			t.Fatal(err)
		}
		r := out.CapacityReservations[0]
		want := ec2types.CapacityReservation{
			AvailabilityZone: aws.String(z[1]), AvailabilityZoneId: aws.String("use1-az2"), AvailableInstanceCount: aws.Int32(2),
			CapacityReservationArn: aws.String("arn:aws:ec2:us-east-1:123456789012:capacity-reservation/" + targeted),
			CapacityReservationId:  aws.String(targeted), CreateDate: aws.Time(reservationsT0), EbsOptimized: aws.Bool(true),
			EndDate: aws.Time(reservationsT0.Add(48 * time.Hour)), EndDateType: ec2types.EndDateTypeLimited, EphemeralStorage: aws.Bool(false),
			InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted, InstancePlatform: ec2types.CapacityReservationInstancePlatformLinuxUnix,
			InstanceType: aws.String("m5.xlarge"), OwnerId: aws.String("123456789012"), ReservationType: ec2types.CapacityReservationTypeDefault,
			StartDate: aws.Time(reservationsT0), State: ec2types.CapacityReservationStateActive, Tags: tags("team", "web"),
			Tenancy: ec2types.CapacityReservationTenancyDefault, TotalInstanceCount: aws.Int32(2),
		}
		gotJSON, _ := json.Marshal(r)
		wantJSON, _ := json.Marshal(want)
		if string(gotJSON) != string(wantJSON) {
			t.Errorf("reservation\n%s\nwant\n%s", gotJSON, wantJSON)
		}
		b := out.CapacityReservations[1]
		if b.ReservationType != ec2types.CapacityReservationTypeCapacityBlock || b.State != ec2types.CapacityReservationStateScheduled ||
			aws.ToInt32(b.AvailableInstanceCount) != 0 || aws.ToInt32(b.TotalInstanceCount) != 4 || !aws.ToTime(b.StartDate).Equal(reservationsT0.Add(2*time.Hour)) {
			t.Errorf("scheduled block: %s %s available %d of %d from %v", b.ReservationType, b.State, aws.ToInt32(b.AvailableInstanceCount), aws.ToInt32(b.TotalInstanceCount), b.StartDate)
		}
		if out, _ := c.DescribeCapacityReservations(ctx(t), &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{odcr}}); out.CapacityReservations[0].EndDate != nil ||
			out.CapacityReservations[0].EndDateType != ec2types.EndDateTypeUnlimited {
			t.Errorf("an ODCR without end: %v %s", out.CapacityReservations[0].EndDate, out.CapacityReservations[0].EndDateType)
		}
	})

	t.Run("pages", func(t *testing.T) {
		p := ec2.NewDescribeCapacityReservationsPaginator(c, &ec2.DescribeCapacityReservationsInput{MaxResults: aws.Int32(4)})
		var sizes []int
		var got []string
		for p.HasMorePages() {
			out, err := p.NextPage(ctx(t))
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(out.CapacityReservations))
			for _, r := range out.CapacityReservations {
				got = append(got, aws.ToString(r.CapacityReservationId))
			}
		}
		if !slices.Equal(sizes, []int{4, 2}) || !slices.Equal(got, all) {
			t.Errorf("pages of %v holding %v, want [4 2] holding %v", sizes, got, all)
		}
	})

	t.Run("the clock moves the states", func(t *testing.T) {
		clock.Set(reservationsT0.Add(2 * time.Hour))
		if r, _ := s.CapacityReservation(scheduled); r.State != "active" || r.AvailableInstanceCount != 4 {
			t.Errorf("block at its start: %s, %d available", r.State, r.AvailableInstanceCount)
		}
		clock.Set(reservationsT0.Add(48 * time.Hour))
		for id, want := range map[string]string{targeted: "expired", scheduled: "expired", active: "expired", odcr: "active", cancelled: "cancelled"} {
			if r, _ := s.CapacityReservation(id); r.State != want {
				t.Errorf("%s: %s, want %s", id, r.State, want)
			}
		}
	})
}

// A launch template that targets an ODCR launches into it, within its type, zone and count.
func TestTargetedReservationLaunch(t *testing.T) {
	clock := NewFakeClock(reservationsT0)
	s, c, _ := newTestSim(t, Options{Clock: clock, ShuttingDownFor: 3 * time.Second})
	zoneA, zoneB := s.Zones()[0], s.Zones()[1]
	cr := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zoneA, TotalInstanceCount: 2,
		InstanceMatchCriteria: "targeted", Tags: map[string]string{"team": "ml"}})
	mustCRTemplate(t, c, s, "reserved", cr, "capacity-reservations-only", "")

	var launched []string
	tests := []struct {
		name          string
		ofs           []offering
		total         int32
		wantLaunched  int
		wantErrors    []string
		wantAvailable int
	}{
		{"a targeted launch uses the reservation", []offering{{"m5.large", zoneA}}, 1, 1, nil, 1},
		{"another type is refused", []offering{{"m5.xlarge", zoneA}}, 1, 0, []string{"InvalidParameterValue/m5.xlarge"}, 1},
		{"another zone is refused", []offering{{"m5.large", zoneB}}, 1, 0, []string{"InvalidParameterValue/m5.large"}, 1},
		{"more than it holds launches what fits", []offering{{"m5.large", zoneA}}, 2, 1, []string{"ReservationCapacityExceeded/m5.large"}, 0},
		{"a full reservation launches nothing", []offering{{"m5.large", zoneA}}, 1, 0, []string{"ReservationCapacityExceeded/m5.large"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(s.Instances())
			out, err := fleetFrom(t, c, s, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, tt.total, tt.ofs...)
			if err != nil {
				t.Fatal(err)
			}
			ids := launchedIDs(out)
			launched = append(launched, ids...)
			if len(ids) != tt.wantLaunched || len(s.Instances())-before != tt.wantLaunched {
				t.Errorf("launched %v, want %d", ids, tt.wantLaunched)
			}
			if got := fleetErrors(out); !slices.Equal(got, tt.wantErrors) {
				t.Errorf("errors %v, want %v", got, tt.wantErrors)
			}
			for _, fi := range out.Instances {
				if fi.Lifecycle != ec2types.InstanceLifecycleOnDemand {
					t.Errorf("lifecycle %q", fi.Lifecycle)
				}
			}
			if got := availableIn(t, s, cr); got != tt.wantAvailable {
				t.Errorf("%d available, want %d", got, tt.wantAvailable)
			}
		})
	}

	t.Run("the instances say where they run", func(t *testing.T) {
		in := describeOne(t, c, launched[0])
		spec := in.CapacityReservationSpecification
		// A targeted instance reports its target, not a preference (EC2's documented answer).
		if aws.ToString(in.CapacityReservationId) != cr || in.InstanceLifecycle != "" || spec == nil ||
			spec.CapacityReservationPreference != "" ||
			spec.CapacityReservationTarget == nil || aws.ToString(spec.CapacityReservationTarget.CapacityReservationId) != cr {
			t.Errorf("instance: reservation %s lifecycle %q spec %+v", aws.ToString(in.CapacityReservationId), in.InstanceLifecycle, spec)
		}
		out, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("capacity-reservation-id"), Values: []string{cr}}}})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(out.Reservations); n != 2 {
			t.Errorf("%d fleets' instances in the reservation, want 2", n)
		}
		if in, _ := s.Instance(launched[0]); in.CapacityType != cloud.OnDemand {
			t.Errorf("capacity type %s", in.CapacityType)
		}
	})

	t.Run("a terminated instance frees its slot", func(t *testing.T) {
		if _, err := c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: launched[:1]}); err != nil {
			t.Fatal(err)
		}
		if got := availableIn(t, s, cr); got != 0 {
			t.Errorf("shutting down: %d available, want 0", got)
		}
		clock.Advance(3 * time.Second)
		if got := availableIn(t, s, cr); got != 1 {
			t.Errorf("terminated: %d available, want 1", got)
		}
	})

	t.Run("offering limits do not apply to reserved capacity", func(t *testing.T) {
		s.SetCapacity("m5.large", zoneA, cloud.OnDemand, 0)
		out, err := fleetFrom(t, c, s, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, offering{"m5.large", zoneA})
		if err != nil || len(launchedIDs(out)) != 1 || len(out.Errors) != 0 {
			t.Fatalf("launch %v: %v %v", err, launchedIDs(out), fleetErrors(out))
		}
		launched = append(launched, launchedIDs(out)...)
	})

	t.Run("a cancelled reservation takes no launch", func(t *testing.T) {
		if err := s.SetCapacityReservationInstanceCount(cr, 5); err != nil {
			t.Fatal(err)
		}
		if err := s.SetCapacityReservationState(cr, "cancelled"); err != nil {
			t.Fatal(err)
		}
		out, err := fleetFrom(t, c, s, "reserved", ec2types.DefaultTargetCapacityTypeOnDemand, 1, offering{"m5.large", zoneA})
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetErrors(out); len(launchedIDs(out)) != 0 || !slices.Equal(got, []string{"ReservationCapacityExceeded/m5.large"}) {
			t.Errorf("launched %v, errors %v", launchedIDs(out), got)
		}
		if in, _ := s.Instance(launched[1]); in.State != cloud.StateRunning {
			t.Errorf("an instance of the cancelled reservation is %s", in.State)
		}
	})

	t.Run("launches into it are authorized on it", func(t *testing.T) {
		for _, action := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
			found := false
			for _, r := range byAction(s.AuthorizationLog(), action) {
				if res, ok := resourceOf(r, "capacity-reservation"); ok {
					found = true
					if res.ID != cr || !maps.Equal(res.Tags, map[string]string{"team": "ml"}) || res.RequestTags != nil {
						t.Errorf("%s on %+v", action, res)
					}
				}
			}
			if !found {
				t.Errorf("%s was not asked on the capacity reservation", action)
			}
		}
	})
}

// An on-demand launch that names no reservation uses an open ODCR of its type and zone, as EC2
// does, unless its template opts out.
func TestOpenReservationLaunch(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	zoneA := s.Zones()[0]
	open := mustAddReservation(t, s, CapacityReservation{InstanceType: "c5.large", AvailabilityZone: zoneA, TotalInstanceCount: 1})
	mustAddReservation(t, s, CapacityReservation{InstanceType: "c5.xlarge", AvailabilityZone: zoneA, TotalInstanceCount: 1, InstanceMatchCriteria: "targeted"})
	mustCreateLT(t, c, "plain", s.ClusterSecurityGroupID(), amiFor(t, s, "x86_64"))
	mustCRTemplate(t, c, s, "opt-out", "", "none", "")
	mustCRTemplate(t, c, s, "only", "", "capacity-reservations-only", "")

	var first string
	steps := []struct {
		name, template   string
		ct               ec2types.DefaultTargetCapacityType
		typ              string
		terminateFirst   bool
		wantReservation  string // "" for an ordinary launch
		wantPref         ec2types.CapacityReservationPreference
		wantError        string
		wantAvailableNow int
	}{
		{name: "an untargeted on-demand launch uses it", template: "plain", ct: "on-demand", typ: "c5.large", wantReservation: open, wantPref: "open"},
		{name: "once full, launches are ordinary", template: "plain", ct: "on-demand", typ: "c5.large", wantPref: "open"},
		{name: "capacity-reservations-only fails without room", template: "only", ct: "on-demand", typ: "c5.large", wantError: "ReservationCapacityExceeded"},
		{name: "opting out launches outside it", template: "opt-out", ct: "on-demand", typ: "c5.large", terminateFirst: true, wantPref: "none", wantAvailableNow: 1},
		{name: "spot does not use it", template: "plain", ct: "spot", typ: "c5.large", wantPref: "open", wantAvailableNow: 1},
		{name: "a targeted reservation is not used unnamed", template: "plain", ct: "on-demand", typ: "c5.xlarge", wantPref: "open", wantAvailableNow: 1},
		{name: "capacity-reservations-only uses an open one", template: "only", ct: "on-demand", typ: "c5.large", wantReservation: open, wantPref: "capacity-reservations-only"},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.terminateFirst {
				if _, err := c.TerminateInstances(ctx(t), &ec2.TerminateInstancesInput{InstanceIds: []string{first}}); err != nil {
					t.Fatal(err)
				}
			}
			out, err := fleetFrom(t, c, s, st.template, st.ct, 1, offering{st.typ, zoneA})
			if err != nil {
				t.Fatal(err)
			}
			if st.wantError != "" {
				if got := fleetErrors(out); len(launchedIDs(out)) != 0 || !slices.Equal(got, []string{st.wantError + "/" + st.typ}) {
					t.Errorf("launched %v, errors %v", launchedIDs(out), got)
				}
				return
			}
			ids := launchedIDs(out)
			if len(ids) != 1 {
				t.Fatalf("launched %v, errors %v", ids, fleetErrors(out))
			}
			if first == "" {
				first = ids[0]
			}
			in := describeOne(t, c, ids[0])
			if got := aws.ToString(in.CapacityReservationId); got != st.wantReservation {
				t.Errorf("in reservation %q, want %q", got, st.wantReservation)
			}
			if spec := in.CapacityReservationSpecification; spec == nil || spec.CapacityReservationPreference != st.wantPref || spec.CapacityReservationTarget != nil {
				t.Errorf("reservation specification %+v, want preference %s and no target", spec, st.wantPref)
			}
			if got := availableIn(t, s, open); got != st.wantAvailableNow {
				t.Errorf("%d available in the open reservation, want %d", got, st.wantAvailableNow)
			}
		})
	}
	for _, r := range s.AuthorizationLog() {
		if _, ok := resourceOf(r, "capacity-reservation"); ok {
			t.Errorf("%s was asked on a reservation EC2 picked on its own", r.Action)
		}
	}
}

// Capacity Blocks: a fleet of capacity type capacity-block whose template has market type
// capacity-block and targets the block launches into it while it is active; EC2 warns 40
// minutes before its end and terminates its instances from 30 minutes before.
func TestCapacityBlock(t *testing.T) {
	clock := NewFakeClock(reservationsT0)
	s, c, _ := newTestSim(t, Options{Clock: clock, ShuttingDownFor: 2 * time.Minute, Queues: []string{"events"}})
	sqsClient := sqs.NewFromConfig(testConfig(aws.ToString(c.Options().BaseEndpoint), 1))
	zone := s.Zones()[0]
	const typ = "p5.48xlarge"
	start, end := reservationsT0.Add(time.Hour), reservationsT0.Add(25*time.Hour)
	blk := mustAddReservation(t, s, CapacityReservation{InstanceType: typ, AvailabilityZone: zone, TotalInstanceCount: 2,
		Type: ReservationTypeCapacityBlock, StartDate: start, EndDate: end})
	odcr := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1})
	if err := s.RouteCapacityBlockEvents("events"); err != nil {
		t.Fatal(err)
	}
	mustCRTemplate(t, c, s, "block", blk, "capacity-reservations-only", "capacity-block")
	mustCRTemplate(t, c, s, "block-no-market", blk, "capacity-reservations-only", "")
	mustCRTemplate(t, c, s, "odcr", odcr, "capacity-reservations-only", "")
	receive := func() []map[string]any {
		t.Helper()
		q, err := sqsClient.GetQueueUrl(ctx(t), &sqs.GetQueueUrlInput{QueueName: aws.String("events")})
		if err != nil {
			t.Fatal(err)
		}
		out, err := sqsClient.ReceiveMessage(ctx(t), &sqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		var events []map[string]any
		for _, m := range out.Messages {
			var e map[string]any
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &e); err != nil {
				t.Fatal(err)
			}
			events = append(events, e)
			if _, err := sqsClient.DeleteMessage(ctx(t), &sqs.DeleteMessageInput{QueueUrl: q.QueueUrl, ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatal(err)
			}
		}
		return events
	}
	checkEvent := func(t *testing.T, e map[string]any, detailType string, at time.Time) {
		t.Helper()
		detail, _ := e["detail"].(map[string]any)
		if e["detail-type"] != detailType || e["source"] != "aws.ec2" || e["time"] != at.Format(time.RFC3339) ||
			detail["capacity-reservation-id"] != blk || detail["end-date"] != end.Format(time.RFC3339) {
			t.Errorf("event %v, want %s at %v", e, detailType, at)
		}
		if res, _ := e["resources"].([]any); len(res) != 1 || res[0] != "arn:aws:ec2:us-east-1:123456789012:capacity-reservation/"+blk {
			t.Errorf("resources %v", e["resources"])
		}
	}

	t.Run("requests EC2 refuses", func(t *testing.T) {
		tests := []struct {
			name, template string
			ct             ec2types.DefaultTargetCapacityType
			typ            string
		}{
			{"block fleet without the market type", "block-no-market", "capacity-block", typ},
			{"block template in an on-demand fleet", "block", "on-demand", typ},
			{"a block targeted without the market type", "block-no-market", "on-demand", typ},
			{"block fleet targeting an ODCR", "odcr", "capacity-block", "m5.large"},
			{"block template in a spot fleet", "block", "spot", typ},
			{"ODCR template in a spot fleet", "odcr", "spot", "m5.large"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				_, err := fleetFrom(t, c, s, tt.template, tt.ct, 1, offering{tt.typ, zone})
				if got := apiCode(err); got != "InvalidParameterCombination" {
					t.Errorf("error %v, want InvalidParameterCombination", err)
				}
			})
		}
		if n := s.FleetRequests(); n != 0 {
			t.Errorf("refused requests created %d fleets", n)
		}
	})

	t.Run("before it starts", func(t *testing.T) {
		out, err := fleetFrom(t, c, s, "block", ec2types.DefaultTargetCapacityTypeCapacityBlock, 1, offering{typ, zone})
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetErrors(out); len(launchedIDs(out)) != 0 || !slices.Equal(got, []string{"InsufficientInstanceCapacity/" + typ}) {
			t.Errorf("launched %v, errors %v", launchedIDs(out), got)
		}
		if e := receive(); len(e) != 0 {
			t.Errorf("events before the start: %v", e)
		}
	})

	var ids []string
	t.Run("while it is active", func(t *testing.T) {
		clock.Set(start)
		out, err := fleetFrom(t, c, s, "block", ec2types.DefaultTargetCapacityTypeCapacityBlock, 3, offering{typ, zone})
		if err != nil {
			t.Fatal(err)
		}
		ids = launchedIDs(out)
		if got := fleetErrors(out); len(ids) != 2 || !slices.Equal(got, []string{"InsufficientInstanceCapacity/" + typ}) {
			t.Errorf("launched %v, errors %v; want 2 and the block full", ids, got)
		}
		if len(out.Instances) != 1 || out.Instances[0].Lifecycle != ec2types.InstanceLifecycleCapacityBlock {
			t.Errorf("fleet instances %+v", out.Instances)
		}
		in := describeOne(t, c, ids[0])
		if aws.ToString(in.CapacityReservationId) != blk || in.InstanceLifecycle != ec2types.InstanceLifecycleTypeCapacityBlock || in.SpotInstanceRequestId != nil {
			t.Errorf("instance: reservation %s lifecycle %q", aws.ToString(in.CapacityReservationId), in.InstanceLifecycle)
		}
		f, err := c.DescribeInstances(ctx(t), &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-lifecycle"), Values: []string{"capacity-block"}}}})
		if err != nil || len(f.Reservations) != 1 || len(f.Reservations[0].Instances) != 2 {
			t.Errorf("instance-lifecycle=capacity-block: %v %+v", err, f)
		}
		if got := availableIn(t, s, blk); got != 0 {
			t.Errorf("%d available, want 0", got)
		}
		if e := receive(); len(e) != 1 {
			t.Errorf("events at the start: %v, want the delivery", e)
		} else {
			checkEvent(t, e[0], "Capacity Block Reservation Delivered", start)
		}
	})

	t.Run("the end", func(t *testing.T) {
		clock.Set(end.Add(-41 * time.Minute))
		if e := receive(); len(e) != 0 {
			t.Errorf("events 41 minutes before the end: %v", e)
		}
		// The queue alone (no EC2 call) sees the warning when it is due.
		clock.Set(end.Add(-35 * time.Minute))
		if e := receive(); len(e) != 1 {
			t.Errorf("events 35 minutes before the end: %v, want the warning", e)
		} else {
			checkEvent(t, e[0], "Capacity Block Reservation Expiration Warning", end.Add(-40*time.Minute))
		}
		if st := describeOne(t, c, ids[0]).State.Name; st != "running" {
			t.Errorf("35 minutes before the end the instance is %s", st)
		}
		clock.Set(end.Add(-30 * time.Minute))
		in := describeOne(t, c, ids[0])
		if in.State.Name != "shutting-down" || aws.ToString(in.StateReason.Code) != "Server.ScheduledStop" || !strings.HasPrefix(aws.ToString(in.StateTransitionReason), "Service initiated") {
			t.Errorf("30 minutes before the end: %s (%s, %s)", in.State.Name, aws.ToString(in.StateReason.Code), aws.ToString(in.StateTransitionReason))
		}
		if _, asked := s.TerminatedAt(ids[0]); asked {
			t.Error("TerminatedAt reports EC2's own termination as TerminateInstances'")
		}
		clock.Advance(2 * time.Minute)
		for _, id := range ids {
			if st := describeOne(t, c, id).State.Name; st != "terminated" {
				t.Errorf("%s is %s after shutting down", id, st)
			}
		}
		if r, _ := s.CapacityReservation(blk); r.State != "active" || r.AvailableInstanceCount != 2 {
			t.Errorf("block before its end: %s, %d available", r.State, r.AvailableInstanceCount)
		}
		clock.Set(end)
		out, err := fleetFrom(t, c, s, "block", ec2types.DefaultTargetCapacityTypeCapacityBlock, 1, offering{typ, zone})
		if err != nil {
			t.Fatal(err)
		}
		if got := fleetErrors(out); len(launchedIDs(out)) != 0 || !slices.Equal(got, []string{"InsufficientInstanceCapacity/" + typ}) {
			t.Errorf("after the end: launched %v, errors %v", launchedIDs(out), got)
		}
		if r, _ := s.CapacityReservation(blk); r.State != "expired" {
			t.Errorf("block at its end: %s", r.State)
		}
	})

	t.Run("an event sent by hand", func(t *testing.T) {
		if _, err := s.SendEvent("events", Event{Kind: CapacityBlockExpirationWarning, CapacityReservationID: blk}); err != nil {
			t.Fatal(err)
		}
		if e := receive(); len(e) != 1 {
			t.Errorf("events %v, want the one sent", e)
		} else {
			checkEvent(t, e[0], "Capacity Block Reservation Expiration Warning", clock.Now())
		}
		if _, err := s.SendEvent("events", Event{Kind: CapacityBlockDelivered, CapacityReservationID: odcr}); err == nil {
			t.Error("a Capacity Block event for an ODCR was sent")
		}
	})
}

func TestReservationTemplateErrors(t *testing.T) {
	s, c, _ := newTestSim(t, Options{})
	zone := s.Zones()[0]
	cr := mustAddReservation(t, s, CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1})
	tests := []struct {
		name, target, pref, market, code string
	}{
		{"malformed target", "cr-nope", "", "", "InvalidCapacityReservationId.Malformed"},
		{"unknown preference", "", "always", "", "InvalidParameterValue"},
		{"target with preference open", cr, "open", "", "InvalidParameterCombination"},
		{"unknown market type", "", "", "reserved", "InvalidParameterValue"},
		{"target alone", cr, "", "", ""},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := crTemplate(t, c, s, "t-"+string(rune('a'+i)), tt.target, tt.pref, tt.market)
			if got := apiCode(err); got != tt.code {
				t.Errorf("error %v, want code %q", err, tt.code)
			}
		})
	}
	t.Run("a target launch resolves", func(t *testing.T) {
		mustCRTemplate(t, c, s, "ghost", "cr-0123456789abcdef0", "capacity-reservations-only", "")
		_, err := fleetFrom(t, c, s, "ghost", "on-demand", 1, offering{"m5.large", zone})
		if got := apiCode(err); got != "InvalidCapacityReservationId.NotFound" {
			t.Errorf("error %v, want InvalidCapacityReservationId.NotFound", err)
		}
	})
	t.Run("a target without preference is reported as given", func(t *testing.T) {
		out, err := fleetFrom(t, c, s, "t-e", "on-demand", 1, offering{"m5.large", zone})
		if err != nil || len(launchedIDs(out)) != 1 {
			t.Fatalf("%v %v", err, fleetErrors(out))
		}
		spec := describeOne(t, c, launchedIDs(out)[0]).CapacityReservationSpecification
		if spec.CapacityReservationPreference != "" || aws.ToString(spec.CapacityReservationTarget.CapacityReservationId) != cr {
			t.Errorf("specification %+v", spec)
		}
	})
}

func TestAddCapacityReservationRefuses(t *testing.T) {
	s := New(Options{Clock: NewFakeClock(reservationsT0)})
	zone := s.Zones()[0]
	ok := CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1}
	with := func(f func(*CapacityReservation)) CapacityReservation {
		r := ok
		f(&r)
		return r
	}
	missing, missingZone := typeMissingFrom(t, s)
	for name, r := range map[string]CapacityReservation{
		"unknown type":                with(func(r *CapacityReservation) { r.InstanceType = "m5.huge" }),
		"zone of another place":       with(func(r *CapacityReservation) { r.AvailabilityZone = "eu-west-1a" }),
		"type not offered":            {InstanceType: missing, AvailabilityZone: missingZone, TotalInstanceCount: 1},
		"negative count":              with(func(r *CapacityReservation) { r.TotalInstanceCount = -1 }),
		"unknown type of reservation": with(func(r *CapacityReservation) { r.Type = "spot-block" }),
		"unknown match criteria":      with(func(r *CapacityReservation) { r.InstanceMatchCriteria = "any" }),
		"unknown state":               with(func(r *CapacityReservation) { r.State = "asleep" }),
		"block without dates":         with(func(r *CapacityReservation) { r.Type = ReservationTypeCapacityBlock }),
		"end before start": with(func(r *CapacityReservation) {
			r.StartDate, r.EndDate = reservationsT0.Add(time.Hour), reservationsT0
		}),
	} {
		if _, err := s.AddCapacityReservation(r); err == nil {
			t.Errorf("%s: added", name)
		}
	}
	if n := len(s.CapacityReservations()); n != 0 {
		t.Errorf("%d reservations added", n)
	}
	if err := s.SetCapacityReservationState("cr-0123456789abcdef0", "cancelled"); err == nil {
		t.Error("state of an unknown reservation set")
	}
	if _, err := s.EventBody(Event{Kind: CapacityBlockExpirationWarning, CapacityReservationID: "cr-0123456789abcdef0"}); err == nil {
		t.Error("event body for an unknown Capacity Block")
	}
}
