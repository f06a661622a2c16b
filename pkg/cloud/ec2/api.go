package ec2

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/pricing"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
)

// The Provider holds the AWS operations it calls as the clients' method values, never the
// clients themselves. kube-scheduler's dependencies call methods through reflection, so the
// linker keeps every exported method of any type converted to an interface and of every type
// reachable from such a type's descriptor. A *Provider is a cloud.Provider: had it a
// *ec2.Client field, all ~830 EC2 operations (and SSM's 155) would be linked in, about 40 MB
// of binary, most of it resident once the kernel maps the text in huge pages. A func field's
// type names only the operation's input, output and options.

// ec2API is the EC2 operations Tailor calls.
type ec2API struct {
	CreateFleet                   func(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error)
	CreateLaunchTemplate          func(context.Context, *ec2.CreateLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error)
	DeleteLaunchTemplate          func(context.Context, *ec2.DeleteLaunchTemplateInput, ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error)
	DescribeCapacityReservations  func(context.Context, *ec2.DescribeCapacityReservationsInput, ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error)
	DescribeImages                func(context.Context, *ec2.DescribeImagesInput, ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error)
	DescribeInstanceTypeOfferings func(context.Context, *ec2.DescribeInstanceTypeOfferingsInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
	DescribeInstanceTypes         func(context.Context, *ec2.DescribeInstanceTypesInput, ...func(*ec2.Options)) (*ec2.DescribeInstanceTypesOutput, error)
	DescribeInstances             func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
	DescribeLaunchTemplates       func(context.Context, *ec2.DescribeLaunchTemplatesInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error)
	DescribeSecurityGroups        func(context.Context, *ec2.DescribeSecurityGroupsInput, ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error)
	DescribeSpotPriceHistory      func(context.Context, *ec2.DescribeSpotPriceHistoryInput, ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
	DescribeSubnets               func(context.Context, *ec2.DescribeSubnetsInput, ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error)
	TerminateInstances            func(context.Context, *ec2.TerminateInstancesInput, ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error)
}

func newEC2API(c *ec2.Client) ec2API {
	return ec2API{
		CreateFleet:                   c.CreateFleet,
		CreateLaunchTemplate:          c.CreateLaunchTemplate,
		DeleteLaunchTemplate:          c.DeleteLaunchTemplate,
		DescribeCapacityReservations:  c.DescribeCapacityReservations,
		DescribeImages:                c.DescribeImages,
		DescribeInstanceTypeOfferings: c.DescribeInstanceTypeOfferings,
		DescribeInstanceTypes:         c.DescribeInstanceTypes,
		DescribeInstances:             c.DescribeInstances,
		DescribeLaunchTemplates:       c.DescribeLaunchTemplates,
		DescribeSecurityGroups:        c.DescribeSecurityGroups,
		DescribeSpotPriceHistory:      c.DescribeSpotPriceHistory,
		DescribeSubnets:               c.DescribeSubnets,
		TerminateInstances:            c.TerminateInstances,
	}
}

// ssmAPI is the SSM operation Tailor calls: reading the public parameters that name AMIs.
type ssmAPI struct {
	GetParameter func(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

func newSSMAPI(c *ssm.Client) ssmAPI { return ssmAPI{GetParameter: c.GetParameter} }

// pricingAPI is the Pricing operation Tailor calls, and the client's options (its endpoint
// decides whether the API is used at all).
type pricingAPI struct {
	GetProducts func(context.Context, *pricing.GetProductsInput, ...func(*pricing.Options)) (*pricing.GetProductsOutput, error)
	options     pricing.Options
}

func newPricingAPI(c *pricing.Client) *pricingAPI {
	return &pricingAPI{GetProducts: c.GetProducts, options: c.Options()}
}

// Options are the client's options.
func (a *pricingAPI) Options() pricing.Options { return a.options }
