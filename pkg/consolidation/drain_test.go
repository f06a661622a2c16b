package consolidation

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// An update answered with no error and no node (seen as the leader lost its lease mid-call) is
// an error: the drain must not go on with a node nobody named, nor panic on it.
func TestUpdateNodeWithoutNodeInAnswer(t *testing.T) {
	client := fake.NewClientset(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})
	client.PrependReactor("update", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, nil })
	c := &Controller{Client: client}
	if n, err := c.updateNode(context.Background(), "n", func(*corev1.Node) {}); err == nil {
		t.Fatalf("updateNode gave node %q and no error", n.Name)
	}
}
