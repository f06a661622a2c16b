package planning

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// PlanWhole places a gang in one zone when one holds it, across zones when its pods' own
// constraints ask for that, and not at all, saying why, when a pod has no place.
func TestPlanWhole(t *testing.T) {
	zoned := func(name, zone string) *Pod {
		return pod(t, name, "1", "1Gi", map[string]string{corev1.LabelTopologyZone: zone})
	}
	gang := func(n int, cpu string) []*Pod {
		var pods []*Pod
		for i := range n {
			pods = append(pods, pod(t, fmt.Sprintf("g-%d", i), cpu, "1Gi", nil))
		}
		return pods
	}
	for _, tc := range []struct {
		name  string
		pods  []*Pod
		zones int    // zones the plan's nodes are in; 0: no plan
		why   string // part of why there is no plan
	}{
		{"fits one zone", gang(6, "3"), 1, ""},
		{"pinned to two zones", []*Pod{zoned("a", "us-east-1a"), zoned("b", "us-east-1b")}, 2, ""},
		{"a pod too big", append(gang(2, "1"), pod(t, "huge", "64", "1Gi", nil)), 0, "huge"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, why := testPlanner(t).PlanWhole(context.Background(), tc.pods, true)
			if tc.zones == 0 {
				if plan != nil || !strings.Contains(why, tc.why) {
					t.Fatalf("plan %v, why %q; want no plan, saying %q", plan, why, tc.why)
				}
				return
			}
			if plan == nil {
				t.Fatalf("no plan: %s", why)
			}
			zones, placed := map[string]bool{}, 0
			for _, n := range plan.Nodes {
				zones[n.Template.Offering.Zone] = true
				placed += len(n.Pods)
			}
			if len(zones) != tc.zones || placed != len(tc.pods) || len(plan.Unschedulable) != 0 {
				t.Errorf("%d of %d pods placed in zones %v, want all in %d zones", placed, len(tc.pods), zones, tc.zones)
			}
		})
	}
}
