// Package profiletest gives tests the shipped example profile and a framework of its plugins.
package profiletest

import (
	"context"
	"testing"

	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/profile"
)

// Example is the shipped example profile (manifests.SchedulerConfig) with a framework of its
// plugins over an empty cluster.
func Example(tb testing.TB) (*profile.Profile, *profile.Framework) {
	tb.Helper()
	prof, err := profile.Load(manifests.SchedulerConfig, "")
	if err != nil {
		tb.Fatal(err)
	}
	fw, _, err := prof.NewFramework(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return prof, fw
}
