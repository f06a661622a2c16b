package cloud

import "errors"

// Transient says whether err is the cloud pushing back (throttling) or failing on its side (a
// 5xx): the caller should slow down and ask again, not change what it asks for. The SDK has
// retried such errors already; one that still surfaces means the pressure lasts.
func Transient(err error) bool {
	var coded interface{ ErrorCode() string }
	if errors.As(err, &coded) && throttlingCodes[coded.ErrorCode()] {
		return true
	}
	var status interface{ HTTPStatusCode() int }
	return errors.As(err, &status) && status.HTTPStatusCode() >= 500
}

// throttlingCodes are the AWS error codes of throttling (the SDK's retry.DefaultThrottleErrorCodes
// and EC2's own).
var throttlingCodes = map[string]bool{
	"RequestLimitExceeded": true, "Throttling": true, "ThrottlingException": true, "ThrottledException": true,
	"RequestThrottledException": true, "TooManyRequestsException": true, "ProvisionedThroughputExceededException": true,
	"TransactionInProgressException": true, "RequestThrottled": true, "SlowDown": true, "PriorRequestNotComplete": true,
	"EC2ThrottledException": true, "BandwidthLimitExceeded": true,
}
