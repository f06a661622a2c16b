package planning

import (
	"context"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/profile"
)

var (
	testFrameworkOnce sync.Once
	testFramework     *profile.Framework
	testFrameworkErr  error
)

// offline returns the example profile's real plugins over an empty cluster.
func offline(t testing.TB) *profile.Framework {
	t.Helper()
	testFrameworkOnce.Do(func() {
		var p *profile.Profile
		if p, testFrameworkErr = profile.Load(manifests.SchedulerConfig, ""); testFrameworkErr != nil {
			return
		}
		testFramework, _, testFrameworkErr = p.NewFramework(context.Background())
	})
	if testFrameworkErr != nil {
		t.Fatal(testFrameworkErr)
	}
	return testFramework
}

// filterFor runs the profile's PreFilter plugins for p over an empty cluster.
func filterFor(t testing.TB, p *corev1.Pod) *FilterState {
	t.Helper()
	fw := offline(t)
	state, err := fw.PreFilter(context.Background(), p)
	if err != nil {
		t.Fatalf("PreFilter %s: %v", p.Name, err)
	}
	return &FilterState{Plugins: fw, State: state, Pod: p}
}

// overPacked says which resource a planned node's template lacks for its pods ("" if none).
func overPacked(n *PlannedNode) string {
	d := newDims()
	var used vec
	for _, p := range n.Pods {
		used = used.add(d.vec(p.Requests, true))
	}
	return d.missing(d.vec(n.Template.Available, false), nil, used)
}
