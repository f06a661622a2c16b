package planning

import "github.com/tailor-eks/tailor/pkg/cloud"

// TemplateKey names one launchable offering of a pool: what a claim records of the node it
// stands for.
type TemplateKey struct {
	Pool, Type, Zone string
	CapacityType     cloud.CapacityType
}

// TemplateIndex finds a batch's templates by their key, so a fill that looks up the template of
// every claim in flight does not scan thousands of templates for each.
type TemplateIndex map[TemplateKey]*Template

// IndexTemplates indexes templates by key. A key names one offering of one pool, so no two
// templates share one.
func IndexTemplates(templates []*Template) TemplateIndex {
	ix := make(TemplateIndex, len(templates))
	for _, t := range templates {
		ix[TemplateKey{Pool: t.Pool.Name, Type: t.Type.Name, Zone: t.Offering.Zone, CapacityType: t.Offering.CapacityType}] = t
	}
	return ix
}

// Get returns the template of pool's offering of the type in zone as capacityType, or nil.
func (ix TemplateIndex) Get(pool, instanceType, zone string, capacityType cloud.CapacityType) *Template {
	return ix[TemplateKey{Pool: pool, Type: instanceType, Zone: zone, CapacityType: capacityType}]
}
