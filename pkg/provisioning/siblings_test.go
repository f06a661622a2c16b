package provisioning

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// A pod's siblings wait while the ledger holds another pod of its workload, unbound, on a claim
// (its own claim's included), or a claim keeps room for pods the workload still creates. The pod
// itself does not count, nor do failed claims or pods of another workload.
func TestSiblingsWaiting(t *testing.T) {
	keepsRoom := func(c *v1alpha1.Claim) {
		c.Spec.ExpectedPods = []v1alpha1.ExpectedPods{{Kind: "ReplicaSet", Namespace: "ns", Name: "web", UID: "rs-web", Count: 3}}
	}
	for _, tc := range []struct {
		name         string
		replicas     int32
		onClaim      []int                 // the web pods on the claim
		inLedger     []int                 // those the ledger holds there
		spec         func(*v1alpha1.Claim) // more of the claim's spec
		failed       bool
		noOwner      bool // the refused pod has no controller
		siblingBound bool
		want         bool
	}{ // web-0 is the refused pod, web-1 its sibling
		{name: "a sibling waits on a claim", replicas: 2, onClaim: []int{1}, inLedger: []int{1}, want: true},
		{name: "a sibling waits on the pod's own claim", replicas: 2, onClaim: []int{0, 1}, inLedger: []int{0, 1}, want: true},
		{name: "only the pod itself waits", replicas: 2, onClaim: []int{0}, inLedger: []int{0}},
		{name: "the sibling is bound", replicas: 2, onClaim: []int{1}, inLedger: []int{1}, siblingBound: true},
		{name: "the sibling was planned onto another claim since", replicas: 2, onClaim: []int{1}},
		{name: "room kept for pods the workload still creates", replicas: 3, spec: keepsRoom, want: true},
		{name: "room kept, but the workload has all its pods", replicas: 2, spec: keepsRoom},
		{name: "the claim failed", replicas: 2, onClaim: []int{1}, inLedger: []int{1}, failed: true},
		{name: "a pod of no workload", replicas: 2, onClaim: []int{1}, inLedger: []int{1}, noOwner: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, lw, p := newRolloutProvisioner(t, tc.replicas)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			refused, sibling := w.pod(0).Pod, w.pod(1).Pod
			if tc.siblingBound {
				bound := sibling.DeepCopy()
				bound.Spec.NodeName = "node-2"
				if err := w.factory.Core().V1().Pods().Informer().GetIndexer().Update(bound); err != nil {
					t.Fatal(err)
				}
			}
			c := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Spec: v1alpha1.ClaimSpec{Pool: "general", CapacityType: "on-demand",
				Zone: "us-east-1a", InstanceTypes: []string{"m5.large"}}}
			all := []*metav1.ObjectMeta{&refused.ObjectMeta, &sibling.ObjectMeta}
			for _, i := range tc.onClaim {
				c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{Namespace: "ns", Name: all[i].Name, UID: string(all[i].UID)})
			}
			if tc.spec != nil {
				tc.spec(c)
			}
			created, err := lw.l.Claims.Create(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if tc.failed {
				created.Status.Phase = v1alpha1.ClaimFailed
				if _, err := lw.l.Claims.UpdateStatus(ctx, created); err != nil {
					t.Fatal(err)
				}
			}
			for _, i := range tc.inLedger {
				p.Ledger.Add("c", "", []types.UID{all[i].UID})
			}
			if err := lw.l.Claims.Run(ctx); err != nil {
				t.Fatal(err)
			}
			if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
				got, ok := lw.l.Claims.Get("c")
				return ok && (got.Status.Phase == v1alpha1.ClaimFailed) == tc.failed, nil
			}); err != nil {
				t.Fatal("the claim is not cached")
			}
			if tc.noOwner {
				refused = refused.DeepCopy()
				refused.OwnerReferences = nil
			}
			if got := p.SiblingsWaiting(refused); got != tc.want {
				t.Errorf("SiblingsWaiting = %v, want %v", got, tc.want)
			}
		})
	}
}
