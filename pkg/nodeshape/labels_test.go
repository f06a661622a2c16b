package nodeshape

import (
	"maps"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

var testPool = &config.Pool{
	Name:          "web",
	Labels:        map[string]string{"team": "shop", "node.kubernetes.io/role": "web"},
	Taints:        []corev1.Taint{{Key: "dedicated", Value: "web", Effect: corev1.TaintEffectNoSchedule}},
	StartupTaints: []corev1.Taint{{Key: "cni.example/not-ready", Effect: corev1.TaintEffectNoExecute}},
}

var testTypeLabels = map[string]string{
	corev1.LabelInstanceTypeStable: "m5.large",
	corev1.LabelArchStable:         "amd64",
	v1alpha1.LabelInstanceFamily:   "m5",
}

// The node the planner judged is the node that registers: the kubelet's labels (NodeLabels and
// its own), the cloud provider's zone, then registration, give the template's labels plus the
// claim.
func TestRegisteredNodeCarriesTemplateLabels(t *testing.T) {
	kubelet := NodeLabels(testPool, "spot")
	kubelet[corev1.LabelHostname] = "ip-10-0-0-1"
	kubelet[corev1.LabelArchStable] = "amd64"
	kubelet[corev1.LabelTopologyZone] = "us-east-1a"
	got := RegisteredLabels(kubelet, testPool, testTypeLabels, "spot", "web-abcde")

	want := TemplateLabels(testPool, testTypeLabels, "us-east-1a", "spot")
	want[corev1.LabelHostname] = "ip-10-0-0-1"
	want[v1alpha1.LabelClaim] = "web-abcde"
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registered labels\n %v\nwant the template's\n %v", got, want)
	}
}

func TestLabelPrecedence(t *testing.T) {
	// A pool (unvalidated) claiming an instance label: the pool's value wins on the template and
	// on the registered node alike; the instance's own value, set by the kubelet, is kept over
	// the catalog's.
	pool := &config.Pool{Name: "p", Labels: map[string]string{v1alpha1.LabelInstanceFamily: "pool-says", v1alpha1.LabelCapacityType: "pool-says"}}
	tmpl := TemplateLabels(pool, testTypeLabels, "us-east-1a", "on-demand")
	if tmpl[v1alpha1.LabelInstanceFamily] != "pool-says" || tmpl[v1alpha1.LabelCapacityType] != "on-demand" {
		t.Errorf("template labels %v: want the pool's family and the offering's capacity type", tmpl)
	}
	node := RegisteredLabels(map[string]string{corev1.LabelArchStable: "arm64"}, pool, testTypeLabels, "on-demand", "c")
	for k, want := range map[string]string{
		corev1.LabelArchStable:         "arm64",
		corev1.LabelInstanceTypeStable: "m5.large",
		v1alpha1.LabelInstanceFamily:   "pool-says",
		v1alpha1.LabelCapacityType:     "on-demand",
		v1alpha1.LabelPool:             "p",
		v1alpha1.LabelClaim:            "c",
	} {
		if node[k] != want {
			t.Errorf("registered %s = %q, want %q", k, node[k], want)
		}
	}
	if RegisteredLabels(nil, pool, nil, "spot", "c")[v1alpha1.LabelClaim] != "c" {
		t.Error("a node without labels gets none")
	}
}

func TestNodeLabelsCopyThePool(t *testing.T) {
	before := maps.Clone(testPool.Labels)
	l := NodeLabels(testPool, "spot")
	l["team"] = "other"
	if !reflect.DeepEqual(testPool.Labels, before) {
		t.Errorf("NodeLabels shares the pool's map: pool labels now %v", testPool.Labels)
	}
}
