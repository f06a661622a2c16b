// Package rollout tells which workloads' controllers still owe pods: a ReplicaSet, StatefulSet
// or Job of the profile that wants more pods than it has created. A controller creates pods at
// its own pace (kube-controller-manager's client allows about 20 a second), so a scale-up of a
// thousand replicas reaches the scheduler over most of a minute; the pods still owed are the
// next wave, and the room on the nodes is theirs.
package rollout

import (
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	appslisters "k8s.io/client-go/listers/apps/v1"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/utils/ptr"
)

// Workload is one whose controller still owes pods.
type Workload struct {
	Kind, Namespace, Name string
	UID                   types.UID
	// Owed is how many pods it wants and has not created (Owing fills it in).
	Owed int
	// Wants is how many pods it wants to run now (Of and Owing fill it in).
	Wants int
	// Template is what its pods look like.
	Template *corev1.PodTemplateSpec
}

func (w Workload) String() string {
	return fmt.Sprintf("%s %s/%s owes %d pods", w.Kind, w.Namespace, w.Name, w.Owed)
}

// Lister finds the profile's workloads that owe pods, from the informers' caches.
type Lister struct {
	ReplicaSets  appslisters.ReplicaSetLister
	StatefulSets appslisters.StatefulSetLister
	Jobs         batchlisters.JobLister
	// Deployments, if set, tells a Deployment its controller has not synced yet (Unsynced).
	Deployments appslisters.DeploymentLister
	// Pods counts a workload's live pods (Live); without it Owing goes by the controllers'
	// status alone.
	Pods          corelisters.PodLister
	SchedulerName string
}

// Owing lists the profile's workloads whose controllers still owe pods.
func (l *Lister) Owing() ([]Workload, error) {
	var out []Workload
	rss, err := l.ReplicaSets.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, rs := range rss {
		if n := replicaSetOwes(rs); n > 0 && l.ours(&rs.Spec.Template) {
			w := Workload{Kind: "ReplicaSet", Namespace: rs.Namespace, Name: rs.Name, UID: rs.UID, Owed: n, Wants: replicaSetWants(rs), Template: &rs.Spec.Template}
			if w.Owed = l.notCreated(w, w.Wants); w.Owed > 0 {
				out = append(out, w)
			}
		}
	}
	sss, err := l.StatefulSets.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, ss := range sss {
		if n := statefulSetOwes(ss); n > 0 && l.ours(&ss.Spec.Template) {
			w := Workload{Kind: "StatefulSet", Namespace: ss.Namespace, Name: ss.Name, UID: ss.UID, Owed: n, Wants: statefulSetWants(ss), Template: &ss.Spec.Template}
			if w.Owed = l.notCreated(w, w.Wants); w.Owed > 0 {
				out = append(out, w)
			}
		}
	}
	jobs, err := l.Jobs.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	for _, j := range jobs {
		if n := jobOwes(j); n > 0 && l.ours(&j.Spec.Template) {
			out = append(out, Workload{Kind: "Job", Namespace: j.Namespace, Name: j.Name, UID: j.UID, Owed: n, Wants: jobWants(j), Template: &j.Spec.Template})
		}
	}
	return out, nil
}

// Unsynced says whether a Deployment of the profile that wants pods has a spec its controller
// has not acted on yet: its ReplicaSet for that spec may not exist, so the pods it will owe are
// not known. A kubectl apply of several Deployments creates their ReplicaSets one by one over
// about a second; a batch closed before the last ones appear plans without their pods, and they
// get nodes of their own in the next.
func (l *Lister) Unsynced() bool {
	if l.Deployments == nil {
		return false
	}
	ds, err := l.Deployments.List(labels.Everything())
	if err != nil {
		return false
	}
	for _, d := range ds {
		if d.Status.ObservedGeneration < d.Generation && replicas(d.Spec.Replicas) > 0 && !d.Spec.Paused && l.ours(&d.Spec.Template) && !replicaFailure(d) {
			return true
		}
	}
	return false
}

// replicaFailure says whether the Deployment's controller cannot create its ReplicaSet's pods or
// the ReplicaSet (a quota, a webhook): it will not sync soon, and no batch waits for it.
func replicaFailure(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// notCreated is how many of the pods w wants the informer has not seen created, if the lister
// counts pods (else what its status says it owes). A ReplicaSet updates its status only after
// each burst of up to 500 creations, which takes minutes when several controllers share
// kube-controller-manager's rate limit; each pod shows as soon as it is created, so progress
// (Progress) is seen pod by pod, not burst by burst.
func (l *Lister) notCreated(w Workload, wants int) int {
	if l.Pods == nil {
		return w.Owed
	}
	return max(wants-len(l.LivePods(w)), 0)
}

func (l *Lister) ours(t *corev1.PodTemplateSpec) bool { return t.Spec.SchedulerName == l.SchedulerName }

// replicaSetOwes is how many pods the ReplicaSet wants beyond the non-terminating pods it last
// counted.
func replicaSetOwes(rs *appsv1.ReplicaSet) int {
	return max(replicaSetWants(rs)-int(rs.Status.Replicas), 0)
}

// replicaSetWants is how many pods the ReplicaSet wants to run. One whose pods cannot be created
// (ReplicaFailure: a quota, an admission webhook) wants none more than it has: they may never
// come.
func replicaSetWants(rs *appsv1.ReplicaSet) int {
	if rs.DeletionTimestamp != nil {
		return 0
	}
	for _, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return int(rs.Status.Replicas)
		}
	}
	return replicas(rs.Spec.Replicas)
}

// statefulSetOwes is how many pods the StatefulSet wants beyond those it has created.
func statefulSetOwes(ss *appsv1.StatefulSet) int {
	return max(statefulSetWants(ss)-int(ss.Status.Replicas), 0)
}

func statefulSetWants(ss *appsv1.StatefulSet) int {
	if ss.DeletionTimestamp != nil {
		return 0
	}
	return replicas(ss.Spec.Replicas)
}

// jobOwes is how many more pods the Job runs at once than are active.
func jobOwes(j *batchv1.Job) int { return max(jobWants(j)-int(j.Status.Active), 0) }

// jobWants is how many pods the Job runs at once: its parallelism, or fewer when fewer
// completions remain. A suspended or finished Job runs none.
func jobWants(j *batchv1.Job) int {
	if j.DeletionTimestamp != nil || j.Spec.Suspend != nil && *j.Spec.Suspend {
		return 0
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed || c.Type == batchv1.JobFailureTarget || c.Type == batchv1.JobSuccessCriteriaMet) && c.Status == corev1.ConditionTrue {
			return 0
		}
	}
	want := replicas(j.Spec.Parallelism)
	if j.Spec.Completions != nil {
		want = min(want, int(*j.Spec.Completions-j.Status.Succeeded))
	}
	return max(want, 0)
}

// replicas is a replica count as the API defaults it: one when unset.
func replicas(n *int32) int {
	if n == nil {
		return 1
	}
	return int(*n)
}

// Of returns the workload that controls pod, if it is a ReplicaSet, StatefulSet or Job of the
// profile the listers know, with Wants set to how many pods it wants to run now.
func (l *Lister) Of(pod *corev1.Pod) (Workload, bool) {
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return Workload{}, false
	}
	w := Workload{Kind: ref.Kind, Namespace: pod.Namespace, Name: ref.Name, UID: ref.UID}
	switch ref.Kind {
	case "ReplicaSet":
		rs, err := l.ReplicaSets.ReplicaSets(pod.Namespace).Get(ref.Name)
		if err != nil || rs.UID != ref.UID {
			return Workload{}, false
		}
		w.Wants, w.Template = replicaSetWants(rs), &rs.Spec.Template
	case "StatefulSet":
		ss, err := l.StatefulSets.StatefulSets(pod.Namespace).Get(ref.Name)
		if err != nil || ss.UID != ref.UID {
			return Workload{}, false
		}
		w.Wants, w.Template = statefulSetWants(ss), &ss.Spec.Template
	case "Job":
		j, err := l.Jobs.Jobs(pod.Namespace).Get(ref.Name)
		if err != nil || j.UID != ref.UID {
			return Workload{}, false
		}
		w.Wants, w.Template = jobWants(j), &j.Spec.Template
	default:
		return Workload{}, false
	}
	return w, l.ours(w.Template)
}

// Live counts the workload's pods that exist and have not finished: those its controller
// created and that still count against what it wants.
func (l *Lister) Live(w Workload) int { return l.count(w, false) }

// Placed counts the workload's live pods that have a node.
func (l *Lister) Placed(w Workload) int { return l.count(w, true) }

func (l *Lister) count(w Workload, placed bool) int {
	n := 0
	for _, p := range l.LivePods(w) {
		if !placed || p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

// LivePods lists the workload's live pods: those its controller created that have not finished.
func (l *Lister) LivePods(w Workload) []*corev1.Pod {
	pods, err := l.Pods.Pods(w.Namespace).List(labels.SelectorFromSet(w.Template.Labels))
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, p := range pods {
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == w.UID && p.DeletionTimestamp == nil &&
			p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// Get returns the workload of kind, namespace and name if it is still the one with uid, with
// Wants and Template set.
func (l *Lister) Get(kind, namespace, name string, uid types.UID) (Workload, bool) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, OwnerReferences: []metav1.OwnerReference{
		{Kind: kind, Name: name, UID: uid, Controller: ptr.To(true)}}}}
	return l.Of(pod)
}

// Progress remembers when each owing workload last made progress (created a pod), so a
// controller that stopped creating pods (a quota without a condition, a webhook that refuses its
// pods) stops counting as a scale-up under way after a while.
type Progress struct {
	// Stall is how long a workload may owe the same number of pods before it no longer counts.
	Stall time.Duration

	mu   sync.Mutex
	seen map[types.UID]progressMark
}

type progressMark struct {
	owed  int
	since time.Time
}

// Moving returns the workloads of ws that created a pod within Stall, and forgets the workloads
// that no longer owe pods.
func (p *Progress) Moving(ws []Workload, now time.Time) []Workload {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[types.UID]progressMark{}
	}
	owing := make(map[types.UID]bool, len(ws))
	var out []Workload
	for _, w := range ws {
		owing[w.UID] = true
		m, ok := p.seen[w.UID]
		if !ok || m.owed != w.Owed {
			m = progressMark{owed: w.Owed, since: now}
			p.seen[w.UID] = m
		}
		if now.Sub(m.since) < p.Stall {
			out = append(out, w)
		}
	}
	for uid := range p.seen {
		if !owing[uid] {
			delete(p.seen, uid)
		}
	}
	return out
}
