package serverversion

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"
)

func TestMinor(t *testing.T) {
	for _, tt := range []struct {
		gitVersion   string
		major, minor string
		want         string
		wantErr      []string
	}{
		{gitVersion: "v1.34.2-eks-b707fbb", want: "1.34"},
		{gitVersion: "v1.35.0", want: "1.35"},
		{gitVersion: "v1.36.1-eks-1234567", want: "1.36"}, // newer than the skew policy: warned about, not refused
		{gitVersion: "v1.31.5-eks-ce1d5eb", wantErr: []string{"Kubernetes v1.31.5-eks-ce1d5eb", "kube-scheduler 1.34", "EKS 1.34 or newer"}},
		{gitVersion: "v1.33.0", wantErr: []string{"older than this Tailor"}},
		{gitVersion: "v2.0.0", wantErr: []string{"Kubernetes v2.0.0"}},
		{gitVersion: "", wantErr: []string{"does not parse"}},
		// A build without release stamps (the test control plane's) has its version in the fields.
		{gitVersion: "v0.0.0-master+$Format:%H$", major: "1", minor: "34", want: "1.34"},
		{gitVersion: "v0.0.0-master+$Format:%H$", major: "1", minor: "31+", wantErr: []string{"Kubernetes 1.31+, older"}},
		{gitVersion: "v0.0.0-master+$Format:%H$", wantErr: []string{"does not parse"}},
	} {
		got, err := Minor(&version.Info{GitVersion: tt.gitVersion, Major: tt.major, Minor: tt.minor})
		if got != tt.want {
			t.Errorf("Minor(%q) = %q, want %q", tt.gitVersion, got, tt.want)
		}
		if (err != nil) != (len(tt.wantErr) > 0) {
			t.Errorf("Minor(%q): error %v, want one saying %v", tt.gitVersion, err, tt.wantErr)
			continue
		}
		for _, w := range tt.wantErr {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("Minor(%q): error %q does not say %q", tt.gitVersion, err, w)
			}
		}
	}
}

// fakeSource answers the versions in turn, the last one from then on.
type fakeSource struct {
	answers []string
	err     error
}

func (s *fakeSource) ServerVersion() (*version.Info, error) {
	if s.err != nil {
		return nil, s.err
	}
	v := s.answers[0]
	if len(s.answers) > 1 {
		s.answers = s.answers[1:]
	}
	return &version.Info{GitVersion: v}, nil
}

// Start refuses a control plane Tailor cannot run against, and one it cannot read; the follower
// then takes an upgrade and keeps the last good version through errors and a bad answer.
func TestFollower(t *testing.T) {
	ctx := context.Background()
	if _, err := Start(ctx, &fakeSource{answers: []string{"v1.32.9-eks-1"}}); err == nil || !strings.Contains(err.Error(), "EKS 1.34 or newer") {
		t.Errorf("Start on 1.32: error %v, want a refusal", err)
	}
	if _, err := Start(ctx, &fakeSource{err: errors.New("connection refused")}); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("Start without an API server: error %v", err)
	}
	src := &fakeSource{answers: []string{"v1.34.1", "v1.35.0-eks-2", "v1.31.0"}}
	f, err := Start(ctx, src)
	if err != nil || f.Current() != "1.34" {
		t.Fatalf("Start: %v, current %q", err, f.Current())
	}
	logger := klog.Background()
	for _, want := range []string{"1.35", "1.35"} { // upgraded; then an answer it cannot run against
		f.refresh(logger)
		if got := f.Current(); got != want {
			t.Errorf("current %q, want %q", got, want)
		}
	}
	src.err = errors.New("timeout")
	f.refresh(logger)
	if got := f.Current(); got != "1.35" {
		t.Errorf("current %q after a failed read, want 1.35 kept", got)
	}
}

// MinMinor is the minor of the kube-scheduler Tailor is built from: go.mod's k8s.io/kubernetes.
func TestMinMinorIsTheSchedulers(t *testing.T) {
	mod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*k8s\.io/kubernetes (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no k8s.io/kubernetes")
	}
	if v := utilversion.MustParseSemantic(string(m[1])); v.Minor() != MinMinor {
		t.Errorf("built on k8s.io/kubernetes %s, MinMinor %d", m[1], MinMinor)
	}
}
