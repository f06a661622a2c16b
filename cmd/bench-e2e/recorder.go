package main

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/generated/clientset/versioned"
)

// recorder watches the burst's pods, the claims and the nodes, and stamps what it sees with
// this process's clock as each watch event arrives: the objects' own timestamps have one-second
// resolution. Evictions and drains count toward the scale-up until the burst is first settled
// (scaledUp), toward the consolidation after it until the burst stays settled (freeze).
type recorder struct {
	namespace string
	pods      informers.SharedInformerFactory // the burst's namespace: pods, DaemonSets
	nodes     informers.SharedInformerFactory
	claims    *claims.Store

	mu     sync.Mutex
	frozen bool
	// scaledUp is set when every pod of the burst was first seen done: disruptions from then on
	// are consolidation's moves on a settled fleet, not disruptions during the scale-up.
	scaledUp bool
	created  map[types.UID]time.Time
	names    map[types.UID]string    // namespace/name, for the timeline
	running  map[types.UID]time.Time // first seen Running (or Succeeded)
	// completed are a Job's pods seen Succeeded: their work is done even after PodGC deletes
	// them with the node consolidation took away.
	completed map[types.UID]bool
	launched  map[types.UID]time.Time // first claim listing the pod seen launched
	daemon    map[types.UID]bool
	// duringScaleUp and afterScaleUp count pods evicted and nodes drained before and after
	// scaledUp.
	duringScaleUp, afterScaleUp disruptions
	lastCreated                 time.Time // of a pod no DaemonSet owns
	claimsSeen                  map[string]bool
	// claimLaunched and claimRegistered are when each claim was first seen Launched and
	// Registered.
	claimLaunched, claimRegistered map[string]time.Time
	drained                        map[string]bool // nodes seen with the disrupting taint
	// changes counts pods created, pods lost and nodes drained: churn between two looks at the
	// burst, however quick, restarts the quiet period that confirms it settled.
	changes int
}

func newRecorder(client kubernetes.Interface, claimsClient versioned.Interface, namespace string) *recorder {
	return &recorder{
		namespace: namespace,
		pods:      informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(namespace)),
		nodes:     informers.NewSharedInformerFactory(client, 0),
		claims:    claims.NewStoreForClient(claimsClient),
		created:   map[types.UID]time.Time{}, names: map[types.UID]string{}, running: map[types.UID]time.Time{}, launched: map[types.UID]time.Time{},
		completed: map[types.UID]bool{},
		daemon:    map[types.UID]bool{}, claimsSeen: map[string]bool{}, drained: map[string]bool{},
		duringScaleUp: newDisruptions(), afterScaleUp: newDisruptions(),
		claimLaunched: map[string]time.Time{}, claimRegistered: map[string]time.Time{},
	}
}

// start registers the handlers and waits for the first lists.
func (r *recorder) start(ctx context.Context) error {
	podInf := r.pods.Core().V1().Pods().Informer()
	_ = r.pods.Apps().V1().DaemonSets().Informer()
	nodeInf := r.nodes.Core().V1().Nodes().Informer()
	for _, err := range []error{
		handle(podInf, r.podAdded, func(old, cur *corev1.Pod) { r.podUpdated(old, cur) }, r.podDeleted),
		handle(nodeInf, r.nodeSeen, func(_, cur *corev1.Node) { r.nodeSeen(cur) }, func(*corev1.Node) {}),
		r.claims.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { r.claimSeen(obj.(*v1alpha1.Claim)) },
			UpdateFunc: func(_, obj any) { r.claimSeen(obj.(*v1alpha1.Claim)) },
		}),
	} {
		if err != nil {
			return err
		}
	}
	r.pods.Start(ctx.Done())
	r.nodes.Start(ctx.Done())
	for _, synced := range []map[reflect.Type]bool{r.pods.WaitForCacheSync(ctx.Done()), r.nodes.WaitForCacheSync(ctx.Done())} {
		for t, ok := range synced {
			if !ok {
				return fmt.Errorf("%v cache did not sync", t)
			}
		}
	}
	return r.claims.Run(ctx)
}

// handle adds typed handlers to an informer; tombstones are unwrapped.
func handle[T any](inf cache.SharedIndexInformer, add func(T), update func(old, cur T), del func(T)) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { add(obj.(T)) },
		UpdateFunc: func(old, cur any) { update(old.(T), cur.(T)) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if o, ok := obj.(T); ok {
				del(o)
			}
		},
	})
	return err
}

func (r *recorder) podAdded(p *corev1.Pod) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.created[p.UID]; !seen {
		r.created[p.UID] = now
		r.names[p.UID] = p.Namespace + "/" + p.Name
		r.changes++
		if ownerKind(p) == "DaemonSet" {
			r.daemon[p.UID] = true
		} else if !r.frozen {
			r.lastCreated = now
		}
	}
	r.observe(p, now)
}

func (r *recorder) podUpdated(old, cur *corev1.Pod) {
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.observe(cur, now)
	if old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil && !terminal(old) {
		r.evict(cur)
	}
}

// podDeleted counts a pod that went without being seen deleting (a forced deletion, or the
// update was missed) while it was not done.
func (r *recorder) podDeleted(p *corev1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.noteCompleted(p) // its success may be seen only now
	if p.DeletionTimestamp == nil && !terminal(p) {
		r.evict(p)
	}
}

// evict counts a pod lost before it was done. Callers hold r.mu.
func (r *recorder) evict(p *corev1.Pod) {
	r.changes++
	if !r.frozen && !r.daemon[p.UID] {
		r.tally().evicted[p.UID] = true
	}
}

// tally is where a disruption seen now counts. Callers hold r.mu.
func (r *recorder) tally() disruptions {
	if r.scaledUp {
		return r.afterScaleUp
	}
	return r.duringScaleUp
}

// observe stamps the first time a pod is seen Running (a Job's pod may be seen Succeeded
// first). Callers hold r.mu.
func (r *recorder) observe(p *corev1.Pod, now time.Time) {
	if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodSucceeded {
		return
	}
	r.noteCompleted(p)
	if _, seen := r.running[p.UID]; !seen {
		r.running[p.UID] = now
	}
}

func (r *recorder) claimSeen(c *v1alpha1.Claim) {
	if !launched(c) {
		return
	}
	now := time.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, seen := r.claimRegistered[c.Name]; !seen && c.Status.Phase == v1alpha1.ClaimRegistered {
		r.claimRegistered[c.Name] = now
	}
	if r.claimsSeen[c.Name] {
		return
	}
	r.claimsSeen[c.Name] = true
	r.claimLaunched[c.Name] = now
	for _, ref := range c.Spec.Pods {
		if _, seen := r.launched[types.UID(ref.UID)]; !seen {
			r.launched[types.UID(ref.UID)] = now
		}
	}
}

// launched says whether EC2 has answered the claim's launch with an instance.
func launched(c *v1alpha1.Claim) bool {
	return c.Status.InstanceID != "" || c.Status.Phase == v1alpha1.ClaimLaunched || c.Status.Phase == v1alpha1.ClaimRegistered
}

func (r *recorder) nodeSeen(n *corev1.Node) {
	for _, t := range n.Spec.Taints {
		if t.Key != v1alpha1.TaintDisrupting {
			continue
		}
		r.mu.Lock()
		if !r.drained[n.Name] && !r.frozen {
			r.drained[n.Name] = true
			r.tally().drained[n.Name] = t.Value
			r.changes++
		}
		r.mu.Unlock()
	}
}

// markScaledUp notes that every pod of the burst is done: what is disrupted from now on is
// consolidation after the scale-up.
func (r *recorder) markScaledUp() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.scaledUp = true
}

// freeze stops counting evictions, drains and pod creations: the burst has settled.
func (r *recorder) freeze() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.frozen = true
}

// disruptions are the burst's pods evicted and the nodes drained in one phase of the burst.
type disruptions struct {
	evicted map[types.UID]bool
	drained map[string]string // node → the disrupting taint's value (the reason)
}

func newDisruptions() disruptions {
	return disruptions{evicted: map[types.UID]bool{}, drained: map[string]string{}}
}

// reasons counts the drains by reason; nil if none.
func (d disruptions) reasons() map[string]int {
	if len(d.drained) == 0 {
		return nil
	}
	out := map[string]int{}
	for _, reason := range d.drained {
		out[reason]++
	}
	return out
}

func ownerKind(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return ref.Kind
	}
	return ""
}

// noteCompleted remembers a Job's pod that succeeded. Callers hold r.mu.
func (r *recorder) noteCompleted(p *corev1.Pod) {
	if p.Status.Phase == corev1.PodSucceeded && ownerKind(p) == "Job" {
		r.completed[p.UID] = true
	}
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}
