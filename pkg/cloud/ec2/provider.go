// Package ec2 implements cloud.Provider on Amazon EC2 with aws-sdk-go-v2.
//
// It uses only the SDK's ordinary configuration (config.LoadDefaultConfig), so the usual
// environment works unchanged, including AWS_ENDPOINT_URL_EC2, AWS_ENDPOINT_URL_SSM and
// AWS_ENDPOINT_URL_PRICING to point it at a simulator (pkg/sim/ec2sim), AWS_REGION and static
// keys. Requests are retried by the SDK's standard retryer; listings use the SDK's paginators.
//
// Instance types come from DescribeInstanceTypes and DescribeInstanceTypeOfferings. Max-pods
// inputs (ENIs, IPv4 per ENI) come from awsdata's EKS table, falling back to NetworkInfo.
//
// Prices: on-demand prices come from the AWS Pricing API (GetProducts for the Linux, shared
// tenancy, no pre-installed software, capacitystatus=Used products of the cluster's regionCode),
// which is asked in us-east-1 whatever the cluster's region (cn-northwest-1 for China regions),
// as it is served from few regions only. When the call fails or lists nothing, the prices are the
// table shipped in pkg/awsdata (the us-east-1 list prices: exact there, elsewhere they rank types
// correctly but are not exact), and the reason is logged once. The Pricing API is not asked at
// all when the EC2 endpoint is overridden and the Pricing endpoint is not: EC2 is then a
// simulator or a proxy whose prices the real Pricing API does not describe (set
// AWS_ENDPOINT_URL_PRICING too to ask it). Spot prices are the newest price of every type in
// every zone from DescribeSpotPriceHistory (Linux/UNIX, StartTime now). On-demand and spot prices
// refresh on their own TTLs (Options.OnDemandPriceTTL, Options.SpotPriceTTL), independently of the
// instance type catalog (Options.CatalogTTL); a failed refresh keeps the last good prices (or
// types) and is tried again after a shorter wait. An offering exists only where its price is known.
//
// Launch creates (once, then caches) a launch template per distinct image, instance profile,
// security groups, user data, capacity type and template tags, named tailor-<cluster>-<hash>,
// and launches with one CreateFleet of Type instant naming each template's ID and explicit
// version. Because node labels and taints are part of the user data, every distinct label/taint
// set gets its own template: keep per-node values out of NodeLabels.
//
// Everything a launch creates is tagged at creation with kubernetes.io/cluster/<cluster>=owned
// and eks:eks-cluster-name=<cluster> (besides the request's tags): the template itself, and
// through CreateFleet and the template's own TagSpecifications the fleet, the instance, its
// volumes, its network interfaces and, for spot, its spot request. The controller IAM policy
// (manifests/iam/controller-policy.json) relies on it: it allows the create calls only with
// those tags and terminations and template deletions only of resources that carry them.
// LaunchTemplates and DeleteLaunchTemplate let the caller delete templates no pool uses.
package ec2

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Tags Tailor puts on the launch templates it creates. (The same keys as
// apis/tailor/v1alpha1, repeated so this package needs no Kubernetes modules.)
const (
	tagClusterPrefix = "kubernetes.io/cluster/"
	tagEKSCluster    = "eks:eks-cluster-name"
	tagOwnedValue    = "owned"
)

// Options configure a Provider.
type Options struct {
	// Region overrides the region of the SDK configuration (New only).
	Region string
	// ClusterName is the EKS cluster the nodes join. Required.
	ClusterName string
	// KubernetesVersion ("1.34") selects the EKS-optimized AMI behind the image aliases; when
	// empty, KubernetesVersionFrom says it at each launch (the control plane's, which an upgrade
	// changes). One of them is required to launch with an alias.
	KubernetesVersion     string
	KubernetesVersionFrom func() string
	// ClusterEndpoint (https://…), ClusterCertificateAuthority (base64 PEM) and ClusterCIDR (the
	// service CIDR) go into the node bootstrap configuration when set; nodeadm needs them unless
	// the AMI finds them another way.
	ClusterEndpoint             string
	ClusterCertificateAuthority string
	ClusterCIDR                 string
	// IPFamily is the cluster's, ipv4 or ipv6 (pkg/cloud/eks reads all four from DescribeCluster).
	IPFamily string
	// CatalogTTL is how long the instance types and the zones offering them (and resolved image
	// aliases) are cached; default 5m. Prices have their own TTLs.
	CatalogTTL time.Duration
	// OnDemandPriceTTL is how long on-demand prices are kept before InstanceTypes asks the
	// Pricing API again; default 12h.
	OnDemandPriceTTL time.Duration
	// SpotPriceTTL is how long spot prices are kept before InstanceTypes asks
	// DescribeSpotPriceHistory again; default 5m.
	SpotPriceTTL time.Duration
	// Logger receives the few records the provider logs (where on-demand prices come from, failed
	// price refreshes); default slog.Default().
	Logger *slog.Logger
	// Now is the clock for the caches; default time.Now.
	Now func() time.Time
}

// Provider is the EC2 cloud.Provider. It is safe for concurrent use.
type Provider struct {
	opts    Options
	region  string
	log     *slog.Logger
	ec2     ec2API
	ssm     ssmAPI
	pricing *pricingAPI // nil when on-demand prices come from the shipped table only
	// noPricingAPI says why pricing is nil.
	noPricingAPI string

	// catalogMu serializes refreshes and guards the parts of the catalog.
	catalogMu sync.Mutex
	types     []typeEntry // nil until loaded
	typesAt   time.Time   // when the types were loaded
	typesNext time.Time   // when to refresh them
	// typesFailing says the last refresh of the types failed (and was logged).
	typesFailing bool
	onDemand     onDemandPrices
	spot         spotPrices

	mu        sync.Mutex
	catalog   []cloud.InstanceType // assembled from the parts
	byName    map[string]*cloud.InstanceType
	images    map[string]cachedImage // SSM parameter → AMI
	templates map[string]templateRef // launch template name → ID and version
	zones     map[string]string      // subnet ID → zone
}

type cachedImage struct {
	id string
	at time.Time
}

var _ cloud.Provider = (*Provider)(nil)

var versionRe = regexp.MustCompile(`^1\.[0-9]{1,2}$`)

// New loads the default AWS configuration (environment, shared files, IMDS) and returns a
// Provider.
func New(ctx context.Context, opts Options) (*Provider, error) {
	cfg, err := LoadConfig(ctx, opts.Region)
	if err != nil {
		return nil, err
	}
	return NewFromConfig(cfg, opts)
}

// LoadConfig loads the default AWS configuration (environment, shared files, IMDS), in region
// when it is not empty: the one configuration every AWS client of Tailor's is built from.
func LoadConfig(ctx context.Context, region string) (aws.Config, error) {
	var loadOpts []func(*config.LoadOptions) error
	if region != "" {
		loadOpts = append(loadOpts, config.WithRegion(region))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("ec2: loading AWS configuration: %w", err)
	}
	return cfg, nil
}

// NewFromConfig returns a Provider using cfg (its region, credentials, endpoints and retryer).
func NewFromConfig(cfg aws.Config, opts Options) (*Provider, error) {
	if cfg.Region == "" {
		return nil, errors.New("ec2: no AWS region configured (set AWS_REGION or Options.Region)")
	}
	if opts.ClusterName == "" {
		return nil, errors.New("ec2: Options.ClusterName is required")
	}
	if opts.KubernetesVersion != "" && !versionRe.MatchString(opts.KubernetesVersion) {
		return nil, fmt.Errorf("ec2: Options.KubernetesVersion %q is not of the form 1.N", opts.KubernetesVersion)
	}
	if opts.CatalogTTL <= 0 {
		opts.CatalogTTL = 5 * time.Minute
	}
	if opts.OnDemandPriceTTL <= 0 {
		opts.OnDemandPriceTTL = 12 * time.Hour
	}
	if opts.SpotPriceTTL <= 0 {
		opts.SpotPriceTTL = 5 * time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ec2Client := ec2.NewFromConfig(cfg, withPlainBodiesEC2)
	p := &Provider{
		opts:      opts,
		region:    cfg.Region,
		log:       opts.Logger,
		ec2:       newEC2API(ec2Client),
		ssm:       newSSMAPI(ssm.NewFromConfig(cfg, withPlainBodiesSSM)),
		images:    map[string]cachedImage{},
		templates: map[string]templateRef{},
		zones:     map[string]string{},
	}
	p.pricing = newPricingAPI(pricing.NewFromConfig(cfg, withPlainBodiesPricing, func(o *pricing.Options) { o.Region = pricingRegion(cfg.Region) }))
	if ep := ec2Client.Options().BaseEndpoint; ep != nil && p.pricing.Options().BaseEndpoint == nil {
		p.pricing = nil
		p.noPricingAPI = fmt.Sprintf("the EC2 endpoint is overridden (%s) and the Pricing endpoint is not (set AWS_ENDPOINT_URL_PRICING to use the Pricing API)", *ep)
	}
	return p, nil
}

// apiErrorCode returns the AWS error code of err, or "".
func apiErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// selectorFilters turns a Selector into IDs or tag filters.
func selectorFilters(what string, sel cloud.Selector) (ids []string, filters []ec2types.Filter, err error) {
	switch {
	case len(sel.IDs) > 0 && len(sel.Tags) > 0:
		return nil, nil, fmt.Errorf("ec2: %s selector sets both IDs and tags", what)
	case len(sel.IDs) > 0:
		return slices.Clone(sel.IDs), nil, nil
	case len(sel.Tags) > 0:
		return nil, tagFilters(sel.Tags), nil
	}
	return nil, nil, fmt.Errorf("ec2: empty %s selector", what)
}

// tagFilters matches every tag; the value "*" matches any value of the key.
func tagFilters(tags map[string]string) []ec2types.Filter {
	var out []ec2types.Filter
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		if v := tags[k]; v == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
		} else {
			out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{v}})
		}
	}
	return out
}

// Subnets returns the subnets the selector picks.
func (p *Provider) Subnets(ctx context.Context, sel cloud.Selector) ([]cloud.Subnet, error) {
	ids, filters, err := selectorFilters("subnet", sel)
	if err != nil {
		return nil, err
	}
	subnets, err := p.describeSubnets(ctx, ids, filters)
	if err != nil {
		return nil, fmt.Errorf("ec2: describing subnets: %w", err)
	}
	return subnets, nil
}

// describeSubnets lists subnets and remembers their zones; errors are the SDK's, unwrapped.
func (p *Provider) describeSubnets(ctx context.Context, ids []string, filters []ec2types.Filter) ([]cloud.Subnet, error) {
	var out []cloud.Subnet
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: ids, Filters: filters, NextToken: token})
		if err != nil {
			return nil, err
		}
		for _, sn := range page.Subnets {
			out = append(out, cloud.Subnet{
				ID: aws.ToString(sn.SubnetId), Zone: aws.ToString(sn.AvailabilityZone),
				AvailableIPs: int64(aws.ToInt32(sn.AvailableIpAddressCount)),
			})
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	for _, sn := range out {
		p.zones[sn.ID] = sn.Zone
	}
	p.mu.Unlock()
	return out, nil
}

// SecurityGroups returns the IDs of the security groups the selector picks.
func (p *Provider) SecurityGroups(ctx context.Context, sel cloud.Selector) ([]string, error) {
	ids, filters, err := selectorFilters("security group", sel)
	if err != nil {
		return nil, err
	}
	var out []string
	err = eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: ids, Filters: filters, NextToken: token})
		if err != nil {
			return nil, err
		}
		for _, g := range page.SecurityGroups {
			out = append(out, aws.ToString(g.GroupId))
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing security groups: %w", err)
	}
	return out, nil
}

// liveStates are the instance states Instances lists.
var liveStates = []string{"pending", "running", "shutting-down", "stopping", "stopped"}

// Instances lists the non-terminated instances carrying all of the given tags (a "*" value
// matches any value of the key).
func (p *Provider) Instances(ctx context.Context, tags map[string]string) ([]cloud.Instance, error) {
	filters := append(tagFilters(tags), ec2types.Filter{Name: aws.String("instance-state-name"), Values: liveStates})
	return p.describeInstances(ctx, &ec2.DescribeInstancesInput{Filters: filters, MaxResults: aws.Int32(instancesPerPage)})
}

// instancesPerPage is the page size of DescribeInstances. A described instance decodes to tens
// of kilobytes of SDK structs, of which a cloud.Instance keeps a few fields: in pages of 100,
// a sweep of a large fleet holds one page of them at a time, not the fleet's (a page of 1000
// made each sweep of a 380-node fleet hold some 9 MB at once).
const instancesPerPage = 100

func (p *Provider) describeInstances(ctx context.Context, in *ec2.DescribeInstancesInput) ([]cloud.Instance, error) {
	var out []cloud.Instance
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		req := *in
		req.NextToken = token
		page, err := p.ec2.DescribeInstances(ctx, &req)
		if err != nil {
			return nil, err
		}
		for _, r := range page.Reservations {
			for _, inst := range r.Instances {
				out = append(out, toInstance(inst))
			}
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing instances: %w", err)
	}
	return out, nil
}

func toInstance(in ec2types.Instance) cloud.Instance {
	out := cloud.Instance{
		ID:             aws.ToString(in.InstanceId),
		Type:           string(in.InstanceType),
		SubnetID:       aws.ToString(in.SubnetId),
		ImageID:        aws.ToString(in.ImageId),
		PrivateDNSName: aws.ToString(in.PrivateDnsName),
		PrivateIP:      aws.ToString(in.PrivateIpAddress),
		CapacityType:   cloud.OnDemand,
		LaunchTime:     aws.ToTime(in.LaunchTime),
		Tags:           map[string]string{},
	}
	if in.Placement != nil {
		out.Zone = aws.ToString(in.Placement.AvailabilityZone)
	}
	if in.State != nil {
		out.State = string(in.State.Name)
	}
	out.CapacityType = instanceCapacityType(in)
	if out.CapacityType == cloud.Reserved {
		out.CapacityReservationID = aws.ToString(in.CapacityReservationId)
	}
	for _, t := range in.Tags {
		out.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}

// terminateBatch is how many instances one TerminateInstances call carries.
const terminateBatch = 100

// Terminate terminates the instances; already terminated or unknown IDs are not an error.
func (p *Provider) Terminate(ctx context.Context, ids ...string) error {
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	for chunk := range slices.Chunk(ids, terminateBatch) {
		if err := p.terminate(ctx, chunk); err != nil {
			return err
		}
	}
	return nil
}

func (p *Provider) terminate(ctx context.Context, ids []string) error {
	_, err := p.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err == nil {
		return nil
	}
	if apiErrorCode(err) != "InvalidInstanceID.NotFound" {
		return fmt.Errorf("ec2: terminating %s: %w", strings.Join(ids, ", "), err)
	}
	// EC2 fails the whole call when one ID is unknown: retry the others one by one.
	if len(ids) == 1 {
		return nil
	}
	for _, id := range ids {
		if err := p.terminate(ctx, []string{id}); err != nil {
			return err
		}
	}
	return nil
}
