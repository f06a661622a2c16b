package ec2

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// classify gives err its cloud.ErrorKind, the one place EC2's error codes are read for it:
// throttling (the SDK's own throttle codes, the ones its retryer backs off on) and 5xx answers
// are transient; account quotas are quota; refusals of the caller's identity are permission;
// requests EC2 rejects as they are, configuration. nil stays nil.
func classify(err error) error {
	if err == nil || cloud.KindOf(err) != cloud.KindOther {
		return err
	}
	var status interface{ HTTPStatusCode() int }
	if errors.As(err, &status) && status.HTTPStatusCode() >= 500 {
		return &cloud.Error{Kind: cloud.KindTransient, Err: err}
	}
	code := apiErrorCode(err)
	if code == spotRoleMissingCode {
		return &cloud.Error{Kind: cloud.KindPermission, Err: fmt.Errorf("%w: %s: %w", cloud.ErrSpotNotEnabled, spotRoleFix, err)}
	}
	if kind := kindOfCode(code); kind != cloud.KindOther {
		return &cloud.Error{Kind: kind, Err: err}
	}
	return err
}

// kindOfCode is what an EC2 error code means for the caller's next step (see classify).
func kindOfCode(code string) cloud.ErrorKind {
	_, throttled := retry.DefaultThrottleErrorCodes[code]
	switch {
	case code == "":
		return cloud.KindOther
	case throttled, serverErrorCodes[code]:
		return cloud.KindTransient
	case accountQuotaCodes[code]:
		return cloud.KindQuota
	case permissionCodes[code], strings.HasPrefix(code, "AuthFailure."):
		return cloud.KindPermission
	case strings.HasPrefix(code, "Invalid"), configurationCodes[code]:
		return cloud.KindConfiguration
	}
	return cloud.KindOther
}

// serverErrorCodes are EC2 failing on its side, as a fleet reports them on overrides (the same
// failure in an answer of its own comes with a 5xx status).
var serverErrorCodes = map[string]bool{
	"InternalError":      true,
	"InternalFailure":    true,
	"ServiceUnavailable": true,
	"Unavailable":        true,
}

// capacityCodes are the errors a fleet reports for an offering that has no capacity for the
// launch now (the codes Karpenter treats as unfulfillable capacity, less the account quotas, and
// UnsupportedOperation, which a fleet reports for a type that cannot do what the launch asks):
// only these mark an offering unavailable, so the next plan tries another. Every other code says
// nothing about the offering.
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true, // the type is not offered in the zone
	"UnsupportedOperation":              true, // the type cannot do what the launch asks of it
	"InsufficientFreeAddressesInSubnet": true,
	"ReservationCapacityExceeded":       true,
	"SpotMaxPriceTooLow":                true, // spot costs more than on-demand there now
}

// accountQuotaCodes are the errors of an account's quotas: running on-demand vCPUs of an
// instance family class, spot instances, instances. A fleet reports them on overrides, but they
// say nothing about the offering: any other type of the same class, or zone, is refused alike,
// and marking offerings unavailable one by one would walk every plan through every offering in
// turn. They are left out of LaunchResult.Errors (which callers mark unavailable); a launch that
// got nothing else is a KindQuota error, which callers retry later.
var accountQuotaCodes = map[string]bool{
	"VcpuLimitExceeded":            true,
	"MaxSpotInstanceCountExceeded": true,
	"InstanceLimitExceeded":        true,
}

// permissionCodes refuse the caller's identity (AuthFailure.* too): the controller's role lacks
// an action, a condition of its policy does not hold, or an SCP denies it.
var permissionCodes = map[string]bool{
	"UnauthorizedOperation": true,
	"AuthFailure":           true,
	"AccessDenied":          true,
	"AccessDeniedException": true,
	"OptInRequired":         true,
	"Blocked":               true,
}

// configurationCodes are refusals of the request as it is besides the Invalid* codes (an AMI
// that does not exist is InvalidAMIID.NotFound, a volume smaller than the snapshot
// InvalidParameterValue, a bad block device InvalidBlockDeviceMapping).
var configurationCodes = map[string]bool{
	"MissingParameter":            true,
	"UnknownParameter":            true,
	"InvalidParameterCombination": true,
}

// spotRoleMissingCode is the error of a spot launch in an account without EC2 Spot's
// service-linked role when the caller may not create it (the console creates it on the first
// spot request, an API caller needs iam:CreateServiceLinkedRole).
const spotRoleMissingCode = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"

// spotRoleFix says how to create the role; the Terraform module's input does it too.
const spotRoleFix = "EC2 Spot's service-linked role does not exist in the account and Tailor may not create it: " +
	"run `aws iam create-service-linked-role --aws-service-name spot.amazonaws.com` once, or set the Terraform module's input create_spot_service_linked_role = true"
