package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func names(pods []*corev1.Pod) []string {
	out := make([]string, 0, len(pods))
	for _, p := range pods {
		out = append(out, podKey(p))
	}
	return out
}

func readFileT(t *testing.T, name string) *Workload {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := Read(f, name)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func pod(t *testing.T, w *Workload, key string) *corev1.Pod {
	t.Helper()
	for _, p := range append(slices.Clone(w.Pods), w.Daemons...) {
		if podKey(p) == key {
			return p
		}
	}
	t.Fatalf("no pod %s in %v", key, names(w.Pods))
	return nil
}

func TestReadMixed(t *testing.T) {
	w := readFileT(t, "testdata/mixed.yaml")

	wantPods := []string{
		"default/debug",
		"shop/db-0", "shop/db-1",
		"shop/migrate-0", "shop/migrate-1", // parallelism 4, completions 2
		"shop/web-0", "shop/web-1", "shop/web-2",
		"tools/a", "tools/b",
	}
	if got := names(w.Pods); !reflect.DeepEqual(got, wantPods) {
		t.Errorf("pods %v, want %v", got, wantPods)
	}
	if got := names(w.Daemons); !reflect.DeepEqual(got, []string{"kube-system/logs-daemon"}) {
		t.Errorf("daemons %v", got)
	}
	if len(w.Nodes) != 1 || w.Nodes[0].Name != "ip-10-0-0-1" || w.Nodes[0].Status.Allocatable.Cpu().String() != "1930m" {
		t.Errorf("nodes %v", w.Nodes)
	}
	if want := []string{"Service shop/web: creates no pods"}; !reflect.DeepEqual(w.Skipped, want) {
		t.Errorf("skipped %q, want %q", w.Skipped, want)
	}

	web := pod(t, w, "shop/web-1")
	if web.Labels["app"] != "web" || web.Labels["pod-template-hash"] == "" || web.Annotations["team"] != "storefront" {
		t.Errorf("web labels %v annotations %v", web.Labels, web.Annotations)
	}
	if or := web.OwnerReferences; len(or) != 1 || or[0].Kind != "Deployment" || or[0].Name != "web" ||
		or[0].APIVersion != "apps/v1" || or[0].UID == "" || or[0].Controller == nil || !*or[0].Controller {
		t.Errorf("web owner %+v", web.OwnerReferences)
	}
	if web.UID == "" || web.UID == pod(t, w, "shop/web-0").UID {
		t.Errorf("web UIDs not set or not distinct: %q", web.UID)
	}
	// Requests default to limits, as the API server does.
	if r := web.Spec.Containers[0].Resources.Requests; r.Cpu().Cmp(resource.MustParse("1")) != 0 || r.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("web requests %v, want the limits", r)
	}
	if web.Spec.SchedulerName != corev1.DefaultSchedulerName || web.Spec.Containers[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("web not defaulted: scheduler %q port %+v", web.Spec.SchedulerName, web.Spec.Containers[0].Ports[0])
	}

	db := pod(t, w, "shop/db-1")
	if db.Labels["statefulset.kubernetes.io/pod-name"] != "db-1" || db.Labels["apps.kubernetes.io/pod-index"] != "1" || db.Labels["app"] != "db" {
		t.Errorf("db-1 labels %v", db.Labels)
	}
	if v := db.Spec.Volumes; len(v) != 1 || v[0].Name != "data" || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-db-1" {
		t.Errorf("db-1 volumes %+v", db.Spec.Volumes)
	}
	if db.Spec.Hostname != "db-1" || db.Spec.Subdomain != "db" {
		t.Errorf("db-1 hostname %q subdomain %q", db.Spec.Hostname, db.Spec.Subdomain)
	}
	if db.OwnerReferences[0].Kind != "StatefulSet" {
		t.Errorf("db owner %+v", db.OwnerReferences)
	}

	mig := pod(t, w, "shop/migrate-0")
	if mig.Labels["batch.kubernetes.io/job-name"] != "migrate" || mig.Labels["job-name"] != "migrate" ||
		mig.Labels["batch.kubernetes.io/controller-uid"] != string(mig.OwnerReferences[0].UID) || mig.OwnerReferences[0].Kind != "Job" {
		t.Errorf("migrate labels %v owner %+v", mig.Labels, mig.OwnerReferences)
	}

	if dbg := pod(t, w, "default/debug"); dbg.UID == "" || len(dbg.OwnerReferences) != 0 {
		t.Errorf("debug %+v", dbg.ObjectMeta)
	}
	if b := pod(t, w, "tools/b"); b.Spec.NodeName != "ip-10-0-0-1" {
		t.Errorf("bound pod lost its node: %q", b.Spec.NodeName)
	}

	logs := w.Daemons[0]
	if logs.OwnerReferences[0].Kind != "DaemonSet" || logs.Labels["app"] != "logs" {
		t.Errorf("daemon %+v", logs.ObjectMeta)
	}
	if logs.Spec.Containers[0].Ports[0].HostPort != 2020 {
		t.Errorf("host-network daemon port %+v, want host port 2020", logs.Spec.Containers[0].Ports[0])
	}
	tolerated := map[string]bool{}
	for _, tol := range logs.Spec.Tolerations {
		tolerated[tol.Key] = true
	}
	for _, k := range []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unschedulable", "node.kubernetes.io/network-unavailable"} {
		if !tolerated[k] {
			t.Errorf("daemon does not tolerate %s: %+v", k, logs.Spec.Tolerations)
		}
	}
}

// Reading the same manifests twice gives equal workloads, UIDs included.
func TestDeterministic(t *testing.T) {
	a := readFileT(t, "testdata/mixed.yaml")
	b := readFileT(t, "testdata/mixed.yaml")
	if !reflect.DeepEqual(a.Pods, b.Pods) || !reflect.DeepEqual(a.Daemons, b.Daemons) || !reflect.DeepEqual(a.Nodes, b.Nodes) {
		t.Fatal("two reads differ")
	}
	for i := range a.Pods {
		if a.Pods[i].UID != b.Pods[i].UID || a.Pods[i].UID == "" {
			t.Errorf("%s: UID %q then %q", podKey(a.Pods[i]), a.Pods[i].UID, b.Pods[i].UID)
		}
	}
}

const podYAML = `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, image: busybox}]
`

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name        string
		in          string
		wantPods    []string
		wantDaemons []string
		wantSkipped []string
		wantErr     []string // substrings of the error, which must name the source
		check       func(t *testing.T, w *Workload)
	}{
		{
			name: "default replicas",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}
`,
			wantPods: []string{"default/d-0"},
		},
		{
			name:     "namespace defaults",
			in:       podYAML,
			wantPods: []string{"default/p"},
		},
		{
			name: "PodGroup",
			in: `apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: g}
spec: {minMember: 3}
`,
			check: func(t *testing.T, w *Workload) {
				if len(w.PodGroups) != 1 || w.PodGroups[0].Namespace != "default" || w.PodGroups[0].Spec.MinMember != 3 {
					t.Errorf("PodGroups %+v, want default/g of minMember 3", w.PodGroups)
				}
			},
		},
		{
			name: "PodGroup with an unknown field",
			in: `apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata: {name: g}
spec: {minMembers: 3}
`,
			wantErr: []string{"PodGroup g", "minMembers"},
		},
		{
			name: "replicas 0, completions 0, ReplicaSet, ReplicationController",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 0
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  completions: 0
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: rs, namespace: ns}
spec:
  replicas: 2
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: v1
kind: ReplicationController
metadata: {name: rc}
spec:
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}
`,
			wantPods: []string{"default/rc-0", "ns/rs-0", "ns/rs-1"},
		},
		{
			name: "Job without parallelism; indexed CronJob",
			in: `apiVersion: batch/v1
kind: Job
metadata: {name: once}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: ops}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      parallelism: 3
      completions: 5
      completionMode: Indexed
      template:
        metadata: {labels: {app: nightly}}
        spec: {restartPolicy: OnFailure, containers: [{name: c, image: i}]}
`,
			wantPods: []string{"default/once-0", "ops/nightly-0", "ops/nightly-1", "ops/nightly-2"},
			check: func(t *testing.T, w *Workload) {
				p := pod(t, w, "ops/nightly-2")
				if p.OwnerReferences[0].Kind != "CronJob" || p.Labels["app"] != "nightly" ||
					p.Labels["batch.kubernetes.io/job-completion-index"] != "2" || p.Annotations["batch.kubernetes.io/job-completion-index"] != "2" {
					t.Errorf("nightly-2: %+v", p.ObjectMeta)
				}
			},
		},
		{
			name: "StatefulSet ordinals and a template volume replaced by the claim",
			in: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  replicas: 2
  ordinals: {start: 5}
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      containers: [{name: c, image: i}]
      volumes:
      - {name: data, emptyDir: {}}
      - {name: tmp, emptyDir: {}}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
`,
			wantPods: []string{"default/s-5", "default/s-6"},
			check: func(t *testing.T, w *Workload) {
				v := pod(t, w, "default/s-6").Spec.Volumes
				if len(v) != 2 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "data-s-6" || v[1].Name != "tmp" {
					t.Errorf("volumes %+v", v)
				}
			},
		},
		{
			name: "JSON stream and a typed list without item kinds",
			in: `{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "j1"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
{"apiVersion": "v1", "kind": "PodList", "items": [
  {"metadata": {"name": "j2", "namespace": "x"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
]}`,
			wantPods: []string{"default/j1", "x/j2"},
		},
		{
			name: "finished pods, CRDs, ConfigMaps and a LimitRange are skipped",
			in: podYAML + `status: {phase: Succeeded}
---
apiVersion: argoproj.io/v1alpha1
kind: Rollout
metadata: {name: r, namespace: ns}
spec: {whatever: true}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: cm}
data: {a: b}
---
apiVersion: v1
kind: LimitRange
metadata: {name: lr, namespace: ns}
`,
			wantSkipped: []string{
				"Pod default/p: phase Succeeded; holds no resources",
				"Rollout ns/r: not a built-in kind; any pods it creates are not planned",
				"ConfigMap cm: creates no pods",
				"LimitRange ns/lr: creates no pods; its default requests are not applied to planned pods",
			},
		},
		{
			name: "generateName",
			in: `apiVersion: batch/v1
kind: Job
metadata: {generateName: load-}
spec:
  template:
    spec: {restartPolicy: Never, containers: [{name: c, image: i}]}
`,
			check: func(t *testing.T, w *Workload) {
				if len(w.Pods) != 1 || !strings.HasPrefix(w.Pods[0].Name, "load-") || !strings.HasSuffix(w.Pods[0].Name, "-0") {
					t.Errorf("pods %v", names(w.Pods))
				}
			},
		},
		{
			name:    "no kind",
			in:      podYAML + "---\napiVersion: v1\nmetadata: {name: x}\n",
			wantErr: []string{"document 2 (line 7)", "no kind"},
		},
		{
			name:    "no apiVersion",
			in:      "kind: Pod\nmetadata: {name: x}\n",
			wantErr: []string{"document 1", "Pod has no apiVersion"},
		},
		{
			name:    "bad YAML",
			in:      podYAML + "---\n" + podYAML + "---\nkind: Pod\n  metadata: [\n",
			wantErr: []string{"document 3 (line 13)", "invalid YAML"},
		},
		{
			name:    "not an object",
			in:      "- a\n- b\n",
			wantErr: []string{"document 1", "not a Kubernetes object"},
		},
		{
			name: "unknown field under spec",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec:
  replicaz: 3
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"document 1", "Deployment ns/d", "strict decoding error", `unknown field "spec.replicaz"`},
		},
		{
			name: "replicas as a string",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: "3"
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"document 1", "Deployment d", "replicas", "cannot unmarshal string"},
		},
		{
			name:    "duplicate field",
			in:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\nspec: {containers: [{name: c}]}\n",
			wantErr: []string{"document 1", `"metadata" already set`},
		},
		{
			name:    "bad quantity",
			in:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, resources: {requests: {cpu: lots}}}]}\n",
			wantErr: []string{"document 1", "Pod p", "quantities must match"},
		},
		{
			name: "negative replicas",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: -1
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"document 1", "Deployment default/d", "spec.replicas must not be negative"},
		},
		{
			name: "replicas past the bound",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: d}
spec:
  replicas: 2000000000
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"Deployment default/d", "spec.replicas is 2000000000", "more pods than a plan takes (200000)"},
		},
		{
			name: "parallelism past the bound",
			in: `apiVersion: batch/v1
kind: Job
metadata: {name: j}
spec:
  parallelism: 300000
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"Job default/j", "spec.parallelism is 300000"},
		},
		{
			name: "replicas within the bound, but not with the pods before",
			in: `apiVersion: apps/v1
kind: Deployment
metadata: {name: a}
spec:
  replicas: 150000
  template:
    spec: {containers: [{name: c, image: i}]}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: b}
spec:
  replicas: 60000
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"StatefulSet default/b", "spec.replicas: 60000 pods, with the 150000 before, are more than a plan takes (200000)"},
		},
		{
			name: "ordinals past 32 bits",
			in: `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: s}
spec:
  replicas: 3
  ordinals: {start: 2147483647}
  template:
    spec: {containers: [{name: c, image: i}]}
`,
			wantErr: []string{"StatefulSet default/s", "spec.ordinals.start 2147483647"},
		},
		{
			name:    "no containers",
			in:      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec: {template: {spec: {}}}\n",
			wantErr: []string{"Job default/j", "spec.template.spec.containers: at least one container is required"},
		},
		{
			name: "a List item without kind",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec: {containers: [{name: c, image: i}]}
- metadata: {name: x}
`,
			wantErr: []string{"document 1 (line 1), item 2", "no kind"},
		},
		{
			// Documents are decoded in parallel but added in order: an error found while adding
			// document 1 comes before one found while decoding document 2.
			name:    "an error adding a document before one decoding the next",
			in:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: []}\n---\nkind: Pod\n  metadata: [\n",
			wantErr: []string{"document 1", "Pod default/p", "at least one container is required"},
		},
		{
			name: "an error adding a List item before one decoding the next",
			in: `apiVersion: v1
kind: List
items:
- apiVersion: batch/v1
  kind: Job
  metadata: {name: j}
  spec: {template: {spec: {}}}
- apiVersion: v1
  kind: Pod
  metadata: {name: p}
  spec: {containerz: []}
`,
			wantErr: []string{"item 1", "Job default/j", "at least one container is required"},
		},
		{
			name:    "duplicate and unknown fields reported together",
			in:      "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nmetadata: {name: q}\nspec: {containerz: [{name: c}]}\n",
			wantErr: []string{"document 1", "Pod q", `"metadata" already set`, `unknown field "spec.containerz"`},
		},
		{
			name:    "a removed API version",
			in:      "apiVersion: extensions/v1beta1\nkind: Deployment\nmetadata: {name: old}\n",
			wantErr: []string{"Deployment old", "extensions/v1beta1 is not served", "use apps/v1"},
		},
		{
			name: "the same pod twice",
			in: podYAML + "---\n" + `apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: p}
spec:
  replicas: 1
  template:
    spec: {containers: [{name: c, image: i}]}
---
` + strings.Replace(podYAML, "name: p}", "name: p-0}", 1),
			wantErr: []string{"pod default/p-0 is created twice", "ReplicaSet default/p (test.yaml: document 2 (line 7))", "Pod default/p-0 (test.yaml: document 3"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := Read(strings.NewReader(tc.in), "test.yaml")
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error; want one with %q", tc.wantErr)
				}
				for _, s := range append([]string{"test.yaml"}, tc.wantErr...) {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not contain %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantPods != nil || tc.check == nil {
				if got := names(w.Pods); !reflect.DeepEqual(got, append([]string{}, tc.wantPods...)) {
					t.Errorf("pods %v, want %v", got, tc.wantPods)
				}
			}
			if got := names(w.Daemons); !reflect.DeepEqual(got, append([]string{}, tc.wantDaemons...)) {
				t.Errorf("daemons %v, want %v", got, tc.wantDaemons)
			}
			if !reflect.DeepEqual(w.Skipped, tc.wantSkipped) {
				t.Errorf("skipped %q, want %q", w.Skipped, tc.wantSkipped)
			}
			if tc.check != nil {
				tc.check(t, w)
			}
		})
	}
}

func TestDefaultsRequestsFromLimits(t *testing.T) {
	in := `apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  resources:
    limits: {cpu: "2", memory: 4Gi}
  initContainers:
  - {name: init, image: i, resources: {limits: {cpu: 500m}}}
  containers:
  - {name: a, image: i, resources: {requests: {cpu: 100m}, limits: {cpu: "1", memory: 1Gi}}}
`
	w, err := Read(strings.NewReader(in), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := w.Pods[0].Spec
	if r := s.InitContainers[0].Resources.Requests; r.Cpu().String() != "500m" {
		t.Errorf("init requests %v", r)
	}
	if r := s.Containers[0].Resources.Requests; r.Cpu().String() != "100m" || r.Memory().String() != "1Gi" {
		t.Errorf("container requests %v", r)
	}
	// Pod-level requests: CPU and memory from the containers' total (init 500m vs 100m).
	if r := s.Resources.Requests; r.Cpu().String() != "500m" || r.Memory().String() != "1Gi" {
		t.Errorf("pod requests %v", r)
	}
}

func TestReadPaths(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("b.yaml", strings.Replace(podYAML, "name: p}", "name: b}", 1))
	a := write("a.yml", strings.Replace(podYAML, "name: p}", "name: a}", 1))
	write("c.json", `{"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}`)
	write("notes.txt", "not a manifest")
	write("sub/d.yaml", strings.Replace(podYAML, "name: p}", "name: d}", 1))
	other := write("../other/e.manifest", strings.Replace(podYAML, "name: p}", "name: e}", 1))

	w, err := ReadPaths([]string{dir, "-", other}, strings.NewReader(podYAML))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(w.Pods), []string{"default/a", "default/b", "default/e", "default/p"}; !reflect.DeepEqual(got, want) {
		t.Errorf("pods %v, want %v", got, want)
	}
	if want := []string{"Service s: creates no pods"}; !reflect.DeepEqual(w.Skipped, want) {
		t.Errorf("skipped %q", w.Skipped)
	}

	for _, tc := range []struct {
		name    string
		paths   []string
		wantErr []string
	}{
		{"a file given twice", []string{dir, a}, []string{"pod default/a is created twice", "a.yml: document 1"}},
		{"stdin twice", []string{"-", "-"}, []string{"more than once"}},
		{"a directory without manifests", []string{filepath.Join(dir, "empty")}, []string{"no *.yaml"}},
		{"a missing file", []string{filepath.Join(dir, "nope.yaml")}, []string{"nope.yaml"}},
		{"an error names the file", []string{write("bad/x.yaml", "kind: [")}, []string{"x.yaml: document 1", "invalid YAML"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "a directory without manifests" {
				if err := os.Mkdir(tc.paths[0], 0o755); err != nil {
					t.Fatal(err)
				}
			}
			_, err := ReadPaths(tc.paths, strings.NewReader(""))
			if err == nil {
				t.Fatalf("no error; want %q", tc.wantErr)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not contain %q", err, s)
				}
			}
		})
	}
}

func TestMerge(t *testing.T) {
	a, err := Read(strings.NewReader(strings.Replace(podYAML, "name: p}", "name: z}", 1)), "a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Read(strings.NewReader(podYAML+"---\napiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"), "b")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Read(strings.NewReader("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: g}\nspec: {minMember: 2}\n"), "g")
	if err != nil {
		t.Fatal(err)
	}
	a.Merge(b)
	a.Merge(g)
	a.Merge(nil)
	if len(a.PodGroups) != 1 {
		t.Errorf("merged PodGroups %v", a.PodGroups)
	}
	if got := names(a.Pods); !reflect.DeepEqual(got, []string{"default/p", "default/z"}) {
		t.Errorf("merged pods %v", got)
	}
	if len(a.Skipped) != 1 {
		t.Errorf("merged skipped %q", a.Skipped)
	}
}
