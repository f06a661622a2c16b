package lifecycle

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

func claimOf(pool, hash string) *v1alpha1.Claim {
	return &v1alpha1.Claim{
		ObjectMeta: metav1.ObjectMeta{Name: pool + "-" + hash, Annotations: map[string]string{v1alpha1.AnnotationPoolHash: hash}},
		Spec:       v1alpha1.ClaimSpec{Pool: pool},
	}
}

func TestUnusedTemplates(t *testing.T) {
	a := config.Pool{Name: "a", AMI: "al2023"}
	b := config.Pool{Name: "b", AMI: "bottlerocket"}
	args := &config.TailorArgs{Pools: []config.Pool{a, b}}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	old := now.Add(-time.Hour)
	tmpl := func(name, pool, hash string, created time.Time) cloud.LaunchTemplate {
		tags := map[string]string{"kubernetes.io/cluster/c": "owned"}
		if pool != "" {
			tags[v1alpha1.TagPool] = pool
		}
		if hash != "" {
			tags[v1alpha1.TagPoolHash] = hash
		}
		return cloud.LaunchTemplate{ID: "lt-" + name, Name: name, Created: created, Tags: tags}
	}
	tests := []struct {
		name   string
		tmpl   cloud.LaunchTemplate
		claims []*v1alpha1.Claim
		delete bool
	}{
		{"current fingerprint of a pool", tmpl("a-now", "a", a.LaunchHash(), old), nil, false},
		{"another pool's fingerprint is not this pool's", tmpl("a-with-b", "a", b.LaunchHash(), old), nil, true},
		{"older fingerprint", tmpl("a-before", "a", "0123456789abcdef", old), nil, true},
		{"older fingerprint a claim launched with", tmpl("a-claimed", "a", "0123456789abcdef", old), []*v1alpha1.Claim{claimOf("a", "0123456789abcdef")}, false},
		{"a claim of another pool with that fingerprint does not count", tmpl("a-other-claim", "a", "0123456789abcdef", old), []*v1alpha1.Claim{claimOf("b", "0123456789abcdef")}, true},
		{"pool no longer configured", tmpl("gone", "gone", "0123456789abcdef", old), nil, true},
		{"no fingerprint (made before they were tagged)", tmpl("a-untagged-hash", "a", "", old), nil, true},
		{"younger than the grace", tmpl("a-new", "a", "0123456789abcdef", now.Add(-time.Minute)), nil, false},
		{"no pool tag: not one Tailor may delete", tmpl("foreign", "", "", old), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := unusedTemplates([]cloud.LaunchTemplate{tt.tmpl}, args, tt.claims, now, DefaultTemplateGrace)
			if deleted := len(got) == 1; deleted != tt.delete {
				t.Errorf("deleted %v, want %v", deleted, tt.delete)
			}
		})
	}
}

// TestCollectTemplates runs the collection against the EC2 simulator through the real SDK: the
// templates of a pool whose launch settings changed go, those of the current settings and of
// other clusters stay, and the listing is paced by TemplateGCPeriod.
func TestCollectTemplates(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	clock := ec2sim.NewFakeClock(time.Now())
	sim := ec2sim.New(ec2sim.Options{ClusterName: "c", Clock: clock, PendingFor: ec2sim.Immediately, ShuttingDownFor: ec2sim.Immediately})
	srv := httptest.NewServer(sim)
	defer srv.Close()
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", ""), BaseEndpoint: aws.String(srv.URL)}
	provider := func(cluster string) *ec2.Provider {
		p, err := ec2.NewFromConfig(cfg, ec2.Options{ClusterName: cluster, KubernetesVersion: "1.34", ClusterEndpoint: "https://example.com", ClusterCIDR: "10.100.0.0/16"})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p, other := provider("c"), provider("other")
	before := config.Pool{Name: "general", AMI: "al2023", Labels: map[string]string{"team": "a"}}
	after := config.Pool{Name: "general", AMI: "al2023", Labels: map[string]string{"team": "b"}}
	subnet := sim.Subnets()[0].ID
	launch := func(p *ec2.Provider, pool config.Pool, token string) {
		t.Helper()
		res, err := p.Launch(ctx, cloud.LaunchRequest{
			ClientToken: token, CapacityType: cloud.OnDemand, Image: pool.AMI,
			Overrides:    []cloud.Override{{InstanceType: "m5.large", SubnetID: subnet}},
			NodeLabels:   pool.Labels,
			Tags:         map[string]string{v1alpha1.TagPool: pool.Name, v1alpha1.TagClaim: token},
			TemplateTags: map[string]string{v1alpha1.TagPool: pool.Name, v1alpha1.TagPoolHash: pool.LaunchHash()},
		})
		if err != nil || res.Instance == nil {
			t.Fatalf("launch %s: %+v %v", token, res, err)
		}
	}
	launch(p, before, "c1")
	launch(p, after, "c2")
	launch(other, before, "o1")
	if n := len(sim.LaunchTemplates()); n != 3 {
		t.Fatalf("%d launch templates, want 3", n)
	}
	c := &Controller{Args: &config.TailorArgs{ClusterName: "c", Pools: []config.Pool{after}}, Cloud: p,
		TemplateGCPeriod: DefaultTemplateGCPeriod, TemplateGrace: DefaultTemplateGrace}
	names := func() []string {
		var out []string
		for _, lt := range sim.LaunchTemplates() {
			out = append(out, lt.Tags[v1alpha1.TagPoolHash]+"/"+lt.Tags["eks:eks-cluster-name"])
		}
		slices.Sort(out)
		return out
	}
	keepAll := []string{after.LaunchHash() + "/c", before.LaunchHash() + "/c", before.LaunchHash() + "/other"}
	slices.Sort(keepAll)

	c.collectTemplates(ctx, clock.Now(), nil)
	if got := names(); !slices.Equal(got, keepAll) {
		t.Errorf("templates within the grace: %v, want %v", got, keepAll)
	}
	clock.Advance(time.Hour)
	c.collectTemplates(ctx, clock.Now(), []*v1alpha1.Claim{claimOf("general", before.LaunchHash())})
	if got := names(); !slices.Equal(got, keepAll) {
		t.Errorf("with a claim of the old fingerprint: %v, want %v", got, keepAll)
	}
	c.lastTemplateGC = time.Time{}
	c.collectTemplates(ctx, clock.Now(), nil)
	want := []string{after.LaunchHash() + "/c", before.LaunchHash() + "/other"}
	slices.Sort(want)
	if got := names(); !slices.Equal(got, want) {
		t.Errorf("after the collection: %v, want %v", got, want)
	}
	calls := sim.Calls("DescribeLaunchTemplates")
	c.collectTemplates(ctx, clock.Now().Add(time.Minute), nil)
	if sim.Calls("DescribeLaunchTemplates") != calls {
		t.Error("listed launch templates again before TemplateGCPeriod")
	}
	// The deleted template is made again when the pool's old settings launch once more.
	launch(p, before, "c3")
	if n := len(sim.LaunchTemplates()); n != 3 {
		t.Errorf("%d launch templates after relaunching with the old settings, want 3", n)
	}
}
