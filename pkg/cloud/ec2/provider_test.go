package ec2

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

const cluster = "demo"

// env is a simulator served over HTTP and a Provider talking to it through the real SDK.
type env struct {
	sim *ec2sim.Sim
	p   *Provider
	url string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	p, err := NewFromConfig(testConfig(srv.URL), Options{ClusterName: cluster, KubernetesVersion: "1.34", ClusterEndpoint: "https://example.eks.amazonaws.com", ClusterCIDR: "10.100.0.0/16"})
	if err != nil {
		t.Fatal(err)
	}
	return &env{sim: sim, p: p, url: srv.URL}
}

// testConfig talks to url with static credentials and the standard retryer without delays.
func testConfig(url string) aws.Config {
	return aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""),
		BaseEndpoint: aws.String(url),
		Retryer: func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) {
				o.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
			})
		},
	}
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *env) subnet(t *testing.T, zone string) string {
	t.Helper()
	for _, sn := range e.sim.Subnets() {
		if sn.Zone == zone {
			return sn.ID
		}
	}
	t.Fatalf("no subnet in %s", zone)
	return ""
}

func (e *env) request(t *testing.T, token string, ct cloud.CapacityType, overrides ...cloud.Override) cloud.LaunchRequest {
	return cloud.LaunchRequest{
		ClientToken:      token,
		CapacityType:     ct,
		Overrides:        overrides,
		Image:            "al2023",
		InstanceProfile:  "demo-node",
		SecurityGroupIDs: []string{e.sim.ClusterSecurityGroupID()},
		NodeLabels:       map[string]string{"tailor.dev/pool": "general", "team": "a"},
		NodeTaints:       []cloud.Taint{{Key: "tailor.dev/unregistered", Value: "true", Effect: "NoSchedule"}},
		Tags:             map[string]string{"kubernetes.io/cluster/" + cluster: "owned", "tailor.dev/claim": token},
	}
}

func TestNewFromEnvironment(t *testing.T) {
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL_EC2": srv.URL, "AWS_ENDPOINT_URL_SSM": srv.URL, "AWS_REGION": "us-east-1",
		"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": t.TempDir() + "/none", "AWS_SHARED_CREDENTIALS_FILE": t.TempDir() + "/none", "AWS_PROFILE": "",
	} {
		t.Setenv(k, v)
	}
	p, err := New(testCtx(t), Options{ClusterName: cluster, KubernetesVersion: "1.34"})
	if err != nil {
		t.Fatal(err)
	}
	sgs, err := p.SecurityGroups(testCtx(t), cloud.Selector{Tags: map[string]string{"tailor.dev/discovery": cluster}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sgs, []string{sim.ClusterSecurityGroupID()}) {
		t.Errorf("security groups %v", sgs)
	}
	if id, err := p.parameter(testCtx(t), "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id"); err != nil || !strings.HasPrefix(id, "ami-") {
		t.Errorf("SSM through AWS_ENDPOINT_URL_SSM: %q %v", id, err)
	}
}

func TestNewValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  aws.Config
		opts Options
		want string
	}{
		{"no region", aws.Config{}, Options{ClusterName: "x"}, "region"},
		{"no cluster", aws.Config{Region: "us-east-1"}, Options{}, "ClusterName"},
		{"bad version", aws.Config{Region: "us-east-1"}, Options{ClusterName: "x", KubernetesVersion: "v1.34"}, "KubernetesVersion"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := NewFromConfig(tt.cfg, tt.opts); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one about %s", err, tt.want)
			}
		})
	}
}

func TestInstanceTypes(t *testing.T) {
	e := newEnv(t)
	types, err := e.p.InstanceTypes(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(types) < 1000 {
		t.Fatalf("%d types", len(types))
	}
	byName := map[string]cloud.InstanceType{}
	archs := map[string]int{}
	for _, it := range types {
		byName[it.Name] = it
		archs[it.Arch]++
		if len(it.Offerings) == 0 {
			t.Errorf("%s has no offerings", it.Name)
		}
		for _, o := range it.Offerings {
			if o.PricePerHour <= 0 {
				t.Errorf("%s %s %s has no price", it.Name, o.Zone, o.CapacityType)
			}
		}
	}
	if archs["amd64"] < 500 || archs["arm64"] < 200 || len(archs) != 2 {
		t.Errorf("architectures %v", archs)
	}
	if _, ok := byName["mac1.metal"]; ok {
		t.Error("mac type listed")
	}

	tests := []struct {
		name             string
		arch             string
		vcpus, mem       int64
		enis, ipv4PerENI int64
		gpus             int64
		gpuName          string
		spot             bool
	}{
		{name: "m5.large", arch: "amd64", vcpus: 2, mem: 8192, enis: 3, ipv4PerENI: 10, spot: true},
		{name: "m6g.large", arch: "arm64", vcpus: 2, mem: 8192, enis: 3, ipv4PerENI: 10, spot: true},
		{name: "g5.xlarge", arch: "amd64", vcpus: 4, mem: 16384, enis: 4, ipv4PerENI: 15, gpus: 1, gpuName: "A10G", spot: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			it, ok := byName[tt.name]
			if !ok {
				t.Fatal("missing")
			}
			if it.Arch != tt.arch || it.VCPUs != tt.vcpus || it.MemoryMiB != tt.mem || it.MaxENIs != tt.enis || it.IPv4PerENI != tt.ipv4PerENI {
				t.Errorf("got %+v", it)
			}
			if it.GPUCount != tt.gpus || it.GPUName != tt.gpuName || (tt.gpus > 0) != (it.GPUMemoryMiB > 0) {
				t.Errorf("GPU %d %q %d MiB", it.GPUCount, it.GPUName, it.GPUMemoryMiB)
			}
			od, _ := e.sim.OnDemandPrice(tt.name)
			for _, zone := range e.sim.Zones() {
				want := 0
				if e.sim.Offered(tt.name, zone) {
					want = 1
				}
				for _, ct := range []cloud.CapacityType{cloud.OnDemand, cloud.Spot} {
					i := slices.IndexFunc(it.Offerings, func(o cloud.Offering) bool { return o.Zone == zone && o.CapacityType == ct })
					if (i >= 0) != (want == 1) {
						t.Errorf("%s %s offered=%v", zone, ct, i >= 0)
						continue
					}
					if i < 0 {
						continue
					}
					price := it.Offerings[i].PricePerHour
					if ct == cloud.OnDemand && price != od {
						t.Errorf("on-demand price %v, want %v", price, od)
					}
					if sp, _ := e.sim.SpotPrice(tt.name, zone); ct == cloud.Spot && price != sp {
						t.Errorf("spot price %v, want %v", price, sp)
					}
				}
			}
		})
	}

	// A type missing from a zone has no offering there; a type without spot has no spot offering.
	for _, it := range types {
		for _, o := range it.Offerings {
			if !e.sim.Offered(it.Name, o.Zone) {
				t.Errorf("%s offered in %s", it.Name, o.Zone)
			}
		}
	}

	// Cached: a second call asks EC2 nothing.
	calls := e.sim.Calls("DescribeInstanceTypes")
	again, err := e.p.InstanceTypes(testCtx(t))
	if err != nil || len(again) != len(types) || e.sim.Calls("DescribeInstanceTypes") != calls {
		t.Errorf("second call: %d types, %v, %d calls", len(again), err, e.sim.Calls("DescribeInstanceTypes")-calls)
	}
	again[0].Offerings[0].PricePerHour = -1
	third, _ := e.p.InstanceTypes(testCtx(t))
	if third[0].Offerings[0].PricePerHour == -1 {
		t.Error("InstanceTypes shares offerings with its cache")
	}
}

func TestSubnetsAndSecurityGroups(t *testing.T) {
	e := newEnv(t)
	all := e.sim.Subnets()
	tests := []struct {
		name        string
		sel         cloud.Selector
		wantSubnets int
		wantGroups  int
		wantErr     string
	}{
		{name: "discovery tag", sel: cloud.Selector{Tags: map[string]string{"tailor.dev/discovery": cluster}}, wantSubnets: 6, wantGroups: 1},
		{name: "any value", sel: cloud.Selector{Tags: map[string]string{"kubernetes.io/cluster/" + cluster: "*"}}, wantSubnets: 6, wantGroups: 1},
		{name: "two tags", sel: cloud.Selector{Tags: map[string]string{"tailor.dev/discovery": cluster, "kubernetes.io/role/internal-elb": "1"}}, wantSubnets: 6, wantGroups: 0},
		{name: "other cluster", sel: cloud.Selector{Tags: map[string]string{"tailor.dev/discovery": "other"}}},
		{name: "both", sel: cloud.Selector{IDs: []string{"x"}, Tags: map[string]string{"a": "b"}}, wantErr: "both"},
		{name: "empty", sel: cloud.Selector{}, wantErr: "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			subnets, err := e.p.Subnets(testCtx(t), tt.sel)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			groups, err := e.p.SecurityGroups(testCtx(t), tt.sel)
			if err != nil {
				t.Fatal(err)
			}
			if len(subnets) != tt.wantSubnets || len(groups) != tt.wantGroups {
				t.Errorf("%d subnets, %d groups", len(subnets), len(groups))
			}
		})
	}
	got, err := e.p.Subnets(testCtx(t), cloud.Selector{IDs: []string{all[3].ID}})
	if err != nil || len(got) != 1 || got[0] != all[3] {
		t.Errorf("by ID: %+v %v, want %+v", got, err, all[3])
	}
	if _, err := e.p.Subnets(testCtx(t), cloud.Selector{IDs: []string{"subnet-0123456789abcdef0"}}); apiErrorCode(err) != "InvalidSubnetID.NotFound" {
		t.Errorf("unknown ID: %v", err)
	}
}

func TestLaunch(t *testing.T) {
	e := newEnv(t)
	zoneA, zoneB := e.sim.Zones()[0], e.sim.Zones()[1]
	a, b := e.subnet(t, zoneA), e.subnet(t, zoneB)

	t.Run("idempotent client token", func(t *testing.T) {
		req := e.request(t, "claim-1", cloud.OnDemand, cloud.Override{InstanceType: "m5.xlarge", SubnetID: a}, cloud.Override{InstanceType: "m5.large", SubnetID: b})
		first, err := e.p.Launch(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		second, err := e.p.Launch(testCtx(t), req)
		if err != nil {
			t.Fatal(err)
		}
		if first.Instance == nil || second.Instance == nil || first.Instance.ID != second.Instance.ID {
			t.Fatalf("first %+v second %+v", first.Instance, second.Instance)
		}
		if n := e.sim.FleetRequests(); n != 1 {
			t.Errorf("sim created %d fleets", n)
		}
		in := first.Instance
		if in.Type != "m5.large" || in.Zone != zoneB || in.SubnetID != b || in.State != cloud.StateRunning || in.CapacityType != cloud.OnDemand {
			t.Errorf("instance %+v", in)
		}
		if !strings.HasPrefix(in.PrivateDNSName, "ip-10-0-") || !strings.HasSuffix(in.PrivateDNSName, ".ec2.internal") || in.PrivateIP == "" {
			t.Errorf("dns %q ip %q", in.PrivateDNSName, in.PrivateIP)
		}
		if in.Tags["tailor.dev/claim"] != "claim-1" || in.ProviderID() != "aws:///"+zoneB+"/"+in.ID {
			t.Errorf("tags %v provider ID %s", in.Tags, in.ProviderID())
		}
		x86, _ := e.sim.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
		if in.ImageID != x86 {
			t.Errorf("image %s, want %s", in.ImageID, x86)
		}
		fleet := e.sim.Requests("CreateFleet")[0]
		for k, want := range map[string]string{
			"ClientToken": "claim-1", "Type": "instant", "TargetCapacitySpecification.TotalTargetCapacity": "1",
			"TargetCapacitySpecification.DefaultTargetCapacityType": "on-demand", "OnDemandOptions.AllocationStrategy": "lowest-price",
			// m5.xlarge (58 pods) and m5.large (29) need different kubelet maxPods, so each has
			// its own launch template config.
			"LaunchTemplateConfigs.1.Overrides.1.InstanceType": "m5.xlarge", "LaunchTemplateConfigs.2.Overrides.1.SubnetId": b,
			"LaunchTemplateConfigs.2.Overrides.1.InstanceType": "m5.large", "LaunchTemplateConfigs.2.Overrides.1.AvailabilityZone": zoneB,
			"LaunchTemplateConfigs.2.Overrides.2.InstanceType": "", "TagSpecification.3.ResourceType": "fleet",
		} {
			if got := fleet.Get(k); got != want {
				t.Errorf("CreateFleet %s = %q, want %q", k, got, want)
			}
		}
	})

	t.Run("launch template and user data", func(t *testing.T) {
		lts := e.sim.LaunchTemplates()
		if len(lts) != 2 {
			t.Fatalf("%d launch templates, want one per pod limit (58 and 29)", len(lts))
		}
		var maxPods []string
		for _, lt := range lts {
			for _, n := range []string{"29", "58"} {
				if strings.Contains(lt.UserData, "maxPods: "+n+"\n") {
					maxPods = append(maxPods, n)
				}
			}
		}
		if slices.Sort(maxPods); !slices.Equal(maxPods, []string{"29", "58"}) {
			t.Errorf("templates' kubelet maxPods %v, want [29 58]", maxPods)
		}
		lt := lts[0]
		if !strings.HasPrefix(lt.Name, "tailor-demo-") || lt.InstanceProfile != "demo-node" || !slices.Equal(lt.SecurityGroupIDs, []string{e.sim.ClusterSecurityGroupID()}) || lt.Tags["kubernetes.io/cluster/demo"] != "owned" {
			t.Errorf("launch template %+v", lt)
		}
		for _, want := range []string{
			"Content-Type: application/node.eks.aws", "kind: NodeConfig", `name: "demo"`,
			`apiServerEndpoint: "https://example.eks.amazonaws.com"`, `cidr: "10.100.0.0/16"`,
			`- "--node-labels=tailor.dev/pool=general,team=a"`,
			`- "--register-with-taints=tailor.dev/unregistered=true:NoSchedule"`,
		} {
			if !strings.Contains(lt.UserData, want) {
				t.Errorf("user data lacks %q:\n%s", want, lt.UserData)
			}
		}
		// Another launch with the same shape and pod limit (c5.large: 29) reuses the template.
		if _, err := e.p.Launch(testCtx(t), e.request(t, "claim-2", cloud.OnDemand, cloud.Override{InstanceType: "c5.large", SubnetID: a})); err != nil {
			t.Fatal(err)
		}
		if n := len(e.sim.LaunchTemplates()); n != 2 || e.sim.Calls("CreateLaunchTemplate") != 2 {
			t.Errorf("%d templates after %d creates", n, e.sim.Calls("CreateLaunchTemplate"))
		}
	})

	t.Run("insufficient capacity falls through to the next override", func(t *testing.T) {
		e.sim.SetCapacity("r5.large", zoneA, cloud.OnDemand, 0)
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-ice", cloud.OnDemand,
			cloud.Override{InstanceType: "r5.large", SubnetID: a}, cloud.Override{InstanceType: "r5.large", SubnetID: b}))
		if err != nil {
			t.Fatal(err)
		}
		want := []cloud.OfferingError{{InstanceType: "r5.large", Zone: zoneA, SubnetID: a, Code: "InsufficientInstanceCapacity"}}
		if len(res.Errors) != 1 || res.Errors[0].Message == "" {
			t.Fatalf("errors %+v", res.Errors)
		}
		res.Errors[0].Message = ""
		if !slices.Equal(res.Errors, want) {
			t.Errorf("errors %+v, want %+v", res.Errors, want)
		}
		if res.Instance == nil || res.Instance.Zone != zoneB {
			t.Errorf("instance %+v", res.Instance)
		}
	})

	t.Run("no capacity anywhere", func(t *testing.T) {
		e.sim.SetCapacity("r5.xlarge", "", cloud.Spot, 0)
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-none", cloud.Spot,
			cloud.Override{InstanceType: "r5.xlarge", SubnetID: a}, cloud.Override{InstanceType: "r5.xlarge", SubnetID: b}))
		if err != nil {
			t.Fatal(err)
		}
		if res.Instance != nil || len(res.Errors) != 2 {
			t.Errorf("result %+v", res)
		}
	})

	t.Run("spot on arm64", func(t *testing.T) {
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-arm", cloud.Spot, cloud.Override{InstanceType: "m6g.large", SubnetID: a}))
		if err != nil {
			t.Fatal(err)
		}
		arm, _ := e.sim.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/arm64/standard/recommended/image_id")
		if res.Instance == nil || res.Instance.CapacityType != cloud.Spot || res.Instance.ImageID != arm || len(res.Errors) != 0 {
			t.Errorf("result %+v %+v", res.Instance, res.Errors)
		}
		last := e.sim.Requests("CreateFleet")
		if got := last[len(last)-1].Get("SpotOptions.AllocationStrategy"); got != "price-capacity-optimized" {
			t.Errorf("spot strategy %q", got)
		}
	})

	t.Run("template deleted behind the cache", func(t *testing.T) {
		for _, lt := range e.sim.LaunchTemplates() {
			if _, err := e.p.ec2.DeleteLaunchTemplate(testCtx(t), &ec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(lt.Name)}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-relaunch", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}))
		if err != nil || res.Instance == nil {
			t.Fatalf("%+v %v", res, err)
		}
	})

	t.Run("CreateFleet throttled past the SDK's retries is transient", func(t *testing.T) {
		for _, code := range []string{"RequestLimitExceeded", "InternalError"} {
			e.sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: code})
			_, err := e.p.Launch(testCtx(t), e.request(t, "claim-pressed", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}))
			e.sim.ClearFaults()
			if k := cloud.KindOf(err); k != cloud.KindTransient {
				t.Errorf("%s: error %v of kind %v, want transient", code, err, k)
			}
		}
	})

	t.Run("throttled CreateFleet is retried by the SDK", func(t *testing.T) {
		e.sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "RequestLimitExceeded", Times: 2})
		before := e.sim.Calls("CreateFleet")
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-throttled", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}))
		if err != nil || res.Instance == nil {
			t.Fatalf("%+v %v", res, err)
		}
		if n := e.sim.Calls("CreateFleet") - before; n != 3 {
			t.Errorf("%d CreateFleet calls", n)
		}
	})

	// An account quota reported on the overrides is no offering's failure: it is not in Errors
	// (the launcher marks those unavailable), and a launch that got nothing is an error.
	t.Run("account quota in the fleet errors", func(t *testing.T) {
		for _, tt := range []struct {
			code string
			ct   cloud.CapacityType
		}{{"VcpuLimitExceeded", cloud.OnDemand}, {"MaxSpotInstanceCountExceeded", cloud.Spot}} {
			// Until cleared: a template deleted by an earlier subtest costs a first CreateFleet.
			e.sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: tt.code, InFleet: true})
			fleets := e.sim.FleetRequests()
			res, err := e.p.Launch(testCtx(t), e.request(t, "claim-quota-"+string(tt.ct), tt.ct,
				cloud.Override{InstanceType: "m5.large", SubnetID: a}, cloud.Override{InstanceType: "m5.xlarge", SubnetID: b}))
			e.sim.ClearFaults()
			if err == nil || !strings.Contains(err.Error(), "account quota") || !strings.Contains(err.Error(), tt.code) || res != nil && (res.Instance != nil || len(res.Errors) > 0) {
				t.Errorf("%s: result %+v, error %v; want an account quota error", tt.code, res, err)
			}
			if k := cloud.KindOf(err); k != cloud.KindQuota {
				t.Errorf("%s: error of kind %v, want quota", tt.code, k)
			}
			if got := e.sim.FleetRequests() - fleets; got != 1 {
				t.Errorf("%s: %d fleets created, want 1 (the fault answers in the fleet's errors)", tt.code, got)
			}
		}
		// With an instance launched beside a quota refusal, only offering failures are reported.
		e.sim.SetCapacity("m5.large", zoneA, cloud.OnDemand, 0)
		t.Cleanup(func() { e.sim.SetCapacity("m5.large", zoneA, cloud.OnDemand, -1) })
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-quota-ice", cloud.OnDemand,
			cloud.Override{InstanceType: "m5.large", SubnetID: a}, cloud.Override{InstanceType: "m5.xlarge", SubnetID: b}))
		if err != nil || res.Instance == nil || len(res.Errors) != 1 || res.Errors[0].Code != "InsufficientInstanceCapacity" {
			t.Errorf("result %+v, error %v; want an instance and the one capacity error", res, err)
		}
	})

	// Only capacity codes are offering failures: a refusal of the request or of the caller's
	// identity, reported on every override, is the launch's error of its kind, quoting EC2.
	t.Run("refusals in the fleet errors", func(t *testing.T) {
		for _, tt := range []struct {
			code, message  string
			ct             cloud.CapacityType
			kind           cloud.ErrorKind
			want           []string
			spotNotEnabled bool
		}{
			{"UnauthorizedOperation", "You are not authorized to perform this operation.", cloud.OnDemand, cloud.KindPermission,
				[]string{"permission error", "UnauthorizedOperation: You are not authorized to perform this operation."}, false},
			{"InvalidParameterValue", "Volume of size 8GB is smaller than snapshot 'snap-1', expect size >= 20GB", cloud.OnDemand, cloud.KindConfiguration,
				[]string{"configuration error", "InvalidParameterValue: Volume of size 8GB is smaller than snapshot"}, false},
			{"AuthFailure.ServiceLinkedRoleCreationNotPermitted", "The provided credentials do not have permission to create the service-linked role for EC2 Spot Instances.", cloud.Spot, cloud.KindPermission,
				[]string{"aws iam create-service-linked-role --aws-service-name spot.amazonaws.com", "create_spot_service_linked_role = true", "AuthFailure.ServiceLinkedRoleCreationNotPermitted"}, true},
			{"SomethingNew", "A code nobody knows yet.", cloud.OnDemand, cloud.KindOther, []string{"SomethingNew: A code nobody knows yet."}, false},
		} {
			e.sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: tt.code, Message: tt.message, InFleet: true})
			res, err := e.p.Launch(testCtx(t), e.request(t, "claim-refused-"+strings.ToLower(tt.code), tt.ct,
				cloud.Override{InstanceType: "m5.large", SubnetID: a}, cloud.Override{InstanceType: "m5.xlarge", SubnetID: b}))
			e.sim.ClearFaults()
			if res != nil && (res.Instance != nil || len(res.Errors) > 0) || err == nil {
				t.Errorf("%s: result %+v, error %v; want no instance, no offering without capacity and an error", tt.code, res, err)
				continue
			}
			if k := cloud.KindOf(err); k != tt.kind {
				t.Errorf("%s: error of kind %v, want %v", tt.code, k, tt.kind)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not say %q", tt.code, err, w)
				}
			}
			if strings.Count(err.Error(), tt.code) != 1 {
				t.Errorf("%s: error %q quotes the code more than once (once per override?)", tt.code, err)
			}
			if got := errors.Is(err, cloud.ErrSpotNotEnabled); got != tt.spotNotEnabled {
				t.Errorf("%s: errors.Is(err, ErrSpotNotEnabled) = %v", tt.code, got)
			}
		}
	})

	// A refusal beside offerings without capacity: the launch fails of the refusal's kind, and
	// the offerings without capacity still come back to be left out.
	t.Run("refusal beside offerings without capacity", func(t *testing.T) {
		e.sim.SetSpotPrice("m5.large", zoneA, 0) // withdrawn: InsufficientInstanceCapacity there
		e.sim.InjectFault(ec2sim.Fault{Action: "CreateFleet", Code: "InvalidParameterValue", Message: "bad volume", InFleet: true})
		res, err := e.p.Launch(testCtx(t), e.request(t, "claim-mixed", cloud.Spot,
			cloud.Override{InstanceType: "m5.large", SubnetID: a}, cloud.Override{InstanceType: "m5.xlarge", SubnetID: b}))
		e.sim.ClearFaults()
		if k := cloud.KindOf(err); k != cloud.KindConfiguration || res == nil || res.Instance != nil {
			t.Fatalf("result %+v, error %v of kind %v; want a configuration error with a result", res, err, k)
		}
		if len(res.Errors) != 1 || res.Errors[0].InstanceType != "m5.large" || res.Errors[0].Code != "InsufficientInstanceCapacity" {
			t.Errorf("offerings without capacity %v, want m5.large's", res.Errors)
		}
	})

	errTests := []struct {
		name string
		req  cloud.LaunchRequest
		want string
	}{
		{"bad subnet", e.request(t, "bad-subnet", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: "subnet-0123456789abcdef0"}), "unknown subnet subnet-0123456789abcdef0: operation error EC2: DescribeSubnets"},
		{"unknown type", e.request(t, "bad-type", cloud.OnDemand, cloud.Override{InstanceType: "m5.huge", SubnetID: a}), "instance type m5.huge is not offered"},
		{"mixed architectures", e.request(t, "mixed", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}, cloud.Override{InstanceType: "m6g.large", SubnetID: a}), "several architectures (amd64: m5.large; arm64: m6g.large)"},
		{"no overrides", e.request(t, "none", cloud.OnDemand), "without overrides"},
		{"bad capacity type", e.request(t, "ct", "dedicated", cloud.Override{InstanceType: "m5.large", SubnetID: a}), "capacity type"},
		{"reserved without a reservation", e.request(t, "ct-r", cloud.Reserved, cloud.Override{InstanceType: "m5.large", SubnetID: a}), "reserved capacity without a reservation"},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.p.Launch(testCtx(t), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("bad subnet error names the code", func(t *testing.T) {
		_, err := e.p.Launch(testCtx(t), errTests[0].req)
		if apiErrorCode(err) != "InvalidSubnetID.NotFound" || !strings.Contains(err.Error(), "does not exist") {
			t.Errorf("error %v", err)
		}
	})
}

func TestInstancesAndTerminate(t *testing.T) {
	e := newEnv(t)
	a := e.subnet(t, e.sim.Zones()[0])
	var ids []string
	for _, token := range []string{"c1", "c2", "c3"} {
		res, err := e.p.Launch(testCtx(t), e.request(t, token, cloud.OnDemand, cloud.Override{InstanceType: "t3.medium", SubnetID: a}))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, res.Instance.ID)
	}
	count := func(tags map[string]string) int {
		t.Helper()
		got, err := e.p.Instances(testCtx(t), tags)
		if err != nil {
			t.Fatal(err)
		}
		return len(got)
	}
	owned := map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}
	tests := []struct {
		name string
		tags map[string]string
		want int
	}{
		{"cluster", owned, 3},
		{"one claim", map[string]string{"kubernetes.io/cluster/" + cluster: "owned", "tailor.dev/claim": "c2"}, 1},
		{"any claim", map[string]string{"tailor.dev/claim": "*"}, 3},
		{"other cluster", map[string]string{"kubernetes.io/cluster/other": "owned"}, 0},
		{"no tags", nil, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := count(tt.tags); got != tt.want {
				t.Errorf("%d instances, want %d", got, tt.want)
			}
		})
	}
	got, _ := e.p.Instances(testCtx(t), map[string]string{"tailor.dev/claim": "c1"})
	if len(got) != 1 || got[0].ID != ids[0] || got[0].PrivateIP == "" || got[0].Zone == "" || got[0].LaunchTime.IsZero() {
		t.Errorf("instance %+v", got)
	}

	if err := e.p.Terminate(testCtx(t), ids[0], ids[0]); err != nil {
		t.Fatal(err)
	}
	if got := count(owned); got != 2 {
		t.Errorf("%d instances after terminating one", got)
	}
	// Already terminated and unknown IDs are fine, and the others in the batch still go.
	if err := e.p.Terminate(testCtx(t), ids[0], "i-0123456789abcdef0", ids[1]); err != nil {
		t.Fatal(err)
	}
	if got := count(owned); got != 1 {
		t.Errorf("%d instances after the second terminate", got)
	}
	if err := e.p.Terminate(testCtx(t), "not-an-id"); err == nil {
		t.Error("malformed ID accepted")
	}
	if err := e.p.Terminate(testCtx(t)); err != nil {
		t.Error(err)
	}
}

// TestLocalEndpointRace loads the catalog (large responses) many times without SDK retries:
// without plainBodyClient this fails often with "use of closed network connection".
func TestLocalEndpointRace(t *testing.T) {
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	cfg := testConfig(srv.URL)
	cfg.RetryMaxAttempts = 1
	cfg.Retryer = func() aws.Retryer { return aws.NopRetryer{} }
	for i := range 8 {
		p, err := NewFromConfig(cfg, Options{ClusterName: cluster})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.InstanceTypes(testCtx(t)); err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
}

func TestConcurrentLaunches(t *testing.T) {
	e := newEnv(t)
	a := e.subnet(t, e.sim.Zones()[0])
	const n = 8
	errs := make(chan error, n)
	for i := range n {
		go func() {
			_, err := e.p.Launch(testCtx(t), e.request(t, fmt.Sprintf("claim-%d", i), cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}))
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := len(e.sim.Instances()); got != n || len(e.sim.LaunchTemplates()) != 1 {
		t.Errorf("%d instances, %d launch templates", got, len(e.sim.LaunchTemplates()))
	}
}

// A launch resumed with its client token after its request changed (another subnet, as after an
// image alias moved or a pool's subnets changed) gets IdempotentParameterMismatch from EC2: the
// provider adopts the instance the first request launched, found by the launch's tags, and EC2
// launches nothing more. With no such instance left, the launch fails.
func TestLaunchAdoptsAfterParameterMismatch(t *testing.T) {
	e := newEnv(t)
	a, b := e.subnet(t, e.sim.Zones()[0]), e.subnet(t, e.sim.Zones()[1])
	first, err := e.p.Launch(testCtx(t), e.request(t, "claim-m", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: a}))
	if err != nil || first.Instance == nil {
		t.Fatalf("first launch: %+v, %v", first, err)
	}
	changed := e.request(t, "claim-m", cloud.OnDemand, cloud.Override{InstanceType: "m5.large", SubnetID: b})
	again, err := e.p.Launch(testCtx(t), changed)
	if err != nil {
		t.Fatalf("resumed launch: %v", err)
	}
	if again.Instance == nil || again.Instance.ID != first.Instance.ID {
		t.Fatalf("resumed launch answered %+v, want the first instance %s", again.Instance, first.Instance.ID)
	}
	if n := e.sim.FleetRequests(); n != 1 {
		t.Errorf("EC2 created %d fleets, want 1", n)
	}
	if err := e.p.Terminate(testCtx(t), first.Instance.ID); err != nil {
		t.Fatal(err)
	}
	if res, err := e.p.Launch(testCtx(t), changed); err == nil || !strings.Contains(err.Error(), "IdempotentParameterMismatch") {
		t.Errorf("resumed launch with its instance gone: %+v, %v; want the mismatch as an error", res, err)
	}
}

// Without a configured version the aliases follow KubernetesVersionFrom (the control plane's) at
// each launch; a configured one holds.
func TestAliasFollowsTheControlPlane(t *testing.T) {
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	controlPlane := "1.34"
	param := func(v string) string {
		id, _ := sim.SSMParameter("/aws/service/eks/optimized-ami/" + v + "/amazon-linux-2023/x86_64/standard/recommended/image_id")
		return id
	}
	for _, tt := range []struct {
		configured string
		want       []string // the image before and after the control plane's upgrade to 1.35
	}{
		{configured: "", want: []string{"1.34", "1.35"}},
		{configured: "1.34", want: []string{"1.34", "1.34"}},
	} {
		controlPlane = "1.34"
		p, err := NewFromConfig(testConfig(srv.URL), Options{ClusterName: cluster, KubernetesVersion: tt.configured,
			KubernetesVersionFrom: func() string { return controlPlane }, ClusterEndpoint: "https://example.eks.amazonaws.com", ClusterCIDR: "10.100.0.0/16"})
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range tt.want {
			if i == 1 {
				controlPlane = "1.35"
			}
			got, err := p.ResolveImage(testCtx(t), "al2023", []string{"m5.large"})
			if err != nil || got != param(want) {
				t.Errorf("configured %q, control plane %s: image %s (%v), want %s's %s", tt.configured, controlPlane, got, err, want, param(want))
			}
		}
	}
}
