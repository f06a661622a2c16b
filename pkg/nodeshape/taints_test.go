package nodeshape

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestTaints(t *testing.T) {
	dedicated := testPool.Taints[0]
	startup := testPool.StartupTaints[0]
	if got := TemplateTaints(testPool); !reflect.DeepEqual(got, []corev1.Taint{dedicated}) {
		t.Errorf("template taints %v: want the pool's taints without its startup taints", got)
	}
	want := []cloud.Taint{
		{Key: "dedicated", Value: "web", Effect: "NoSchedule"},
		{Key: startup.Key, Effect: "NoExecute"},
		{Key: v1alpha1.TaintUnregistered, Effect: "NoSchedule"},
	}
	if got := RegistrationTaints(testPool); !reflect.DeepEqual(got, want) {
		t.Errorf("registration taints %v, want %v", got, want)
	}

	// Registration drops Tailor's own taint, keeps what the node has (a value edited since
	// included) and adds what is missing by key and effect (here the startup taint).
	kept := corev1.Taint{Key: "dedicated", Value: "edited", Effect: corev1.TaintEffectNoSchedule}
	current := []corev1.Taint{{Key: v1alpha1.TaintUnregistered, Effect: corev1.TaintEffectNoSchedule}, kept}
	if got := RegisteredTaints(current, testPool); !reflect.DeepEqual(got, []corev1.Taint{kept, startup}) {
		t.Errorf("registered taints %v, want %v", got, []corev1.Taint{kept, startup})
	}
}
