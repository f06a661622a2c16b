package integration

import (
	"context"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tailor-eks/tailor/pkg/sim/env"
)

// The scheduler the suite runs is the chart's install: its identity is the chart's service
// account, whose rights are exactly what the chart's RBAC grants (the API server authorizes
// with RBAC), and its configuration is the chart's ConfigMap as applied to the API server.
func TestSchedulerRunsAsTheChartsServiceAccount(t *testing.T) {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", world.SchedulerKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	who, err := client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:" + env.InstallNamespace + ":" + env.InstallServiceAccount; who.Status.UserInfo.Username != want {
		t.Fatalf("the scheduler authenticates as %q, want %q", who.Status.UserInfo.Username, want)
	}
	tests := []struct {
		attrs authorizationv1.ResourceAttributes
		allow bool
	}{
		// What the chart grants, for provisioning and consolidation.
		{authorizationv1.ResourceAttributes{Group: "tailor.dev", Resource: "claims", Verb: "create"}, true},
		{authorizationv1.ResourceAttributes{Resource: "pods", Subresource: "eviction", Verb: "create", Namespace: "default"}, true},
		{authorizationv1.ResourceAttributes{Resource: "nodes", Verb: "delete"}, true},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: env.InstallNamespace, Name: "tailor-controllers"}, true},
		// And nothing wider: no other lease, no lease elsewhere, no secrets, no wildcard.
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: env.InstallNamespace, Name: "kube-controller-manager"}, false},
		{authorizationv1.ResourceAttributes{Group: "coordination.k8s.io", Resource: "leases", Verb: "update", Namespace: "default", Name: "tailor-controllers"}, false},
		{authorizationv1.ResourceAttributes{Resource: "secrets", Verb: "list"}, false},
		{authorizationv1.ResourceAttributes{Group: "apps", Resource: "deployments", Verb: "delete", Namespace: "default"}, false},
		{authorizationv1.ResourceAttributes{Group: "tailor.dev", Resource: "claims", Verb: "deletecollection"}, false},
	}
	for _, tt := range tests {
		r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &tt.attrs}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status.Allowed != tt.allow {
			t.Errorf("%s %s/%s %s in %q: allowed %v, want %v", tt.attrs.Verb, tt.attrs.Resource, tt.attrs.Subresource, tt.attrs.Name, tt.attrs.Namespace, r.Status.Allowed, tt.allow)
		}
	}
	cm, err := world.Client.CoreV1().ConfigMaps(env.InstallNamespace).Get(ctx, env.InstallConfigMap, metav1.GetOptions{})
	if err != nil || cm.Labels["app.kubernetes.io/managed-by"] != "Helm" {
		t.Errorf("the chart's ConfigMap on the API server: %v %v", cm.Labels, err)
	}
}
