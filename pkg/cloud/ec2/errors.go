package ec2

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/aws/retry"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// classify gives err its cloud.ErrorKind, the one place EC2's error codes are read for it:
// throttling (the SDK's own throttle codes, the ones its retryer backs off on) and 5xx
// answers are transient; account quotas are quota. nil stays nil.
func classify(err error) error {
	if err == nil || cloud.KindOf(err) != cloud.KindOther {
		return err
	}
	code := apiErrorCode(err)
	var status interface{ HTTPStatusCode() int }
	switch _, throttled := retry.DefaultThrottleErrorCodes[code]; {
	case throttled, errors.As(err, &status) && status.HTTPStatusCode() >= 500:
		return &cloud.Error{Kind: cloud.KindTransient, Err: err}
	case accountQuotaCodes[code]:
		return &cloud.Error{Kind: cloud.KindQuota, Err: err}
	}
	return err
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
