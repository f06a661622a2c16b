package planning

import (
	"testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestTemplateIndexGet(t *testing.T) {
	general, spot := &config.Pool{Name: "general"}, &config.Pool{Name: "spot"}
	m5 := &cloud.InstanceType{Name: "m5.large"}
	c5 := &cloud.InstanceType{Name: "c5.large"}
	tmpl := func(p *config.Pool, it *cloud.InstanceType, zone string, ct cloud.CapacityType) *Template {
		return &Template{Pool: p, Type: it, Offering: cloud.Offering{Zone: zone, CapacityType: ct}}
	}
	ts := []*Template{
		tmpl(general, m5, "us-east-1a", cloud.OnDemand), tmpl(general, m5, "us-east-1b", cloud.OnDemand),
		tmpl(general, m5, "us-east-1a", cloud.Spot), tmpl(spot, m5, "us-east-1a", cloud.Spot), tmpl(general, c5, "us-east-1a", cloud.OnDemand),
	}
	ix := IndexTemplates(ts)
	for _, tc := range []struct {
		name            string
		pool, typ, zone string
		ct              cloud.CapacityType
		want            *Template
	}{
		{"exact", "general", "m5.large", "us-east-1b", cloud.OnDemand, ts[1]},
		{"the capacity type tells two apart", "general", "m5.large", "us-east-1a", cloud.Spot, ts[2]},
		{"the pool tells two apart", "spot", "m5.large", "us-east-1a", cloud.Spot, ts[3]},
		{"another type", "general", "c5.large", "us-east-1a", cloud.OnDemand, ts[4]},
		{"a zone the type has no template in", "general", "c5.large", "us-east-1b", cloud.OnDemand, nil},
		{"an unknown pool", "gpu", "m5.large", "us-east-1a", cloud.OnDemand, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ix.Get(tc.pool, tc.typ, tc.zone, tc.ct); got != tc.want {
				t.Errorf("Get(%s, %s, %s, %s) = %v, want %v", tc.pool, tc.typ, tc.zone, tc.ct, got, tc.want)
			}
		})
	}
}
