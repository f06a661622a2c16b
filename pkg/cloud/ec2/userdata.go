package ec2

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Image families: how a node bootstraps, which decides the user data.
const (
	familyAL2023       = "al2023"
	familyBottlerocket = "bottlerocket"
)

// mimeBoundary separates the parts of the AL2023 user data.
const mimeBoundary = "//"

// nodeadmUserData is the AL2023 user data: a MIME multi-part document with one nodeadm
// NodeConfig that carries the cluster and the kubelet's --node-labels and --register-with-taints.
func nodeadmUserData(o Options, labels map[string]string, taints []cloud.Taint) (string, error) {
	flags, err := kubeletFlags(labels, taints)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("MIME-Version: 1.0\n")
	fmt.Fprintf(&b, "Content-Type: multipart/mixed; boundary=%q\n\n", mimeBoundary)
	fmt.Fprintf(&b, "--%s\n", mimeBoundary)
	b.WriteString("Content-Type: application/node.eks.aws\n\n")
	b.WriteString("---\napiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  cluster:\n")
	fmt.Fprintf(&b, "    name: %s\n", quote(o.ClusterName))
	if o.ClusterEndpoint != "" {
		fmt.Fprintf(&b, "    apiServerEndpoint: %s\n", quote(o.ClusterEndpoint))
	}
	if o.ClusterCertificateAuthority != "" {
		fmt.Fprintf(&b, "    certificateAuthority: %s\n", quote(o.ClusterCertificateAuthority))
	}
	if o.ClusterCIDR != "" {
		fmt.Fprintf(&b, "    cidr: %s\n", quote(o.ClusterCIDR))
	}
	if len(flags) > 0 {
		b.WriteString("  kubelet:\n    flags:\n")
		for _, f := range flags {
			fmt.Fprintf(&b, "      - %s\n", quote(f))
		}
	}
	fmt.Fprintf(&b, "\n--%s--\n", mimeBoundary)
	return b.String(), nil
}

// kubeletFlags returns --node-labels and --register-with-taints for the kubelet (labels sorted).
func kubeletFlags(labels map[string]string, taints []cloud.Taint) ([]string, error) {
	if err := checkLabelsTaints(labels, taints); err != nil {
		return nil, err
	}
	var flags []string
	if len(labels) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			parts = append(parts, k+"="+labels[k])
		}
		flags = append(flags, "--node-labels="+strings.Join(parts, ","))
	}
	if len(taints) > 0 {
		var parts []string
		for _, t := range taints {
			parts = append(parts, taintString(t))
		}
		flags = append(flags, "--register-with-taints="+strings.Join(parts, ","))
	}
	return flags, nil
}

func taintString(t cloud.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + t.Effect
	}
	return t.Key + "=" + t.Value + ":" + t.Effect
}

// checkLabelsTaints rejects what cannot travel in the kubelet flags (a well-formed Kubernetes
// label or taint never contains these characters).
func checkLabelsTaints(labels map[string]string, taints []cloud.Taint) error {
	const bad = ",=: \t\n\"'\\"
	for k, v := range labels {
		if k == "" || strings.ContainsAny(k, bad) || strings.ContainsAny(v, bad) {
			return fmt.Errorf("ec2: node label %q=%q cannot be passed to the kubelet", k, v)
		}
	}
	for _, t := range taints {
		if t.Key == "" || strings.ContainsAny(t.Key, bad) || strings.ContainsAny(t.Value, bad) {
			return fmt.Errorf("ec2: node taint %q cannot be passed to the kubelet", taintString(t))
		}
		switch t.Effect {
		case "NoSchedule", "PreferNoSchedule", "NoExecute":
		default:
			return fmt.Errorf("ec2: node taint %q has an unknown effect %q", taintString(t), t.Effect)
		}
	}
	return nil
}

// bottlerocketUserData is the Bottlerocket user data: TOML settings with the cluster, node
// labels and node taints.
func bottlerocketUserData(o Options, labels map[string]string, taints []cloud.Taint) (string, error) {
	if err := checkLabelsTaints(labels, taints); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("[settings.kubernetes]\n")
	fmt.Fprintf(&b, "cluster-name = %s\n", quote(o.ClusterName))
	if o.ClusterEndpoint != "" {
		fmt.Fprintf(&b, "api-server = %s\n", quote(o.ClusterEndpoint))
	}
	if o.ClusterCertificateAuthority != "" {
		fmt.Fprintf(&b, "cluster-certificate = %s\n", quote(o.ClusterCertificateAuthority))
	}
	if len(labels) > 0 {
		b.WriteString("\n[settings.kubernetes.node-labels]\n")
		for _, k := range slices.Sorted(maps.Keys(labels)) {
			fmt.Fprintf(&b, "%s = %s\n", quote(k), quote(labels[k]))
		}
	}
	if len(taints) > 0 {
		byKey := map[string][]string{}
		for _, t := range taints {
			v := t.Value + ":" + t.Effect
			if t.Value == "" {
				v = ":" + t.Effect
			}
			byKey[t.Key] = append(byKey[t.Key], quote(v))
		}
		b.WriteString("\n[settings.kubernetes.node-taints]\n")
		for _, k := range slices.Sorted(maps.Keys(byKey)) {
			fmt.Fprintf(&b, "%s = [%s]\n", quote(k), strings.Join(byKey[k], ", "))
		}
	}
	return b.String(), nil
}

// quote writes s as a double-quoted string that YAML and TOML both read back as s.
func quote(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}
