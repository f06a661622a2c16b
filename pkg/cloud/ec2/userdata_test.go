package ec2

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

func TestKubeletFlags(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		taints  []cloud.Taint
		want    []string
		wantErr bool
	}{
		{name: "nothing"},
		{
			name:   "sorted labels and taints in order",
			labels: map[string]string{"b": "2", "a.io/x": "1"},
			taints: []cloud.Taint{{Key: "t1", Value: "v", Effect: "NoSchedule"}, {Key: "t2", Effect: "NoExecute"}},
			want:   []string{"--node-labels=a.io/x=1,b=2", "--register-with-taints=t1=v:NoSchedule,t2:NoExecute"},
		},
		{name: "empty label value", labels: map[string]string{"a": ""}, want: []string{"--node-labels=a="}},
		{name: "comma in label", labels: map[string]string{"a": "x,y"}, wantErr: true},
		{name: "space in key", labels: map[string]string{"a b": "x"}, wantErr: true},
		{name: "bad effect", taints: []cloud.Taint{{Key: "k", Effect: "Never"}}, wantErr: true},
		{name: "colon in taint value", taints: []cloud.Taint{{Key: "k", Value: "a:b", Effect: "NoSchedule"}}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := kubeletFlags(tt.labels, tt.taints)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v", err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("flags %q, want %q", got, tt.want)
			}
		})
	}
}

func TestUserData(t *testing.T) {
	opts := Options{ClusterName: "demo", ClusterEndpoint: "https://x.example", ClusterCertificateAuthority: "Q0E=", ClusterCIDR: "10.100.0.0/16"}
	labels := map[string]string{"tailor.dev/pool": "gpu"}
	taints := []cloud.Taint{{Key: "tailor.dev/unregistered", Value: "true", Effect: "NoSchedule"}, {Key: "gpu", Effect: "NoSchedule"}}
	tests := []struct {
		name string
		make func(Options, nodeBootstrap) (string, error)
		want string
	}{
		{"al2023", nodeadmUserData, `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

---
apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: "demo"
    apiServerEndpoint: "https://x.example"
    certificateAuthority: "Q0E="
    cidr: "10.100.0.0/16"
  kubelet:
    config:
      maxPods: 29
    flags:
      - "--node-labels=tailor.dev/pool=gpu"
      - "--register-with-taints=tailor.dev/unregistered=true:NoSchedule,gpu:NoSchedule"

--//--
`},
		{"bottlerocket", bottlerocketUserData, `[settings.kubernetes]
cluster-name = "demo"
api-server = "https://x.example"
cluster-certificate = "Q0E="
cluster-dns-ip = "10.100.0.10"
max-pods = 29

[settings.kubernetes.node-labels]
"tailor.dev/pool" = "gpu"

[settings.kubernetes.node-taints]
"gpu" = [":NoSchedule"]
"tailor.dev/unregistered" = ["true:NoSchedule"]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.make(opts, nodeBootstrap{labels: labels, taints: taints, kubelet: kubeletSettings{maxPods: 29}})
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	minimal, err := nodeadmUserData(Options{ClusterName: "demo"}, nodeBootstrap{})
	if err != nil || strings.Contains(minimal, "kubelet:") || strings.Contains(minimal, "apiServerEndpoint") {
		t.Errorf("minimal user data %v:\n%s", err, minimal)
	}
}

func TestClusterDNS(t *testing.T) {
	tests := []struct {
		cidr, want string
		wantErr    bool
	}{
		{cidr: "10.100.0.0/16", want: "10.100.0.10"},
		{cidr: "172.20.0.0/16", want: "172.20.0.10"},
		{cidr: "10.100.0.5/24", want: "10.100.0.10"},
		{cidr: "fd12:3456:789a::/108", want: "fd12:3456:789a::a"},
		{cidr: "10.0.0.0/29", wantErr: true},
		{cidr: "not-a-cidr", wantErr: true},
	}
	for _, tt := range tests {
		got, err := clusterDNS(tt.cidr)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("clusterDNS(%q) = %q, %v; want %q (error %v)", tt.cidr, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestConvertType(t *testing.T) {
	if got := clientToken(strings.Repeat("x", 64)); *got != strings.Repeat("x", 64) {
		t.Errorf("64-character token changed")
	}
	if got := clientToken(strings.Repeat("x", 65)); len(*got) != 64 {
		t.Errorf("long token %q", *got)
	}
	if clientToken("") != nil {
		t.Error("empty token sent")
	}
}

// A pool's kubelet settings reach both families' user data whole: the resolved reservations and
// hard thresholds the planner counted with, the soft ones, and the DNS servers.
func TestUserDataKubeletSettings(t *testing.T) {
	opts := Options{ClusterName: "demo", ClusterEndpoint: "https://x.example", ClusterCertificateAuthority: "Q0E=", ClusterCIDR: "10.100.0.0/16"}
	m5large := cloud.InstanceType{Name: "m5.large", VCPUs: 2, MemoryMiB: 8192, MaxENIs: 3, IPv4PerENI: 10}
	k := config.Kubelet{MaxPods: 110, PodsPerCore: 50,
		SystemReserved:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		KubeReserved:              corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		EvictionHard:              map[string]string{"memory.available": "5%"},
		EvictionSoft:              map[string]string{"memory.available": "500Mi"},
		EvictionSoftGracePeriod:   map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod: 60, ClusterDNS: []string{"169.254.20.10"}}
	nb := nodeBootstrap{kubelet: kubeletFor(&m5large, &k, false)}
	tests := []struct {
		name string
		make func(Options, nodeBootstrap) (string, error)
		want string
	}{
		// 110 pods capped at 50 per core: 100; kube-reserved CPU 70m and disk 1Gi are the AMI's.
		{"al2023", nodeadmUserData, `  kubelet:
    config:
      maxPods: 100
      kubeReserved:
        "cpu": "70m"
        "ephemeral-storage": "1Gi"
        "memory": "1Gi"
      systemReserved:
        "cpu": "100m"
      evictionHard:
        "memory.available": "5%"
        "nodefs.available": "10%"
        "nodefs.inodesFree": "5%"
      evictionSoft:
        "memory.available": "500Mi"
      evictionSoftGracePeriod:
        "memory.available": "1m30s"
      evictionMaxPodGracePeriod: 60
      clusterDNS:
      - "169.254.20.10"
`},
		{"bottlerocket", bottlerocketUserData, `cluster-dns-ip = ["169.254.20.10"]
max-pods = 100
eviction-max-pod-grace-period = 60

[settings.kubernetes.kube-reserved]
"cpu" = "70m"
"ephemeral-storage" = "1Gi"
"memory" = "1Gi"

[settings.kubernetes.system-reserved]
"cpu" = "100m"

[settings.kubernetes.eviction-hard]
"memory.available" = "5%"
"nodefs.available" = "10%"
"nodefs.inodesFree" = "5%"

[settings.kubernetes.eviction-soft]
"memory.available" = "500Mi"

[settings.kubernetes.eviction-soft-grace-period]
"memory.available" = "1m30s"
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.make(opts, nb)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got, tt.want) {
				t.Errorf("got\n%s\nwant it to hold\n%s", got, tt.want)
			}
		})
	}
	// A pool without settings writes the pod limit alone, as before.
	plain, err := nodeadmUserData(opts, nodeBootstrap{kubelet: kubeletFor(&m5large, &config.Kubelet{}, false)})
	if err != nil || !strings.Contains(plain, "    config:\n      maxPods: 29\n\n--//--") {
		t.Errorf("user data without settings %v:\n%s", err, plain)
	}
}
