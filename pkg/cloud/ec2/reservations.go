package ec2

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// reservationPageSize is DescribeCapacityReservations' largest page.
const reservationPageSize = 1000

// CapacityReservations returns the active capacity reservations the selector picks: On-Demand
// Capacity Reservations and Capacity Blocks for ML of this account's Linux instances with the
// default tenancy, which a launch template can target.
func (p *Provider) CapacityReservations(ctx context.Context, sel cloud.Selector) ([]cloud.CapacityReservation, error) {
	ids, filters, err := selectorFilters("capacity reservation", sel)
	if err != nil {
		return nil, err
	}
	filters = append(filters, ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.CapacityReservationStateActive)}})
	var out []cloud.CapacityReservation
	err = eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		in := &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: ids, Filters: filters, NextToken: token}
		if len(ids) == 0 {
			in.MaxResults = aws.Int32(reservationPageSize) // EC2 refuses a page size with IDs
		}
		page, err := p.ec2.DescribeCapacityReservations(ctx, in)
		if err != nil {
			return nil, err
		}
		for _, cr := range page.CapacityReservations {
			if r, ok := toReservation(cr); ok {
				out = append(out, r)
			}
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing capacity reservations: %w", err)
	}
	return out, nil
}

// toReservation converts a reservation Tailor can launch into; false for one it cannot (another
// platform or tenancy, or no longer active).
func toReservation(cr ec2types.CapacityReservation) (cloud.CapacityReservation, bool) {
	if cr.State != ec2types.CapacityReservationStateActive || cr.Tenancy == ec2types.CapacityReservationTenancyDedicated ||
		(cr.InstancePlatform != "" && cr.InstancePlatform != ec2types.CapacityReservationInstancePlatformLinuxUnix) {
		return cloud.CapacityReservation{}, false
	}
	return cloud.CapacityReservation{
		ID: aws.ToString(cr.CapacityReservationId), InstanceType: aws.ToString(cr.InstanceType),
		Zone: aws.ToString(cr.AvailabilityZone), Available: int64(aws.ToInt32(cr.AvailableInstanceCount)),
		CapacityBlock: cr.ReservationType == ec2types.CapacityReservationTypeCapacityBlock,
		EndsAt:        aws.ToTime(cr.EndDate),
	}, true
}

// reservationSpec targets a launch template at the reservation: only its capacity, and for a
// Capacity Block the capacity-block market.
func reservationSpec(data *ec2types.RequestLaunchTemplateData, r *cloud.CapacityReservation) {
	if r == nil {
		return
	}
	data.CapacityReservationSpecification = &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
		CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
		CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String(r.ID)},
	}
	if r.CapacityBlock {
		data.InstanceMarketOptions = &ec2types.LaunchTemplateInstanceMarketOptionsRequest{MarketType: ec2types.MarketTypeCapacityBlock}
	}
}

// fleetCapacityType is the fleet's default target capacity type for a launch.
func fleetCapacityType(req cloud.LaunchRequest) ec2types.DefaultTargetCapacityType {
	switch {
	case req.CapacityType != cloud.Reserved:
		return ec2types.DefaultTargetCapacityType(req.CapacityType)
	case req.Reservation != nil && req.Reservation.CapacityBlock:
		return ec2types.DefaultTargetCapacityTypeCapacityBlock
	}
	return ec2types.DefaultTargetCapacityTypeOnDemand
}

// instanceCapacityType is how an instance was bought: in a reservation its launch targeted (a
// Capacity Block, or a target, which EC2 reports instead of a preference), as spot, or on demand
// (which an open reservation may have absorbed without being asked).
func instanceCapacityType(in ec2types.Instance) cloud.CapacityType {
	spec := in.CapacityReservationSpecification
	switch {
	case in.InstanceLifecycle == ec2types.InstanceLifecycleTypeSpot:
		return cloud.Spot
	case in.InstanceLifecycle == ec2types.InstanceLifecycleTypeCapacityBlock:
		return cloud.Reserved
	case in.CapacityReservationId != nil && spec != nil && (spec.CapacityReservationTarget != nil ||
		spec.CapacityReservationPreference == ec2types.CapacityReservationPreferenceCapacityReservationsOnly):
		return cloud.Reserved
	}
	return cloud.OnDemand
}
