package ec2

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// ResolveImageSelector returns the newest available image the selector picks for the instance
// types' architecture: one of the IDs, or an image of this account with all the tags.
func (p *Provider) ResolveImageSelector(ctx context.Context, sel cloud.Selector, instanceTypes []string) (string, error) {
	if len(instanceTypes) == 0 {
		return "", errors.New("ec2: resolving image: no instance types")
	}
	types, err := p.launchTypes(ctx, instanceTypes)
	if err != nil {
		return "", err
	}
	arch := map[string]bool{}
	for _, t := range types {
		arch[t.Arch] = true
	}
	if len(arch) != 1 {
		return "", fmt.Errorf("ec2: resolving image: types %s are of several architectures; launch them separately", strings.Join(instanceTypes, " "))
	}
	ec2Arch := "x86_64"
	if arch["arm64"] {
		ec2Arch = "arm64"
	}
	id, err := p.selectImage(ctx, sel, ec2Arch)
	return id, classify(err)
}

// selectImage is the newest available image of the architecture the selector picks, cached for
// Options.CatalogTTL like the aliases' parameters.
func (p *Provider) selectImage(ctx context.Context, sel cloud.Selector, arch string) (string, error) {
	b, _ := json.Marshal(sel)
	key := "selector:" + arch + ":" + string(b)
	p.mu.Lock()
	c, ok := p.images[key]
	p.mu.Unlock()
	if ok && p.opts.Now().Sub(c.at) < p.opts.CatalogTTL {
		return c.id, nil
	}
	ids, filters, err := selectorFilters("image", sel)
	if err != nil {
		return "", err
	}
	in := &ec2.DescribeImagesInput{ImageIds: ids, Filters: append(filters,
		ec2types.Filter{Name: aws.String("architecture"), Values: []string{arch}},
		ec2types.Filter{Name: aws.String("state"), Values: []string{string(ec2types.ImageStateAvailable)}})}
	if len(ids) == 0 {
		in.Owners = []string{"self"} // tags pick this account's images, never a stranger's
	}
	var images []ec2types.Image
	err = eachPage(ctx, func(ctx context.Context, token *string) (*string, error) {
		in.NextToken = token
		page, err := p.ec2.DescribeImages(ctx, in)
		if err != nil {
			return nil, err
		}
		images = append(images, page.Images...)
		return page.NextToken, nil
	})
	if err != nil {
		return "", fmt.Errorf("ec2: describing images: %w", err)
	}
	if len(images) == 0 {
		return "", &cloud.Error{Kind: cloud.KindConfiguration, Err: fmt.Errorf("ec2: no available %s image matches the pool's amiSelector %s", arch, b)}
	}
	// CreationDate is RFC 3339 in UTC, so the text sorts as the time.
	sort.SliceStable(images, func(i, j int) bool {
		return aws.ToString(images[i].CreationDate) > aws.ToString(images[j].CreationDate)
	})
	id := aws.ToString(images[0].ImageId)
	p.mu.Lock()
	p.images[key] = cachedImage{id: id, at: p.opts.Now()}
	p.mu.Unlock()
	return id, nil
}
