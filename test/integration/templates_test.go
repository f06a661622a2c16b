package integration

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/sim/env"
)

// TestUnusedLaunchTemplatesAreDeleted: a launch template Tailor made for a pool's former launch
// settings, long ago, that no claim launched with, is deleted by the lifecycle sweep (on the
// first sweep after a start), with Tailor's own credentials, under the controller IAM policy
// the suite checks at the end. A template of another cluster is left alone.
func TestUnusedLaunchTemplatesAreDeleted(t *testing.T) {
	ctx := context.Background()
	cfg, err := ec2.LoadConfig(ctx, world.Region)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Credentials = credentials.NewStaticCredentialsProvider(env.HarnessAccessKeyID, "harness", "")
	client := awsec2.NewFromConfig(cfg)
	image, _ := world.Sim.SSMParameter("/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/x86_64/standard/recommended/image_id")
	create := func(name, cluster string) {
		t.Helper()
		_, err := client.CreateLaunchTemplate(ctx, &awsec2.CreateLaunchTemplateInput{
			LaunchTemplateName: aws.String(name),
			LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: aws.String(image)},
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: []ec2types.Tag{
				{Key: aws.String(v1alpha1.TagClusterPrefix + cluster), Value: aws.String(v1alpha1.TagOwnedValue)},
				{Key: aws.String(v1alpha1.TagPool), Value: aws.String("general")},
				{Key: aws.String(v1alpha1.TagPoolHash), Value: aws.String("0000000000000000")},
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	suffix := rand.String(5)
	stale, foreign := "tailor-"+clusterName+"-stale-"+suffix, "tailor-other-stale-"+suffix
	create(stale, clusterName)
	create(foreign, "other")
	t.Cleanup(func() {
		_, _ = client.DeleteLaunchTemplate(ctx, &awsec2.DeleteLaunchTemplateInput{LaunchTemplateName: aws.String(foreign)})
	})
	world.Sim.BackdateLaunchTemplates(time.Hour)

	exists := func(name string) bool {
		for _, lt := range world.Sim.LaunchTemplates() {
			if lt.Name == name {
				return true
			}
		}
		return false
	}
	restartScheduler(t, func(map[string]any) {})
	waitForWithin(t, "Tailor to delete the unused launch template", 2*time.Minute, func() bool { return !exists(stale) })
	if !exists(foreign) {
		t.Error("Tailor deleted another cluster's launch template")
	}
}
