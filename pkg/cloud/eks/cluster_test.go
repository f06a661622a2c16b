package eks

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"

	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// client talks to the simulator over HTTP through the real SDK.
func client(t *testing.T, sim *ec2sim.Sim) *eks.Client {
	t.Helper()
	srv := httptest.NewServer(sim)
	t.Cleanup(srv.Close)
	return eks.NewFromConfig(aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("k", "s", ""),
		BaseEndpoint: aws.String(srv.URL),
	})
}

func TestResolve(t *testing.T) {
	active := ec2sim.ClusterInfo{Endpoint: "https://abc.gr7.us-east-1.eks.amazonaws.com", CABundle: "Q0E="}
	tests := []struct {
		name    string
		cluster *ec2sim.ClusterInfo // nil: still creating
		lookup  string
		given   Cluster
		want    Cluster
		wantErr string
		calls   int
	}{
		{name: "everything from DescribeCluster", cluster: &active, lookup: "prod",
			want: Cluster{Endpoint: active.Endpoint, CABundle: "Q0E=", ServiceCIDR: "10.100.0.0/16", IPFamily: "ipv4"}, calls: 1},
		{name: "overrides win", cluster: &active, lookup: "prod", given: Cluster{Endpoint: "https://private.example", ServiceCIDR: "172.20.0.0/16"},
			want: Cluster{Endpoint: "https://private.example", CABundle: "Q0E=", ServiceCIDR: "172.20.0.0/16", IPFamily: "ipv4"}, calls: 1},
		{name: "ipv6 cluster", cluster: &ec2sim.ClusterInfo{Endpoint: active.Endpoint, CABundle: "Q0E=", ServiceCIDR: "fd12:3456::/108", IPFamily: "ipv6"}, lookup: "prod",
			want: Cluster{Endpoint: active.Endpoint, CABundle: "Q0E=", ServiceCIDR: "fd12:3456::/108", IPFamily: "ipv6"}, calls: 1},
		{name: "complete overrides ask nothing", lookup: "prod", given: Cluster{Endpoint: "https://x", CABundle: "Q0E=", ServiceCIDR: "10.0.0.0/16", IPFamily: "ipv4"},
			want: Cluster{Endpoint: "https://x", CABundle: "Q0E=", ServiceCIDR: "10.0.0.0/16", IPFamily: "ipv4"}, calls: 0},
		{name: "cluster still creating", lookup: "prod", given: Cluster{CABundle: "Q0E="},
			wantErr: "reports no clusterEndpoint, serviceCIDR, ipFamily yet", calls: 1},
		{name: "no such cluster", cluster: &active, lookup: "other",
			wantErr: "eks:DescribeCluster other (or set clusterEndpoint, clusterCABundle, serviceCIDR, ipFamily in TailorArgs)", calls: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim := ec2sim.New(ec2sim.Options{ClusterName: "prod"})
			if tt.cluster != nil {
				sim.SetCluster(*tt.cluster)
			}
			got, err := Resolve(context.Background(), client(t, sim), tt.lookup, tt.given)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if n := sim.Calls("DescribeCluster"); n != tt.calls {
				t.Errorf("DescribeCluster called %d times, want %d", n, tt.calls)
			}
		})
	}
}
