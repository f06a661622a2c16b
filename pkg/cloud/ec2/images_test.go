package ec2

import (
	"testing"
	"time"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// A selector picks the newest available image of the types' architecture: of this account's
// images with every tag (Amazon's and other accounts' never), or among its IDs; none is a
// configuration error; the answer is cached like an alias's.
func TestResolveImageSelector(t *testing.T) {
	e := newEnv(t)
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	oldX86 := e.sim.AddImage("ml-node-1", "x86_64", day, map[string]string{"team": "ml"})
	newX86 := e.sim.AddImage("ml-node-2", "x86_64", day.Add(24*time.Hour), map[string]string{"team": "ml"})
	arm := e.sim.AddImage("ml-node-2-arm", "arm64", day.Add(24*time.Hour), map[string]string{"team": "ml"})
	web := e.sim.AddImage("web-node", "x86_64", day.Add(48*time.Hour), map[string]string{"team": "web"})
	ml := cloud.Selector{Tags: map[string]string{"team": "ml"}}
	tests := []struct {
		name    string
		sel     cloud.Selector
		types   []string
		want    string
		wantErr cloud.ErrorKind
	}{
		{name: "newest by tags", sel: ml, types: []string{"m5.large"}, want: newX86},
		{name: "the types' architecture", sel: ml, types: []string{"m6g.large"}, want: arm},
		{name: "any value", sel: cloud.Selector{Tags: map[string]string{"team": "*"}}, types: []string{"m5.large"}, want: web},
		{name: "by IDs", sel: cloud.Selector{IDs: []string{oldX86, arm}}, types: []string{"m5.large"}, want: oldX86},
		{name: "none matches", sel: cloud.Selector{Tags: map[string]string{"team": "data"}}, types: []string{"m5.large"}, wantErr: cloud.KindConfiguration},
		{name: "mixed architectures", sel: ml, types: []string{"m5.large", "m6g.large"}, wantErr: cloud.KindOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.p.ResolveImageSelector(testCtx(t), tt.sel, tt.types)
			if tt.want != "" {
				if err != nil || got != tt.want {
					t.Fatalf("ResolveImageSelector = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if err == nil || cloud.KindOf(err) != tt.wantErr {
				t.Fatalf("ResolveImageSelector = %q, %v (kind %v); want an error of kind %v", got, err, cloud.KindOf(err), tt.wantErr)
			}
		})
	}
	// A newer image is seen only once the cache expires (CatalogTTL).
	e.sim.AddImage("ml-node-3", "x86_64", day.Add(72*time.Hour), map[string]string{"team": "ml"})
	if got, _ := e.p.ResolveImageSelector(testCtx(t), ml, []string{"m5.large"}); got != newX86 {
		t.Errorf("a cached selector answered %s, want %s until the cache expires", got, newX86)
	}
}
