package lifecycle

import (
	"context"
	"testing"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A registered claim is marked drifted when its pool's alias resolves to a new image, and no
// longer when the alias is back on the image it launched with; a claim without a recorded image
// and a pool with an explicit AMI are never marked.
func TestCheckImageDrift(t *testing.T) {
	ctx := context.Background()
	registered := func(name, image string) *v1alpha1.Claim {
		cl := claimIn(name, v1alpha1.ClaimRegistered, "i-"+name, testNow, testNow)
		if image != "" {
			cl.Status.Request = &v1alpha1.LaunchRequest{ImageID: image}
		}
		return cl
	}
	for _, tt := range []struct {
		name      string
		claim     *v1alpha1.Claim
		poolAMI   string
		aliasNow  string
		wantDrift string
	}{
		{name: "same image", claim: registered("a", "ami-first"), aliasNow: "ami-first"},
		{name: "a new release", claim: registered("a", "ami-first"), aliasNow: "ami-second", wantDrift: "ami-second"},
		{name: "back on its image", claim: func() *v1alpha1.Claim {
			cl := registered("a", "ami-first")
			cl.Annotations = map[string]string{v1alpha1.AnnotationImageDrift: "ami-second"}
			return cl
		}(), aliasNow: "ami-first"},
		{name: "a later release", claim: func() *v1alpha1.Claim {
			cl := registered("a", "ami-first")
			cl.Annotations = map[string]string{v1alpha1.AnnotationImageDrift: "ami-second"}
			return cl
		}(), aliasNow: "ami-third", wantDrift: "ami-third"},
		{name: "no recorded image", claim: registered("a", ""), aliasNow: "ami-second"},
		{name: "an explicit AMI", claim: registered("a", "ami-first"), poolAMI: "ami-0123456789abcdef0", aliasNow: "ami-second"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, []*v1alpha1.Claim{tt.claim}, nil, nil)
			if tt.poolAMI != "" {
				h.c.Args.Pools[0].AMI = tt.poolAMI
			}
			h.cloud.SetImage("al2023", tt.aliasNow)
			h.c.checkImageDrift(ctx, h.claim(t, "a")) // as the sweep reads it: from the API, with its version
			if got := h.claim(t, "a").Annotations[v1alpha1.AnnotationImageDrift]; got != tt.wantDrift {
				t.Errorf("image drift %q, want %q", got, tt.wantDrift)
			}
		})
	}
}
