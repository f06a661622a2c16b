package ec2

import (
	"slices"
	"strings"
	"testing"

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
	taints := []cloud.Taint{{Key: "tailor.dev/unregistered", Value: "true", Effect: "NoExecute"}, {Key: "gpu", Effect: "NoSchedule"}}
	tests := []struct {
		name string
		make func(Options, map[string]string, []cloud.Taint) (string, error)
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
    flags:
      - "--node-labels=tailor.dev/pool=gpu"
      - "--register-with-taints=tailor.dev/unregistered=true:NoExecute,gpu:NoSchedule"

--//--
`},
		{"bottlerocket", bottlerocketUserData, `[settings.kubernetes]
cluster-name = "demo"
api-server = "https://x.example"
cluster-certificate = "Q0E="

[settings.kubernetes.node-labels]
"tailor.dev/pool" = "gpu"

[settings.kubernetes.node-taints]
"gpu" = [":NoSchedule"]
"tailor.dev/unregistered" = ["true:NoExecute"]
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.make(opts, labels, taints)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
	minimal, err := nodeadmUserData(Options{ClusterName: "demo"}, nil, nil)
	if err != nil || strings.Contains(minimal, "kubelet:") || strings.Contains(minimal, "apiServerEndpoint") {
		t.Errorf("minimal user data %v:\n%s", err, minimal)
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
