package lifecycle

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// A Capacity Block's node is handed over from cloud.CapacityBlockDrainLead before the block ends,
// not before; nodes of ODCRs, of blocks without an end, and of claims going already never are.
func TestCheckCapacityBlock(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *metav1.Time { return &metav1.Time{Time: now.Add(d)} }
	deleting := metav1.NewTime(now)
	tests := []struct {
		name    string
		res     *v1alpha1.CapacityReservation
		deleted bool
		want    bool
	}{
		{name: "not reserved"},
		{name: "ODCR", res: &v1alpha1.CapacityReservation{ID: "cr-1", EndsAt: at(time.Minute)}},
		{name: "block without end", res: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true}},
		{name: "block ending later", res: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: at(cloud.CapacityBlockDrainLead + time.Second)}},
		{name: "block within the lead", res: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: at(cloud.CapacityBlockDrainLead)}, want: true},
		{name: "block ended", res: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: at(-time.Minute)}, want: true},
		{name: "claim going", res: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: at(0)}, deleted: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var handed []string
			c := &Controller{EndingCapacityBlock: func(_ context.Context, claim string, _ bool) error {
				handed = append(handed, claim)
				return nil
			}}
			cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Spec: v1alpha1.ClaimSpec{CapacityReservation: tt.res}}
			if tt.deleted {
				cl.DeletionTimestamp = &deleting
			}
			c.checkCapacityBlock(context.Background(), cl, nil, now)
			if got := len(handed) == 1 && handed[0] == "gpu-1"; got != tt.want || len(handed) > 1 {
				t.Errorf("handed over %v, want %v", handed, tt.want)
			}
		})
	}
	// The end the cloud reads now wins over the one recorded: a block extended, or cancelled.
	for _, tt := range []struct {
		name string
		end  time.Time
		want bool
	}{{"extended", now.Add(2 * time.Hour), false}, {"ended early", now, true}} {
		var handed int
		c := &Controller{EndingCapacityBlock: func(context.Context, string, bool) error { handed++; return nil }}
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Spec: v1alpha1.ClaimSpec{
			CapacityReservation: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: at(time.Hour)}}}
		if tt.name == "extended" {
			cl.Spec.CapacityReservation.EndsAt = at(time.Minute)
		}
		c.checkCapacityBlock(context.Background(), cl, map[string]time.Time{"cr-1": tt.end}, now)
		if (handed == 1) != tt.want {
			t.Errorf("%s: handed over %d times, want %v", tt.name, handed, tt.want)
		}
	}
}

// A node handed over in time waits for its replacements; one handed over with less time left
// than that patience drains at once.
func TestCapacityBlockHandoverLateness(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		left time.Duration
		late bool
	}{{cloud.CapacityBlockDrainLead, false}, {cloud.CapacityBlockDrainLead - CapacityBlockPatience + time.Second, false}, {cloud.CapacityBlockDrainLead - CapacityBlockPatience, true}, {0, true}} {
		var got []bool
		c := &Controller{EndingCapacityBlock: func(_ context.Context, _ string, late bool) error { got = append(got, late); return nil }}
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "gpu-1"}, Spec: v1alpha1.ClaimSpec{
			CapacityReservation: &v1alpha1.CapacityReservation{ID: "cr-1", CapacityBlock: true, EndsAt: &metav1.Time{Time: now.Add(tc.left)}}}}
		c.checkCapacityBlock(context.Background(), cl, nil, now)
		if len(got) != 1 || got[0] != tc.late {
			t.Errorf("%v left: handed over %v, want late=%v", tc.left, got, tc.late)
		}
	}
}
