package planning_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http/httptest"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/planning"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// realCatalog reads the shipped us-east-1 catalog the way production does: through the SDK,
// from the simulator.
func realCatalog(b *testing.B) []cloud.InstanceType {
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
	return its
}

// resourcesOnly stands in for the Filter plugins: the benchmark measures the planner itself.
var resourcesOnly = planning.CheckerFunc(func(context.Context, *corev1.Node, []*corev1.Pod) string { return "" })

// BenchmarkPlanMixed plans plain pods of mixed sizes (cpu 100m–1.5, memory 100Mi–4Gi, ten
// deployments) over the real catalog with the example general pool.
func BenchmarkPlanMixed(b *testing.B) {
	its := realCatalog(b)
	pools := []config.Pool{{Name: "general", CapacityTypes: []string{"on-demand"}, Requirements: []corev1.NodeSelectorRequirement{
		{Key: "tailor.dev/instance-category", Operator: corev1.NodeSelectorOpIn, Values: []string{"c", "m", "r"}},
		{Key: "tailor.dev/instance-generation", Operator: corev1.NodeSelectorOpGt, Values: []string{"4"}},
	}}}
	tmpls, err := planning.Templates(pools, its, map[string][]string{"general": {"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			pods := mixedPods(n)
			var plan *planning.Plan
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				plan = (&planning.Planner{Templates: tmpls}).Plan(context.Background(), pods)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "pods/s")
			b.ReportMetric(float64(len(plan.Nodes)), "nodes")
			b.ReportMetric(plan.PricePerHour(), "$/h")
		})
	}
}

func mixedPods(n int) []*planning.Pod {
	r := rand.New(rand.NewSource(1))
	const deployments = 10
	var sizes [deployments]corev1.ResourceList
	for d := range sizes {
		sizes[d] = corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewMilliQuantity(100+r.Int63n(1400), resource.DecimalSI),
			corev1.ResourceMemory: *resource.NewQuantity((100+r.Int63n(3996))<<20, resource.BinarySI),
		}
	}
	pods := make([]*planning.Pod, n)
	for i := range pods {
		d := i % deployments
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("d%d-%d", d, i), UID: types.UID(fmt.Sprint(i)), Labels: map[string]string{"app": fmt.Sprint(d)}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: sizes[d]}}}},
		}
		pods[i] = planning.NewPod(p, resourcesOnly)
	}
	return pods
}
