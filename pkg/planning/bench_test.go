package planning

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/profile"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// benchTemplates are the example profile's pools over the real us-east-1 catalog, read the way
// production reads it: through the SDK, from the simulator, in three zones.
func benchTemplates(b testing.TB) []*Template {
	b.Helper()
	prof, err := profile.Load(manifests.SchedulerConfig, "")
	if err != nil {
		b.Fatal(err)
	}
	return catalogTemplates(b, prof.Tailor.Pools)
}

// everyTypeTemplates is one on-demand pool that allows every type of the catalog.
func everyTypeTemplates(b testing.TB) []*Template {
	b.Helper()
	return catalogTemplates(b, []config.Pool{{Name: "all", CapacityTypes: []string{"on-demand"}, InstanceProfile: "x"}})
}

// catalogTemplates are the pools' templates over the real us-east-1 catalog in three zones.
func catalogTemplates(b testing.TB, pools []config.Pool) []*Template {
	b.Helper()
	srv := httptest.NewServer(ec2sim.New(ec2sim.Options{ClusterName: "bench"}))
	b.Cleanup(srv.Close)
	cfg := aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL), Credentials: aws.AnonymousCredentials{}}
	p, err := ec2.NewFromConfig(cfg, ec2.Options{ClusterName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	its, err := p.InstanceTypes(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	zones := map[string][]string{}
	for _, pool := range pools {
		zones[pool.Name] = []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	}
	tmpls, err := Templates(pools, its, zones)
	if err != nil {
		b.Fatal(err)
	}
	return tmpls
}

// Workload kinds of Karpenter's scheduling benchmark.
const (
	plain = iota
	zoneSpread
	hostnameSpread
	zoneAffinity
	hostnameAntiAffinity
	kinds
)

// benchPods makes n pods split evenly over the kinds (or all plain), each kind one workload,
// every pod with its own cpu (100m–1.5) and memory (100Mi–4Gi), each with its PreFilter state
// from the example profile's real plugins.
func benchPods(b testing.TB, n int, mixed bool) []*Pod {
	b.Helper()
	fw := offline(b)
	fw.SetSnapshot(nil, nil)
	r := rand.New(rand.NewSource(1))
	pods := make([]*Pod, n)
	for i := range pods {
		kind := plain
		if mixed {
			kind = i % kinds
		}
		app := fmt.Sprintf("kind-%d", kind)
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("%s-%d", app, i), UID: types.UID(fmt.Sprint(i)), Labels: map[string]string{"app": app}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
				corev1.ResourceCPU:    *resource.NewMilliQuantity(100+r.Int63n(1401), resource.DecimalSI),
				corev1.ResourceMemory: *resource.NewQuantity((100+r.Int63n(3997))<<20, resource.BinarySI),
			}}}}},
		}
		self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
		switch kind {
		case zoneSpread:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
		case hostnameSpread:
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
		case zoneAffinity:
			p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: self}}}}
		case hostnameAntiAffinity:
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self}}}}
		}
		pods[i] = NewPod(p, filterFor(b, p))
	}
	return pods
}

// BenchmarkPlan plans Karpenter's benchmark shape (1k, 5k, 20k pods: plain, zone spread,
// hostname spread, zone affinity, hostname anti-affinity) and a plain mixed workload over the
// real catalog, reporting pods/s, nodes, $/h and $/h over the LP lower bound.
func BenchmarkPlan(b *testing.B) {
	tmpls := benchTemplates(b)
	for _, tc := range []struct {
		name  string
		n     int
		mixed bool
	}{
		{"karpenter-shape/pods=1000", 1000, true},
		{"karpenter-shape/pods=5000", 5000, true},
		{"karpenter-shape/pods=20000", 20000, true},
		{"plain-mixed/pods=1000", 1000, false},
		{"plain-mixed/pods=5000", 5000, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pods := benchPods(b, tc.n, tc.mixed)
			var plan *Plan
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				plan = (&Planner{Templates: tmpls}).Plan(context.Background(), pods)
			}
			b.StopTimer()
			reportPlan(b, plan, tc.n)
		})
	}
}

// mixedShapes is the mixed workload of issue 11: the share of pods of each shape (requests only),
// each shape one workload.
var mixedShapes = []struct {
	share    float64
	cpu, mem string
}{{0.50, "250m", "512Mi"}, {0.20, "1", "8Gi"}, {0.20, "4", "4Gi"}, {0.08, "16", "64Gi"}, {0.02, "48", "192Gi"}}

// mixedPods makes n pods in mixedShapes' proportions.
func mixedPods(b testing.TB, n int) []*Pod {
	b.Helper()
	fw := offline(b)
	fw.SetSnapshot(nil, nil)
	var pods []*Pod
	for s, sh := range mixedShapes {
		app := fmt.Sprintf("shape-%d", s)
		for i := 0; i < int(math.Round(sh.share*float64(n))); i++ {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("%s-%d", app, i), UID: types.UID(fmt.Sprintf("%s-%d", app, i)), Labels: map[string]string{"app": app}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse(sh.cpu), corev1.ResourceMemory: resource.MustParse(sh.mem),
				}}}}},
			}
			pods = append(pods, NewPod(p, filterFor(b, p)))
		}
	}
	return pods
}

// BenchmarkPlanMixed plans issue 11's mixed workload with every type allowed and with the
// example profile's pools, reporting $/h and $/h over the LP lower bound.
func BenchmarkPlanMixed(b *testing.B) {
	for _, catalog := range []struct {
		name      string
		templates func(testing.TB) []*Template
	}{{"every-type", everyTypeTemplates}, {"example-pools", benchTemplates}} {
		tmpls := catalog.templates(b)
		for _, n := range []int{200, 2000} {
			b.Run(fmt.Sprintf("%s/pods=%d", catalog.name, n), func(b *testing.B) {
				pods := mixedPods(b, n)
				var plan *Plan
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					plan = (&Planner{Templates: tmpls}).Plan(context.Background(), pods)
				}
				b.StopTimer()
				reportPlan(b, plan, n)
			})
		}
	}
}

// reportPlan reports a benchmark plan's speed, size, cost and cost over the LP lower bound.
func reportPlan(b *testing.B, plan *Plan, n int) {
	if len(plan.Unschedulable) > 0 {
		b.Fatalf("%d pods unschedulable, e.g. %s: %s", len(plan.Unschedulable), plan.Unschedulable[0].Pod.Name, plan.Unschedulable[0].Reason)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
	b.ReportMetric(float64(len(plan.Nodes)), "nodes")
	b.ReportMetric(plan.PricePerHour(), "$/h")
	bound, err := plan.LowerBound()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(plan.PricePerHour()/bound, "x-LP-bound")
}
