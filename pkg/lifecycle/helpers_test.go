package lifecycle

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/claims/claimstest"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
	claimsfake "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
	"github.com/tailor-eks/tailor/pkg/offerings"
)

// testNow is the time of every stage test.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// harness is a Controller on fakes: the cloud, the claims' typed clientset (read through the
// store, as in production), a Kubernetes clientset and a node lister over the same nodes.
type harness struct {
	c      *Controller
	cloud  *cloudfake.Provider
	claims *claimsfake.Clientset
	kube   *fake.Clientset
	demand *fakeDemand
}

// newHarness starts a controller's stores on the claims, nodes and instances given.
func newHarness(t *testing.T, cls []*v1alpha1.Claim, nodes []*corev1.Node, instances []cloud.Instance) *harness {
	t.Helper()
	var objs []runtime.Object
	for _, cl := range cls {
		objs = append(objs, cl)
	}
	h := &harness{cloud: cloudfake.New([]cloud.InstanceType{{Name: "m5.large", Arch: "amd64", VCPUs: 2, MemoryMiB: 8192,
		Offerings: []cloud.Offering{{Zone: "us-east-1a", CapacityType: cloud.OnDemand, PricePerHour: 0.096}, {Zone: "us-east-1a", CapacityType: cloud.Spot, PricePerHour: 0.04}}}},
		[]cloud.Subnet{{ID: "subnet-a", Zone: "us-east-1a", AvailableIPs: 100}}, []string{"sg-1"}),
		claims: claimstest.NewClientset(objs...), demand: &fakeDemand{unwanted: map[string]bool{}, waits: map[string]bool{}, waiting: map[string][]*corev1.Pod{}}}
	for _, in := range instances {
		h.cloud.AddInstance(in)
	}
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	var nodeObjs []runtime.Object
	for _, n := range nodes {
		if err := indexer.Add(n); err != nil {
			t.Fatal(err)
		}
		nodeObjs = append(nodeObjs, n)
	}
	h.kube = fake.NewClientset(nodeObjs...)
	store := claims.NewStoreForClient(h.claims)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := store.Run(ctx); err != nil {
		t.Fatal(err)
	}
	args := &config.TailorArgs{ClusterName: "c", RegistrationTimeout: metav1.Duration{Duration: 15 * time.Minute},
		Pools: []config.Pool{{Name: "default", AMI: "al2023", InstanceProfile: "node", CapacityTypes: []string{"on-demand", "spot"}}}}
	h.c = &Controller{
		Args: args, Cloud: h.cloud, Claims: store, Demand: h.demand, Offerings: offerings.New(offerings.Options{Args: args, Cloud: h.cloud}), Client: h.kube,
		Nodes: corelisters.NewNodeLister(indexer), Recorder: events.NewFakeRecorder(100), OrphanGrace: DefaultOrphanGrace,
		Clock: clocktesting.NewFakePassiveClock(testNow),
	}
	return h
}

// claimGone says whether the claim is gone from the API server.
func (h *harness) claimGone(t *testing.T, name string) bool {
	t.Helper()
	_, err := h.claims.TailorV1alpha1().Claims().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return apierrors.IsNotFound(err)
}

// claim reads the claim from the API server.
func (h *harness) claim(t *testing.T, name string) *v1alpha1.Claim {
	t.Helper()
	cl, err := h.claims.TailorV1alpha1().Claims().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// running says whether the instance still runs.
func (h *harness) running(t *testing.T, id string) bool {
	t.Helper()
	ins, err := h.cloud.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return slices.ContainsFunc(ins, func(in cloud.Instance) bool { return in.ID == id })
}

// live lists the running instances by ID.
func (h *harness) live(t *testing.T) map[string]cloud.Instance {
	t.Helper()
	ins, err := h.cloud.Instances(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]cloud.Instance{}
	for _, in := range ins {
		out[in.ID] = in
	}
	return out
}

// fakeDemand wants every claim but those it is told are unwanted, says pods wait on the claims
// it is told they do, and lists as waiting the pods it is given per claim.
type fakeDemand struct {
	mu       sync.Mutex
	unwanted map[string]bool
	waits    map[string]bool
	waiting  map[string][]*corev1.Pod
}

func (d *fakeDemand) Waiting(c *v1alpha1.Claim) []*corev1.Pod {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waiting[c.Name]
}

func (d *fakeDemand) Wanted(c *v1alpha1.Claim) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.unwanted[c.Name]
}

func (d *fakeDemand) Waits(claim string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.waits[claim]
}

// markInFlight makes the controller believe a launch of the claim is running.
func (h *harness) markInFlight(name string) {
	h.c.launches.mu.Lock()
	defer h.c.launches.mu.Unlock()
	if h.c.launches.inflight == nil {
		h.c.launches.inflight = map[string]bool{}
	}
	h.c.launches.inflight[name] = true
}

// claimIn is a claim of the default pool in phase, for pod "p-<name>" (a removed claim's pods
// are planned again by provisioning, which follows the claims: TestReleaseReplansTheWaitingPods), created and launched at
// the times given (zero: never launched), with the termination finalizer.
func claimIn(name string, phase v1alpha1.ClaimPhase, instanceID string, created, launched time.Time) *v1alpha1.Claim {
	cl := &v1alpha1.Claim{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created), Finalizers: []string{v1alpha1.FinalizerTermination}},
		Spec: v1alpha1.ClaimSpec{Pool: "default", CapacityType: "on-demand", Zone: "us-east-1a", InstanceTypes: []string{"m5.large"},
			Pods: []v1alpha1.PodRef{{Namespace: "default", Name: "p-" + name, UID: "uid-" + name}}},
		Status: v1alpha1.ClaimStatus{Phase: phase, InstanceID: instanceID, InstanceType: "m5.large"},
	}
	if !launched.IsZero() {
		cl.Status.LaunchedAt = &metav1.Time{Time: launched}
	}
	return cl
}

// instanceOf is a running instance of the cluster tagged with claim ("": untagged), launched at.
func instanceOf(id, claim string, launched time.Time) cloud.Instance {
	tags := map[string]string{v1alpha1.TagClusterPrefix + "c": v1alpha1.TagOwnedValue}
	if claim != "" {
		tags[v1alpha1.TagClaim] = claim
	}
	return cloud.Instance{ID: id, Type: "m5.large", Zone: "us-east-1a", LaunchTime: launched, Tags: tags}
}

// nodeFor is a node of instance id, Ready unless said otherwise, with taints.
func nodeFor(name, id string, ready bool, taints ...corev1.Taint) *corev1.Node {
	status := corev1.ConditionTrue
	if !ready {
		status = corev1.ConditionFalse
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id, Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}},
	}
}

var unregistered = corev1.Taint{Key: v1alpha1.TaintUnregistered, Effect: corev1.TaintEffectNoExecute}
