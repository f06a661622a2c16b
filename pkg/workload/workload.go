// Package workload turns Kubernetes manifests into the pods a planner must place: bare Pods as
// given, controllers (Deployment, ReplicaSet, ReplicationController, StatefulSet, Job, CronJob)
// expanded into their replicas, and one pod per DaemonSet counted as per-node overhead. It reads
// manifests offline, the way `kubectl apply --dry-run` would, but without a cluster.
package workload

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
)

// MaxPods bounds the pods a set of manifests may create: a plan of more is no plan a user waits
// for, and a typo (replicas: 2000000000) must fail clearly rather than exhaust memory.
const MaxPods = 200_000

// Workload is what a set of manifests asks the cluster to run.
type Workload struct {
	// Pods is every pod the manifests create (bare Pods and controller replicas), sorted by
	// namespace/name. Pods with spec.nodeName set are already bound.
	Pods []*corev1.Pod
	// Daemons holds one pod per DaemonSet (its template), to be counted as per-node overhead.
	Daemons []*corev1.Pod
	// Nodes are the Node objects given (existing nodes), sorted by name.
	Nodes []*corev1.Node
	// PodGroups are Coscheduling's PodGroups given: their pods (labelled
	// scheduling.x-k8s.io/pod-group) are placed whole or not at all.
	PodGroups []*schedv1alpha1.PodGroup
	// Skipped says, as "kind ns/name: why", which documents create no pods (Services,
	// ConfigMaps, ...), in the order read, so the user sees they were read.
	Skipped []string

	// origin names, for every pod, daemon and node, the document it came from (for errors
	// about duplicates).
	origin map[any]string
}

// Read reads YAML or JSON documents from r: multi-document YAML separated by "---" lines, a
// stream of JSON objects, and v1 List objects (and typed lists such as PodList) with items.
// source names the input in errors (a file name). Two pods (or daemons, or nodes) with the same
// namespace/name are an error.
func Read(r io.Reader, source string) (*Workload, error) {
	w, err := read(r, source)
	if err != nil {
		return nil, err
	}
	if err := w.check(); err != nil {
		return nil, err
	}
	return w, nil
}

func read(r io.Reader, source string) (*Workload, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}
	w := &Workload{}
	rd := &reader{source: source, w: w}
	docs := split(data)
	parsedDocs := make([]*parsed, len(docs))
	workqueue.ParallelizeUntil(context.Background(), runtime.GOMAXPROCS(0), len(docs), func(i int) {
		parsedDocs[i] = parse(docs[i].where(source), docs[i].data, nil)
	})
	for _, p := range parsedDocs {
		if err := rd.addParsed(p); err != nil {
			return nil, err
		}
	}
	w.sort()
	return w, nil
}

// ReadPaths reads files, directories (every *.yaml, *.yml and *.json file directly inside,
// sorted by name; a directory with none is an error) or "-" for stdin. A file named
// explicitly is read whatever its extension. Two pods (or daemons, or nodes) with the same
// namespace/name, in one file or across files, are an error: it usually means a manifest was
// given twice.
func ReadPaths(paths []string, stdin io.Reader) (*Workload, error) {
	w := &Workload{}
	readStdin := false
	for _, p := range paths {
		if p == "-" {
			if readStdin {
				return nil, fmt.Errorf(`"-" (stdin) given more than once`)
			}
			readStdin = true
			if stdin == nil {
				return nil, fmt.Errorf(`"-" given but there is no stdin`)
			}
			o, err := read(stdin, "stdin")
			if err != nil {
				return nil, err
			}
			w.Merge(o)
			continue
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		files := []string{p}
		if st.IsDir() {
			if files, err = manifestsIn(p); err != nil {
				return nil, err
			}
		}
		for _, f := range files {
			o, err := readFile(f)
			if err != nil {
				return nil, err
			}
			w.Merge(o)
		}
	}
	if err := w.check(); err != nil {
		return nil, err
	}
	return w, nil
}

func manifestsIn(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
		default:
			continue
		}
		f := filepath.Join(dir, e.Name())
		st, err := os.Stat(f) // follows symlinks
		if err != nil {
			return nil, err
		}
		if st.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s: no *.yaml, *.yml or *.json files in the directory", dir)
	}
	sort.Strings(files)
	return files, nil
}

func readFile(name string) (*Workload, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(f, name)
}

// Merge appends another workload, keeping Pods, Daemons and Nodes sorted. It does not check
// for duplicates (Read and ReadPaths do).
func (w *Workload) Merge(o *Workload) {
	if o == nil {
		return
	}
	w.Pods = append(w.Pods, o.Pods...)
	w.Daemons = append(w.Daemons, o.Daemons...)
	w.Nodes = append(w.Nodes, o.Nodes...)
	w.PodGroups = append(w.PodGroups, o.PodGroups...)
	w.Skipped = append(w.Skipped, o.Skipped...)
	for k, v := range o.origin {
		w.setOrigin(k, v)
	}
	w.sort()
}

func (w *Workload) setOrigin(k any, v string) {
	if w.origin == nil {
		w.origin = map[any]string{}
	}
	w.origin[k] = v
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

func (w *Workload) sort() {
	for _, pods := range [][]*corev1.Pod{w.Pods, w.Daemons} {
		sort.SliceStable(pods, func(i, j int) bool { return podKey(pods[i]) < podKey(pods[j]) })
	}
	sort.SliceStable(w.Nodes, func(i, j int) bool { return w.Nodes[i].Name < w.Nodes[j].Name })
}

// check reports two pods, daemons or nodes of the same name (w must be sorted).
func (w *Workload) check() error {
	if len(w.Pods) > MaxPods {
		return fmt.Errorf("the manifests create %d pods, more than a plan takes (%d)", len(w.Pods), MaxPods)
	}
	dup := func(what, name string, a, b any) error {
		return fmt.Errorf("%s %s is created twice: by %s and by %s", what, name, w.origin[a], w.origin[b])
	}
	for _, pods := range [][]*corev1.Pod{w.Pods, w.Daemons} {
		for i := 1; i < len(pods); i++ {
			if podKey(pods[i-1]) == podKey(pods[i]) {
				return dup("pod", podKey(pods[i]), pods[i-1], pods[i])
			}
		}
	}
	for i := 1; i < len(w.Nodes); i++ {
		if w.Nodes[i-1].Name == w.Nodes[i].Name {
			return dup("node", w.Nodes[i].Name, w.Nodes[i-1], w.Nodes[i])
		}
	}
	return nil
}
