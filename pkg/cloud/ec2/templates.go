package ec2

import (
	"context"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// LaunchTemplates lists the launch templates of this cluster (tagged
// kubernetes.io/cluster/<cluster>=owned) that carry all of the given tags (a "*" value matches
// any value of the key).
func (p *Provider) LaunchTemplates(ctx context.Context, tags map[string]string) ([]cloud.LaunchTemplate, error) {
	want := maps.Clone(tags)
	if want == nil {
		want = map[string]string{}
	}
	want[tagClusterPrefix+p.opts.ClusterName] = tagOwnedValue
	var out []cloud.LaunchTemplate
	err := eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		page, err := p.ec2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{Filters: tagFilters(want), MaxResults: aws.Int32(200), NextToken: token})
		if err != nil {
			return nil, err
		}
		for _, lt := range page.LaunchTemplates {
			out = append(out, cloud.LaunchTemplate{
				ID: aws.ToString(lt.LaunchTemplateId), Name: aws.ToString(lt.LaunchTemplateName),
				Created: aws.ToTime(lt.CreateTime), Tags: fromTags(lt.Tags),
			})
		}
		return page.NextToken, nil
	})
	if err != nil {
		return nil, fmt.Errorf("ec2: describing launch templates: %w", err)
	}
	return out, nil
}

// DeleteLaunchTemplate deletes a launch template by ID and forgets it, so the next launch that
// needs it creates it again; an unknown ID is not an error.
func (p *Provider) DeleteLaunchTemplate(ctx context.Context, id string) error {
	out, err := p.ec2.DeleteLaunchTemplate(ctx, &ec2.DeleteLaunchTemplateInput{LaunchTemplateId: aws.String(id)})
	if err != nil && apiErrorCode(err) != "InvalidLaunchTemplateId.NotFound" {
		return fmt.Errorf("ec2: deleting launch template %s: %w", id, err)
	}
	p.mu.Lock()
	for name, ref := range p.templates {
		if ref.id == id || err == nil && out.LaunchTemplate != nil && name == aws.ToString(out.LaunchTemplate.LaunchTemplateName) {
			delete(p.templates, name)
		}
	}
	p.mu.Unlock()
	return nil
}

func fromTags(tags []ec2types.Tag) map[string]string {
	out := make(map[string]string, len(tags))
	for _, t := range tags {
		out[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return out
}
