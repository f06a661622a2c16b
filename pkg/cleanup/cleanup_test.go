package cleanup

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
	cloudfake "github.com/tailor-eks/tailor/pkg/cloud/fake"
	tailorfake "github.com/tailor-eks/tailor/pkg/generated/clientset/versioned/fake"
)

const cluster = "prod"

func tags(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// tailorTags are what every instance Tailor launches for the cluster carries.
func tailorTags(claim string) map[string]string {
	return tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue, v1alpha1.TagPool, "general", v1alpha1.TagClaim, claim)
}

func claim(name, instanceID string) *v1alpha1.Claim {
	cl := &v1alpha1.Claim{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{v1alpha1.FinalizerTermination}}}
	cl.Status.InstanceID = instanceID
	return cl
}

func TestDecideInstances(t *testing.T) {
	for _, tc := range []struct {
		name      string
		claims    []*v1alpha1.Claim
		instance  cloud.Instance
		terminate bool
		why       string
	}{
		{name: "the claim's own instance", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tailorTags("a")}, terminate: true, why: "the claim's instance"},
		{name: "a claim that recorded none yet", claims: []*v1alpha1.Claim{claim("a", "")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StatePending, Tags: tailorTags("a")}, terminate: true, why: "the claim's instance"},
		{name: "orphan: claim gone",
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tailorTags("gone")}, terminate: true, why: "claim is gone"},
		{name: "orphan: claim recorded another instance", claims: []*v1alpha1.Claim{claim("a", "i-2")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tailorTags("a")}, terminate: true, why: "recorded another"},
		{name: "stopped Tailor instance", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateStopped, Tags: tailorTags("a")}, terminate: true, why: "the claim's instance"},
		{name: "another cluster's", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+"other", v1alpha1.TagOwnedValue, v1alpha1.TagPool, "general", v1alpha1.TagClaim, "a")}},
		{name: "cluster tag shared, not owned", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+cluster, "shared", v1alpha1.TagPool, "general", v1alpha1.TagClaim, "a")}},
		{name: "managed node group instance (cluster-owned, no claim tag)",
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue, "eks:nodegroup-name", "system")}},
		{name: "claim tag without pool tag", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue, v1alpha1.TagClaim, "a")}},
		{name: "empty claim tag",
			instance: cloud.Instance{ID: "i-1", State: cloud.StateRunning, Tags: tailorTags("")}},
		{name: "already shutting down", claims: []*v1alpha1.Claim{claim("a", "i-1")},
			instance: cloud.Instance{ID: "i-1", State: cloud.StateShuttingDown, Tags: tailorTags("a")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(cluster, tc.claims, nil, []cloud.Instance{tc.instance})
			if got := len(p.Terminate) == 1; got != tc.terminate {
				t.Fatalf("terminate = %v (%+v), want %v", got, p.Terminate, tc.terminate)
			}
			if tc.terminate && (p.Terminate[0].ID != tc.instance.ID || !strings.Contains(p.Terminate[0].Why, tc.why)) {
				t.Errorf("terminate %+v, want %s because %q", p.Terminate[0], tc.instance.ID, tc.why)
			}
		})
	}
}

func node(name, providerID string, labelled bool, finalizers ...string) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers, Labels: map[string]string{}}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	if labelled {
		n.Labels[v1alpha1.LabelClaim] = "c-" + name
	}
	return n
}

func TestDecideNodes(t *testing.T) {
	ins := []cloud.Instance{
		{ID: "i-tailor", State: cloud.StateRunning, Tags: tailorTags("a")},
		{ID: "i-system", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue)},
		{ID: "i-going", State: cloud.StateShuttingDown, Tags: tailorTags("b")},
	}
	fin, other := v1alpha1.FinalizerTermination, "example.com/keep"
	for _, tc := range []struct {
		name            string
		node            corev1.Node
		release, delete bool
	}{
		{name: "Tailor node, instance terminated now", node: node("n", "aws:///us-east-1a/i-tailor", true, fin), release: true, delete: true},
		{name: "Tailor node, instance already going", node: node("n", "aws:///us-east-1a/i-going", true, fin), release: true, delete: true},
		{name: "Tailor node, instance gone", node: node("n", "aws:///us-east-1a/i-gone", true, fin), release: true, delete: true},
		{name: "Tailor node never initialized", node: node("n", "", true, fin), release: true, delete: true},
		{name: "Tailor node without the finalizer", node: node("n", "aws:///us-east-1a/i-tailor", true), delete: true},
		{name: "finalizer but no claim label", node: node("n", "aws:///us-east-1a/i-gone", false, other, fin), release: true, delete: true},
		{name: "Tailor label on an instance Tailor does not own", node: node("n", "aws:///us-east-1a/i-system", true, fin), release: true},
		{name: "not Tailor's", node: node("system-0", "aws:///us-east-1a/i-system", false, other)},
		{name: "not Tailor's, instance unknown", node: node("foreign", "aws:///us-east-1a/i-x", false)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Decide(cluster, []*v1alpha1.Claim{claim("a", "i-tailor")}, []corev1.Node{tc.node}, ins)
			if got := slices.Contains(p.ReleaseNodes, tc.node.Name); got != tc.release {
				t.Errorf("release = %v, want %v", got, tc.release)
			}
			if got := slices.Contains(p.DeleteNodes, tc.node.Name); got != tc.delete {
				t.Errorf("delete = %v, want %v", got, tc.delete)
			}
			if len(p.Terminate) != 1 || p.Terminate[0].ID != "i-tailor" || p.Kept != 1 {
				t.Errorf("terminate %+v kept %d, want i-tailor terminated and i-system kept", p.Terminate, p.Kept)
			}
		})
	}
}

func TestLeftErrorNamesWhatIsLeft(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, "c"+string(rune('a'+i)))
	}
	msg := (&LeftError{Claims: names, Nodes: []string{"n1"}}).Error()
	for _, want := range []string{"12 claims", "ca, cb", "and 2 more", "1 nodes with the tailor.dev/termination finalizer (n1)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q lacks %q", msg, want)
		}
	}
}

// Run's steps end to end on fake clients (which drop a deleted object at once, finalizers or
// not: the real API server's behaviour is test/integration's TestUninstallCleanup).
func TestRunRemovesTailorsOnly(t *testing.T) {
	ctx := context.Background()
	cl := claim("a", "i-tailor")
	tailorNode := node("n-tailor", "aws:///us-east-1a/i-tailor", true, v1alpha1.FinalizerTermination)
	systemNode := node("system-0", "aws:///us-east-1a/i-system", false)
	kube := kubefake.NewClientset(&tailorNode, &systemNode)
	cs := tailorfake.NewSimpleClientset(cl)
	provider := cloudfake.New(nil, nil, nil)
	provider.AddInstance(cloud.Instance{ID: "i-tailor", State: cloud.StateRunning, Tags: tailorTags("a")})
	provider.AddInstance(cloud.Instance{ID: "i-system", State: cloud.StateRunning, Tags: tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue)})
	provider.AddLaunchTemplate(cloud.LaunchTemplate{ID: "lt-1", Tags: tags(v1alpha1.TagClusterPrefix+cluster, v1alpha1.TagOwnedValue, v1alpha1.TagPool, "general")})
	stopped := false
	c := &Cleaner{Kube: kube, Claims: cs, Cloud: provider, ClusterName: cluster, StopTailor: func(context.Context) error { stopped = true; return nil }}
	res, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !stopped {
		t.Error("Tailor was not stopped before the forced steps")
	}
	live, _ := provider.Instances(ctx, nil)
	if len(live) != 1 || live[0].ID != "i-system" {
		t.Errorf("live instances %+v, want only i-system", live)
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, "n-tailor", metav1.GetOptions{}); err == nil {
		t.Error("Tailor's node is still there")
	}
	if _, err := kube.CoreV1().Nodes().Get(ctx, "system-0", metav1.GetOptions{}); err != nil {
		t.Errorf("the system node: %v", err)
	}
	if tmpls, _ := provider.LaunchTemplates(ctx, nil); len(tmpls) != 0 {
		t.Errorf("launch templates left: %+v", tmpls)
	}
	if res.ClaimsDeleted != 1 || res.InstancesTerminated != 1 || res.NodesDeleted != 1 || res.TemplatesDeleted != 1 {
		t.Errorf("result %+v", res)
	}
}

// An instance EC2 refuses to terminate leaves the objects that record it, and the error says
// what AWS said.
func TestRunKeepsObjectsWhenTerminateFails(t *testing.T) {
	ctx := context.Background()
	n := node("n", "aws:///us-east-1a/i-tailor", true, v1alpha1.FinalizerTermination)
	kube := kubefake.NewClientset(&n)
	provider := cloudfake.New(nil, nil, nil)
	provider.AddInstance(cloud.Instance{ID: "i-tailor", State: cloud.StateRunning, Tags: tailorTags("a")})
	provider.Fail("Terminate", errors.New("UnauthorizedOperation: not allowed"), 1)
	c := &Cleaner{Kube: kube, Claims: tailorfake.NewSimpleClientset(), Cloud: provider, ClusterName: cluster}
	_, err := c.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "UnauthorizedOperation") || !strings.Contains(err.Error(), "i-tailor") {
		t.Fatalf("Run: %v, want the AWS error naming i-tailor", err)
	}
	got, err := kube.CoreV1().Nodes().Get(ctx, "n", metav1.GetOptions{})
	if err != nil || !slices.Contains(got.Finalizers, v1alpha1.FinalizerTermination) {
		t.Errorf("node %v (%v), want it kept with its finalizer", got, err)
	}
}
