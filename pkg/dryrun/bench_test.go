package dryrun

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// karpenterShape writes n pods of Karpenter's scheduling benchmark as one Pod manifest (the shape
// BenchmarkPlan in pkg/planning plans: split evenly over plain, zone spread, hostname spread, zone
// affinity and hostname anti-affinity, each kind one app, every pod with its own cpu (100m–1.5)
// and memory (100Mi–4Gi)) and returns its path.
func karpenterShape(b testing.TB, n int) string {
	b.Helper()
	r := rand.New(rand.NewSource(1))
	var out []byte
	for i := 0; i < n; i++ {
		kind := i % 5
		app := fmt.Sprintf("kind-%d", kind)
		p := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("%s-%d", app, i), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(100+r.Int63n(1401), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity((100+r.Int63n(3997))<<20, resource.BinarySI),
			}}}}},
		}
		self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		switch kind {
		case 1:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
		case 2:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
		case 3:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: self}}}}
		case 4:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self}}}}
		}
		doc, err := yaml.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		out = append(append(out, "---\n"...), doc...)
	}
	path := filepath.Join(b.TempDir(), "pods.yaml")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// everyTypeConfig is a profile whose one pool allows every type of the catalog, on demand.
const everyTypeConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: tailor
  pluginConfig:
  - name: Tailor
    args:
      clusterName: bench
      region: us-east-1
      pools:
      - {name: all, capacityTypes: [on-demand], instanceProfile: x}
`

// BenchmarkDryRun is the plan command's whole path (reading the manifest, the catalog through
// the SDK from the simulator, PreFilter per pod, the planner and the LP lower bound) for
// Karpenter's benchmark shape at 20,000 pods, with the example pools and with every type
// allowed. pkg/planning's BenchmarkPlan times the planner alone on the same shape.
func BenchmarkDryRun(b *testing.B) {
	const n = 20000
	path := karpenterShape(b, n)
	everyType := filepath.Join(b.TempDir(), "every-type.yaml")
	if err := os.WriteFile(everyType, []byte(everyTypeConfig), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, config string }{
		{"karpenter-shape/pods=20000/example-pools", ""},
		{"karpenter-shape/pods=20000/every-type", everyType},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var res *Result
			for i := 0; i < b.N; i++ {
				var err error
				res, err = Plan(context.Background(), Options{Files: []string{path}, Config: tc.config, Catalog: "shipped", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
				if err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if len(res.Plan.Unschedulable) > 0 {
				b.Fatalf("%d pods unschedulable, e.g. %s: %s", len(res.Plan.Unschedulable), res.Plan.Unschedulable[0].Pod.Name, res.Plan.Unschedulable[0].Reason)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(len(res.Plan.Nodes)), "nodes")
			b.ReportMetric(res.Plan.PricePerHour(), "$/h")
			b.ReportMetric(res.Plan.PricePerHour()/res.LowerBound, "x-LP-bound")
		})
	}
}
