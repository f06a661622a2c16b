package consolidation

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/profile/profiletest"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// exampleProfile is the shipped example profile with a framework of its plugins, and the
// instance types of a simulated region as the EC2 provider lists them.
func exampleProfile(tb testing.TB) (*profile.Profile, *profile.Framework, []cloud.InstanceType) {
	tb.Helper()
	ctx := context.Background()
	prof, fw := profiletest.Example(tb)
	srv := httptest.NewServer(ec2sim.New(ec2sim.Options{ClusterName: "test"}))
	tb.Cleanup(srv.Close)
	p, err := ec2.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}}, ec2.Options{ClusterName: "test"})
	if err != nil {
		tb.Fatal(err)
	}
	its, err := p.InstanceTypes(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return prof, fw, its
}
