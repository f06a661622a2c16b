package ec2

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/userdata"
)

// FuzzUserData builds both image families' user data from arbitrary cluster settings, one label
// and one taint: it errs or is a document its reader (YAML for nodeadm's NodeConfig, TOML for
// Bottlerocket) reads back to the same cluster name, endpoint, label and taint, never a document
// a crafted value rewrites.
func FuzzUserData(f *testing.F) {
	f.Add("demo", "https://example.eks.amazonaws.com", "Y2E=", "10.100.0.0/16", "tailor.dev/pool", "general", "dedicated", "gpu", "NoSchedule", int64(29))
	f.Add("a\"b", "x\ny: z", "", "fd00::/108", "k", "", "t", "", "NoExecute", int64(0))
	f.Add("c]\n[settings.x]", "\\", "'", "10.0.0.0/30", "a.io/b", "c", "d", "e", "PreferNoSchedule", int64(-1))
	f.Fuzz(func(t *testing.T, name, endpoint, ca, cidr, labelKey, labelValue, taintKey, taintValue, effect string, maxPods int64) {
		o := Options{ClusterName: name, ClusterEndpoint: endpoint, ClusterCertificateAuthority: ca, ClusterCIDR: cidr}
		nb := nodeBootstrap{labels: map[string]string{labelKey: labelValue}, taints: []cloud.Taint{{Key: taintKey, Value: taintValue, Effect: effect}}, kubelet: kubeletSettings{maxPods: maxPods}}
		// JSON quoting, which both readers share, replaces invalid UTF-8; names are checked
		// long before (EKS cluster names, label syntax), so only valid text must read back.
		exact := true
		for _, s := range []string{name, endpoint, ca, labelKey, labelValue, taintKey, taintValue} {
			exact = exact && utf8.ValidString(s)
		}

		if ud, err := nodeadmUserData(o, nb); err == nil {
			start := strings.Index(ud, "Content-Type: application/node.eks.aws\n\n")
			end := strings.LastIndex(ud, "\n--"+userdata.Boundary+"--")
			if start < 0 || end < start {
				t.Fatalf("no NodeConfig part in %q", ud)
			}
			body := ud[start+len("Content-Type: application/node.eks.aws\n\n") : end]
			var cfg struct {
				Spec struct {
					Cluster struct {
						Name, APIServerEndpoint string
					}
					Kubelet struct {
						Flags []string
					}
				}
			}
			if err := yaml.Unmarshal([]byte(body), &cfg); err != nil {
				t.Fatalf("NodeConfig does not parse: %v\n%s", err, body)
			}
			if exact && (cfg.Spec.Cluster.Name != name || cfg.Spec.Cluster.APIServerEndpoint != endpoint) {
				t.Fatalf("cluster %q at %q read back as %q at %q", name, endpoint, cfg.Spec.Cluster.Name, cfg.Spec.Cluster.APIServerEndpoint)
			}
			if want := "--node-labels=" + labelKey + "=" + labelValue; exact && (len(cfg.Spec.Kubelet.Flags) != 2 || cfg.Spec.Kubelet.Flags[0] != want) {
				t.Fatalf("flags %q, want %q first", cfg.Spec.Kubelet.Flags, want)
			}
		}

		if ud, err := bottlerocketUserData(o, nb); err == nil {
			var s struct {
				Settings struct {
					Kubernetes struct {
						ClusterName string              `toml:"cluster-name"`
						APIServer   string              `toml:"api-server"`
						NodeLabels  map[string]string   `toml:"node-labels"`
						NodeTaints  map[string][]string `toml:"node-taints"`
					} `toml:"kubernetes"`
				} `toml:"settings"`
			}
			if _, err := toml.Decode(ud, &s); err != nil {
				t.Fatalf("Bottlerocket settings do not parse: %v\n%s", err, ud)
			}
			k := s.Settings.Kubernetes
			if exact && (k.ClusterName != name || k.APIServer != endpoint || k.NodeLabels[labelKey] != labelValue || len(k.NodeTaints[taintKey]) != 1) {
				t.Fatalf("settings read back as %+v", k)
			}
		}
	})
}
