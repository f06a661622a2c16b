package provisioning

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// Fills decided on cached claims are written all at once. A fill whose claim is as cached is
// recorded as decided, with no second look; one whose claim changed since is checked again on
// the newest version, and records only the pods still taken (none, once the claim is no longer
// in flight). The pods not recorded are returned, to be planned; the recorded ones wait on
// their claim in the ledger, and the claim keeps what was written to it meanwhile.
func TestRecordChecksPodsAgainOnlyWhenTheClaimChanged(t *testing.T) {
	ctx := context.Background()
	lw := newReservationsWorld(t)
	p := New(lw.l.Options)
	pods := func(claim string, n int) []*planning.Pod {
		var out []*planning.Pod
		for i := range n {
			name := claim + "-pod-" + string(rune('a'+i))
			out = append(out, planning.NewPod(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)}}, nil))
		}
		return out
	}
	held := map[string]*v1alpha1.Claim{}
	for _, name := range []string{"current", "changed", "came-up"} {
		held[name] = lw.claim(t, name)
	}
	for _, name := range []string{"changed", "came-up"} { // another write after the cache's version
		c := held[name].DeepCopy()
		c.Spec.Pods = append(c.Spec.Pods, v1alpha1.PodRef{Namespace: "default", Name: "meanwhile", UID: "uid-meanwhile-" + name})
		c.Spec.PodCount = len(c.Spec.Pods)
		if _, err := lw.l.Claims.Update(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	fills := []fill{{held["current"], pods("current", 2)}, {held["changed"], pods("changed", 3)}, {held["came-up"], pods("came-up", 2)}}

	var mu sync.Mutex
	checked := map[string]int{}
	again := func(cur *v1alpha1.Claim, ps []*planning.Pod) ([]*planning.Pod, error) {
		mu.Lock()
		defer mu.Unlock()
		checked[cur.Name]++
		if cur.Name == "came-up" {
			return nil, errNoLongerInFlight
		}
		return ps[:1], nil
	}
	rest := p.record(ctx, fills, again, func(*v1alpha1.Claim) string { return "test" })

	if checked["current"] != 0 || checked["changed"] != 1 || checked["came-up"] != 1 {
		t.Errorf("checked again %v, want the changed claims once each and the current one never", checked)
	}
	var restNames []string
	for _, pod := range rest {
		restNames = append(restNames, pod.Pod.Name)
	}
	slices.Sort(restNames)
	if want := []string{"came-up-pod-a", "came-up-pod-b", "changed-pod-b", "changed-pod-c"}; !slices.Equal(restNames, want) {
		t.Errorf("returned %v, want %v", restNames, want)
	}
	for claim, want := range map[string][]string{"current": {"current", "current-pod-a", "current-pod-b"}, "changed": {"changed", "meanwhile", "changed-pod-a"}, "came-up": {"came-up", "meanwhile"}} {
		c, err := lw.l.Claims.Fetch(ctx, claim)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ref := range c.Spec.Pods {
			got = append(got, ref.Name)
		}
		if !slices.Equal(got, want) || c.Spec.PodCount != len(c.Spec.Pods) {
			t.Errorf("claim %s holds %v (pod count %d), want %v", claim, got, c.Spec.PodCount, want)
		}
	}
	for _, name := range []string{"current-pod-a", "current-pod-b", "changed-pod-a"} {
		if r, ok := p.Ledger.Lookup(types.UID("uid-" + name)); !ok || r.Claim != strings.SplitN(name, "-pod-", 2)[0] {
			t.Errorf("pod %s is not waiting on its claim in the ledger: %+v, %v", name, r, ok)
		}
	}
	for _, pod := range rest {
		if _, ok := p.Ledger.Lookup(pod.Pod.UID); ok {
			t.Errorf("pod %s was not recorded, yet waits in the ledger", pod.Pod.Name)
		}
	}
}
