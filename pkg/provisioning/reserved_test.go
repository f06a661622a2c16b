package provisioning

import (
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// Each reservation keeps as many planned nodes as it has instances free, those with the most
// pods; the rest go back to be planned without it, and it is marked full.
func TestSplitExcess(t *testing.T) {
	a := &cloud.CapacityReservation{ID: "cr-a", Available: 2}
	b := &cloud.CapacityReservation{ID: "cr-b", Available: 1}
	node := func(name string, r *cloud.CapacityReservation, pods int) *planning.PlannedNode {
		t := &planning.Template{Offering: cloud.Offering{CapacityType: cloud.OnDemand}}
		if r != nil {
			t.Offering = cloud.Offering{CapacityType: cloud.Reserved, Reservation: r}
		}
		return &planning.PlannedNode{Name: name, Template: t, Pods: make([]*planning.Pod, pods)}
	}
	nodes := []*planning.PlannedNode{node("a1", a, 1), node("a2", a, 3), node("a3", a, 2), node("b1", b, 1), node("od", nil, 5)}
	full := map[string]bool{}
	kept, excess := splitExcess(nodes, full)
	names := func(ns []*planning.PlannedNode) (out []string) {
		for _, n := range ns {
			out = append(out, n.Name)
		}
		return out
	}
	if got := names(kept); len(got) != 4 || got[0] != "a2" || got[1] != "a3" || got[2] != "b1" || got[3] != "od" {
		t.Errorf("kept %v, want [a2 a3 b1 od]", got)
	}
	if got := names(excess); len(got) != 1 || got[0] != "a1" {
		t.Errorf("excess %v, want [a1]", got)
	}
	if !full["cr-a"] || full["cr-b"] {
		t.Errorf("full %v, want cr-a only", full)
	}
	if _, excess := splitExcess(kept, map[string]bool{}); len(excess) != 0 {
		t.Errorf("a plan within its reservations has excess %v", names(excess))
	}
}
