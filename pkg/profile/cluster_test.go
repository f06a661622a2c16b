package profile

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tailor-eks/tailor/manifests"
)

// clusterPod is a pod of app with cpu; kind adds a constraint on the pods of the same app.
func clusterPod(name, app, cpu, kind, nodeName string) *corev1.Pod {
	self := &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": app}},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	switch kind {
	case "zone-spread", "hostname-spread":
		key := map[string]string{"zone-spread": corev1.LabelTopologyZone, "hostname-spread": corev1.LabelHostname}[kind]
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: self}}
	case "zone-affinity":
		p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelTopologyZone, LabelSelector: self}}}}
	case "anti-affinity":
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: corev1.LabelHostname, LabelSelector: self}}}}
	case "host-port":
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: corev1.ProtocolTCP}}
	}
	return p
}

// verdicts are the plugins' answers for pod on every node: its PreFilter error, or each node's
// Filter status.
func verdicts(t *testing.T, fw *Framework, nodes []*corev1.Node, pod *corev1.Pod) []string {
	t.Helper()
	ctx := context.Background()
	state, err := fw.PreFilter(ctx, pod)
	if err != nil {
		return []string{"PreFilter: " + err.Error()}
	}
	var out []string
	for _, n := range nodes {
		ni, err := fw.SnapshotSharedLister().NodeInfos().Get(n.Name)
		if err != nil {
			t.Fatal(err)
		}
		if s := fw.RunFilterPlugins(ctx, state.Clone(), pod, ni); s.IsSuccess() {
			out = append(out, n.Name+": fits")
		} else {
			out = append(out, fmt.Sprintf("%s: %v %v", n.Name, s.Code(), s.Reasons()))
		}
	}
	return out
}

// TestClusterAnswersAsSetSnapshot: a Cluster that binds pods one by one gives the plugins the
// same answers, after every bind, as SetSnapshot of all the pods bound so far.
func TestClusterAnswersAsSetSnapshot(t *testing.T) {
	ctx := context.Background()
	prof, err := Load(manifests.SchedulerConfig, "")
	if err != nil {
		t.Fatal(err)
	}
	var nodes []*corev1.Node
	for i, zone := range []string{"us-east-1a", "us-east-1a", "us-east-1b"} {
		name := fmt.Sprintf("node-%d", i)
		nodes = append(nodes, &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelTopologyZone: zone}},
			Status:     corev1.NodeStatus{Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}},
		})
	}
	probes := []*corev1.Pod{}
	for _, kind := range []string{"", "zone-spread", "hostname-spread", "zone-affinity", "anti-affinity", "host-port"} {
		probes = append(probes, clusterPod("probe-"+kind, kind, "1", kind, ""))
	}
	for _, tc := range []struct {
		name  string
		first []*corev1.Pod // bound before the cluster is made (one on a node not in nodes)
		binds []*corev1.Pod
	}{
		{"empty, then one of each kind", nil, []*corev1.Pod{
			clusterPod("a", "zone-spread", "1", "zone-spread", "node-0"),
			clusterPod("b", "hostname-spread", "1", "hostname-spread", "node-1"),
			clusterPod("c", "zone-affinity", "1", "zone-affinity", "node-2"),
			clusterPod("d", "anti-affinity", "1", "anti-affinity", "node-0"),
			clusterPod("e", "host-port", "1", "host-port", "node-1"),
		}},
		{"full nodes", []*corev1.Pod{clusterPod("gone", "", "1", "", "deleted")}, []*corev1.Pod{
			clusterPod("big-0", "", "3500m", "", "node-0"),
			clusterPod("big-1", "", "3500m", "", "node-1"),
			clusterPod("big-2", "", "3", "", "node-2"),
		}},
		{"skew and anti-affinity pile up", []*corev1.Pod{clusterPod("z0", "zone-spread", "100m", "zone-spread", "node-0")}, []*corev1.Pod{
			clusterPod("z1", "zone-spread", "100m", "zone-spread", "node-1"),
			clusterPod("x0", "anti-affinity", "100m", "anti-affinity", "node-0"),
			clusterPod("x1", "anti-affinity", "100m", "anti-affinity", "node-1"),
			clusterPod("x2", "anti-affinity", "100m", "anti-affinity", "node-2"),
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			incremental, _, err := prof.NewFramework(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rebuilt, _, err := prof.NewFramework(ctx)
			if err != nil {
				t.Fatal(err)
			}
			cluster, err := incremental.NewCluster(ctx, nodes, tc.first)
			if err != nil {
				t.Fatal(err)
			}
			defer cluster.Close()
			bound := append([]*corev1.Pod(nil), tc.first...)
			for i := 0; i <= len(tc.binds); i++ {
				if i > 0 {
					if err := cluster.Bind(ctx, tc.binds[i-1]); err != nil {
						t.Fatal(err)
					}
					bound = append(bound, tc.binds[i-1])
				}
				rebuilt.SetSnapshot(nodes, bound)
				for _, probe := range probes {
					got, want := verdicts(t, incremental, nodes, probe), verdicts(t, rebuilt, nodes, probe)
					if !reflect.DeepEqual(got, want) {
						t.Errorf("after %d binds, %s: Cluster says %q, SetSnapshot %q", i, probe.Name, got, want)
					}
				}
			}
		})
	}
}
