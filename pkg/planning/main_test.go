package planning

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a goroutine outlives its tests: no plan may leave one behind (a
// solver abandoned on a timeout, say), however it ends.
func TestMain(m *testing.M) {
	// The scheduler framework's metrics recorder runs as long as the framework the tests share.
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("k8s.io/kubernetes/pkg/scheduler/metrics.(*MetricAsyncRecorder).run"))
}
