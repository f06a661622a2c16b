// Package serverversion reads the control plane's Kubernetes version: Tailor refuses to start on
// one older than the kube-scheduler it is built from, and the EKS-optimized AMIs behind the image
// aliases follow the control plane's minor version unless a version is configured.
package serverversion

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/klog/v2"
)

// Tailor is kube-scheduler 1.34 (go.mod's k8s.io/kubernetes; a test keeps the two together). It
// lists and watches APIs an older API server does not serve (resource.k8s.io/v1 came in 1.34) and
// would wait for their caches forever; the version skew policy lets kube-scheduler be one minor
// older than the API server, never newer.
const (
	MinMinor = 34
	// MaxMinor is the newest control plane the skew policy covers; a newer one is warned about.
	MaxMinor = MinMinor + 1
)

// pollInterval is how often the control plane's version is read again (EKS upgrades it in
// place, and new nodes should get the new AMI line).
const pollInterval = 10 * time.Minute

// Source answers the API server's version (a discovery client is one).
type Source interface {
	ServerVersion() (*version.Info, error)
}

// Minor checks the API server's version info and returns its "1.N": an error, naming both
// versions, for a control plane Tailor cannot run against.
func Minor(info *version.Info) (string, error) {
	major, minor, shown, err := majorMinor(info)
	if err != nil {
		return "", err
	}
	if major != 1 || minor < MinMinor {
		return "", fmt.Errorf("the API server is Kubernetes %s, older than this Tailor (kube-scheduler 1.%d) supports: it needs EKS 1.%d or newer; upgrade the cluster or install a Tailor release built for it",
			shown, MinMinor, MinMinor)
	}
	return fmt.Sprintf("%d.%d", major, minor), nil
}

// majorMinor reads the version from GitVersion (v1.34.2-eks-b707fbb) when it is a release's, else
// from the Major and Minor fields: an API server built without release stamps (the test control
// plane's, a development build) reports v0.0.0-master there but its binary version in the fields,
// which some providers suffix with "+". shown is the version to name in a message.
func majorMinor(info *version.Info) (major, minor int, shown string, err error) {
	if v, err := utilversion.ParseGeneric(info.GitVersion); err == nil && v.Major() > 0 {
		return int(v.Major()), int(v.Minor()), info.GitVersion, nil
	}
	major, errMajor := strconv.Atoi(strings.TrimSuffix(info.Major, "+"))
	minor, errMinor := strconv.Atoi(strings.TrimSuffix(info.Minor, "+"))
	if errMajor != nil || errMinor != nil {
		return 0, 0, "", fmt.Errorf("the API server reports version %q (major %q, minor %q), which does not parse", info.GitVersion, info.Major, info.Minor)
	}
	return major, minor, info.Major + "." + info.Minor, nil
}

// Follower knows the control plane's minor version, read at start and every pollInterval.
type Follower struct {
	src   Source
	mu    sync.Mutex
	minor string
}

// Start reads the control plane's version once: an error if it cannot be read or Tailor cannot
// run against it. Run keeps it current.
func Start(ctx context.Context, src Source) (*Follower, error) {
	info, err := src.ServerVersion()
	if err != nil {
		return nil, fmt.Errorf("reading the API server's version: %w", err)
	}
	minor, err := Minor(info)
	if err != nil {
		return nil, err
	}
	logger := klog.FromContext(ctx)
	logger.Info("Control plane version", "gitVersion", info.GitVersion, "minor", minor)
	if v := utilversion.MustParseGeneric(minor); v.Minor() > MaxMinor {
		logger.Info("Warning: the control plane is newer than the version skew policy covers for this Tailor; upgrade Tailor", "minor", minor, "newestSupported", fmt.Sprintf("1.%d", MaxMinor))
	}
	return &Follower{src: src, minor: minor}, nil
}

// Current is the control plane's "1.N" as last read.
func (f *Follower) Current() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.minor
}

// Run reads the version every pollInterval until ctx ends. A version that cannot be read, or
// one Tailor cannot run against, keeps the last one (the running scheduler says so in its log).
func (f *Follower) Run(ctx context.Context) {
	logger := klog.FromContext(ctx)
	// Start has just read it: the first read is one interval on.
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			f.refresh(logger)
		}
	}
}

func (f *Follower) refresh(logger klog.Logger) {
	info, err := f.src.ServerVersion()
	if err != nil {
		logger.Error(err, "Cannot read the API server's version; keeping the last one", "minor", f.Current())
		return
	}
	minor, err := Minor(info)
	if err != nil {
		logger.Error(err, "Keeping the last control plane version", "minor", f.Current())
		return
	}
	f.mu.Lock()
	prev := f.minor
	f.minor = minor
	f.mu.Unlock()
	if prev != minor {
		logger.Info("Control plane version changed; new nodes get its AMIs", "from", prev, "to", minor)
	}
}
