package provisioning

import (
	"context"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/pkg/planning"
)

// A batch is planned and each planned node recorded as a Pending claim naming its pods, which
// wait on it in the ledger; provisioning launches nothing itself (the lifecycle launches what it
// sees recorded). A pod bound meanwhile is not planned.
func TestProvisionRecordsClaims(t *testing.T) {
	w, lw, p := newRolloutProvisioner(t, 3)
	batch := []*planning.Pod{w.pod(0), w.pod(1), w.pod(2)}
	bound := batch[2].Pod.DeepCopy()
	bound.Spec.NodeName = "node-1"
	if err := w.factory.Core().V1().Pods().Informer().GetIndexer().Update(bound); err != nil {
		t.Fatal(err)
	}

	p.provision(context.Background(), batch)

	cls, err := lw.claims.TailorV1alpha1().Claims().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cls.Items) == 0 {
		t.Fatal("no claim recorded")
	}
	var named []string
	for _, c := range cls.Items {
		if c.Status.Phase != "" || c.Spec.Pool != "general" || len(c.Spec.InstanceTypes) == 0 {
			t.Errorf("claim %s: phase %q, pool %q, types %v; want a Pending claim of the general pool with its types", c.Name, c.Status.Phase, c.Spec.Pool, c.Spec.InstanceTypes)
		}
		for _, ref := range c.Spec.Pods {
			named = append(named, ref.Name)
			if r, ok := p.Ledger.Lookup(types.UID(ref.UID)); !ok || r.Claim != c.Name {
				t.Errorf("pod %s waits on %+v in the ledger, want claim %s", ref.Name, r, c.Name)
			}
		}
	}
	slices.Sort(named)
	if want := []string{"web-0", "web-1"}; !slices.Equal(named, want) {
		t.Errorf("claims name pods %v, want the pending ones %v", named, want)
	}
	if n := lw.cloud.Launches(); n != 0 {
		t.Errorf("provisioning launched %d instances; the lifecycle launches", n)
	}
}
