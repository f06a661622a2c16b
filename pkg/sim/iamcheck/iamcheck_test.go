package iamcheck

import (
	"strings"
	"testing"

	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

const cluster = "demo"

func testChecker(t *testing.T) *Checker {
	t.Helper()
	c, err := New(TestValues(cluster, "TailorNodeRole"))
	if err != nil {
		t.Fatal(err) // not a skip: without the simulator the policy is unproven
	}
	return c
}

func TestRender(t *testing.T) {
	v := TestValues("c1", "node")
	tests := []struct {
		name, tmpl, want, err string
		values                Values
	}{
		{name: "placeholders", tmpl: `{"a": "${partition}:${region}:${account_id}:${cluster_name}:${node_role_arn}:${queue_arn}"}`,
			want: `{"a": "aws:us-east-1:111122223333:c1:arn:aws:iam::111122223333:role/node:arn:aws:sqs:us-east-1:111122223333:c1"}`},
		{name: "escape", tmpl: `{"a": "$${aws:username}"}`, want: `{"a": "${aws:username}"}`},
		{name: "unknown placeholder", tmpl: `{"a": "${cluster}"}`, err: "${cluster}, which is not one of its variables"},
		{name: "empty value names the field", tmpl: `{"a": "${node_role_arn}"}`, values: Values{Partition: "aws"}, err: "Values.NodeRoleARN is empty"},
		{name: "directive", tmpl: `{"a": "%{ if true }x%{ endif }"}`, err: "directive"},
		{name: "not JSON", tmpl: `{"a": ${region}}`, err: "not a JSON object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vals := v
			if tt.values != (Values{}) {
				vals = tt.values
			}
			got, err := Render(tt.tmpl, vals)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %s %v, want %s", got, err, tt.want)
			}
		})
	}
}

// TestControllerPolicyTemplate: the policy uses exactly the Terraform module's variables and
// renders to a policy that names every action it allows.
func TestControllerPolicyTemplate(t *testing.T) {
	got := Placeholders(manifests.ControllerPolicy)
	want := []string{"account_id", "cluster_name", "node_role_arn", "partition", "queue_arn", "region"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("placeholders %v, want %v", got, want)
	}
	policy, err := Render(manifests.ControllerPolicy, TestValues(cluster, "TailorNodeRole"))
	if err != nil {
		t.Fatal(err)
	}
	actions, err := Actions(policy)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range actions {
		if strings.Contains(a, "*") {
			t.Errorf("action %s: the policy names every action it allows", a)
		}
	}
}

func TestMissingSimulatorFails(t *testing.T) {
	_, err := newChecker(TestValues(cluster, "r"), manifests.ControllerPolicy, t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "run `make tools`") {
		t.Errorf("error %v, want one telling to run make tools", err)
	}
}

func tags(kv ...string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// TestDecisions evaluates hand-made requests: what Tailor does is allowed, and the requests a
// least-privilege policy must refuse are denied.
func TestDecisions(t *testing.T) {
	c := testChecker(t)
	ours := tags("kubernetes.io/cluster/demo", "owned", "tailor.dev/pool", "general")
	ownedNoPool := tags("kubernetes.io/cluster/demo", "owned")
	other := tags("kubernetes.io/cluster/other", "owned", "tailor.dev/pool", "general")
	shared := tags("kubernetes.io/cluster/demo", "shared", "tailor.dev/pool", "general")
	res := func(typ, id string, requestTags, tags map[string]string) []ec2sim.AuthorizedResource {
		return []ec2sim.AuthorizedResource{{Type: typ, ID: id, RequestTags: requestTags, Tags: tags}}
	}
	const inst, lt, cr = "i-0123456789abcdef0", "lt-0123456789abcdef0", "cr-0123456789abcdef0"
	tests := []struct {
		name  string
		req   ec2sim.AuthorizationRequest
		allow bool
	}{
		{"terminate this cluster's pool instance", ec2sim.AuthorizationRequest{Action: "ec2:TerminateInstances", Resources: res("instance", inst, nil, ours)}, true},
		{"terminate another cluster's instance", ec2sim.AuthorizationRequest{Action: "ec2:TerminateInstances", Resources: res("instance", inst, nil, other)}, false},
		{"terminate an untagged instance", ec2sim.AuthorizationRequest{Action: "ec2:TerminateInstances", Resources: res("instance", inst, nil, map[string]string{})}, false},
		{"terminate a cluster instance without the pool tag", ec2sim.AuthorizationRequest{Action: "ec2:TerminateInstances", Resources: res("instance", inst, nil, ownedNoPool)}, false},
		{"terminate an instance the cluster only shares", ec2sim.AuthorizationRequest{Action: "ec2:TerminateInstances", Resources: res("instance", inst, nil, shared)}, false},
		{"CreateFleet with the cluster and pool tags", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("instance", inst, ours, nil)}, true},
		{"CreateFleet without the cluster tag", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("instance", inst, tags("tailor.dev/pool", "general"), nil)}, false},
		{"CreateFleet for another cluster", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("fleet", "fleet-1", other, nil)}, false},
		{"CreateFleet without the pool tag", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("volume", "vol-1", ownedNoPool, nil)}, false},
		{"RunInstances of an untagged network interface", ec2sim.AuthorizationRequest{Action: "ec2:RunInstances", Resources: res("network-interface", "eni-1", map[string]string{}, nil)}, false},
		{"launch from this cluster's template", ec2sim.AuthorizationRequest{Action: "ec2:RunInstances", Resources: res("launch-template", lt, nil, ours)}, true},
		{"launch from another cluster's template", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("launch-template", lt, nil, other)}, false},
		{"create a tagged launch template", ec2sim.AuthorizationRequest{Action: "ec2:CreateLaunchTemplate", Resources: res("launch-template", lt, ours, nil)}, true},
		{"create an untagged launch template", ec2sim.AuthorizationRequest{Action: "ec2:CreateLaunchTemplate", Resources: res("launch-template", lt, map[string]string{}, nil)}, false},
		{"delete this cluster's template", ec2sim.AuthorizationRequest{Action: "ec2:DeleteLaunchTemplate", Resources: res("launch-template", lt, nil, ours)}, true},
		{"delete an untagged launch template", ec2sim.AuthorizationRequest{Action: "ec2:DeleteLaunchTemplate", Resources: res("launch-template", lt, nil, map[string]string{})}, false},
		{"delete another cluster's template", ec2sim.AuthorizationRequest{Action: "ec2:DeleteLaunchTemplate", Resources: res("launch-template", lt, nil, other)}, false},
		{"tag an instance while CreateFleet creates it", ec2sim.AuthorizationRequest{Action: "ec2:CreateTags", Resources: res("instance", inst, ours, nil), Context: tags("ec2:CreateAction", "CreateFleet")}, true},
		{"tag an existing instance", ec2sim.AuthorizationRequest{Action: "ec2:CreateTags", Resources: res("instance", inst, ours, ours)}, false},
		{"tag a subnet while creating", ec2sim.AuthorizationRequest{Action: "ec2:CreateTags", Resources: res("subnet", "subnet-1", ours, nil), Context: tags("ec2:CreateAction", "CreateFleet")}, false},
		{"tag for another cluster while creating", ec2sim.AuthorizationRequest{Action: "ec2:CreateTags", Resources: res("instance", inst, other, nil), Context: tags("ec2:CreateAction", "RunInstances")}, false},
		{"tag while creating a volume by hand", ec2sim.AuthorizationRequest{Action: "ec2:CreateTags", Resources: res("volume", "vol-1", ours, nil), Context: tags("ec2:CreateAction", "CreateVolume")}, false},
		{"pass the node role to EC2", ec2sim.AuthorizationRequest{Action: "iam:PassRole", Resources: res("role", "TailorNodeRole", nil, nil), Context: tags("iam:PassedToService", "ec2.amazonaws.com")}, true},
		{"pass another role", ec2sim.AuthorizationRequest{Action: "iam:PassRole", Resources: res("role", "Admin", nil, nil), Context: tags("iam:PassedToService", "ec2.amazonaws.com")}, false},
		{"pass the node role to another service", ec2sim.AuthorizationRequest{Action: "iam:PassRole", Resources: res("role", "TailorNodeRole", nil, nil), Context: tags("iam:PassedToService", "lambda.amazonaws.com")}, false},
		{"read a public AMI parameter", ec2sim.AuthorizationRequest{Action: "ssm:GetParameter", Resources: res("parameter", "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id", nil, nil)}, true},
		{"read the account's own parameter", ec2sim.AuthorizationRequest{Action: "ssm:GetParameter", Resources: res("parameter", "/prod/db-password", nil, nil)}, false},
		{"describe this cluster", ec2sim.AuthorizationRequest{Action: "eks:DescribeCluster", Resources: res("cluster", cluster, nil, nil)}, true},
		{"describe another cluster", ec2sim.AuthorizationRequest{Action: "eks:DescribeCluster", Resources: res("cluster", "other", nil, nil)}, false},
		{"describe instances", ec2sim.AuthorizationRequest{Action: "ec2:DescribeInstances"}, true},
		{"describe capacity reservations", ec2sim.AuthorizationRequest{Action: "ec2:DescribeCapacityReservations"}, true},
		{"CreateFleet into a capacity reservation", ec2sim.AuthorizationRequest{Action: "ec2:CreateFleet", Resources: res("capacity-reservation", cr, nil, tags("team", "ml"))}, true},
		{"RunInstances into an untagged capacity reservation", ec2sim.AuthorizationRequest{Action: "ec2:RunInstances", Resources: res("capacity-reservation", cr, nil, map[string]string{})}, true},
		{"create a capacity reservation", ec2sim.AuthorizationRequest{Action: "ec2:CreateCapacityReservation", Resources: res("capacity-reservation", cr, ours, nil)}, false},
		{"cancel a capacity reservation", ec2sim.AuthorizationRequest{Action: "ec2:CancelCapacityReservation", Resources: res("capacity-reservation", cr, nil, ours)}, false},
		{"read prices", ec2sim.AuthorizationRequest{Action: "pricing:GetProducts"}, true},
		{"describe images (an amiSelector picks by tags)", ec2sim.AuthorizationRequest{Action: "ec2:DescribeImages"}, true},
		{"deregister an image", ec2sim.AuthorizationRequest{Action: "ec2:DeregisterImage", Resources: res("image", "ami-1", nil, ours)}, false},
		{"delete a volume", ec2sim.AuthorizationRequest{Action: "ec2:DeleteVolume", Resources: res("volume", "vol-1", nil, ours)}, false},
		{"stop an instance", ec2sim.AuthorizationRequest{Action: "ec2:StopInstances", Resources: res("instance", inst, nil, ours)}, false},
	}
	var log []ec2sim.AuthorizationRequest
	for _, tt := range tests {
		log = append(log, tt.req)
	}
	// One simulator run for every case.
	reqs, err := c.Requests(log)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != len(tests) {
		t.Fatalf("%d requests for %d cases", len(reqs), len(tests))
	}
	results, err := c.Evaluate(reqs)
	if err != nil {
		t.Fatal(err)
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := results[i]
			if r.Decision == Error {
				t.Fatalf("%s: %s", r.Request, r.Error)
			}
			if allowed := r.Decision == Allowed; allowed != tt.allow {
				t.Errorf("%s: %s, want allowed %v (ignored context keys %v)", r.Request, r.Decision, tt.allow, r.IgnoredContextKeys)
			}
		})
	}
}
