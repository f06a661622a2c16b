package nodeagent

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"mime"
	"strings"

	"github.com/BurntSushi/toml"
	corev1 "k8s.io/api/core/v1"
	cliflag "k8s.io/component-base/cli/flag"
	kubeletapis "k8s.io/kubelet/pkg/apis"
	utiltaints "k8s.io/kubernetes/pkg/util/taints"
	"sigs.k8s.io/yaml"

	"github.com/tailor-eks/tailor/pkg/userdata"
)

// Cluster is what a node's bootstrap must name to join: a kubelet given another endpoint or CA
// never reaches this API server.
type Cluster struct {
	Name        string
	Endpoint    string
	CABundle    string // base64-encoded PEM, as DescribeCluster returns it
	ServiceCIDR string
}

// Bootstrap is what an instance's user data tells its kubelet.
type Bootstrap struct {
	// OS is "al2023" or "bottlerocket".
	OS      string
	Labels  map[string]string
	Taints  []corev1.Taint
	MaxPods int64 // 0: not set, the AMI's default applies
	// Reservations are what the user data reserves and evicts at, over the image's defaults.
	Reservations KubeletReservations
	// RAID0 says the user data stripes the instance store volumes for the kubelet's storage.
	RAID0 bool
}

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1) a kubelet's
// registration depends on.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority []byte `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

// parseNodeadm reads AL2023 user data as nodeadm does (a MIME multi-part document whose
// application/node.eks.aws parts are NodeConfigs, merged in order; or one bare NodeConfig) and
// applies nodeadm's validation (internal/api.ValidateNodeConfig) plus what the kubelet checks
// when it starts: the endpoint and CA must be this cluster's, labels and taints must parse.
func parseNodeadm(userData string, c Cluster) (*Bootstrap, error) {
	docs, err := nodeConfigParts([]byte(userData))
	if err != nil {
		return nil, err
	}
	var nc nodeConfig
	for _, d := range docs {
		// Each part overrides the fields it sets, as nodeadm's NodeConfig.Merge does.
		if err := yaml.Unmarshal(d, &nc); err != nil {
			return nil, fmt.Errorf("NodeConfig: %w", err)
		}
		if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" {
			return nil, fmt.Errorf("NodeConfig: unexpected %s %s", nc.APIVersion, nc.Kind)
		}
	}
	cl := nc.Spec.Cluster
	// nodeadm's own rules, in its order and words.
	switch {
	case cl.Name == "":
		return nil, errors.New("Name is missing in cluster configuration")
	case cl.APIServerEndpoint == "":
		return nil, errors.New("Apiserver endpoint is missing in cluster configuration")
	case cl.CertificateAuthority == nil:
		return nil, errors.New("Certificate authority is missing in cluster configuration")
	case cl.CIDR == "":
		return nil, errors.New("CIDR is missing in cluster configuration")
	}
	if err := checkCluster(c, cl.Name, cl.APIServerEndpoint, string(cl.CertificateAuthority), true); err != nil {
		return nil, err
	}
	if cl.CIDR != c.ServiceCIDR {
		return nil, fmt.Errorf("service CIDR %s is not the cluster's %s: the kubelet's cluster DNS address would be wrong", cl.CIDR, c.ServiceCIDR)
	}
	b := &Bootstrap{OS: "al2023", RAID0: nc.Spec.Instance.LocalStorage.Strategy == "RAID0"}
	if v, ok := nc.Spec.Kubelet.Config["maxPods"]; ok {
		n, ok := v.(float64)
		if !ok || n < 1 || n != float64(int64(n)) {
			return nil, fmt.Errorf("kubelet config maxPods %v is not a positive integer", v)
		}
		b.MaxPods = int64(n)
	}
	if err := b.readNodeadmKubelet(nc.Spec.Kubelet.Config); err != nil {
		return nil, err
	}
	for _, f := range nc.Spec.Kubelet.Flags {
		name, value, _ := strings.Cut(strings.TrimPrefix(f, "--"), "=")
		switch name {
		case "node-labels":
			labels := map[string]string{}
			if err := cliflag.NewMapStringString(&labels).Set(value); err != nil {
				return nil, fmt.Errorf("kubelet --node-labels: %w", err)
			}
			if err := checkNodeLabels(labels); err != nil {
				return nil, err
			}
			b.Labels = labels
		case "register-with-taints":
			taints, _, err := utiltaints.ParseTaints(strings.Split(value, ","))
			if err != nil {
				return nil, fmt.Errorf("kubelet --register-with-taints: %w", err)
			}
			b.Taints = taints
		}
	}
	return b, nil
}

// nodeConfigParts returns the NodeConfig documents of the user data.
func nodeConfigParts(data []byte) ([][]byte, error) {
	parts, multi, err := userdata.Multipart(string(data))
	if err != nil {
		return nil, err
	}
	if !multi {
		return [][]byte{data}, nil // not MIME: nodeadm reads the whole user data as one NodeConfig
	}
	var docs [][]byte
	for _, p := range parts {
		if mt, _, err := mime.ParseMediaType(p.ContentType); err == nil && mt == userdata.NodeConfigType {
			docs = append(docs, []byte(p.Body))
		}
	}
	if len(docs) == 0 {
		return nil, errors.New("Could not find NodeConfig within UserData")
	}
	return docs, nil
}

// bottlerocketSettings are the settings.kubernetes Bottlerocket needs to join a cluster.
type bottlerocketSettings struct {
	Settings struct {
		Kubernetes struct {
			ClusterName        string              `toml:"cluster-name"`
			APIServer          string              `toml:"api-server"`
			ClusterCertificate string              `toml:"cluster-certificate"`
			ClusterDNSIP       any                 `toml:"cluster-dns-ip"` // one address, or a list
			MaxPods            int64               `toml:"max-pods"`
			NodeLabels         map[string]string   `toml:"node-labels"`
			NodeTaints         map[string][]string `toml:"node-taints"`
			KubeReserved       map[string]string   `toml:"kube-reserved"`
			SystemReserved     map[string]string   `toml:"system-reserved"`
			EvictionHard       map[string]string   `toml:"eviction-hard"`
			EvictionSoft       map[string]string   `toml:"eviction-soft"`
			EvictionSoftGrace  map[string]string   `toml:"eviction-soft-grace-period"`
			EvictionMaxPodGP   int64               `toml:"eviction-max-pod-grace-period"`
		} `toml:"kubernetes"`
		BootstrapCommands map[string]struct {
			Commands [][]string `toml:"commands"`
		} `toml:"bootstrap-commands"`
	} `toml:"settings"`
}

// stripesInstanceStore says whether Bottlerocket's bootstrap commands put the kubelet's
// storage on the instance store volumes (apiclient ephemeral-storage init, then bind).
func (s *bottlerocketSettings) stripesInstanceStore() bool {
	for _, bc := range s.Settings.BootstrapCommands {
		for _, cmd := range bc.Commands {
			if len(cmd) >= 3 && cmd[0] == "apiclient" && cmd[1] == "ephemeral-storage" && cmd[2] == "bind" {
				return true
			}
		}
	}
	return false
}

// parseBottlerocket reads Bottlerocket's TOML user data and checks what its kubelet needs.
// Bottlerocket refuses settings it does not know, so undecoded keys are errors here too.
func parseBottlerocket(userData string, c Cluster) (*Bootstrap, error) {
	var s bottlerocketSettings
	md, err := toml.Decode(userData, &s)
	if err != nil {
		return nil, fmt.Errorf("bottlerocket settings: %w", err)
	}
	for _, key := range md.Undecoded() {
		// Other settings (kernel, host containers…) are no business of the kubelet's.
		if k := key.String(); strings.HasPrefix(k, "settings.kubernetes.") {
			return nil, fmt.Errorf("bottlerocket settings: unknown setting %s", k)
		}
	}
	k := s.Settings.Kubernetes
	switch {
	case k.ClusterName == "":
		return nil, errors.New("settings.kubernetes.cluster-name is missing")
	case k.APIServer == "":
		return nil, errors.New("settings.kubernetes.api-server is missing")
	case k.ClusterCertificate == "":
		return nil, errors.New("settings.kubernetes.cluster-certificate is missing")
	case k.ClusterDNSIP == nil:
		return nil, errors.New("settings.kubernetes.cluster-dns-ip is missing")
	}
	if err := checkCluster(c, k.ClusterName, k.APIServer, k.ClusterCertificate, false); err != nil {
		return nil, err
	}
	if err := checkBottlerocketDNS(k.ClusterDNSIP, c.ServiceCIDR); err != nil {
		return nil, err
	}
	if k.MaxPods < 0 {
		return nil, fmt.Errorf("settings.kubernetes.max-pods %d is negative", k.MaxPods)
	}
	if err := checkNodeLabels(k.NodeLabels); err != nil {
		return nil, err
	}
	if k.EvictionMaxPodGP < 0 {
		return nil, fmt.Errorf("settings.kubernetes.eviction-max-pod-grace-period %d is negative", k.EvictionMaxPodGP)
	}
	res, err := readReservations([3]string{"settings.kubernetes.kube-reserved", "settings.kubernetes.system-reserved", "settings.kubernetes.eviction-hard"},
		k.KubeReserved, k.SystemReserved, k.EvictionHard, k.EvictionSoft)
	if err != nil {
		return nil, err
	}
	if err := gracePeriods("settings.kubernetes.eviction-soft-grace-period", k.EvictionSoftGrace); err != nil {
		return nil, err
	}
	b := &Bootstrap{OS: "bottlerocket", Labels: k.NodeLabels, MaxPods: k.MaxPods, Reservations: res, RAID0: s.stripesInstanceStore()}
	for key, values := range k.NodeTaints {
		for _, v := range values {
			spec := key + "=" + v // "value:Effect"
			if strings.HasPrefix(v, ":") {
				spec = key + v // ":Effect": no value
			}
			taints, _, err := utiltaints.ParseTaints([]string{spec})
			if err != nil {
				return nil, fmt.Errorf("settings.kubernetes.node-taints.%s: %w", key, err)
			}
			b.Taints = append(b.Taints, taints...)
		}
	}
	return b, nil
}

// checkCluster checks the cluster a bootstrap names is this one. nodeadm's certificateAuthority
// is the base64 text decoded once by YAML ([]byte), so it is compared decoded.
func checkCluster(c Cluster, name, endpoint, ca string, caDecoded bool) error {
	if name != c.Name {
		return fmt.Errorf("cluster name %q is not %q", name, c.Name)
	}
	if endpoint != c.Endpoint {
		return fmt.Errorf("API server endpoint %q is not the cluster's %q: the kubelet cannot reach it", endpoint, c.Endpoint)
	}
	want := c.CABundle
	if caDecoded {
		if b, err := base64.StdEncoding.DecodeString(want); err == nil {
			want = string(b)
		}
	}
	if ca != want {
		return errors.New("certificate authority is not the cluster's: the kubelet would not trust the API server")
	}
	return nil
}

// checkNodeLabels applies the kubelet's start-up rule: a --node-labels key in the kubernetes.io
// or k8s.io namespaces must be one the kubelet may set itself.
func checkNodeLabels(labels map[string]string) error {
	for k := range labels {
		ns, _, ok := strings.Cut(k, "/")
		if !ok {
			continue // no namespace
		}
		if (ns == "kubernetes.io" || strings.HasSuffix(ns, ".kubernetes.io") || ns == "k8s.io" || strings.HasSuffix(ns, ".k8s.io")) && !kubeletapis.IsKubeletLabel(k) {
			return fmt.Errorf("kubelet --node-labels: unknown 'kubernetes.io' or 'k8s.io' label %q", k)
		}
	}
	return nil
}

// parseBootstrap validates user data the way the instance's AMI would on boot: TOML with a
// settings table is Bottlerocket's; anything else goes to nodeadm (its binary, then its rules).
func parseBootstrap(ctx context.Context, nodeadm, userData string, c Cluster) (*Bootstrap, error) {
	var probe map[string]any
	if _, err := toml.Decode(userData, &probe); err == nil && probe["settings"] != nil {
		return parseBottlerocket(userData, c)
	}
	if err := nodeadmCheck(ctx, nodeadm, userData); err != nil {
		return nil, err
	}
	return parseNodeadm(userData, c)
}
