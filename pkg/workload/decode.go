package workload

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kjson "k8s.io/apimachinery/pkg/runtime/serializer/json"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	"sigs.k8s.io/yaml"
)

// document is one YAML or JSON document of an input.
type document struct {
	index int // 1-based
	line  int // where it starts, 1-based
	data  []byte
}

func (d document) where(source string) string {
	return fmt.Sprintf("%s: document %d (line %d)", source, d.index, d.line)
}

// split cuts data into documents: a stream of JSON objects when it starts with "{" and parses
// as one, else YAML documents separated by lines starting with "---" (followed by nothing or a
// comment), the rule kubectl follows.
func split(data []byte) []document {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // UTF-8 BOM
	if docs, ok := splitJSON(data); ok {
		return docs
	}
	var docs []document
	start, startLine, line := 0, 1, 1
	for off := 0; off < len(data); {
		end := bytes.IndexByte(data[off:], '\n')
		next := len(data)
		if end >= 0 {
			next = off + end + 1
		}
		l := data[off:next]
		if rest, ok := bytes.CutPrefix(l, []byte("---")); ok {
			if r := bytes.TrimSpace(rest); len(r) == 0 || r[0] == '#' {
				docs = append(docs, document{index: len(docs) + 1, line: startLine, data: data[start:off]})
				start, startLine = next, line+1
			}
		}
		off = next
		line++
	}
	docs = append(docs, document{index: len(docs) + 1, line: startLine, data: data[start:]})
	return docs
}

// splitJSON reads data as a stream of JSON values if it starts with "{"; ok is false if it
// doesn't or doesn't parse (YAML then takes over: it may be a YAML flow mapping, and a
// malformed JSON document is malformed YAML too).
func splitJSON(data []byte) (docs []document, ok bool) {
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		off := int(dec.InputOffset())
		for off < len(data) && strings.IndexByte(" \t\r\n", data[off]) >= 0 {
			off++
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err == io.EOF {
			return docs, true
		} else if err != nil {
			return nil, false
		}
		docs = append(docs, document{index: len(docs) + 1, line: 1 + bytes.Count(data[:off], []byte("\n")), data: raw})
	}
}

// Decoders of the kinds the scheme knows, strictly: unknown and duplicate fields are errors.
// jsonDecoder reads a document already converted to JSON: the YAML decoder would convert it
// again, twice (leniently, then strictly to find duplicate keys), and YAML parsing is most of
// the time a large manifest takes. yamlDecoder reads a document whose YAML has duplicate keys, so
// that they are reported as before, together with any unknown fields.
var (
	jsonDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, decodeScheme, decodeScheme,
		kjson.SerializerOptions{Strict: true})
	yamlDecoder = kjson.NewSerializerWithOptions(kjson.DefaultMetaFactory, decodeScheme, decodeScheme,
		kjson.SerializerOptions{Yaml: true, Strict: true})
)

// decodeScheme knows the built-in kinds and Coscheduling's PodGroup.
var decodeScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(schedv1alpha1.AddToScheme(s))
	return s
}()

// The kinds Read expands, each in the one version it accepts.
var (
	gvkPod         = corev1.SchemeGroupVersion.WithKind("Pod")
	gvkNode        = corev1.SchemeGroupVersion.WithKind("Node")
	gvkRC          = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	gvkDeployment  = appsv1.SchemeGroupVersion.WithKind("Deployment")
	gvkReplicaSet  = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	gvkStatefulSet = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	gvkDaemonSet   = appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	gvkJob         = batchv1.SchemeGroupVersion.WithKind("Job")
	gvkCronJob     = batchv1.SchemeGroupVersion.WithKind("CronJob")
	gvkPodGroup    = schedv1alpha1.SchemeGroupVersion.WithKind("PodGroup")

	expanded = map[schema.GroupVersionKind]bool{
		gvkPod: true, gvkNode: true, gvkRC: true, gvkDeployment: true, gvkReplicaSet: true,
		gvkStatefulSet: true, gvkDaemonSet: true, gvkJob: true, gvkCronJob: true, gvkPodGroup: true,
	}
	// builtinGroups are the API groups whose other versions of the expanded kinds (apps/v1beta2
	// Deployment, extensions/v1beta1 DaemonSet, batch/v1beta1 CronJob, ...) are refused rather
	// than skipped: Kubernetes no longer serves them, and skipping would leave pods unplanned.
	builtinGroups = map[string]bool{"": true, "apps": true, "extensions": true, "batch": true}
	expandedKinds = func() map[string]schema.GroupVersionKind {
		m := map[string]schema.GroupVersionKind{}
		for gvk := range expanded {
			m[gvk.Kind] = gvk
		}
		return m
	}()

	// skipReasons explains kinds that create no pods but bear on placement.
	skipReasons = map[string]string{
		"LimitRange":              "creates no pods; its default requests are not applied to planned pods",
		"HorizontalPodAutoscaler": "creates no pods; pods are planned for the workloads' spec.replicas",
		"ResourceQuota":           "creates no pods; its limits are not applied to the plan",
	}
)

// reader reads the documents of one source into w.
type reader struct {
	source string
	w      *Workload
}

// parsed is one document (or List item) decoded but not yet added. Decoding needs nothing but
// the document, so the documents of a source are decoded in parallel (YAML parsing is most of the
// time a large manifest takes) and then added in order, so that errors and results are those of
// reading them one by one.
type parsed struct {
	where string
	err   error          // why the document is refused; it stops the read when its turn comes
	skip  string         // a kind that creates no pods: "kind ns/name: why"
	obj   runtime.Object // a kind Read expands
	items []*parsed      // a List's items
}

// parse decodes one document (or List item); where names it in errors; def, when not nil, fills
// a missing apiVersion or kind (items of typed lists such as PodList carry neither).
func parse(where string, data []byte, def *schema.GroupVersionKind) *parsed {
	p, err := parseDocument(where, data, def)
	if err != nil {
		return &parsed{where: where, err: err}
	}
	return p
}

// addParsed adds a parsed document and its items in order; the first error, of decoding or of
// adding, stops.
func (rd *reader) addParsed(p *parsed) error {
	switch {
	case p.err != nil:
		return p.err
	case p.skip != "":
		rd.w.Skipped = append(rd.w.Skipped, p.skip)
	case p.obj != nil:
		return rd.add(p.where, p.obj)
	}
	for _, item := range p.items {
		if err := rd.addParsed(item); err != nil {
			return err
		}
	}
	return nil
}

// parseDocument is parse, with the document's own error returned.
func parseDocument(where string, data []byte, def *schema.GroupVersionKind) (*parsed, error) {
	js, strict, err := toJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: invalid YAML: %v", where, err)
	}
	out := &parsed{where: where}
	if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
		return out, nil // empty: only comments, or nothing between two "---"
	}
	var head struct {
		APIVersion any             `json:"apiVersion"`
		Kind       any             `json:"kind"`
		Metadata   any             `json:"metadata"`
		Items      json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(js, &head); err != nil {
		return nil, fmt.Errorf("%s: not a Kubernetes object (a mapping with apiVersion and kind): %s", where, excerpt(js))
	}
	apiVersion, ok1 := head.APIVersion.(string)
	kind, ok2 := head.Kind.(string)
	if (head.APIVersion != nil && !ok1) || (head.Kind != nil && !ok2) {
		return nil, fmt.Errorf("%s: apiVersion and kind must be strings", where)
	}
	if def != nil {
		if apiVersion == "" {
			apiVersion = def.GroupVersion().String()
		}
		if kind == "" {
			kind = def.Kind
		}
	}
	if kind == "" {
		return nil, fmt.Errorf("%s: no kind", where)
	}
	if apiVersion == "" {
		return nil, fmt.Errorf("%s: %s has no apiVersion", where, kind)
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %v", where, kind, err)
	}
	gvk := gv.WithKind(kind)
	var ns, name string
	if md, ok := head.Metadata.(map[string]any); ok {
		ns, _ = md["namespace"].(string)
		name, _ = md["name"].(string)
		if name == "" {
			name, _ = md["generateName"].(string)
		}
	}

	if strings.HasSuffix(kind, "List") && (kind == "List" || head.Items != nil) {
		out.items, err = parseItems(where, gv, kind, head.Items)
		return out, err
	}

	if !expanded[gvk] {
		out.skip, err = skipped(where, gvk, apiVersion, objName(ns, name))
		return out, err
	}

	if out.obj, err = decode(data, js, strict, &gvk); err != nil { // strict decoding errors (unknown or duplicate fields) included
		return nil, fmt.Errorf("%s: %s %s: %v", where, kind, objName(ns, name), err)
	}
	return out, nil
}

// parseItems parses the items of a List (kind "List", or a typed list such as PodList, whose
// items default to its kind without "List").
func parseItems(where string, gv schema.GroupVersion, kind string, raw json.RawMessage) ([]*parsed, error) {
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); raw != nil && err != nil {
		return nil, fmt.Errorf("%s: %s: items must be a list", where, kind)
	}
	var itemDef *schema.GroupVersionKind
	if kind != "List" {
		d := gv.WithKind(strings.TrimSuffix(kind, "List"))
		itemDef = &d
	}
	out := make([]*parsed, len(items))
	for i, item := range items {
		out[i] = parse(fmt.Sprintf("%s, item %d", where, i+1), item, itemDef)
	}
	return out, nil
}

// skipped says why a document of a kind Read does not expand is skipped ("kind name: why"), or
// refuses it when it is an old version of a kind Read expands.
func skipped(where string, gvk schema.GroupVersionKind, apiVersion, name string) (string, error) {
	if want, ok := expandedKinds[gvk.Kind]; ok && builtinGroups[gvk.Group] {
		return "", fmt.Errorf("%s: %s %s: %s is not served by Kubernetes any more; use %s",
			where, gvk.Kind, name, apiVersion, want.GroupVersion())
	}
	why := skipReasons[gvk.Kind]
	switch {
	case why != "":
	case decodeScheme.Recognizes(gvk):
		why = "creates no pods"
	default:
		why = "not a built-in kind; any pods it creates are not planned"
	}
	return fmt.Sprintf("%s %s: %s", gvk.Kind, name, why), nil
}

// toJSON converts a YAML (or JSON) document to JSON, strictly when it can (strict is then
// true): the strict conversion fails on duplicate keys, which decode reports; any other error
// is a YAML error.
func toJSON(data []byte) (js []byte, strict bool, err error) {
	if js, err := yaml.YAMLToJSONStrict(data); err == nil {
		return js, true, nil
	}
	js, err = yaml.YAMLToJSON(data)
	return js, false, err
}

// decode decodes a document of kind gvk: from js, its JSON, when the strict conversion made it
// (the same object and the same errors as decoding the YAML), else from the YAML, which reports
// the duplicate keys.
func decode(data, js []byte, strict bool, gvk *schema.GroupVersionKind) (runtime.Object, error) {
	var obj runtime.Object
	var err error
	if strict {
		obj, _, err = jsonDecoder.Decode(js, gvk, nil)
	} else {
		obj, _, err = yamlDecoder.Decode(data, gvk, nil)
	}
	return obj, err
}

// add expands one decoded object.
func (rd *reader) add(where string, obj runtime.Object) error {
	var o *owner
	var err error
	switch obj := obj.(type) {
	case *corev1.Node:
		if obj.Name == "" {
			return fmt.Errorf("%s: Node: metadata.name is required", where)
		}
		rd.w.Nodes = append(rd.w.Nodes, obj)
		rd.w.setOrigin(obj, fmt.Sprintf("Node %s (%s)", obj.Name, where))
		return nil
	case *corev1.Pod:
		return rd.addPod(where, obj)
	case *corev1.ReplicationController:
		o, err = rd.owner(where, gvkRC, &obj.ObjectMeta)
		if err == nil {
			err = rd.replicas(o, obj.Spec.Replicas, obj.Spec.Template, nil)
		}
	case *appsv1.ReplicaSet:
		o, err = rd.owner(where, gvkReplicaSet, &obj.ObjectMeta)
		if err == nil {
			err = rd.replicas(o, obj.Spec.Replicas, &obj.Spec.Template, nil)
		}
	case *appsv1.Deployment:
		o, err = rd.owner(where, gvkDeployment, &obj.ObjectMeta)
		if err == nil {
			hash := map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: templateHash(&obj.Spec.Template)}
			err = rd.replicas(o, obj.Spec.Replicas, &obj.Spec.Template, hash)
		}
	case *appsv1.StatefulSet:
		o, err = rd.owner(where, gvkStatefulSet, &obj.ObjectMeta)
		if err == nil {
			err = rd.statefulSet(o, obj)
		}
	case *appsv1.DaemonSet:
		o, err = rd.owner(where, gvkDaemonSet, &obj.ObjectMeta)
		if err == nil {
			err = rd.daemonSet(o, obj)
		}
	case *batchv1.Job:
		o, err = rd.owner(where, gvkJob, &obj.ObjectMeta)
		if err == nil {
			err = rd.job(o, &obj.Spec, "spec")
		}
	case *schedv1alpha1.PodGroup:
		if obj.Name == "" {
			return fmt.Errorf("%s: PodGroup: metadata.name is required", where)
		}
		if obj.Namespace == "" {
			obj.Namespace = metav1.NamespaceDefault
		}
		rd.w.PodGroups = append(rd.w.PodGroups, obj)
		return nil
	case *batchv1.CronJob:
		o, err = rd.owner(where, gvkCronJob, &obj.ObjectMeta)
		if err == nil {
			err = rd.job(o, &obj.Spec.JobTemplate.Spec, "spec.jobTemplate.spec")
		}
	default:
		return fmt.Errorf("%s: unexpected %T", where, obj) // expanded and add disagree
	}
	return err
}

// objName is "ns/name", or "name" when the namespace is not given.
func objName(ns, name string) string {
	if name == "" {
		name = "(unnamed)"
	}
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func excerpt(b []byte) string {
	const max = 60
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}

// generatedName completes a metadata.generateName deterministically, from where the object was
// read, so that two reads name it the same.
func generatedName(prefix, where string) string {
	sum := sha256.Sum256([]byte(where))
	return prefix + hex.EncodeToString(sum[:])[:5]
}
