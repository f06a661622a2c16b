package iamcheck

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/cloud/eks"
	"github.com/tailor-eks/tailor/pkg/cloud/sqs"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// tailorKey signs Tailor's calls; the test's own calls (none here) would use another key.
const tailorKey = "AKIDTAILOR"

// tailorCalls drives the EC2 provider and the EKS lookup against the simulator through every
// call Tailor makes: the cluster endpoint, the catalog and prices, the network, an on-demand and
// a spot launch (with the tags the launcher sends), the listing and termination of instances,
// the launch template collection, and the interruption queue. It returns the simulator's authorization log.
func tailorCalls(t *testing.T) []ec2sim.AuthorizationRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sim := ec2sim.New(ec2sim.Options{ClusterName: cluster, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	sim.SetCluster(ec2sim.ClusterInfo{Endpoint: "https://example.eks.amazonaws.com", CABundle: "Q0E="})
	sim.SetInstanceProfileRole("tailor-node", "TailorNodeRole")
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := aws.Config{Region: TestRegion, Credentials: credentials.NewStaticCredentialsProvider(tailorKey, "secret", ""), BaseEndpoint: aws.String(srv.URL)}

	found, err := eks.Resolve(ctx, eks.NewClient(cfg), cluster, eks.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ec2.NewFromConfig(cfg, ec2.Options{ClusterName: cluster, KubernetesVersion: "1.34",
		ClusterEndpoint: found.Endpoint, ClusterCertificateAuthority: found.CABundle, ClusterCIDR: found.ServiceCIDR, IPFamily: found.IPFamily})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.InstanceTypes(ctx); err != nil {
		t.Fatal(err)
	}
	// Listing the capacity reservations pools may launch into.
	if _, err := p.CapacityReservations(ctx, cloud.Selector{Tags: map[string]string{"team": "ml"}}); err != nil {
		t.Fatal(err)
	}
	// Picking a pool's own image by its tags.
	sim.AddImage("team-node-2026-12", "x86_64", time.Now(), map[string]string{"team": "ml"})
	if _, err := p.ResolveImageSelector(ctx, cloud.Selector{Tags: map[string]string{"team": "ml"}}, []string{"m5.large"}); err != nil {
		t.Fatal(err)
	}
	discovery := cloud.Selector{Tags: map[string]string{ec2sim.DiscoveryTagKey: cluster}}
	subnets, err := p.Subnets(ctx, discovery)
	if err != nil || len(subnets) == 0 {
		t.Fatalf("subnets %v %v", subnets, err)
	}
	groups, err := p.SecurityGroups(ctx, discovery)
	if err != nil || len(groups) == 0 {
		t.Fatalf("security groups %v %v", groups, err)
	}
	pool := &config.Pool{Name: "general", AMI: "al2023", InstanceProfile: "tailor-node"}
	var ids []string
	for _, ct := range []cloud.CapacityType{cloud.OnDemand, cloud.Spot} {
		claim := "general-" + string(ct)
		res, err := p.Launch(ctx, cloud.LaunchRequest{
			ClientToken: claim, CapacityType: ct, Image: pool.AMI, InstanceProfile: pool.InstanceProfile,
			Overrides:        []cloud.Override{{InstanceType: "m5.large", SubnetID: subnets[0].ID}},
			SecurityGroupIDs: groups,
			NodeLabels:       nodeshape.NodeLabels(pool, string(ct)),
			Tags:             nodeshape.Tags(cluster, pool.Name, claim),
			TemplateTags:     nodeshape.TemplateTags(pool),
		})
		if err != nil || res.Instance == nil {
			t.Fatalf("launch %s: %+v %v", ct, res, err)
		}
		ids = append(ids, res.Instance.ID)
	}
	if _, err := p.Instances(ctx, map[string]string{"kubernetes.io/cluster/" + cluster: "owned"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Terminate(ctx, ids...); err != nil {
		t.Fatal(err)
	}
	tmpls, err := p.LaunchTemplates(ctx, map[string]string{"tailor.dev/pool": "*"})
	if err != nil || len(tmpls) != 2 {
		t.Fatalf("launch templates %+v %v", tmpls, err)
	}
	for _, lt := range tmpls {
		if err := p.DeleteLaunchTemplate(ctx, lt.ID); err != nil {
			t.Fatal(err)
		}
	}
	// The interruption queue (named like the cluster, as TestValues' queue ARN): resolve it,
	// receive a message, delete it.
	if err := sim.CreateQueue(cluster); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.SendMessage(cluster, "{}"); err != nil {
		t.Fatal(err)
	}
	q := sqs.New(sqs.NewClient(cfg), cluster)
	msgs, err := q.Receive(ctx)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("receive: %v %v", msgs, err)
	}
	if err := q.Delete(ctx, msgs[0]); err != nil {
		t.Fatal(err)
	}
	return Of(sim.AuthorizationLog(), tailorKey)
}

// TestProviderCallsFitThePolicy is the policy's proof on the provider alone (the integration
// suite repeats it on everything Tailor does in a cluster): every authorization Tailor's calls
// need is allowed, and every action the policy allows is needed.
func TestProviderCallsFitThePolicy(t *testing.T) {
	log := tailorCalls(t)
	c := testChecker(t)
	if err := c.Verify(log); err != nil {
		t.Fatal(err)
	}

	t.Run("a policy without a statement Tailor needs fails", func(t *testing.T) {
		start := strings.Index(manifests.ControllerPolicy, `    {
      "Sid": "PassOnlyTheNodeRoleToEC2"`)
		end := strings.Index(manifests.ControllerPolicy, `    {
      "Sid": "ReadRegionalEC2State"`)
		if start < 0 || end < 0 {
			t.Fatal("statements not found")
		}
		c, err := NewWithPolicy(c.Values, manifests.ControllerPolicy[:start]+manifests.ControllerPolicy[end:])
		if err != nil {
			t.Fatal(err)
		}
		err = c.Verify(log)
		if err == nil || !strings.Contains(err.Error(), "ImplicitlyDenied: iam:PassRole on arn:aws:iam::111122223333:role/TailorNodeRole") {
			t.Errorf("error %v, want iam:PassRole denied", err)
		}
	})
	t.Run("a policy with an action Tailor does not use fails", func(t *testing.T) {
		var without []ec2sim.AuthorizationRequest
		for _, r := range log {
			if r.Action != "ec2:DeleteLaunchTemplate" {
				without = append(without, r)
			}
		}
		err := c.Verify(without)
		if err == nil || !strings.Contains(err.Error(), "the policy allows ec2:DeleteLaunchTemplate, which none") {
			t.Errorf("error %v, want ec2:DeleteLaunchTemplate unused", err)
		}
	})
	t.Run("the wrong node role fails", func(t *testing.T) {
		c, err := New(TestValues(cluster, "SomeOtherRole"))
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(log); err == nil || !strings.Contains(err.Error(), "iam:PassRole") {
			t.Errorf("error %v, want iam:PassRole denied", err)
		}
	})
}
