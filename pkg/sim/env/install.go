package env

import (
	"context"
	"fmt"
	"path/filepath"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/sim/controlplane"
)

// The install as the chart renders it (manifests/deploy/tailor.yaml, release "tailor" in
// kube-system): the identity Tailor's scheduler runs as and the ConfigMap it reads.
const (
	InstallNamespace      = "kube-system"
	InstallServiceAccount = "tailor"
	InstallConfigMap      = "tailor-config"
	installConfigKey      = "scheduler-config.yaml"
)

// installChart applies the rendered chart to the API server, as `kubectl apply -f
// manifests/deploy/tailor.yaml` would: every document is created, except that the Deployment
// is only validated (server-side dry run, admission included). Its pods would run an image this
// machine cannot pull; the scheduler runs as a process instead, with the Deployment's identity
// (a token of its service account, bound by exactly the chart's RBAC) and the chart's config.
func (e *Environment) installChart(ctx context.Context) error {
	dc, err := discovery.NewDiscoveryClientForConfig(e.CP.Config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(e.CP.Config)
	if err != nil {
		return err
	}
	for _, doc := range manifests.Deploy() {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			return fmt.Errorf("chart document: %w", err)
		}
		gvk := obj.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("chart %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			ri = dyn.Resource(m.Resource).Namespace(obj.GetNamespace())
		}
		opts := metav1.CreateOptions{FieldManager: "tailor-install"}
		if gvk.Kind == "Deployment" {
			opts.DryRun = []string{metav1.DryRunAll}
		}
		if _, err := ri.Create(ctx, obj, opts); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("applying chart %s %s/%s: %w", gvk.Kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

// installedSchedulerConfig is the KubeSchedulerConfiguration in the chart's ConfigMap, read
// back from the API server.
func (e *Environment) installedSchedulerConfig(ctx context.Context) ([]byte, error) {
	cm, err := e.Client.CoreV1().ConfigMaps(InstallNamespace).Get(ctx, InstallConfigMap, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("the chart's ConfigMap: %w", err)
	}
	cfg, ok := cm.Data[installConfigKey]
	if !ok {
		return nil, fmt.Errorf("ConfigMap %s/%s has no %s", InstallNamespace, InstallConfigMap, installConfigKey)
	}
	return []byte(cfg), nil
}

// writeServiceAccountKubeconfig writes a kubeconfig that authenticates as the chart's service
// account with a bound token, as the kubelet would mount one into Tailor's pod.
func (e *Environment) writeServiceAccountKubeconfig(ctx context.Context) (string, error) {
	tok, err := e.Client.CoreV1().ServiceAccounts(InstallNamespace).CreateToken(ctx, InstallServiceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](6 * 3600)}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", InstallNamespace, InstallServiceAccount, err)
	}
	cfg := rest.AnonymousClientConfig(e.CP.Config)
	cfg.BearerToken = tok.Status.Token
	path := filepath.Join(e.Dir, "tailor-serviceaccount.kubeconfig")
	return path, controlplane.WriteKubeconfig(cfg, path)
}
