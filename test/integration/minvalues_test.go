package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// spotFamilies is the minValues the spot pool asks of its instance families here: more than the
// ten types a claim offers EC2 without a minimum, so the launch must offer more.
const spotFamilies = 12

// A spot pool whose requirement asks for minValues instance families launches its pods' nodes
// with a CreateFleet spanning that many families; a pod whose own constraints leave fewer gets
// no claim and no launch, and an event on it says why.
func TestMinValues(t *testing.T) {
	restartScheduler(t, func(args map[string]any) {
		for _, p := range args["pools"].([]any) {
			if pool := p.(map[string]any); pool["name"] == "spot" {
				pool["requirements"] = append(pool["requirements"].([]any),
					map[string]any{"key": v1alpha1.LabelInstanceFamily, "operator": "Exists", "minValues": spotFamilies})
			}
		}
	})

	t.Run("the fleet spans the families", func(t *testing.T) {
		ns := newNamespace(t)
		createPod(t, ns, "diverse", "500m", "1Gi", withToleration("tailor.dev/spot", "true"))
		pods := waitRunning(t, ns, 1)
		node := getNode(t, pods[0].Spec.NodeName)
		claim := node.Labels[v1alpha1.LabelClaim]
		if pool := node.Labels[v1alpha1.LabelPool]; pool != "spot" {
			t.Fatalf("pod on pool %q, want spot", pool)
		}
		var uid string
		for _, c := range listClaims(t) {
			if c.Name == claim {
				uid = string(c.UID)
				if fams := families(c.Spec.InstanceTypes); len(fams) < spotFamilies {
					t.Errorf("claim %s offers %v: %d families %v, want at least %d", c.Name, c.Spec.InstanceTypes, len(fams), fams, spotFamilies)
				}
			}
		}
		if uid == "" {
			t.Fatalf("no claim %q for node %s", claim, node.Name)
		}
		var offered []string
		for _, r := range world.Sim.Requests("CreateFleet") {
			if r.Get("ClientToken") != uid {
				continue
			}
			for k, v := range r {
				if strings.HasPrefix(k, "LaunchTemplateConfigs.") && strings.Contains(k, ".Overrides.") && strings.HasSuffix(k, ".InstanceType") {
					offered = append(offered, v...)
				}
			}
		}
		fams := families(offered)
		if len(fams) < spotFamilies {
			t.Errorf("the CreateFleet of claim %s offered %d families %v, want at least %d", claim, len(fams), fams, spotFamilies)
		}
		t.Logf("claim %s: CreateFleet offered %d overrides over %d families %v", claim, len(offered), len(fams), fams)
		if typ := node.Labels[corev1.LabelInstanceTypeStable]; !slices.Contains(offered, typ) {
			t.Errorf("node %s is a %s, which the CreateFleet did not offer", node.Name, typ)
		}
	})

	t.Run("too few families for the pod", func(t *testing.T) {
		ns := newNamespace(t)
		fleets := world.Sim.Calls("CreateFleet")
		// Only the spot pool's nodes carry workload-class; only m5 is left of its families.
		createPod(t, ns, "m5-only", "500m", "1Gi", withToleration("tailor.dev/spot", "true"),
			withNodeSelector("workload-class", "interruptible"), withNodeSelector(v1alpha1.LabelInstanceFamily, "m5"))
		want := fmt.Sprintf("Tailor cannot launch capacity for this pod: pool spot needs %d values of %s among the types it offers EC2; the types that hold these pods have 1 (m5)",
			spotFamilies, v1alpha1.LabelInstanceFamily)
		if msg := waitEvent(t, ns, "m5-only", "ProvisioningFailed"); msg != want {
			t.Errorf("event %q, want %q", msg, want)
		}
		// The plan that said so made no claim for the pod, and none for anything else.
		for _, c := range listClaims(t) {
			t.Errorf("claim %s (pool %s) for pods %v; want none", c.Name, c.Spec.Pool, c.Spec.Pods)
		}
		if got := world.Sim.Calls("CreateFleet") - fleets; got != 0 {
			t.Errorf("%d CreateFleet calls, want none", got)
		}
		p, err := world.Client.CoreV1().Pods(ns).Get(context.Background(), "m5-only", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			t.Errorf("pod on node %q in phase %s, want Pending without a node", p.Spec.NodeName, p.Status.Phase)
		}
	})
}

// families are the instance families of the types, sorted.
func families(types []string) []string {
	var out []string
	for _, typ := range types {
		if f, _, _ := strings.Cut(typ, "."); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out
}
