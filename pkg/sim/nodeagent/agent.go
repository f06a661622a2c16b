// Package nodeagent plays the part of the kubelets and the AWS cloud controller for simulated
// instances. Each running instance of the cluster boots from the user data it was launched
// with: AL2023 user data goes through nodeadm's own binary (`nodeadm config check` reading it
// from a loopback IMDS) and nodeadm's validation rules, Bottlerocket's TOML through a TOML
// decoder and the settings its kubelet needs. Only an instance whose bootstrap names this
// cluster's endpoint, CA and service CIDR registers a Node, the way an EKS node would (name =
// private DNS name, providerID, the labels the kubelet derives from the instance plus the
// user data's node labels, the user data's taints, capacity and allocatable for its pod limit);
// any other stays running and unregistered, and the agent records why. A test can hold an
// instance's registration back (Hold), as a kubelet that has not started would. A Node whose
// instance is gone is deleted. kwok keeps the Nodes Ready and runs their pods; the agent marks its Nodes
// with the annotation kwok is told to manage.
package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Annotation kwok selects the agent's nodes by (--manage-nodes-with-annotation-selector).
const (
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokValue      = "fake"
	// RegisteredByAnnotation marks the Nodes the agent registered; it deletes no other Node.
	RegisteredByAnnotation = "sim.tailor.dev/registered-by"
	registeredByValue      = "nodeagent"
)

// Agent registers and deregisters Nodes for simulated instances.
type Agent struct {
	Cloud       cloud.Provider
	Client      kubernetes.Interface
	ClusterName string
	// Cluster is what a bootstrap must name to join (false while the cluster is not active).
	Cluster func() (Cluster, bool)
	Region  string
	// UserData returns the user data an instance was launched with.
	UserData func(instanceID string) (string, bool)
	// VolumeGiB returns the size of an instance's volume on a device, as it was launched; nil, or
	// false, is the images' default size.
	VolumeGiB func(instanceID, device string) (int64, bool)
	// Nodeadm is the nodeadm binary (make tools builds it into bin/nodeadm).
	Nodeadm string
	// Period between polls of the cloud (default 500ms).
	Period time.Duration
	// Launches, if set, returns a channel closed at the cloud's next launch: the agent looks at
	// once, as a kubelet starts with its instance, instead of at its next poll.
	Launches func() <-chan struct{}

	mu     sync.Mutex
	booted map[string]bootResult // by instance ID: each instance boots once
	// holds are the tests' holds on registration (see Hold), by the order they were made.
	holds    map[int]func(cloud.Instance) bool
	nextHold int
	// pending says whether the last sync saw an instance still pending.
	pending bool
	// booting are the instances whose boot runs now, by ID; boots bounds how many run at once.
	booting map[string]bool
	boots   chan struct{}
}

// Hold keeps the agent from booting and registering a Node for every running instance hold
// reports true for, as a kubelet that has not started yet (or never will) leaves an instance:
// it runs on, unregistered; a Node it already has stays. The returned release ends this hold:
// the instances it held boot and register on the next sync unless another hold keeps them.
// Tests use it to hold an instance between its launch and its Node. hold is called from the
// agent's goroutine, without the agent's lock.
func (a *Agent) Hold(hold func(cloud.Instance) bool) (release func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.holds == nil {
		a.holds = map[int]func(cloud.Instance) bool{}
	}
	id := a.nextHold
	a.nextHold++
	a.holds[id] = hold
	return func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		delete(a.holds, id)
	}
}

// held reports whether a hold keeps the instance from registering.
func (a *Agent) held(in cloud.Instance) bool {
	a.mu.Lock()
	holds := make([]func(cloud.Instance) bool, 0, len(a.holds))
	for _, h := range a.holds {
		holds = append(holds, h)
	}
	a.mu.Unlock()
	for _, h := range holds {
		if h(in) {
			return true
		}
	}
	return false
}

type bootResult struct {
	boot *Bootstrap
	err  error
}

// Rejected returns, by instance ID, why each instance that could not bootstrap was refused.
func (a *Agent) Rejected() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string]string{}
	for id, r := range a.booted {
		if r.err != nil {
			out[id] = r.err.Error()
		}
	}
	return out
}

// Bootstrapped counts the instances whose user data passed validation.
func (a *Agent) Bootstrapped() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, r := range a.booted {
		if r.err == nil {
			n++
		}
	}
	return n
}

// bootstrap validates the instance's user data once and remembers the outcome, as a real
// instance boots once: a refused one stays unregistered until it is terminated.
func (a *Agent) bootstrap(ctx context.Context, in *cloud.Instance) (*Bootstrap, error) {
	a.mu.Lock()
	r, ok := a.booted[in.ID]
	a.mu.Unlock()
	if ok {
		return r.boot, r.err
	}
	cluster, ok := a.Cluster()
	if !ok {
		return nil, fmt.Errorf("cluster not active yet")
	}
	ud, ok := a.UserData(in.ID)
	if !ok {
		return nil, fmt.Errorf("no user data known for %s", in.ID)
	}
	r.boot, r.err = parseBootstrap(ctx, a.Nodeadm, ud, cluster)
	var nj *notJudged
	if ctx.Err() != nil || errors.As(r.err, &nj) {
		return nil, r.err // interrupted, not refused: try again next sync
	}
	a.mu.Lock()
	if a.booted == nil {
		a.booted = map[string]bootResult{}
	}
	a.booted[in.ID] = r
	a.mu.Unlock()
	if r.err != nil {
		klog.FromContext(ctx).Info("Instance failed to bootstrap, not registering it", "instance", in.ID, "err", r.err)
	}
	return r.boot, r.err
}

// Run polls until ctx ends: every Period, five times as often while an instance is pending,
// and at once when Launches says an instance was launched, since a kubelet registers as soon
// as its instance is up.
func (a *Agent) Run(ctx context.Context) {
	if a.Period == 0 {
		a.Period = 500 * time.Millisecond
	}
	// The node's capacity comes from the catalog, which a kubelet never loads: load it before
	// the first instance, so the first fleet's boot does not wait for it.
	if _, err := a.Cloud.InstanceTypes(ctx); err != nil && ctx.Err() == nil {
		klog.FromContext(ctx).V(2).Info("Node agent cannot load the catalog yet", "err", err)
	}
	for {
		var launched <-chan struct{} // nil: no signal, the poll alone
		if a.Launches != nil {
			launched = a.Launches() // before the sync, so a launch during it is not missed
		}
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Node agent sync failed", "err", err)
		}
		next := a.Period
		a.mu.Lock()
		if a.pending {
			next /= 5
		}
		a.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(next):
		case <-launched:
		}
	}
}

// Sync registers Nodes for running instances and deletes Nodes of vanished ones.
func (a *Agent) Sync(ctx context.Context) error {
	insts, err := a.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + a.ClusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		return err
	}
	nodes, err := a.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing := map[string]*corev1.Node{}
	for i := range nodes.Items {
		existing[nodes.Items[i].Name] = &nodes.Items[i]
	}
	running := map[string]bool{}
	types := map[string]*cloud.InstanceType{}
	var boots []*cloud.Instance
	pending := false
	for i := range insts {
		in := &insts[i]
		pending = pending || in.State == cloud.StatePending
		if in.State != cloud.StateRunning || in.PrivateDNSName == "" {
			continue
		}
		running[in.PrivateDNSName] = true
		if _, ok := existing[in.PrivateDNSName]; ok {
			continue
		}
		it, ok, err := a.Cloud.InstanceType(ctx, in.Type)
		if err != nil {
			return err
		}
		if ok && !a.held(*in) {
			types[in.Type] = &it
			boots = append(boots, in)
		}
	}
	a.mu.Lock()
	a.pending = pending
	a.mu.Unlock()
	for _, in := range boots {
		a.boot(ctx, in, types[in.Type])
	}
	for name, n := range existing {
		if n.Annotations[RegisteredByAnnotation] != registeredByValue || running[name] {
			continue
		}
		if err := a.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Node deleted: instance gone", "node", name)
	}
	return nil
}

// parallelBoots bounds the nodeadm runs at once.
const parallelBoots = 8

// boot registers the instance in the background, unless its boot runs already. Instances boot
// side by side and apart from the agent's polls, as on EC2: an instance launched while others
// boot is looked at by the next sync, not once the slowest nodeadm run of those is done.
func (a *Agent) boot(ctx context.Context, in *cloud.Instance, it *cloud.InstanceType) {
	a.mu.Lock()
	if a.booting == nil {
		a.booting, a.boots = map[string]bool{}, make(chan struct{}, parallelBoots)
	}
	if a.booting[in.ID] {
		a.mu.Unlock()
		return
	}
	a.booting[in.ID] = true
	a.mu.Unlock()
	go func() {
		defer func() {
			a.mu.Lock()
			delete(a.booting, in.ID)
			a.mu.Unlock()
		}()
		select {
		case a.boots <- struct{}{}:
			defer func() { <-a.boots }()
		case <-ctx.Done():
			return
		}
		if a.held(*in) {
			return // held while it waited its turn: the sync after the release boots it
		}
		if err := a.register(ctx, in, it); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Node agent cannot register the instance; next sync tries again", "instance", in.ID, "err", err)
		}
	}()
}

// register boots the instance and creates its Node, unless its user data does not bootstrap.
func (a *Agent) register(ctx context.Context, in *cloud.Instance, it *cloud.InstanceType) error {
	boot, err := a.bootstrap(ctx, in)
	if err != nil {
		return nil // refused (the agent recorded why) or not judged yet (tried next sync)
	}
	node := a.node(in, it, boot)
	if _, err := a.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	klog.FromContext(ctx).V(2).Info("Node registered", "node", node.Name, "instance", in.ID, "type", in.Type)
	return nil
}

func (a *Agent) node(in *cloud.Instance, it *cloud.InstanceType, boot *Bootstrap) *corev1.Node {
	kc := boot.kubeletConfig(it) // both AMIs default to the ENI-derived pod limit
	storage := a.storage(in.ID, it, boot)
	// The labels the kubelet and the cloud controller derive win over --node-labels.
	derived := map[string]string{
		corev1.LabelHostname:             in.PrivateDNSName,
		corev1.LabelInstanceTypeStable:   in.Type,
		corev1.LabelInstanceType:         in.Type,
		corev1.LabelTopologyZone:         in.Zone,
		corev1.LabelTopologyRegion:       a.Region,
		corev1.LabelArchStable:           it.Arch,
		corev1.LabelOSStable:             "linux",
		"eks.amazonaws.com/compute-type": "ec2",
	}
	labels := maps.Clone(boot.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, derived)
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        in.PrivateDNSName,
			Labels:      labels,
			Annotations: map[string]string{KwokAnnotation: KwokValue, RegisteredByAnnotation: registeredByValue},
		},
		Spec: corev1.NodeSpec{
			ProviderID: in.ProviderID(),
			Taints:     boot.Taints,
		},
		Status: corev1.NodeStatus{
			Capacity:    catalog.CapacityWith(it, kc, storage),
			Allocatable: catalog.AllocatableWith(it, kc, storage),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: in.PrivateIP},
				{Type: corev1.NodeInternalDNS, Address: in.PrivateDNSName},
				{Type: corev1.NodeHostName, Address: in.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch, OperatingSystem: "linux", KubeletVersion: "v1.34.7"},
		},
	}
}

// storage is the size in bytes of the storage the kubelet keeps pods' ephemeral storage on: the
// instance store volumes when the user data stripes them (and the type has some), else the root
// volume on AL2023 and the data volume on Bottlerocket.
func (a *Agent) storage(instanceID string, it *cloud.InstanceType, boot *Bootstrap) int64 {
	if boot.RAID0 && it.InstanceStorageGB > 0 {
		return catalog.InstanceStoreBytes(it)
	}
	if a.VolumeGiB != nil {
		if n, ok := a.VolumeGiB(instanceID, catalog.DataDevice(boot.OS)); ok {
			return n << 30
		}
	}
	return catalog.DefaultRootVolumeGiB << 30
}
