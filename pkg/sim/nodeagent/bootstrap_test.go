package nodeagent

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// nodeadmPath is the binary make tools builds; the tests need nodeadm's own code.
func nodeadmPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("NODEADM")
	if p == "" {
		p, _ = filepath.Abs("../../../bin/nodeadm")
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("nodeadm not found at %s (run `make tools`): %v", p, err)
	}
	return p
}

var (
	caPEM       = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
	testCluster = Cluster{Name: "demo", Endpoint: "https://127.0.0.1:6443", CABundle: base64.StdEncoding.EncodeToString([]byte(caPEM)), ServiceCIDR: "10.100.0.0/16"}
)

// al2023 builds AL2023 user data in the shape Tailor's launcher writes, with the cluster lines
// given (so a test can drop or change one).
func al2023(clusterLines, kubelet string) string {
	return "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: application/node.eks.aws\n\n" +
		"---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n" + clusterLines + kubelet + "\n--//--\n"
}

const (
	nameLine     = "    name: \"demo\"\n"
	endpointLine = "    apiServerEndpoint: \"https://127.0.0.1:6443\"\n"
	cidrLine     = "    cidr: \"10.100.0.0/16\"\n"
	kubeletPart  = "  kubelet:\n    config:\n      maxPods: 29\n    flags:\n" +
		"      - \"--node-labels=tailor.dev/pool=general,team=a\"\n" +
		"      - \"--register-with-taints=tailor.dev/unregistered=true:NoSchedule,dedicated=:NoSchedule\"\n"
)

func caLine() string { return "    certificateAuthority: \"" + testCluster.CABundle + "\"\n" }

func TestParseBootstrap(t *testing.T) {
	nodeadm := nodeadmPath(t)
	full := nameLine + endpointLine + caLine() + cidrLine
	wantAL := &Bootstrap{
		OS: "al2023", MaxPods: 29,
		Labels: map[string]string{"tailor.dev/pool": "general", "team": "a"},
		Taints: []corev1.Taint{{Key: "tailor.dev/unregistered", Value: "true", Effect: corev1.TaintEffectNoSchedule}, {Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}},
	}
	bottlerocket := func(extra string) string {
		return "[settings.kubernetes]\ncluster-name = \"demo\"\napi-server = \"https://127.0.0.1:6443\"\n" +
			"cluster-certificate = \"" + testCluster.CABundle + "\"\n" + extra +
			"\n[settings.kubernetes.node-labels]\n\"tailor.dev/pool\" = \"general\"\n" +
			"\n[settings.kubernetes.node-taints]\n\"tailor.dev/unregistered\" = [\"true:NoSchedule\"]\n\"dedicated\" = [\":NoSchedule\"]\n"
	}
	wantBR := &Bootstrap{
		OS: "bottlerocket", MaxPods: 58, Labels: map[string]string{"tailor.dev/pool": "general"},
		Taints: []corev1.Taint{{Key: "dedicated", Effect: corev1.TaintEffectNoSchedule}, {Key: "tailor.dev/unregistered", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
	}
	tests := []struct {
		name     string
		userData string
		want     *Bootstrap
		wantErr  string
	}{
		{name: "al2023 complete", userData: al2023(full, kubeletPart), want: wantAL},
		{name: "al2023 without endpoint", userData: al2023(nameLine+caLine()+cidrLine, kubeletPart), wantErr: "Apiserver endpoint is missing in cluster configuration"},
		{name: "al2023 without CA", userData: al2023(nameLine+endpointLine+cidrLine, kubeletPart), wantErr: "Certificate authority is missing"},
		{name: "al2023 without CIDR", userData: al2023(nameLine+endpointLine+caLine(), kubeletPart), wantErr: "CIDR is missing"},
		{name: "al2023 another endpoint", userData: al2023(nameLine+"    apiServerEndpoint: \"https://10.0.0.1\"\n"+caLine()+cidrLine, kubeletPart), wantErr: "cannot reach it"},
		{name: "al2023 another CA", userData: al2023(nameLine+endpointLine+"    certificateAuthority: \"b3RoZXI=\"\n"+cidrLine, kubeletPart), wantErr: "would not trust"},
		{name: "al2023 another service CIDR", userData: al2023(nameLine+endpointLine+caLine()+"    cidr: \"172.20.0.0/16\"\n", kubeletPart), wantErr: "service CIDR"},
		// nodeadm's decoder refuses what is not base64: its own binary says so.
		{name: "al2023 CA not base64", userData: al2023(nameLine+endpointLine+"    certificateAuthority: \"not base64!\"\n"+cidrLine, ""), wantErr: "nodeadm config check"},
		{name: "al2023 no NodeConfig part", userData: "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"//\"\n\n--//\nContent-Type: text/x-shellscript\n\necho hi\n--//--\n", wantErr: "nodeadm config check"},
		{name: "al2023 kubelet-forbidden label", userData: al2023(full, "  kubelet:\n    flags:\n      - \"--node-labels=kubernetes.io/role=worker\"\n"), wantErr: "unknown 'kubernetes.io' or 'k8s.io' label"},
		{name: "al2023 allowed kubelet label", userData: al2023(full, "  kubelet:\n    flags:\n      - \"--node-labels=node.kubernetes.io/lifecycle=spot\"\n"),
			want: &Bootstrap{OS: "al2023", Labels: map[string]string{"node.kubernetes.io/lifecycle": "spot"}}},
		{name: "al2023 bad taint effect", userData: al2023(full, "  kubelet:\n    flags:\n      - \"--register-with-taints=a=b:Sometimes\"\n"), wantErr: "register-with-taints"},
		{name: "bottlerocket complete", userData: bottlerocket("cluster-dns-ip = \"10.100.0.10\"\nmax-pods = 58\n"), want: wantBR},
		{name: "al2023 kubelet reservations", userData: al2023(full, "  kubelet:\n    config:\n      maxPods: 100\n"+
			"      kubeReserved:\n        \"cpu\": \"70m\"\n        \"memory\": \"1Gi\"\n      systemReserved:\n        \"cpu\": \"100m\"\n"+
			"      evictionHard:\n        \"memory.available\": \"5%\"\n      evictionSoft:\n        \"memory.available\": \"500Mi\"\n"+
			"      evictionSoftGracePeriod:\n        \"memory.available\": \"1m30s\"\n      clusterDNS:\n      - \"169.254.20.10\"\n"),
			want: &Bootstrap{OS: "al2023", MaxPods: 100, Reservations: KubeletReservations{
				KubeReserved:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("70m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
				SystemReserved: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
				EvictionHard:   map[string]string{"memory.available": "5%"}}}},
		{name: "al2023 bad reservation", userData: al2023(full, "  kubelet:\n    config:\n      kubeReserved:\n        \"memory\": \"lots\"\n"), wantErr: "kubeReserved.memory"},
		{name: "al2023 bad grace period", userData: al2023(full, "  kubelet:\n    config:\n      evictionSoftGracePeriod:\n        \"memory.available\": \"soon\"\n"), wantErr: "evictionSoftGracePeriod.memory.available"},
		{name: "bottlerocket kubelet reservations", userData: bottlerocket("cluster-dns-ip = [\"169.254.20.10\"]\nmax-pods = 58\neviction-max-pod-grace-period = 60\n" +
			"[settings.kubernetes.kube-reserved]\n\"memory\" = \"1Gi\"\n[settings.kubernetes.eviction-hard]\n\"nodefs.available\" = \"15%\"\n" +
			"[settings.kubernetes.eviction-soft]\n\"memory.available\" = \"1Gi\"\n[settings.kubernetes.eviction-soft-grace-period]\n\"memory.available\" = \"30s\"\n"),
			want: &Bootstrap{OS: "bottlerocket", MaxPods: 58, Labels: wantBR.Labels, Taints: wantBR.Taints, Reservations: KubeletReservations{
				KubeReserved: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}, EvictionHard: map[string]string{"nodefs.available": "15%"}}}},
		{name: "bottlerocket bad DNS list", userData: bottlerocket("cluster-dns-ip = [\"dns\"]\n"), wantErr: "is not an IP address"},
		{name: "bottlerocket bad threshold", userData: bottlerocket("cluster-dns-ip = \"10.100.0.10\"\n[settings.kubernetes.eviction-hard]\n\"memory.available\" = \"200%\"\n"), wantErr: "eviction-hard.memory.available"},
		{name: "bottlerocket without api-server", userData: "[settings.kubernetes]\ncluster-name = \"demo\"\n", wantErr: "api-server is missing"},
		{name: "bottlerocket without cluster DNS", userData: bottlerocket(""), wantErr: "cluster-dns-ip is missing"},
		{name: "bottlerocket DNS outside the service CIDR", userData: bottlerocket("cluster-dns-ip = \"172.20.0.10\"\n"), wantErr: "outside the service CIDR"},
		{name: "bottlerocket unknown setting", userData: bottlerocket("cluster-dns-ip = \"10.100.0.10\"\nmax-podz = 3\n"), wantErr: "unknown setting settings.kubernetes.max-podz"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseBootstrap(context.Background(), nodeadm, tt.userData, testCluster)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.OS == "bottlerocket" { // TOML tables have no order
				slices.SortFunc(got.Taints, func(a, b corev1.Taint) int { return strings.Compare(a.Key, b.Key) })
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
