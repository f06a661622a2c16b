// Package eks reads what a node needs to join the cluster (API server endpoint, CA bundle,
// service CIDR, IP family) from eks:DescribeCluster, as Karpenter does at start, so users do not
// copy them into the configuration. Values given explicitly win; DescribeCluster is asked only
// for the rest. The endpoint is overridable like every AWS client of Tailor's
// (AWS_ENDPOINT_URL_EKS), so the sandbox answers from its simulator.
package eks

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
)

// Cluster is what nodes are told in their user data.
type Cluster struct {
	Endpoint    string // https://…
	CABundle    string // base64-encoded PEM
	ServiceCIDR string
	IPFamily    string // ipv4 or ipv6
}

// Complete says whether nothing is left to look up.
func (c Cluster) Complete() bool {
	return c.Endpoint != "" && c.CABundle != "" && c.ServiceCIDR != "" && c.IPFamily != ""
}

// DescribeClusterAPI is the one call this package makes (the SDK client implements it).
type DescribeClusterAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// NewClient returns the SDK's EKS client for cfg (its endpoint, retryer and credentials), as
// the one method value Resolve calls: an *eks.Client converted to an interface would link all
// of its operations into the binary (see pkg/cloud/ec2's api.go).
func NewClient(cfg aws.Config) DescribeClusterAPI {
	return describeClusterFunc(eks.NewFromConfig(cfg).DescribeCluster)
}

type describeClusterFunc func(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)

func (f describeClusterFunc) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	return f(ctx, in, optFns...)
}

// Resolve returns given with its empty fields filled from DescribeCluster of name. The error
// names the TailorArgs fields that would let Tailor start without the lookup.
func Resolve(ctx context.Context, api DescribeClusterAPI, name string, given Cluster) (Cluster, error) {
	if given.Complete() {
		return given, nil
	}
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(name)})
	if err != nil {
		return Cluster{}, fmt.Errorf("eks:DescribeCluster %s (or set %s in TailorArgs): %w", name, missingArgs(given), err)
	}
	if out == nil || out.Cluster == nil {
		return Cluster{}, fmt.Errorf("eks:DescribeCluster %s returned no cluster (or set %s in TailorArgs)", name, missingArgs(given))
	}
	found := fromDescribe(out.Cluster)
	got := given
	fill := func(dst *string, v string) {
		if *dst == "" {
			*dst = v
		}
	}
	fill(&got.Endpoint, found.Endpoint)
	fill(&got.CABundle, found.CABundle)
	fill(&got.IPFamily, found.IPFamily)
	if got.ServiceCIDR == "" {
		got.ServiceCIDR = found.serviceCIDR(got.IPFamily)
	}
	if !got.Complete() {
		return Cluster{}, fmt.Errorf("eks:DescribeCluster %s (status %s) reports no %s yet (or set them in TailorArgs)",
			name, out.Cluster.Status, missingArgs(got))
	}
	return got, nil
}

// described is DescribeCluster's answer with both service CIDRs kept, so an explicit ipFamily
// picks the matching one.
type described struct {
	Cluster
	v4, v6 string
}

func (d described) serviceCIDR(family string) string {
	if family == string(ekstypes.IpFamilyIpv6) {
		return d.v6
	}
	return d.v4
}

func fromDescribe(c *ekstypes.Cluster) described {
	d := described{Cluster: Cluster{Endpoint: aws.ToString(c.Endpoint)}}
	if c.CertificateAuthority != nil {
		d.CABundle = aws.ToString(c.CertificateAuthority.Data)
	}
	if n := c.KubernetesNetworkConfig; n != nil {
		d.IPFamily = strings.ToLower(string(n.IpFamily))
		d.v4, d.v6 = aws.ToString(n.ServiceIpv4Cidr), aws.ToString(n.ServiceIpv6Cidr)
	}
	if d.IPFamily == "" && d.v4 != "" {
		// Clusters created before IPv6 support report no family: they are IPv4.
		d.IPFamily = string(ekstypes.IpFamilyIpv4)
	}
	return d
}

// missingArgs names the TailorArgs fields still empty in c.
func missingArgs(c Cluster) string {
	var names []string
	for _, f := range []struct {
		name, v string
	}{{"clusterEndpoint", c.Endpoint}, {"clusterCABundle", c.CABundle}, {"serviceCIDR", c.ServiceCIDR}, {"ipFamily", c.IPFamily}} {
		if f.v == "" {
			names = append(names, f.name)
		}
	}
	if len(names) == 0 {
		return "nothing"
	}
	return strings.Join(names, ", ")
}
