package iamcheck

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/nodeshape"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// TestReservedLaunchesFitThePolicy: launches into an On-Demand Capacity Reservation and into a
// Capacity Block, made with Tailor's key and the tags Tailor's launches carry, need CreateFleet
// and RunInstances on the reservation besides what any launch needs, and the policy allows all of
// it. The provider does not launch into reservations yet; these are the calls it will make (a
// launch template that targets the reservation, with market type capacity-block for a block, and
// an instant fleet of capacity type on-demand or capacity-block), made here through the SDK.
func TestReservedLaunchesFitThePolicy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster, Clock: ec2sim.NewFakeClock(now), PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	sim.SetInstanceProfileRole("tailor-node", "TailorNodeRole")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	c := ec2.NewFromConfig(aws.Config{Region: TestRegion, Credentials: credentials.NewStaticCredentialsProvider(tailorKey, "secret", ""), BaseEndpoint: aws.String(srv.URL)})

	zone := sim.Zones()[0]
	var subnet string
	for _, sn := range sim.Subnets() {
		if sn.Zone == zone {
			subnet = sn.ID
			break
		}
	}
	image, _ := sim.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/nvidia/recommended/image_id")
	odcr, err := sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "m5.large", AvailabilityZone: zone, TotalInstanceCount: 1,
		InstanceMatchCriteria: "targeted", Tags: map[string]string{"team": "ml"}})
	if err != nil {
		t.Fatal(err)
	}
	block, err := sim.AddCapacityReservation(ec2sim.CapacityReservation{InstanceType: "p5.48xlarge", AvailabilityZone: zone, TotalInstanceCount: 1,
		Type: ec2sim.ReservationTypeCapacityBlock, StartDate: now.Add(-time.Hour), EndDate: now.Add(23 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}

	tagList := func(m map[string]string) []ec2types.Tag {
		var out []ec2types.Tag
		for k, v := range m {
			out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		return out
	}
	for _, tc := range []struct {
		claim, reservation, typ string
		capacityType            ec2types.DefaultTargetCapacityType
		market                  ec2types.MarketType
	}{
		{"gpu-reserved", odcr, "m5.large", ec2types.DefaultTargetCapacityTypeOnDemand, ""},
		{"gpu-block", block, "p5.48xlarge", ec2types.DefaultTargetCapacityTypeCapacityBlock, ec2types.MarketTypeCapacityBlock},
	} {
		tags := nodeshape.Tags(cluster, "gpu", tc.claim)
		data := &ec2types.RequestLaunchTemplateData{
			ImageId:            aws.String(image),
			SecurityGroupIds:   []string{sim.ClusterSecurityGroupID()},
			IamInstanceProfile: &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String("tailor-node")},
			CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
				CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
				CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(tc.reservation)},
			},
		}
		if tc.market != "" {
			data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: tc.market}
		}
		for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeNetworkInterface} {
			data.TagSpecifications = append(data.TagSpecifications, ec2types.LaunchTemplateTagSpecificationRequest{ResourceType: rt, Tags: tagList(tags)})
		}
		if _, err := c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String("tailor-" + tc.claim), LaunchTemplateData: data,
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tagList(tags)}},
		}); err != nil {
			t.Fatal(err)
		}
		var fleetTags []ec2types.TagSpecification
		for _, rt := range []ec2types.ResourceType{ec2types.ResourceTypeInstance, ec2types.ResourceTypeVolume, ec2types.ResourceTypeFleet} {
			fleetTags = append(fleetTags, ec2types.TagSpecification{ResourceType: rt, Tags: tagList(tags)})
		}
		out, err := c.CreateFleet(ctx, &ec2.CreateFleetInput{
			Type: ec2types.FleetTypeInstant,
			LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
				LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("tailor-" + tc.claim), Version: aws.String("$Latest")},
				Overrides:                   []ec2types.FleetLaunchTemplateOverridesRequest{{InstanceType: ec2types.InstanceType(tc.typ), SubnetId: aws.String(subnet)}},
			}},
			TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(1), DefaultTargetCapacityType: tc.capacityType},
			TagSpecifications:           fleetTags,
		})
		if err != nil || len(out.Instances) != 1 {
			t.Fatalf("%s: %v %+v", tc.claim, err, out)
		}
	}

	log := Of(sim.AuthorizationLog(), tailorKey)
	for _, action := range []string{"ec2:CreateFleet", "ec2:RunInstances"} {
		on := map[string]bool{}
		for _, r := range log {
			for _, res := range r.Resources {
				if r.Action == action && res.Type == "capacity-reservation" {
					on[res.ID] = true
				}
			}
		}
		if !on[odcr] || !on[block] {
			t.Errorf("%s was asked on the reservations %v, want %s and %s", action, on, odcr, block)
		}
	}
	if err := testChecker(t).VerifyAllowed(log); err != nil {
		t.Fatal(err)
	}
}
