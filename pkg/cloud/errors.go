package cloud

import "errors"

// ErrorKind is what a provider's error means for the caller's next step. Each provider
// classifies its own errors (it alone knows its codes), so callers never read error codes.
type ErrorKind int

const (
	// KindOther is any other failure (a bad request, a missing resource): retried later as usual.
	KindOther ErrorKind = iota
	// KindTransient is the cloud pushing back (throttling) or failing on its side (a 5xx): slow
	// down and ask again, unchanged. A provider retries these itself first; one that still
	// surfaces means the pressure lasts.
	KindTransient
	// KindQuota is an account quota refusing the launch: no other offering of the same class
	// helps, and asking again soon does not either.
	KindQuota
	// KindConfiguration is a request the cloud refuses as it is (an image that does not exist, a
	// volume smaller than the image's snapshot, a subnet that is gone): no other offering helps,
	// and asking again fails alike until someone changes a setting.
	KindConfiguration
	// KindPermission is the caller's identity not being allowed the request: fixed in IAM, not by
	// another offering or by asking again.
	KindPermission
)

func (k ErrorKind) String() string {
	switch k {
	case KindTransient:
		return "transient"
	case KindQuota:
		return "quota"
	case KindConfiguration:
		return "configuration"
	case KindPermission:
		return "permission"
	}
	return "other"
}

// Error is a provider's error with its kind.
type Error struct {
	Kind ErrorKind
	Err  error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// KindOf is the kind err's provider gave it; KindOther for an error no provider classified.
func KindOf(err error) ErrorKind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return KindOther
}

// ErrSpotNotEnabled marks an error saying the account cannot launch spot capacity at all until
// someone changes a setting (EC2's spot service-linked role is missing): on-demand may still
// launch, and no spot offering is worth trying meanwhile.
var ErrSpotNotEnabled = errors.New("spot launches are not enabled for the account")

// Transient says whether err is of KindTransient.
func Transient(err error) bool { return KindOf(err) == KindTransient }
