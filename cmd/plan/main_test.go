package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRunRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	noTailor := filepath.Join(dir, "plain.yaml")
	if err := os.WriteFile(noTailor, []byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: plain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "-f: give at least one manifest"},
		{[]string{"-f", "x.yaml", "-o", "yaml"}, `-o: unsupported format "yaml"`},
		{[]string{"-f", "x.yaml", "--catalog", "gcp"}, `--catalog: unsupported value "gcp"`},
		{[]string{"-f", "x.yaml", "--zones", " , "}, "--zones: give at least one zone"},
		{[]string{"-f", "../../manifests/examples", "--config", noTailor}, "--config: " + noTailor + ": no profile configures the Tailor plugin"},
		{[]string{"-f", "../../manifests/examples", "--scheduler-name", "other"}, `--config: no profile has schedulerName "other"`},
		{[]string{"-f", "../../manifests/examples", "extra"}, `unexpected argument "extra"`},
		{[]string{"-f", filepath.Join(dir, "missing.yaml")}, "missing.yaml"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tc.args, strings.NewReader(""), &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// The example workload plans to Running-able nodes; the JSON has the documented shape and its
// totals add up.
func TestRunJSON(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"-f", "../../manifests/examples", "-o", "json"}, strings.NewReader(""), &out, &errOut); err != nil {
		t.Fatal(err, errOut.String())
	}
	var got struct {
		Nodes []struct {
			Pool, InstanceType, Zone, CapacityType string
			PricePerHour                           float64
			Pods                                   []string
		}
		TotalPricePerHour, LowerBoundPerHour float64
		Unschedulable                        []struct{ Pod, Reason string }
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	var sum float64
	pods := 0
	for _, n := range got.Nodes {
		if n.Pool == "" || n.InstanceType == "" || n.Zone == "" || n.CapacityType == "" || n.PricePerHour <= 0 {
			t.Errorf("incomplete node %+v", n)
		}
		sum += n.PricePerHour
		pods += len(n.Pods)
	}
	if pods != 17 || len(got.Unschedulable) != 0 {
		t.Errorf("planned %d pods (%d unschedulable), want the example's 17", pods, len(got.Unschedulable))
	}
	if diff := sum - got.TotalPricePerHour; diff > 1e-9 || diff < -1e-9 {
		t.Errorf("total %.4f, nodes add up to %.4f", got.TotalPricePerHour, sum)
	}
	if got.LowerBoundPerHour <= 0 || got.LowerBoundPerHour > got.TotalPricePerHour {
		t.Errorf("lower bound %.4f against a plan of %.4f", got.LowerBoundPerHour, got.TotalPricePerHour)
	}
}
