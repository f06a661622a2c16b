package workload

import (
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
)

// owner is the controller object the created pods belong to.
type owner struct {
	gvk       schema.GroupVersionKind
	namespace string
	name      string
	uid       types.UID
	where     string // the document, for errors
}

func (o *owner) String() string { return o.gvk.Kind + " " + o.namespace + "/" + o.name }

func (o *owner) errorf(format string, args ...any) error {
	return fmt.Errorf("%s: %s: %s", o.where, o, fmt.Sprintf(format, args...))
}

func (rd *reader) owner(where string, gvk schema.GroupVersionKind, m *metav1.ObjectMeta) (*owner, error) {
	o := &owner{gvk: gvk, namespace: m.Namespace, name: m.Name, uid: m.UID, where: where}
	if o.namespace == "" {
		o.namespace = metav1.NamespaceDefault
	}
	if o.name == "" {
		if m.GenerateName == "" {
			return nil, fmt.Errorf("%s: %s: metadata.name is required", where, gvk.Kind)
		}
		o.name = generatedName(m.GenerateName, where)
	}
	if o.uid == "" {
		o.uid = uid(gvk.Kind, o.namespace, o.name)
	}
	return o, nil
}

// uid is a deterministic UID (a name-based, version 5 style UUID) for an object, so that two
// reads of the same manifests give equal objects.
func uid(kind, namespace, name string) types.UID {
	h := sha1.Sum([]byte("tailor.workload/" + kind + "/" + namespace + "/" + name))
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return types.UID(fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16]))
}

// addPod adds a bare Pod as given, with its namespace, name and UID defaulted and the API
// server's defaults applied. A pod that has finished (phase Succeeded or Failed) holds no
// resources and is skipped.
func (rd *reader) addPod(where string, p *corev1.Pod) error {
	if p.Namespace == "" {
		p.Namespace = metav1.NamespaceDefault
	}
	if p.Name == "" {
		if p.GenerateName == "" {
			return fmt.Errorf("%s: Pod: metadata.name is required", where)
		}
		p.Name = generatedName(p.GenerateName, where)
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		rd.w.Skipped = append(rd.w.Skipped, fmt.Sprintf("Pod %s: phase %s; holds no resources", podKey(p), p.Status.Phase))
		return nil
	}
	if len(p.Spec.Containers) == 0 {
		return fmt.Errorf("%s: Pod %s: spec.containers: at least one container is required", where, podKey(p))
	}
	if p.UID == "" {
		p.UID = uid("Pod", p.Namespace, p.Name)
	}
	defaultPod(p)
	rd.w.Pods = append(rd.w.Pods, p)
	rd.w.setOrigin(p, fmt.Sprintf("Pod %s (%s)", podKey(p), where))
	return nil
}

// pod creates the pod named name from o's template, as its controller would: the template's
// labels (plus extra), annotations and spec, an ownerReference to o, a deterministic UID and the
// API server's defaults.
func (o *owner) pod(tmpl *corev1.PodTemplateSpec, name string, extra map[string]string) *corev1.Pod {
	labels := maps.Clone(tmpl.Labels)
	if len(extra) > 0 && labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, extra)
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   o.namespace,
			Name:        name,
			UID:         uid("Pod", o.namespace, name),
			Labels:      labels,
			Annotations: maps.Clone(tmpl.Annotations),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         o.gvk.GroupVersion().String(),
				Kind:               o.gvk.Kind,
				Name:               o.name,
				UID:                o.uid,
				Controller:         ptr(true),
				BlockOwnerDeletion: ptr(true),
			}},
		},
		Spec:   *tmpl.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}
	defaultPod(p)
	return p
}

func (rd *reader) addPods(o *owner, pods ...*corev1.Pod) {
	for _, p := range pods {
		rd.w.Pods = append(rd.w.Pods, p)
		rd.w.setOrigin(p, fmt.Sprintf("%s (%s)", o, o.where))
	}
}

func ptr[T any](v T) *T { return &v }

// count is *n, or def when n is nil; negative, or more than MaxPods, is an error.
func (o *owner) count(n *int32, def int32, field string) (int32, error) {
	if n == nil {
		return def, nil
	}
	if *n < 0 {
		return 0, o.errorf("%s must not be negative (is %d)", field, *n)
	}
	if *n > MaxPods {
		return 0, o.errorf("%s is %d: more pods than a plan takes (%d)", field, *n, MaxPods)
	}
	return *n, nil
}

// room says whether n more pods keep the manifests within MaxPods.
func (rd *reader) room(o *owner, n int32, field string) error {
	if len(rd.w.Pods)+int(n) > MaxPods {
		return o.errorf("%s: %d pods, with the %d before, are more than a plan takes (%d)", field, n, len(rd.w.Pods), MaxPods)
	}
	return nil
}

func (o *owner) checkTemplate(tmpl *corev1.PodTemplateSpec, field string) error {
	if tmpl == nil {
		return o.errorf("%s is required", field)
	}
	if len(tmpl.Spec.Containers) == 0 {
		return o.errorf("%s.spec.containers: at least one container is required", field)
	}
	return nil
}

// replicas expands a Deployment, ReplicaSet or ReplicationController: spec.replicas (default 1)
// pods named <name>-<i>.
func (rd *reader) replicas(o *owner, replicas *int32, tmpl *corev1.PodTemplateSpec, extra map[string]string) error {
	n, err := o.count(replicas, 1, "spec.replicas")
	if err != nil {
		return err
	}
	if err := rd.room(o, n, "spec.replicas"); err != nil {
		return err
	}
	if err := o.checkTemplate(tmpl, "spec.template"); err != nil {
		return err
	}
	for i := range n {
		rd.addPods(o, o.pod(tmpl, fmt.Sprintf("%s-%d", o.name, i), extra))
	}
	return nil
}

// templateHash stands in for the pod-template-hash label a Deployment's pods carry (the value
// differs from the real controller's, but is as stable).
func templateHash(tmpl *corev1.PodTemplateSpec) string {
	b, _ := json.Marshal(tmpl)
	h := fnv.New32a()
	h.Write(b)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}

// statefulSet expands a StatefulSet as its controller does: pods <name>-<ordinal> (ordinals
// from spec.ordinals.start), labelled with their pod name and index, with hostname and
// subdomain set, and a volume per volumeClaimTemplate naming the claim <claim>-<name>-<ordinal>
// (replacing a template volume of the same name).
func (rd *reader) statefulSet(o *owner, ss *appsv1.StatefulSet) error {
	n, err := o.count(ss.Spec.Replicas, 1, "spec.replicas")
	if err != nil {
		return err
	}
	if err := rd.room(o, n, "spec.replicas"); err != nil {
		return err
	}
	if err := o.checkTemplate(&ss.Spec.Template, "spec.template"); err != nil {
		return err
	}
	start := int32(0)
	if ss.Spec.Ordinals != nil {
		if start = ss.Spec.Ordinals.Start; start < 0 {
			return o.errorf("spec.ordinals.start must not be negative (is %d)", start)
		}
		if start > math.MaxInt32-n {
			return o.errorf("spec.ordinals.start %d: the last ordinal (start + replicas - 1) must fit in 32 bits", start)
		}
	}
	for ord := start; ord < start+n; ord++ {
		name := fmt.Sprintf("%s-%d", o.name, ord)
		p := o.pod(&ss.Spec.Template, name, map[string]string{
			appsv1.StatefulSetPodNameLabel: name,
			appsv1.PodIndexLabel:           strconv.Itoa(int(ord)),
		})
		p.Spec.Hostname = name
		p.Spec.Subdomain = ss.Spec.ServiceName
		claims := make(map[string]bool, len(ss.Spec.VolumeClaimTemplates))
		volumes := make([]corev1.Volume, 0, len(ss.Spec.VolumeClaimTemplates)+len(p.Spec.Volumes))
		for _, c := range ss.Spec.VolumeClaimTemplates {
			if c.Name == "" {
				return o.errorf("spec.volumeClaimTemplates: metadata.name is required")
			}
			claims[c.Name] = true
			volumes = append(volumes, corev1.Volume{
				Name: c.Name,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
					ClaimName: fmt.Sprintf("%s-%s", c.Name, name),
				}},
			})
		}
		for _, v := range p.Spec.Volumes {
			if !claims[v.Name] {
				volumes = append(volumes, v)
			}
		}
		if len(volumes) > 0 {
			p.Spec.Volumes = volumes
		}
		rd.addPods(o, p)
	}
	return nil
}

// job expands a Job (or a CronJob's jobTemplate; path names the job spec in errors):
// spec.parallelism (default 1) pods, but no more than spec.completions when set, labelled as the
// API server labels a Job's template (unless spec.manualSelector), with their completion index
// when spec.completionMode is Indexed. A suspended Job is planned as if resumed.
func (rd *reader) job(o *owner, spec *batchv1.JobSpec, path string) error {
	n, err := o.count(spec.Parallelism, 1, path+".parallelism")
	if err != nil {
		return err
	}
	if spec.Completions != nil {
		c, err := o.count(spec.Completions, 0, path+".completions")
		if err != nil {
			return err
		}
		n = min(n, c)
	}
	if err := rd.room(o, n, path+".parallelism"); err != nil {
		return err
	}
	if err := o.checkTemplate(&spec.Template, path+".template"); err != nil {
		return err
	}
	indexed := spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
	for i := range n {
		labels := map[string]string{}
		if spec.ManualSelector == nil || !*spec.ManualSelector {
			labels[batchv1.ControllerUidLabel] = string(o.uid)
			labels["controller-uid"] = string(o.uid)
			labels[batchv1.JobNameLabel] = o.name
			labels["job-name"] = o.name
		}
		if indexed {
			labels[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(int(i))
		}
		p := o.pod(&spec.Template, fmt.Sprintf("%s-%d", o.name, i), labels)
		if indexed {
			if p.Annotations == nil {
				p.Annotations = map[string]string{}
			}
			p.Annotations[batchv1.JobCompletionIndexAnnotation] = strconv.Itoa(int(i))
			if p.Spec.Hostname == "" {
				p.Spec.Hostname = fmt.Sprintf("%s-%d", o.name, i)
			}
		}
		rd.addPods(o, p)
	}
	return nil
}

// daemonSet adds the one pod a DaemonSet runs on every node it selects, named <name>-daemon,
// with the tolerations the DaemonSet controller adds.
func (rd *reader) daemonSet(o *owner, ds *appsv1.DaemonSet) error {
	if err := o.checkTemplate(&ds.Spec.Template, "spec.template"); err != nil {
		return err
	}
	p := o.pod(&ds.Spec.Template, o.name+"-daemon", nil)
	addDaemonTolerations(&p.Spec)
	rd.w.Daemons = append(rd.w.Daemons, p)
	rd.w.setOrigin(p, fmt.Sprintf("%s (%s)", o, o.where))
	return nil
}
