package planning

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/catalog"
)

// Templates count with each pool's own kubelet settings and volume, so a pod that fits only a
// pool's bigger disk or higher pod limit is planned there and nowhere else.
func TestTemplatesUsePoolNodeSettings(t *testing.T) {
	plain := config.Pool{Name: "plain", CapacityTypes: []string{"on-demand"}, AMI: "al2023"}
	dense := config.Pool{Name: "dense", CapacityTypes: []string{"on-demand"}, AMI: "al2023",
		Kubelet:             config.Kubelet{MaxPods: 110, SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
		BlockDeviceMappings: []config.BlockDeviceMapping{{DeviceName: "/dev/xvda", VolumeSize: resource.MustParse("100Gi")}}}
	sameAsPlain := config.Pool{Name: "same", CapacityTypes: []string{"on-demand"}, AMI: "al2023"}
	pools := []config.Pool{plain, dense, sameAsPlain}
	tmpls, err := Templates(pools, testTypes(), map[string][]string{"plain": {"us-east-1a"}, "dense": {"us-east-1a"}, "same": {"us-east-1a"}})
	if err != nil {
		t.Fatal(err)
	}
	byPool := map[string]*Template{}
	for _, tm := range tmpls {
		if tm.Type.Name == "m5.large" {
			byPool[tm.Pool.Name] = tm
		}
	}
	for _, pool := range pools {
		tm := byPool[pool.Name]
		if tm == nil {
			t.Fatalf("no m5.large template of pool %s", pool.Name)
		}
		kc := catalog.KubeletFor(tm.Type, &tm.Pool.Kubelet)
		want := catalog.AllocatableWith(tm.Type, kc, catalog.Storage(tm.Pool, tm.Type))
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourcePods, corev1.ResourceEphemeralStorage} {
			got, w := tm.Allocatable[name], want[name]
			if got.Cmp(w) != 0 {
				t.Errorf("pool %s: allocatable %s = %s, want %s", pool.Name, name, got.String(), w.String())
			}
			if n := tm.Node.Status.Allocatable[name]; n.Cmp(w) != 0 {
				t.Errorf("pool %s: template node's allocatable %s = %s, want %s", pool.Name, name, n.String(), w.String())
			}
		}
	}
	// The figures differ where the settings do: 110 pods, 100 GiB, 100m CPU less.
	pods, eph := byPool["dense"].Allocatable[corev1.ResourcePods], byPool["dense"].Node.Status.Capacity[corev1.ResourceEphemeralStorage]
	if pods.Value() != 110 || eph.Cmp(resource.MustParse("100Gi")) != 0 {
		t.Errorf("dense pool: %s pods, %s disk; want 110 and 100Gi", pods.String(), eph.String())
	}
	plainCPU, denseCPU := byPool["plain"].Allocatable[corev1.ResourceCPU], byPool["dense"].Allocatable[corev1.ResourceCPU]
	plainCPU.Sub(denseCPU)
	if plainCPU.Cmp(resource.MustParse("100m")) != 0 {
		t.Errorf("dense pool's CPU is %s below the plain pool's, want 100m", plainCPU.String())
	}
	// Pools with the same settings share one allocatable (templates number in thousands).
	if reflect.ValueOf(byPool["plain"].Allocatable).Pointer() != reflect.ValueOf(byPool["same"].Allocatable).Pointer() {
		t.Errorf("pools without settings do not share the type's shape")
	}
}
