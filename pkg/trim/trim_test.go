package trim

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestManagedFieldsLeavesTheCacheWithoutThem(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{}}`)}}}}}
	for _, tc := range []struct {
		name      string
		transform cache.TransformFunc
		want      int
	}{
		{"without the transform", nil, 1},
		{"with it", ManagedFields, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			factory := informers.NewSharedInformerFactory(fake.NewClientset(pod.DeepCopy()), 0)
			inf := factory.Core().V1().Pods().Informer()
			if tc.transform != nil {
				if err := inf.SetTransform(tc.transform); err != nil {
					t.Fatal(err)
				}
			}
			factory.Start(ctx.Done())
			factory.WaitForCacheSync(ctx.Done())
			got, err := factory.Core().V1().Pods().Lister().Pods("ns").Get("p")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.ManagedFields) != tc.want {
				t.Errorf("cached pod has %d managed fields entries, want %d", len(got.ManagedFields), tc.want)
			}
			if got.Labels["app"] != "a" {
				t.Errorf("cached pod lost its labels: %v", got.Labels)
			}
		})
	}
}

func TestManagedFieldsPassesOtherObjectsThrough(t *testing.T) {
	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p"}
	got, err := ManagedFields(tomb)
	if err != nil || got != tomb {
		t.Errorf("ManagedFields(tombstone) = %v, %v; want it unchanged", got, err)
	}
}
