package workload

import (
	"bytes"
	"os"
	"testing"
)

// FuzzRead feeds arbitrary bytes to the manifest reader: it returns a workload or an error,
// never panics, and never returns more than MaxPods pods.
func FuzzRead(f *testing.F) {
	mixed, err := os.ReadFile("testdata/mixed.yaml")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		mixed,
		[]byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: d}\nspec: {replicas: 3, template: {spec: {containers: [{name: c, image: i}]}}}\n"),
		[]byte("apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: s}\nspec: {replicas: 2, ordinals: {start: 5}, volumeClaimTemplates: [{metadata: {name: data}}], template: {spec: {containers: [{name: c, image: i}]}}}\n"),
		[]byte(`{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"c"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"parallelism":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}}}}}`),
		[]byte(`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i","resources":{"limits":{"cpu":"1"}}}]}}]}`),
		[]byte("---\n---\nkind: Pod\n"),
		[]byte("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {overhead: {cpu: -1}, containers: [{name: c, resources: {requests: {memory: 1e400}}}]}\n"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			if w != nil {
				t.Fatalf("a workload with the error %v", err)
			}
			return
		}
		if len(w.Pods) > MaxPods {
			t.Fatalf("%d pods", len(w.Pods))
		}
		for _, p := range w.Pods {
			if p == nil || p.Name == "" || p.Namespace == "" {
				t.Fatalf("pod without a name: %+v", p)
			}
		}
	})
}
