package validation

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tailor-eks/tailor/apis/config"
)

func validArgs() *config.TailorArgs {
	sel := config.Selector{Tags: map[string]string{"tailor.dev/discovery": "prod"}}
	return &config.TailorArgs{
		ClusterName: "prod", Region: "us-east-1", KubernetesVersion: "1.34",
		BatchIdleDuration: metav1.Duration{Duration: 100 * time.Millisecond}, BatchMaxDuration: metav1.Duration{Duration: time.Second},
		RegistrationTimeout:   metav1.Duration{Duration: 15 * time.Minute},
		ConsolidationInterval: metav1.Duration{Duration: 15 * time.Second}, ConsolidationMinSavingsPercent: 10, GangZonePolicy: config.GangSameZone,
		RebalanceRecommendations: config.RebalanceAdvisory,
		Pools: []config.Pool{{
			Name: "general", Weight: 10, CapacityTypes: []string{"on-demand", "spot"}, AMI: "al2023", ImageFamily: config.FamilyAL2023, InstanceProfile: "prod-node",
			SubnetSelector: sel, SecurityGroupSelector: sel,
			Requirements:    []config.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}}}},
			Kubelet:         config.Kubelet{MaxPodsPolicy: config.MaxPodsENI},
			Taints:          []corev1.Taint{{Key: "tailor.dev/spot", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			Limits:          corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100")},
			MetadataOptions: config.MetadataOptions{HTTPTokens: "required", HTTPPutResponseHopLimit: 1},
			Disruption: config.Disruption{ConsolidationPolicy: config.WhenEmptyOrUnderutilized, ConsolidateAfter: metav1.Duration{Duration: 30 * time.Second},
				Budgets: []config.Budget{{Nodes: "10%"}, {Nodes: "0", Schedule: "0 9 * * 1-5", Duration: metav1.Duration{Duration: 8 * time.Hour}}}},
		}},
	}
}

func TestValidateTailorArgs(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*config.TailorArgs)
		want   []string // substrings of the error; none means valid
	}{
		{name: "valid", mutate: func(*config.TailorArgs) {}},
		{name: "no cluster name", mutate: func(a *config.TailorArgs) { a.ClusterName = "" }, want: []string{"args.clusterName: Required value"}},
		{name: "bad region", mutate: func(a *config.TailorArgs) { a.Region = "mars" }, want: []string{`args.region: Invalid value: "mars"`}},
		{name: "no pools", mutate: func(a *config.TailorArgs) { a.Pools = nil }, want: []string{"args.pools: Required value"}},
		{name: "duplicate pool", mutate: func(a *config.TailorArgs) { a.Pools = append(a.Pools, a.Pools[0]) }, want: []string{`args.pools[1].name: Duplicate value: "general"`}},
		{name: "bad capacity type", mutate: func(a *config.TailorArgs) { a.Pools[0].CapacityTypes = []string{"dedicated"} }, want: []string{`args.pools[0].capacityTypes[0]: Unsupported value: "dedicated"`}},
		{name: "reserved capacity", mutate: func(a *config.TailorArgs) {
			a.Pools[0].CapacityTypes = []string{"reserved", "on-demand"}
			a.Pools[0].CapacityReservationSelector = config.Selector{Tags: map[string]string{"team": "ml"}}
		}},
		{name: "reserved without a selector", mutate: func(a *config.TailorArgs) { a.Pools[0].CapacityTypes = []string{"reserved"} },
			want: []string{"args.pools[0].capacityReservationSelector: Required value"}},
		{name: "selector without reserved", mutate: func(a *config.TailorArgs) {
			a.Pools[0].CapacityReservationSelector = config.Selector{IDs: []string{"cr-0123456789abcdef0"}}
		},
			want: []string{"args.pools[0].capacityTypes: Invalid value"}},
		{name: "bad reservation ID", mutate: func(a *config.TailorArgs) {
			a.Pools[0].CapacityTypes = []string{"reserved"}
			a.Pools[0].CapacityReservationSelector = config.Selector{IDs: []string{"r-1"}}
		}, want: []string{`args.pools[0].capacityReservationSelector.ids[0]: Invalid value: "r-1"`}},
		{name: "unknown requirement key", mutate: func(a *config.TailorArgs) { a.Pools[0].Requirements[0].Key = "rack" }, want: []string{`args.pools[0].requirements[0].key: Unsupported value: "rack"`}},
		{name: "Gt needs an integer", mutate: func(a *config.TailorArgs) { a.Pools[0].Requirements[0].Values = []string{"x"} }, want: []string{"args.pools[0].requirements[0].values[0]: Invalid value"}},
		{name: "In needs values", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Requirements[0].NodeSelectorRequirement = corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn}
		}, want: []string{"args.pools[0].requirements[0].values: Required value"}},
		{name: "minValues", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Requirements = append(a.Pools[0].Requirements, config.Requirement{
				NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-family", Operator: corev1.NodeSelectorOpExists}, MinValues: 3})
		}},
		{name: "bad minValues", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Requirements = []config.Requirement{
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "c5"}}, MinValues: 3},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpExists}, MinValues: 2},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "node.kubernetes.io/instance-type", Operator: corev1.NodeSelectorOpExists}, MinValues: 51},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-size", Operator: corev1.NodeSelectorOpDoesNotExist}, MinValues: 1},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpExists}, MinValues: 2},
				{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: "tailor.dev/instance-family", Operator: corev1.NodeSelectorOpIn, Values: []string{"m5", "m5"}}, MinValues: 2},
			}
		}, want: []string{"args.pools[0].requirements[0].minValues: Invalid value: 3: more than the 2 distinct values", "args.pools[0].requirements[1].minValues: Invalid value: 2: a claim launches in one zone",
			"args.pools[0].requirements[2].minValues: Invalid value: 51", "args.pools[0].requirements[3].minValues: Invalid value: 1: operator DoesNotExist",
			"args.pools[0].requirements[4].minValues: Invalid value: 2: a claim launches in one zone", "args.pools[0].requirements[5].minValues: Invalid value: 2: more than the 1 distinct values"}},
		{name: "thresholds the kubelet or Bottlerocket refuse", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Kubelet.EvictionHard = map[string]string{"memory.available": "0Mi", "nodefs.available": "100%", "imagefs.available": "0%", "containerfs.available": "10%"}
		}, want: []string{`args.pools[0].kubelet.evictionHard[memory.available]: Invalid value: "0Mi"`, `args.pools[0].kubelet.evictionHard[nodefs.available]: Invalid value: "100%"`,
			`args.pools[0].kubelet.evictionHard[imagefs.available]: Invalid value: "0%"`, `args.pools[0].kubelet.evictionHard[containerfs.available]: Unsupported value`}},
		{name: "pid reservation on Bottlerocket", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily = "bottlerocket", config.FamilyBottlerocket
			a.Pools[0].Kubelet.KubeReserved = corev1.ResourceList{"pid": resource.MustParse("1000")}
		}, want: []string{"args.pools[0].kubelet.kubeReserved[pid]: Forbidden: Bottlerocket reserves cpu, memory and ephemeral-storage only"}},
		{name: "kubelet settings on a custom image", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily, a.Pools[0].UserData = "ami-0123456789abcdef0", config.FamilyCustom, "#!/bin/bash\n"
			a.Pools[0].Kubelet.MaxPods = 110
		}, want: []string{"args.pools[0].kubelet: Forbidden: a custom image bootstraps"}},
		{name: "image ID of the custom family", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily, a.Pools[0].UserData = "ami-0123456789abcdef0", config.FamilyCustom, "#!/bin/bash\n/etc/eks/bootstrap.sh prod\n"
		}},
		{name: "AL2023 user data", mutate: func(a *config.TailorArgs) {
			a.Pools[0].UserData = "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"b\"\n\n--b\nContent-Type: text/x-shellscript\n\necho hi\n--b--\n"
		}},
		{name: "Bottlerocket user data", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily, a.Pools[0].UserData = "bottlerocket", config.FamilyBottlerocket, "[settings.kernel]\nlockdown = \"integrity\"\n"
		}},
		{name: "instance store RAID0", mutate: func(a *config.TailorArgs) { a.Pools[0].InstanceStorePolicy = config.InstanceStoreRAID0 }},
		{name: "bad instance store policy", mutate: func(a *config.TailorArgs) { a.Pools[0].InstanceStorePolicy = "RAID1" },
			want: []string{`args.pools[0].instanceStorePolicy: Unsupported value: "RAID1"`}},
		{name: "image selector", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].AMISelector = "", config.Selector{Tags: map[string]string{"team": "ml", "release": "*"}}
		}},
		{name: "image selector and ami", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMISelector = config.Selector{IDs: []string{"ami-0123456789abcdef0"}}
		},
			want: []string{"args.pools[0].amiSelector: Invalid value: \"<selector>\": set ami or amiSelector, not both"}},
		{name: "bad image selector", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].AMISelector = "", config.Selector{IDs: []string{"img-1"}}
		},
			want: []string{`args.pools[0].amiSelector.ids[0]: Invalid value: "img-1"`}},
		{name: "bad image settings", mutate: func(a *config.TailorArgs) { a.Pools[0].ImageFamily = "bottlerocket" },
			want: []string{`args.pools[0].imageFamily: Invalid value: "bottlerocket": the alias al2023 is of family al2023`}},
		{name: "unknown family", mutate: func(a *config.TailorArgs) { a.Pools[0].AMI, a.Pools[0].ImageFamily = "ami-0123456789abcdef0", "ubuntu" },
			want: []string{`args.pools[0].imageFamily: Unsupported value: "ubuntu"`}},
		{name: "custom without user data", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily = "ami-0123456789abcdef0", config.FamilyCustom
		},
			want: []string{"args.pools[0].userData: Required value"}},
		{name: "Bottlerocket user data not TOML", mutate: func(a *config.TailorArgs) {
			a.Pools[0].AMI, a.Pools[0].ImageFamily, a.Pools[0].UserData = "bottlerocket", config.FamilyBottlerocket, "echo hi"
		}, want: []string{"args.pools[0].userData: Invalid value: \"<user data>\": Bottlerocket user data must be TOML"}},
		{name: "broken MIME", mutate: func(a *config.TailorArgs) { a.Pools[0].UserData = "MIME-Version: 1.0\nContent-Type: text/plain\n\nhi" },
			want: []string{"args.pools[0].userData: Invalid value: \"<user data>\": MIME user data must be multipart"}},
		{name: "user data too long", mutate: func(a *config.TailorArgs) { a.Pools[0].UserData = strings.Repeat("#", 13<<10) },
			want: []string{"args.pools[0].userData: Too long"}},
		{name: "kubelet settings", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Kubelet = config.Kubelet{MaxPods: 110, MaxPodsPolicy: config.MaxPodsPrefixDelegation, PodsPerCore: 10,
				SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), "pid": resource.MustParse("1000")},
				KubeReserved:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourceEphemeralStorage: resource.MustParse("2Gi")},
				EvictionHard:   map[string]string{"memory.available": "5%", "nodefs.inodesFree": "5%"},
				EvictionSoft:   map[string]string{"memory.available": "500Mi"}, EvictionSoftGracePeriod: map[string]metav1.Duration{"memory.available": {Duration: time.Minute}},
				EvictionMaxPodGracePeriod: 60, ClusterDNS: []string{"169.254.20.10", "fd00::a"}}
		}},
		{name: "bad kubelet settings", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Kubelet = config.Kubelet{MaxPods: -1, MaxPodsPolicy: "Prefix", PodsPerCore: -2,
				SystemReserved: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")},
				KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")},
				EvictionHard:   map[string]string{"memory.free": "1Gi", "nodefs.available": "120%", "nodefs.inodesFree": "1000"},
				EvictionSoft:   map[string]string{"memory.available": "1Gi"}, EvictionSoftGracePeriod: map[string]metav1.Duration{"nodefs.available": {Duration: time.Minute}},
				EvictionMaxPodGracePeriod: -1, ClusterDNS: []string{"dns.local"}}
		}, want: []string{"args.pools[0].kubelet.maxPods: Invalid value: -1", `args.pools[0].kubelet.maxPodsPolicy: Unsupported value: "Prefix"`,
			"args.pools[0].kubelet.podsPerCore: Invalid value: -2", `args.pools[0].kubelet.systemReserved[pods]: Unsupported value: "pods"`,
			"args.pools[0].kubelet.kubeReserved[cpu]: Invalid value: \"-1\"", `args.pools[0].kubelet.evictionHard[memory.free]: Unsupported value`,
			`args.pools[0].kubelet.evictionHard[nodefs.available]: Invalid value: "120%"`, `args.pools[0].kubelet.evictionHard[nodefs.inodesFree]: Invalid value: "1000": this signal takes a percentage`,
			"args.pools[0].kubelet.evictionSoftGracePeriod[memory.available]: Required value", "args.pools[0].kubelet.evictionSoftGracePeriod[nodefs.available]: Invalid value",
			"args.pools[0].kubelet.evictionMaxPodGracePeriod: Invalid value: -1", `args.pools[0].kubelet.clusterDNS[0]: Invalid value: "dns.local"`}},
		{name: "bad operator", mutate: func(a *config.TailorArgs) { a.Pools[0].Requirements[0].Operator = "Near" }, want: []string{"args.pools[0].requirements[0].operator: Unsupported value"}},
		{name: "bad zone", mutate: func(a *config.TailorArgs) { a.Pools[0].Zones = []string{"us-east-1"} }, want: []string{`args.pools[0].zones[0]: Invalid value: "us-east-1"`}},
		{name: "selector with ids and tags", mutate: func(a *config.TailorArgs) { a.Pools[0].SubnetSelector.IDs = []string{"subnet-1"} }, want: []string{"args.pools[0].subnetSelector"}},
		{name: "bad security group id", mutate: func(a *config.TailorArgs) {
			a.Pools[0].SecurityGroupSelector = config.Selector{IDs: []string{"subnet-1"}}
		}, want: []string{`args.pools[0].securityGroupSelector.ids[0]: Invalid value: "subnet-1"`}},
		{name: "launch settings", mutate: func(a *config.TailorArgs) {
			a.Pools[0].BlockDeviceMappings = []config.BlockDeviceMapping{{DeviceName: "/dev/xvda", VolumeSize: resource.MustParse("100Gi"), VolumeType: "gp3",
				IOPS: 6000, Throughput: 250, Encrypted: true, KMSKeyID: "arn:aws:kms:us-east-1:123456789012:key/abcd", DeleteOnTermination: true}}
			a.Pools[0].MetadataOptions = config.MetadataOptions{HTTPTokens: "optional", HTTPPutResponseHopLimit: 2, HTTPProtocolIPv6: true}
			a.Pools[0].Tags = map[string]string{"team": "ml", "cost-center": "42"}
		}},
		{name: "bad block devices", mutate: func(a *config.TailorArgs) {
			a.Pools[0].BlockDeviceMappings = []config.BlockDeviceMapping{
				{DeviceName: "xvda", VolumeSize: resource.MustParse("500Mi"), VolumeType: "gp4"},
				{DeviceName: "/dev/xvdb", VolumeSize: resource.MustParse("10Gi"), VolumeType: "gp2", IOPS: 3000, Throughput: 200},
				{DeviceName: "/dev/xvdb", VolumeSize: resource.MustParse("10Gi"), VolumeType: "gp3", KMSKeyID: "my-key", Encrypted: true},
			}
		}, want: []string{"args.pools[0].blockDeviceMappings[0].deviceName: Invalid value", "args.pools[0].blockDeviceMappings[0].volumeSize: Invalid value: \"500Mi\"",
			"args.pools[0].blockDeviceMappings[0].volumeType: Unsupported value: \"gp4\"", "args.pools[0].blockDeviceMappings[1].iops: Invalid value: 3000",
			"args.pools[0].blockDeviceMappings[1].throughput: Invalid value: 200", "args.pools[0].blockDeviceMappings[2].deviceName: Duplicate value",
			"args.pools[0].blockDeviceMappings[2].kmsKeyID: Invalid value"}},
		{name: "bad metadata options", mutate: func(a *config.TailorArgs) {
			a.Pools[0].MetadataOptions = config.MetadataOptions{HTTPTokens: "maybe", HTTPPutResponseHopLimit: 65}
		}, want: []string{`args.pools[0].metadataOptions.httpTokens: Unsupported value: "maybe"`, "args.pools[0].metadataOptions.httpPutResponseHopLimit: Invalid value: 65"}},
		{name: "Tailor's tags", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Tags = map[string]string{"tailor.dev/claim": "x", "kubernetes.io/cluster/other": "owned"}
		}, want: []string{"args.pools[0].tags[tailor.dev/claim]: Forbidden", "args.pools[0].tags[kubernetes.io/cluster/other]: Forbidden"}},
		{name: "rebalance replaces", mutate: func(a *config.TailorArgs) { a.RebalanceRecommendations = config.RebalanceReplace }},
		{name: "bad rebalance setting", mutate: func(a *config.TailorArgs) { a.RebalanceRecommendations = "Drain" }, want: []string{`args.rebalanceRecommendations: Unsupported value: "Drain"`}},
		{name: "no instance profile", mutate: func(a *config.TailorArgs) { a.Pools[0].InstanceProfile = "" }, want: []string{"args.pools[0].instanceProfile: Required value"}},
		{name: "instance profile ARN", mutate: func(a *config.TailorArgs) {
			a.Pools[0].InstanceProfile = "arn:aws:iam::123456789012:instance-profile/eks/prod-node"
		}},
		{name: "bad instance profile", mutate: func(a *config.TailorArgs) { a.Pools[0].InstanceProfile = "prod node" }, want: []string{`args.pools[0].instanceProfile: Invalid value: "prod node"`}},
		{name: "bottlerocket alias", mutate: func(a *config.TailorArgs) { a.Pools[0].AMI, a.Pools[0].ImageFamily = "bottlerocket", "bottlerocket" }},
		{name: "cluster bootstrap overrides", mutate: func(a *config.TailorArgs) {
			a.ClusterEndpoint, a.ClusterCABundle, a.ServiceCIDR, a.IPFamily = "https://ABC.gr7.us-east-1.eks.amazonaws.com", testCABundle(t), "10.100.0.0/16", "ipv4"
		}},
		{name: "ipv6 service CIDR", mutate: func(a *config.TailorArgs) { a.ServiceCIDR, a.IPFamily = "fd00:10:96::/108", "ipv6" }},
		{name: "http endpoint", mutate: func(a *config.TailorArgs) { a.ClusterEndpoint = "http://10.0.0.1" }, want: []string{`args.clusterEndpoint: Invalid value: "http://10.0.0.1"`}},
		{name: "endpoint with a path", mutate: func(a *config.TailorArgs) { a.ClusterEndpoint = "https://x.example/api" }, want: []string{"args.clusterEndpoint: Invalid value"}},
		{name: "CA not base64", mutate: func(a *config.TailorArgs) { a.ClusterCABundle = "-----BEGIN CERTIFICATE-----" }, want: []string{"args.clusterCABundle: Invalid value: \"<bundle>\": must be base64-encoded PEM"}},
		{name: "CA without a certificate", mutate: func(a *config.TailorArgs) { a.ClusterCABundle = "aGVsbG8=" }, want: []string{"args.clusterCABundle: Invalid value: \"<bundle>\": the decoded bundle holds no PEM CERTIFICATE block"}},
		{name: "bad service CIDR", mutate: func(a *config.TailorArgs) { a.ServiceCIDR = "10.100.0.1/16" }, want: []string{`args.serviceCIDR: Invalid value: "10.100.0.1/16"`}},
		{name: "service CIDR of the other family", mutate: func(a *config.TailorArgs) { a.ServiceCIDR, a.IPFamily = "10.100.0.0/16", "ipv6" }, want: []string{"args.serviceCIDR: Invalid value: \"10.100.0.0/16\": is not of the cluster's ipFamily ipv6"}},
		{name: "bad ip family", mutate: func(a *config.TailorArgs) { a.IPFamily = "dual" }, want: []string{`args.ipFamily: Unsupported value: "dual"`}},
		{name: "bad ami", mutate: func(a *config.TailorArgs) { a.Pools[0].AMI = "ubuntu" }, want: []string{`args.pools[0].ami: Invalid value: "ubuntu"`}},
		{name: "reserved label", mutate: func(a *config.TailorArgs) { a.Pools[0].Labels = map[string]string{"tailor.dev/pool": "x"} }, want: []string{"args.pools[0].labels[tailor.dev/pool]: Forbidden"}},
		{name: "kubelet-restricted label", mutate: func(a *config.TailorArgs) { a.Pools[0].Labels = map[string]string{"team.kubernetes.io/x": "y"} }, want: []string{"args.pools[0].labels[team.kubernetes.io/x]: Forbidden"}},
		{name: "kubelet's own label namespace is fine", mutate: func(a *config.TailorArgs) { a.Pools[0].Labels = map[string]string{"node.kubernetes.io/role": "web"} }},
		{name: "reserved taint", mutate: func(a *config.TailorArgs) { a.Pools[0].Taints[0].Key = "tailor.dev/unregistered" }, want: []string{"args.pools[0].taints[0].key: Forbidden"}},
		{name: "consolidation's taint", mutate: func(a *config.TailorArgs) { a.Pools[0].Taints[0].Key = "tailor.dev/disrupting" }, want: []string{"args.pools[0].taints[0].key: Forbidden"}},
		{name: "consolidation's taint as a startup taint", mutate: func(a *config.TailorArgs) {
			a.Pools[0].StartupTaints = []corev1.Taint{{Key: "tailor.dev/disrupting", Effect: corev1.TaintEffectNoSchedule}}
		}, want: []string{"args.pools[0].startupTaints[0].key: Forbidden"}},
		{name: "EKS cluster names may have capitals and underscores", mutate: func(a *config.TailorArgs) { a.ClusterName = "Prod_EU" }},
		{name: "bad consolidation policy", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.ConsolidationPolicy = "Always" }, want: []string{`args.pools[0].disruption.consolidationPolicy: Unsupported value: "Always"`}},
		{name: "negative consolidateAfter", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.ConsolidateAfter.Duration = -time.Second }, want: []string{"args.pools[0].disruption.consolidateAfter: Invalid value"}},
		{name: "negative expireAfter", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.ExpireAfter.Duration = -time.Hour }, want: []string{"args.pools[0].disruption.expireAfter: Invalid value"}},
		{name: "budget nodes not a number", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.Budgets[0].Nodes = "some" }, want: []string{`args.pools[0].disruption.budgets[0].nodes: Invalid value: "some"`}},
		{name: "budget over 100%", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.Budgets[0].Nodes = "150%" }, want: []string{"args.pools[0].disruption.budgets[0].nodes: Invalid value: \"150%\": a percentage must be at most 100%"}},
		{name: "budget schedule without duration", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.Budgets[1].Duration.Duration = 0 }, want: []string{"args.pools[0].disruption.budgets[1].duration: Required value"}},
		{name: "budget duration without schedule", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.Budgets[0].Duration.Duration = time.Hour }, want: []string{"args.pools[0].disruption.budgets[0].schedule: Required value"}},
		{name: "bad cron", mutate: func(a *config.TailorArgs) { a.Pools[0].Disruption.Budgets[1].Schedule = "at nine" }, want: []string{`args.pools[0].disruption.budgets[1].schedule: Invalid value: "at nine"`}},
		{name: "zero consolidation interval", mutate: func(a *config.TailorArgs) { a.ConsolidationInterval.Duration = 0 }, want: []string{"args.consolidationInterval: Invalid value"}},
		{name: "savings over 90%", mutate: func(a *config.TailorArgs) { a.ConsolidationMinSavingsPercent = 95 }, want: []string{"args.consolidationMinSavingsPercent: Invalid value: 95"}},
		{name: "gang zone policy", mutate: func(a *config.TailorArgs) { a.GangZonePolicy = "Nearby" }, want: []string{`args.gangZonePolicy: Unsupported value: "Nearby"`}},
		{name: "bad cluster name", mutate: func(a *config.TailorArgs) { a.ClusterName = "prod.eu" }, want: []string{`args.clusterName: Invalid value: "prod.eu"`}},
		{name: "bad taint effect", mutate: func(a *config.TailorArgs) { a.Pools[0].Taints[0].Effect = "Sometimes" }, want: []string{"args.pools[0].taints[0].effect: Unsupported value"}},
		{name: "unsupported limit", mutate: func(a *config.TailorArgs) {
			a.Pools[0].Limits = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
		}, want: []string{`args.pools[0].limits[pods]: Unsupported value: "pods"`}},
		{name: "weight out of range", mutate: func(a *config.TailorArgs) { a.Pools[0].Weight = 101 }, want: []string{"args.pools[0].weight: Invalid value: 101"}},
		{name: "batch max below idle", mutate: func(a *config.TailorArgs) { a.BatchMaxDuration.Duration = time.Millisecond }, want: []string{"args.batchMaxDuration: Invalid value"}},
		{name: "interruption queue by name", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "tailor-prod_1" }},
		{name: "interruption queue FIFO name", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "tailor.fifo" }},
		{name: "interruption queue by URL", mutate: func(a *config.TailorArgs) {
			a.InterruptionQueue = "https://sqs.us-east-1.amazonaws.com/123456789012/tailor-prod"
		}},
		{name: "interruption queue on a local endpoint", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "http://127.0.0.1:4566/000000000000/q" }},
		{name: "interruption queue name with a dot", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "tailor.prod" },
			want: []string{`args.interruptionQueue: Invalid value: "tailor.prod": not an SQS queue name`}},
		{name: "interruption queue name too long", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = strings.Repeat("q", 81) },
			want: []string{"args.interruptionQueue: Invalid value"}},
		{name: "interruption queue URL without account", mutate: func(a *config.TailorArgs) {
			a.InterruptionQueue = "https://sqs.us-east-1.amazonaws.com/tailor-prod"
		}, want: []string{"args.interruptionQueue: Invalid value", "/<12-digit account ID>/<queue name>"}},
		{name: "interruption queue ARN", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "arn:aws:sqs:us-east-1:123456789012:tailor" },
			want: []string{"args.interruptionQueue: Invalid value"}},
		{name: "interruption queue URL of another scheme", mutate: func(a *config.TailorArgs) { a.InterruptionQueue = "ftp://x/123456789012/q" },
			want: []string{"args.interruptionQueue: Invalid value", "not an SQS queue URL"}},
		{name: "several errors at once", mutate: func(a *config.TailorArgs) { a.ClusterName = ""; a.Pools[0].Name = "Bad_Name" }, want: []string{"args.clusterName", "args.pools[0].name"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := validArgs()
			tc.mutate(a)
			err := ValidateTailorArgs(field.NewPath("args"), a)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error, want %v", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// testCABundle is a fresh self-signed CA certificate, base64-encoded PEM as DescribeCluster
// reports certificateAuthority.data.
func testCABundle(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"}, IsCA: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}
