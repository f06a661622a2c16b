package v1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Defaults users can rely on; the README and the example profile cite them.
const (
	DefaultAMI                           = "al2023"
	DefaultVolumeType                    = "gp3"
	DefaultHTTPTokens                    = "required"
	DefaultHTTPPutResponseHopLimit int32 = 1
	DefaultMaxPodsPolicy                 = "ENI"
	DefaultBatchIdleDuration             = 100 * time.Millisecond
	DefaultBatchMaxDuration              = time.Second
	DefaultRegistrationTimeout           = 15 * time.Minute

	DefaultConsolidationInterval                = 15 * time.Second
	DefaultConsolidationMinSavingsPercent int32 = 10
	DefaultGangZonePolicy                       = "SameZone"
	DefaultRebalanceRecommendations             = "Advisory"
	DefaultConsolidationPolicy                  = "WhenEmptyOrUnderutilized"
	DefaultConsolidateAfter                     = 30 * time.Second
	DefaultBudgetNodes                          = "10%"
	// DiscoveryTag is the tag the default subnet and security-group selectors look for, with the
	// cluster name as its value.
	DiscoveryTag = "tailor.dev/discovery"
)

// SetDefaults_TailorArgs fills what a user may leave out.
func SetDefaults_TailorArgs(obj *TailorArgs) {
	if obj.BatchIdleDuration == nil {
		obj.BatchIdleDuration = &metav1.Duration{Duration: DefaultBatchIdleDuration}
	}
	if obj.BatchMaxDuration == nil {
		obj.BatchMaxDuration = &metav1.Duration{Duration: DefaultBatchMaxDuration}
	}
	if obj.RegistrationTimeout == nil {
		obj.RegistrationTimeout = &metav1.Duration{Duration: DefaultRegistrationTimeout}
	}
	if obj.ConsolidationInterval == nil {
		obj.ConsolidationInterval = &metav1.Duration{Duration: DefaultConsolidationInterval}
	}
	if obj.ConsolidationMinSavingsPercent == nil {
		obj.ConsolidationMinSavingsPercent = ptr.To(DefaultConsolidationMinSavingsPercent)
	}
	if obj.GangZonePolicy == nil {
		obj.GangZonePolicy = ptr.To(DefaultGangZonePolicy)
	}
	if obj.RebalanceRecommendations == nil {
		obj.RebalanceRecommendations = ptr.To(DefaultRebalanceRecommendations)
	}
	for i := range obj.Pools {
		p := &obj.Pools[i]
		if p.Weight == nil {
			p.Weight = ptr.To[int32](0)
		}
		if len(p.CapacityTypes) == 0 {
			p.CapacityTypes = []string{"on-demand"}
		}
		if p.AMI == nil && p.AMISelector.empty() {
			p.AMI = ptr.To(DefaultAMI)
		}
		if p.ImageFamily == nil {
			family := DefaultAMI
			if p.AMI != nil && *p.AMI == "bottlerocket" {
				family = "bottlerocket"
			}
			p.ImageFamily = ptr.To(family)
		}
		for j := range p.BlockDeviceMappings {
			b := &p.BlockDeviceMappings[j]
			if b.VolumeType == nil {
				b.VolumeType = ptr.To(DefaultVolumeType)
			}
			if b.Encrypted == nil {
				b.Encrypted = ptr.To(true)
			}
			if b.DeleteOnTermination == nil {
				b.DeleteOnTermination = ptr.To(true)
			}
		}
		if p.MetadataOptions.HTTPTokens == nil {
			p.MetadataOptions.HTTPTokens = ptr.To(DefaultHTTPTokens)
		}
		if p.MetadataOptions.HTTPPutResponseHopLimit == nil {
			p.MetadataOptions.HTTPPutResponseHopLimit = ptr.To(DefaultHTTPPutResponseHopLimit)
		}
		if p.Kubelet.MaxPodsPolicy == nil {
			p.Kubelet.MaxPodsPolicy = ptr.To(DefaultMaxPodsPolicy)
		}
		d := &p.Disruption
		if d.ConsolidationPolicy == "" {
			d.ConsolidationPolicy = DefaultConsolidationPolicy
		}
		if d.ConsolidateAfter == nil {
			d.ConsolidateAfter = &metav1.Duration{Duration: DefaultConsolidateAfter}
		}
		if d.ExpireAfter == nil {
			d.ExpireAfter = &metav1.Duration{}
		}
		if len(d.Budgets) == 0 {
			d.Budgets = []Budget{{Nodes: DefaultBudgetNodes}}
		}
		for j := range d.Budgets {
			if d.Budgets[j].Duration == nil {
				d.Budgets[j].Duration = &metav1.Duration{}
			}
		}
		if obj.ClusterName != "" {
			if p.SubnetSelector.empty() {
				p.SubnetSelector = Selector{Tags: map[string]string{DiscoveryTag: obj.ClusterName}}
			}
			if p.SecurityGroupSelector.empty() {
				p.SecurityGroupSelector = Selector{Tags: map[string]string{DiscoveryTag: obj.ClusterName}}
			}
		}
	}
}

func (s Selector) empty() bool { return len(s.IDs) == 0 && len(s.Tags) == 0 }
