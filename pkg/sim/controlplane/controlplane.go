// Package controlplane runs a real Kubernetes control plane inside one process: embedded etcd,
// kube-apiserver and kube-controller-manager with its default controllers (workloads of every
// kind, PDB status, node lifecycle, namespaces, garbage collection; those that need a cloud
// provider or signing keys stand down by themselves). The sandbox and the integration tests both
// stand on it, so what the tests prove is what users run, and any manifest a user applies
// behaves as on EKS.
package controlplane

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap/zapcore"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	apiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
	kcmtesting "k8s.io/kubernetes/cmd/kube-controller-manager/app/testing"
	"k8s.io/kubernetes/test/utils/ktesting"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/manifests"
)

// ControlPlane is a running etcd + kube-apiserver + kube-controller-manager.
type ControlPlane struct {
	// Config reaches the API server with full rights.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file for the same credentials (for kubectl, kwok,
	// and the scheduler binary).
	Kubeconfig string

	stops []func()
}

// Start brings up the control plane, installs Tailor's CRDs and waits until they are served.
// dir holds etcd data and the kubeconfig. tb receives the API server's logs and cleanups; tests
// pass their *testing.T, the sandbox a ProcessTB.
func Start(ctx context.Context, tb ktesting.TB, dir string) (*ControlPlane, error) {
	cp := &ControlPlane{}
	etcdURL, stopEtcd, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return nil, err
	}
	cp.stops = append(cp.stops, stopEtcd)

	storage := storagebackend.NewDefaultConfig("/tailor/registry", nil)
	storage.Transport.ServerList = []string{etcdURL}
	srv, err := apiservertesting.StartTestServer(tb, nil, []string{
		"--endpoint-reconciler-type=none",
		// As on EKS: RBAC decides, so a component running with too few rights fails here too.
		"--authorization-mode=Node,RBAC",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
	}, storage)
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("starting kube-apiserver: %w", err)
	}
	cp.stops = append(cp.stops, srv.TearDownFn)
	cp.Config = rest.CopyConfig(srv.ClientConfig)
	cp.Config.QPS, cp.Config.Burst = 200, 400

	cp.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cp.Config, cp.Kubeconfig); err != nil {
		cp.Stop()
		return nil, err
	}
	if err := installCRDs(ctx, cp.Config); err != nil {
		cp.Stop()
		return nil, err
	}

	kcmCtx, cancelKCM := context.WithCancel(context.WithoutCancel(ctx))
	kcm, err := kcmtesting.StartTestServer(kcmCtx, []string{
		"--kubeconfig", cp.Kubeconfig,
		// The default set, as EKS runs it: Jobs, CronJobs, StatefulSets and DaemonSets get their
		// pods, and node lifecycle taints a node whose kubelet (kwok) stops reporting.
		"--controllers=*",
		"--leader-elect=false",
		"--use-service-account-credentials=false",
	})
	if err != nil {
		cancelKCM()
		cp.Stop()
		return nil, fmt.Errorf("starting kube-controller-manager: %w", err)
	}
	cp.stops = append(cp.stops, func() { cancelKCM(); kcm.TearDownFn() })
	return cp, nil
}

// Stop tears everything down, newest first.
func (cp *ControlPlane) Stop() {
	for i := len(cp.stops) - 1; i >= 0; i-- {
		cp.stops[i]()
	}
	cp.stops = nil
}

func startEtcd(dir string) (string, func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	ports, err := freePorts(2)
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Dir = dir
	// A single-member store that is never restarted from disk: fsync buys nothing here.
	cfg.UnsafeNoFsync = true
	client := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[0]))}
	peer := url.URL{Scheme: "http", Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[1]))}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = zapcore.ErrorLevel.String()
	cfg.LogOutputs = []string{filepath.Join(dir, "etcd.log")}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("starting etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(60 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("etcd did not become ready in 60s")
	}
	return client.String(), e.Close, nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// WriteKubeconfig writes cfg as a kubeconfig file.
func WriteKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["tailor"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
		InsecureSkipTLSVerify:    cfg.Insecure,
	}
	kc.AuthInfos["tailor"] = &clientcmdapi.AuthInfo{
		Token:                 cfg.BearerToken,
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
	}
	kc.Contexts["tailor"] = &clientcmdapi.Context{Cluster: "tailor", AuthInfo: "tailor"}
	kc.CurrentContext = "tailor"
	return clientcmd.WriteToFile(*kc, path)
}

func installCRDs(ctx context.Context, cfg *rest.Config) error {
	client, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	for _, doc := range manifests.CRDs() {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(doc, crd); err != nil {
			return fmt.Errorf("parsing CRD: %w", err)
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s not established: %w", crd.Name, err)
		}
	}
	return nil
}
