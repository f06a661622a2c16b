package cloud

import (
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want ErrorKind
	}{
		{nil, KindOther},
		{errors.New("RequestLimitExceeded"), KindOther}, // unclassified: codes are the provider's to read
		{&Error{Kind: KindTransient, Err: errors.New("throttled")}, KindTransient},
		{fmt.Errorf("claim x: %w", &Error{Kind: KindQuota, Err: errors.New("VcpuLimitExceeded")}), KindQuota},
		{&Error{Kind: KindOther, Err: errors.New("bad request")}, KindOther},
	} {
		if got := KindOf(tt.err); got != tt.want {
			t.Errorf("KindOf(%v) = %v, want %v", tt.err, got, tt.want)
		}
		if got := Transient(tt.err); got != (tt.want == KindTransient) {
			t.Errorf("Transient(%v) = %v", tt.err, got)
		}
	}
}
