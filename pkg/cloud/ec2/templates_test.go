package ec2

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// tagSpecs reads TagSpecification.N.{ResourceType,Tag.M.Key,Tag.M.Value} of recorded request
// parameters into tags by resource type.
func tagSpecs(v url.Values, prefix string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for n := 1; ; n++ {
		p := prefix + "TagSpecification." + itoa(n) + "."
		rt := v.Get(p + "ResourceType")
		if rt == "" {
			return out
		}
		out[rt] = map[string]string{}
		for m := 1; v.Get(p+"Tag."+itoa(m)+".Key") != ""; m++ {
			out[rt][v.Get(p+"Tag."+itoa(m)+".Key")] = v.Get(p + "Tag." + itoa(m) + ".Value")
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// TestLaunchTagsEverything checks what the controller IAM policy relies on: every resource a
// launch creates is tagged at creation with the cluster's ownership tags (and the pool's), the
// template pins IMDSv2 without instance tags, and the fleet names an explicit template version.
func TestLaunchTagsEverything(t *testing.T) {
	owned := map[string]string{"kubernetes.io/cluster/" + cluster: "owned", "eks:eks-cluster-name": cluster}
	templateTags := map[string]string{"tailor.dev/pool": "general", "tailor.dev/pool-hash": "0123456789abcdef"}
	for _, ct := range []cloud.CapacityType{cloud.OnDemand, cloud.Spot} {
		t.Run(string(ct), func(t *testing.T) {
			e := newEnv(t)
			req := e.request(t, "claim-"+string(ct), ct, cloud.Override{InstanceType: "m5.large", SubnetID: e.subnet(t, e.sim.Zones()[0])})
			req.Tags = map[string]string{"tailor.dev/pool": "general", "tailor.dev/claim": "claim-1", "Name": "claim-1"} // no ownership tags: the provider adds them
			req.TemplateTags = templateTags
			res, err := e.p.Launch(testCtx(t), req)
			if err != nil || res.Instance == nil {
				t.Fatalf("%+v %v", res, err)
			}
			wantTemplate := maps.Clone(owned)
			maps.Copy(wantTemplate, templateTags)
			wantResource := maps.Clone(wantTemplate)
			maps.Copy(wantResource, req.Tags)

			lt := e.sim.LaunchTemplates()[0]
			if !maps.Equal(lt.Tags, wantTemplate) {
				t.Errorf("launch template tags %v, want %v", lt.Tags, wantTemplate)
			}
			inTemplate := tagSpecs(lt.Data, "")
			wantTypes := []string{"instance", "network-interface", "volume"}
			if ct == cloud.Spot {
				wantTypes = append(wantTypes, "spot-instances-request")
			}
			slices.Sort(wantTypes)
			if got := slices.Sorted(maps.Keys(inTemplate)); !slices.Equal(got, wantTypes) {
				t.Errorf("template tags resource types %v, want %v", got, wantTypes)
			}
			for rt, tags := range inTemplate {
				if !maps.Equal(tags, wantTemplate) {
					t.Errorf("template tags %s with %v, want %v", rt, tags, wantTemplate)
				}
			}
			for k, want := range map[string]string{
				"MetadataOptions.HttpTokens": "required", "MetadataOptions.HttpEndpoint": "enabled",
				"MetadataOptions.HttpPutResponseHopLimit": "1", "MetadataOptions.InstanceMetadataTags": "disabled",
			} {
				if got := lt.Data.Get(k); got != want {
					t.Errorf("launch template data %s = %q, want %q", k, got, want)
				}
			}

			fleet := e.sim.Requests("CreateFleet")[0]
			inFleet := tagSpecs(fleet, "")
			if got := slices.Sorted(maps.Keys(inFleet)); !slices.Equal(got, []string{"fleet", "instance", "volume"}) {
				t.Errorf("CreateFleet tags resource types %v", got)
			}
			for rt, tags := range inFleet {
				if !maps.Equal(tags, wantResource) {
					t.Errorf("CreateFleet tags %s with %v, want %v", rt, tags, wantResource)
				}
			}
			if got := fleet.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version"); got != "1" {
				t.Errorf("launch template version %q, want the explicit version 1", got)
			}
			if got := fleet.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId"); got != lt.ID {
				t.Errorf("launch template ID %q, want %s", got, lt.ID)
			}
			for k, v := range wantResource {
				if res.Instance.Tags[k] != v {
					t.Errorf("instance tag %s = %q, want %q (tags %v)", k, res.Instance.Tags[k], v, res.Instance.Tags)
				}
			}
		})
	}
}

// TestLaunchTemplatesListAndDelete covers the calls behind the template garbage collection, and
// a template made by another run (AlreadyExists), whose ID and version come from
// DescribeLaunchTemplates.
func TestLaunchTemplatesListAndDelete(t *testing.T) {
	e := newEnv(t)
	a := e.subnet(t, e.sim.Zones()[0])
	launch := func(p *Provider, token, pool string) {
		t.Helper()
		req := e.request(t, token, cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a})
		req.TemplateTags = map[string]string{"tailor.dev/pool": pool}
		if res, err := p.Launch(testCtx(t), req); err != nil || res.Instance == nil {
			t.Fatalf("%+v %v", res, err)
		}
	}
	launch(e.p, "c1", "general")
	launch(e.p, "c2", "gpu")

	// Another Provider (a restarted Tailor) finds the existing template of the same content.
	restarted, err := NewFromConfig(testConfig(e.url), e.p.opts)
	if err != nil {
		t.Fatal(err)
	}
	launch(restarted, "c3", "general")
	if n, creates := len(e.sim.LaunchTemplates()), e.sim.Calls("CreateLaunchTemplate"); n != 2 || creates != 3 {
		t.Errorf("%d templates after %d creates, want 2 after 3", n, creates)
	}
	last := e.sim.Requests("CreateFleet")
	if got := last[len(last)-1].Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.Version"); got != "1" {
		t.Errorf("version %q after AlreadyExists", got)
	}

	tests := []struct {
		name string
		tags map[string]string
		want []string
	}{
		{"every pool", map[string]string{"tailor.dev/pool": "*"}, []string{"general", "gpu"}},
		{"one pool", map[string]string{"tailor.dev/pool": "gpu"}, []string{"gpu"}},
		{"no tags", nil, []string{"general", "gpu"}},
		{"unknown pool", map[string]string{"tailor.dev/pool": "none"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := e.p.LaunchTemplates(testCtx(t), tt.tags)
			if err != nil {
				t.Fatal(err)
			}
			var pools []string
			for _, lt := range got {
				if lt.ID == "" || !strings.HasPrefix(lt.Name, "tailor-demo-") || lt.Created.IsZero() || lt.Tags["kubernetes.io/cluster/demo"] != "owned" {
					t.Errorf("template %+v", lt)
				}
				pools = append(pools, lt.Tags["tailor.dev/pool"])
			}
			if slices.Sort(pools); !slices.Equal(pools, tt.want) {
				t.Errorf("pools %v, want %v", pools, tt.want)
			}
		})
	}

	gpu, _ := e.p.LaunchTemplates(testCtx(t), map[string]string{"tailor.dev/pool": "gpu"})
	if err := e.p.DeleteLaunchTemplate(testCtx(t), gpu[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := e.p.DeleteLaunchTemplate(testCtx(t), gpu[0].ID); err != nil {
		t.Errorf("deleting again: %v", err)
	}
	if n := len(e.sim.LaunchTemplates()); n != 1 {
		t.Errorf("%d templates after deleting one", n)
	}
	// The provider forgot it: the next launch of that pool creates it again, without a failed
	// CreateFleet first.
	fleets := e.sim.Calls("CreateFleet")
	launch(e.p, "c4", "gpu")
	if n, f := len(e.sim.LaunchTemplates()), e.sim.Calls("CreateFleet")-fleets; n != 2 || f != 1 {
		t.Errorf("%d templates and %d CreateFleet calls after relaunching the deleted pool", n, f)
	}
}

// An IPv6 cluster's templates give the primary interface an IPv6 address, its primary IPv6, and
// the security groups (none on the instance); an IPv4 cluster's keep the groups on the instance
// and no interface.
func TestIPv6Templates(t *testing.T) {
	for _, family := range []string{"ipv4", "ipv6"} {
		t.Run(family, func(t *testing.T) {
			e := newEnv(t)
			opts := e.p.opts
			opts.IPFamily = family
			if family == "ipv6" {
				opts.ClusterCIDR = "fd00:10:96::/108"
			}
			p, err := NewFromConfig(testConfig(e.url), opts)
			if err != nil {
				t.Fatal(err)
			}
			req := e.request(t, "claim-"+family, cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: e.subnet(t, e.sim.Zones()[0])})
			if res, err := p.Launch(testCtx(t), req); err != nil || res.Instance == nil {
				t.Fatalf("%+v %v", res, err)
			}
			lt := e.sim.LaunchTemplates()[0]
			sg := e.sim.ClusterSecurityGroupID()
			want := map[string]string{"SecurityGroupId.1": sg}
			if family == "ipv6" {
				want = map[string]string{"SecurityGroupId.1": "", "NetworkInterface.1.DeviceIndex": "0", "NetworkInterface.1.SecurityGroupId.1": sg,
					"NetworkInterface.1.Ipv6AddressCount": "1", "NetworkInterface.1.PrimaryIpv6": "true"}
			} else {
				want["NetworkInterface.1.DeviceIndex"] = ""
			}
			for k, v := range want {
				if got := lt.Data.Get(k); got != v {
					t.Errorf("launch template data %s = %q, want %q", k, got, v)
				}
			}
			if in := e.sim.Instances(); len(in) != 1 {
				t.Fatalf("%d instances", len(in))
			}
		})
	}
}

// A pool's launch settings reach the launch template as EC2 takes them; the defaults keep the
// template (and its name) as it was.
func TestLaunchSettingsInTheTemplate(t *testing.T) {
	e := newEnv(t)
	a := e.subnet(t, e.sim.Zones()[0])
	launch := func(token string, s cloud.LaunchSettings) url.Values {
		t.Helper()
		req := e.request(t, token, cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a})
		req.Settings = s
		if res, err := e.p.Launch(testCtx(t), req); err != nil || res.Instance == nil {
			t.Fatalf("%+v %v", res, err)
		}
		lts := e.sim.LaunchTemplates()
		return lts[len(lts)-1].Data
	}
	defaults := launch("c-default", cloud.LaunchSettings{HTTPTokens: "required", HopLimit: 1})
	for k, want := range map[string]string{
		"BlockDeviceMapping.1.DeviceName": "/dev/xvda", "BlockDeviceMapping.1.Ebs.VolumeSize": "20", "BlockDeviceMapping.1.Ebs.VolumeType": "gp3",
		"MetadataOptions.HttpTokens": "required", "MetadataOptions.HttpPutResponseHopLimit": "1", "MetadataOptions.HttpProtocolIpv6": "", "Monitoring.Enabled": "",
	} {
		if got := defaults.Get(k); got != want {
			t.Errorf("defaults: %s = %q, want %q", k, got, want)
		}
	}
	custom := launch("c-custom", cloud.LaunchSettings{HTTPTokens: "optional", HopLimit: 2, IMDSIPv6: true, DetailedMonitoring: true,
		BlockDevices: []cloud.BlockDevice{{DeviceName: "/dev/xvda", SizeGiB: 100, VolumeType: "gp3", IOPS: 6000, Throughput: 250,
			Encrypted: true, KMSKeyID: "arn:aws:kms:us-east-1:123456789012:key/abcd", DeleteOnTermination: true}}})
	if n := len(e.sim.LaunchTemplates()); n != 2 {
		t.Fatalf("%d launch templates, want one per set of settings", n)
	}
	for k, want := range map[string]string{
		"BlockDeviceMapping.1.DeviceName": "/dev/xvda", "BlockDeviceMapping.1.Ebs.VolumeSize": "100", "BlockDeviceMapping.1.Ebs.Iops": "6000",
		"BlockDeviceMapping.1.Ebs.Throughput": "250", "BlockDeviceMapping.1.Ebs.KmsKeyId": "arn:aws:kms:us-east-1:123456789012:key/abcd",
		"BlockDeviceMapping.1.Ebs.Encrypted": "true", "BlockDeviceMapping.1.Ebs.DeleteOnTermination": "true", "BlockDeviceMapping.2.DeviceName": "",
		"MetadataOptions.HttpTokens": "optional", "MetadataOptions.HttpPutResponseHopLimit": "2", "MetadataOptions.HttpProtocolIpv6": "enabled",
		"MetadataOptions.InstanceMetadataTags": "disabled", "Monitoring.Enabled": "true",
	} {
		if got := custom.Get(k); got != want {
			t.Errorf("custom: %s = %q, want %q", k, got, want)
		}
	}
}

// The pool's image family, user data and public IP choice reach the template: an image ID of the
// Bottlerocket family gets Bottlerocket's settings with the pool's merged under Tailor's; AL2023
// gets the pool's parts before Tailor's NodeConfig; a custom image gets the pool's user data
// alone and keeps its own volumes; a public IP is asked for on the primary interface.
func TestImageFamilyAndUserDataInTheTemplate(t *testing.T) {
	e := newEnv(t)
	a := e.subnet(t, e.sim.Zones()[0])
	launch := func(token, image string, s cloud.LaunchSettings) (url.Values, string) {
		t.Helper()
		req := e.request(t, token, cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a})
		req.Image, req.Settings = image, s
		res, err := e.p.Launch(testCtx(t), req)
		if err != nil || res.Instance == nil {
			t.Fatalf("%+v %v", res, err)
		}
		lts := e.sim.LaunchTemplates()
		ud, _ := e.sim.UserData(res.Instance.ID)
		return lts[len(lts)-1].Data, ud
	}
	ami, _ := e.sim.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	yes := true

	_, br := launch("c-br", ami, cloud.LaunchSettings{ImageFamily: familyBottlerocket,
		UserData: "[settings.kernel]\nlockdown = \"integrity\"\n[settings.kubernetes]\ncluster-name = \"not-mine\"\nmax-pods = 7\n"})
	for _, want := range []string{"lockdown = \"integrity\"", "cluster-name = \"" + cluster + "\"", "max-pods = 29"} {
		if !strings.Contains(br, want) {
			t.Errorf("bottlerocket user data lacks %q:\n%s", want, br)
		}
	}

	_, al := launch("c-al", "al2023", cloud.LaunchSettings{UserData: "#!/bin/bash\necho pool-script\n"})
	script, nodeConfig := strings.Index(al, "echo pool-script"), strings.Index(al, "kind: NodeConfig")
	if script < 0 || nodeConfig < script || !strings.Contains(al, "Content-Type: text/x-shellscript") {
		t.Errorf("AL2023 user data does not put the pool's script before Tailor's NodeConfig:\n%s", al)
	}

	data, custom := launch("c-custom", ami, cloud.LaunchSettings{ImageFamily: familyCustom, UserData: "#!/bin/bash\n/opt/join.sh\n", AssociatePublicIP: &yes})
	if custom != "#!/bin/bash\n/opt/join.sh\n" {
		t.Errorf("custom user data %q, want the pool's alone", custom)
	}
	for k, want := range map[string]string{
		"BlockDeviceMapping.1.DeviceName": "", "NetworkInterface.1.AssociatePublicIpAddress": "true", "NetworkInterface.1.DeviceIndex": "0",
		"NetworkInterface.1.SecurityGroupId.1": e.sim.ClusterSecurityGroupID(), "SecurityGroupId.1": "",
	} {
		if got := data.Get(k); got != want {
			t.Errorf("custom: %s = %q, want %q", k, got, want)
		}
	}
}
