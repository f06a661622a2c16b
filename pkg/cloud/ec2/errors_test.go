package ec2

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestClassify(t *testing.T) {
	coded := func(code string) error {
		return fmt.Errorf("operation error EC2: CreateFleet: %w", &smithy.GenericAPIError{Code: code, Message: code})
	}
	status := func(code int) error {
		return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
			Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("answer")}}
	}
	for _, tt := range []struct {
		err  error
		want cloud.ErrorKind
	}{
		{coded("RequestLimitExceeded"), cloud.KindTransient},
		{coded("EC2ThrottledException"), cloud.KindTransient},
		{coded("ThrottlingException"), cloud.KindTransient},
		{status(503), cloud.KindTransient},
		{status(500), cloud.KindTransient},
		{coded("VcpuLimitExceeded"), cloud.KindQuota},
		{coded("MaxSpotInstanceCountExceeded"), cloud.KindQuota},
		{coded("InsufficientInstanceCapacity"), cloud.KindOther},
		{coded("InvalidSubnetID.NotFound"), cloud.KindConfiguration},
		{coded("InvalidParameterValue"), cloud.KindConfiguration},
		{coded("MissingParameter"), cloud.KindConfiguration},
		{coded("UnauthorizedOperation"), cloud.KindPermission},
		{coded("AuthFailure.ServiceLinkedRoleCreationNotPermitted"), cloud.KindPermission},
		{coded("SomethingNew"), cloud.KindOther},
		{status(400), cloud.KindOther},
		{errors.New("plain"), cloud.KindOther},
		// Already classified: kept (a quota error wrapping a fleet error list).
		{&cloud.Error{Kind: cloud.KindQuota, Err: status(500)}, cloud.KindQuota},
	} {
		if got := cloud.KindOf(classify(tt.err)); got != tt.want {
			t.Errorf("classify(%v): %v, want %v", tt.err, got, tt.want)
		}
	}
	// The spot service-linked role refused in an answer of its own, as in a fleet's errors.
	if err := classify(coded("AuthFailure.ServiceLinkedRoleCreationNotPermitted")); !errors.Is(err, cloud.ErrSpotNotEnabled) || !strings.Contains(err.Error(), "create-service-linked-role") {
		t.Errorf("classify(spot role refused) = %v, want ErrSpotNotEnabled saying how to create the role", err)
	}
	if classify(nil) != nil {
		t.Error("classify(nil) is not nil")
	}
}
