package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A pool that leaves the launch settings added after its nodes launched at their defaults keeps
// the fingerprint those nodes carry (no drift on upgrade); setting any of them changes it.
func TestLaunchHashKeepsOldFingerprints(t *testing.T) {
	base := Pool{Name: "general", CapacityTypes: []string{"on-demand"}, AMI: "al2023", InstanceProfile: "node"}
	b, _ := json.Marshal([]any{base.Requirements, base.CapacityTypes, base.Zones, base.SubnetSelector, base.SecurityGroupSelector,
		base.AMI, base.InstanceProfile, base.Labels, base.Taints, base.StartupTaints})
	sum := sha256.Sum256(b)
	before := hex.EncodeToString(sum[:8]) // the fingerprint as computed before the launch settings
	for _, tt := range []struct {
		name    string
		mutate  func(*Pool)
		drifted bool
	}{
		{name: "nothing set", mutate: func(*Pool) {}},
		{name: "IMDS defaults", mutate: func(p *Pool) { p.MetadataOptions = MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 1} }},
		{name: "hop limit 2", mutate: func(p *Pool) { p.MetadataOptions = MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 2} }, drifted: true},
		{name: "tags", mutate: func(p *Pool) { p.Tags = map[string]string{"team": "ml"} }, drifted: true},
		{name: "monitoring", mutate: func(p *Pool) { p.DetailedMonitoring = true }, drifted: true},
		{name: "volumes", mutate: func(p *Pool) {
			p.BlockDeviceMappings = []BlockDeviceMapping{{DeviceName: "/dev/xvda", VolumeSize: resource.MustParse("100Gi"), VolumeType: "gp3"}}
		}, drifted: true},
		{name: "kubelet defaults", mutate: func(p *Pool) { p.Kubelet = Kubelet{MaxPodsPolicy: MaxPodsENI} }},
		{name: "kubelet settings", mutate: func(p *Pool) { p.Kubelet = Kubelet{MaxPodsPolicy: MaxPodsENI, MaxPods: 110} }, drifted: true},
		{name: "minValues unset", mutate: func(p *Pool) {
			p.Requirements = []Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "k", Operator: corev1.NodeSelectorOpExists}}}
		}, drifted: true}, // a requirement is a change; its minValues adds nothing more (below)
		{name: "image family of the alias", mutate: func(p *Pool) { p.ImageFamily = FamilyAL2023 }},
		{name: "custom family", mutate: func(p *Pool) { p.ImageFamily = FamilyCustom }, drifted: true},
		{name: "user data", mutate: func(p *Pool) { p.UserData = "#!/bin/bash\necho hi\n" }, drifted: true},
		{name: "public IP", mutate: func(p *Pool) { p.AssociatePublicIPAddress = new(bool) }, drifted: true},
		{name: "RAID0", mutate: func(p *Pool) { p.InstanceStorePolicy = InstanceStoreRAID0 }, drifted: true},
		{name: "reservations", mutate: func(p *Pool) { p.CapacityReservationSelector = Selector{IDs: []string{"cr-1"}} }},
	} {
		p := base
		tt.mutate(&p)
		if got := p.LaunchHash() != before; got != tt.drifted {
			t.Errorf("%s: fingerprint changed %v, want %v", tt.name, got, tt.drifted)
		}
	}
	// A requirement hashes as the node selector requirement it embeds, whatever its minValues.
	req := corev1.NodeSelectorRequirement{Key: "k", Operator: corev1.NodeSelectorOpExists}
	b, _ = json.Marshal([]any{[]corev1.NodeSelectorRequirement{req}, base.CapacityTypes, base.Zones, base.SubnetSelector, base.SecurityGroupSelector,
		base.AMI, base.InstanceProfile, base.Labels, base.Taints, base.StartupTaints})
	sum = sha256.Sum256(b)
	for _, mv := range []int32{0, 3} {
		p := base
		p.Requirements = []Requirement{{NodeSelectorRequirement: req, MinValues: mv}}
		if got := p.LaunchHash(); got != hex.EncodeToString(sum[:8]) {
			t.Errorf("a requirement with minValues %d changed its fingerprint", mv)
		}
	}
}
