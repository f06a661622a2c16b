package ec2

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// Once the instance types have loaded, DescribeInstanceTypes failing past the catalog's TTL does
// not take the catalog away: the last good types keep serving (a failed refresh used to fail
// every InstanceTypes call, and with it every plan and launch, until EC2 answered again), the
// refresh is tried again after catalogRetry rather than on every call, and once EC2 answers the
// types are loaded again. The first load's failure is still an error: there is nothing to serve.
func TestFailedTypesRefreshKeepsCatalog(t *testing.T) {
	const ttl = 5 * time.Minute
	e := newPriceEnv(t, "us-east-1", Options{CatalogTTL: ttl}, nil)
	first := len(e.load(t))
	if first == 0 {
		t.Fatal("no instance types")
	}
	e.sim.InjectFault(ec2sim.Fault{Action: "DescribeInstanceTypes", Code: "InternalError"})
	calls := e.sim.Calls("DescribeInstanceTypes")

	e.clock.Advance(ttl)
	if got := len(e.load(t)); got != first {
		t.Errorf("after a failed refresh: %d types, want the last %d", got, first)
	}
	if e.sim.Calls("DescribeInstanceTypes") == calls {
		t.Error("no refresh tried past the TTL")
	}
	calls = e.sim.Calls("DescribeInstanceTypes")
	e.clock.Advance(catalogRetry / 2)
	if got := len(e.load(t)); got != first || e.sim.Calls("DescribeInstanceTypes") != calls {
		t.Errorf("before the retry: %d types, %d calls; want %d and none", got, e.sim.Calls("DescribeInstanceTypes")-calls, first)
	}
	e.clock.Advance(catalogRetry / 2)
	if got := len(e.load(t)); got != first || e.sim.Calls("DescribeInstanceTypes") == calls {
		t.Errorf("failed retry: %d types, %d calls", got, e.sim.Calls("DescribeInstanceTypes")-calls)
	}
	if n := e.logs.count(slog.LevelWarn, "refreshing instance types failed"); n != 1 {
		t.Errorf("%d warnings for two failed refreshes, want 1", n)
	}

	e.sim.ClearFaults()
	e.clock.Advance(catalogRetry)
	calls = e.sim.Calls("DescribeInstanceTypes")
	if got := len(e.load(t)); got != first || e.sim.Calls("DescribeInstanceTypes") == calls {
		t.Errorf("after recovery: %d types, %d calls", got, e.sim.Calls("DescribeInstanceTypes")-calls)
	}
	if n := e.logs.count(slog.LevelInfo, "instance types loaded again"); n != 1 {
		t.Errorf("%d recovery records", n)
	}
	// Loaded again: the next refresh is a full TTL away.
	calls = e.sim.Calls("DescribeInstanceTypes")
	e.clock.Advance(ttl - time.Second)
	e.load(t)
	if got := e.sim.Calls("DescribeInstanceTypes") - calls; got != 0 {
		t.Errorf("%d calls within the TTL after recovery", got)
	}
}

func TestFirstTypesLoadFails(t *testing.T) {
	e := newPriceEnv(t, "us-east-1", Options{}, nil)
	e.sim.InjectFault(ec2sim.Fault{Action: "DescribeInstanceTypes", Code: "UnauthorizedOperation"})
	if _, err := e.p.InstanceTypes(testCtx(t)); err == nil || !strings.Contains(err.Error(), "describing instance types") {
		t.Fatalf("error %v, want the failed first load", err)
	}
	e.sim.ClearFaults()
	if len(e.load(t)) == 0 {
		t.Error("no instance types after the failure cleared")
	}
}
