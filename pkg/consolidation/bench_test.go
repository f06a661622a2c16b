package consolidation

import (
	"context"
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

const benchNodes = 1000

// BenchmarkDecide is one full decision pass over a cluster of 1000 Tailor nodes running 20,000
// pods (20 per node, from 100 Deployments, cpu 100m–1.5, memory 100Mi–4Gi), each node filled
// to about 90%: no node is empty and few pods have room elsewhere, so the pass asks about every
// node (delete, merge, replace) before it finds its move, the worst case for its cost.
func BenchmarkDecide(b *testing.B) {
	ctx := context.Background()
	prof, fw, its := exampleProfile(b)
	general := prof.Tailor.Pool("general")
	tmpls, err := planning.Templates([]config.Pool{*general}, its, map[string][]string{"general": {"us-east-1a", "us-east-1b", "us-east-1c"}})
	if err != nil {
		b.Fatal(err)
	}
	// Nodes: m6g.4xlarge-like templates, one per node.
	var node16 *planning.Template
	for _, t := range tmpls {
		if t.Type.Name == "m6g.4xlarge" && t.Offering.Zone == "us-east-1a" {
			node16 = t
		}
	}
	r := rand.New(rand.NewSource(1))
	now := time.Now()
	s := &snapshot{now: now, budget: map[string]int{"general": 100}, templates: tmpls, minSavings: 0.1, podInfos: planning.NewPodInfos()}
	for i := 0; i < benchNodes; i++ {
		name := fmt.Sprintf("node-%04d", i)
		n := node16.Node.DeepCopy()
		n.Name = name
		n.Labels[corev1.LabelHostname] = name
		n.Labels[v1alpha1.LabelClaim] = name
		n.CreationTimestamp = metav1.NewTime(now.Add(-time.Hour))
		s.nodes = append(s.nodes, n)
		cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ClaimSpec{Pool: "general"},
			Status: v1alpha1.ClaimStatus{Phase: v1alpha1.ClaimRegistered, NodeName: name, PricePerHour: "0.616"}}
		s.owned = append(s.owned, &ownedNode{node: n, claim: cl, pool: general, price: 0.616, idleSince: now.Add(-time.Hour)})
		// 20 pods filling ~90% of 16 cpu / 64 GiB.
		for j := 0; j < 20; j++ {
			d := r.Intn(100)
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: fmt.Sprintf("d%d-%d-%d", d, i, j), UID: types.UID(fmt.Sprintf("%d-%d", i, j)),
					Labels: map[string]string{"app": fmt.Sprint(d)}, OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: fmt.Sprint(d), Controller: ptrTrue()}}},
				Spec: corev1.PodSpec{NodeName: name, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(700, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(2900<<20, resource.BinarySI),
				}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodRunning},
			}
			s.pods = append(s.pods, p)
		}
	}
	var ds []decision
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		ds, _ = decide(ctx, s, fw)
	}
	b.StopTimer()
	b.ReportMetric(float64(len(ds)), "decisions")
}
