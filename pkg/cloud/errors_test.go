package cloud

import (
	"errors"
	"fmt"
	"testing"
)

type codedError struct{ code string }

func (e codedError) Error() string     { return e.code }
func (e codedError) ErrorCode() string { return e.code }

type statusError struct{ status int }

func (e statusError) Error() string       { return fmt.Sprint(e.status) }
func (e statusError) HTTPStatusCode() int { return e.status }

func TestTransient(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("plain"), false},
		{fmt.Errorf("ec2: CreateFleet: %w", codedError{"RequestLimitExceeded"}), true},
		{codedError{"ThrottlingException"}, true},
		{codedError{"InsufficientInstanceCapacity"}, false},
		{codedError{"VcpuLimitExceeded"}, false}, // a quota: asking again soon does not help
		{fmt.Errorf("wrapped: %w", statusError{503}), true},
		{statusError{500}, true},
		{statusError{400}, false},
	} {
		if got := Transient(tt.err); got != tt.want {
			t.Errorf("Transient(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}
