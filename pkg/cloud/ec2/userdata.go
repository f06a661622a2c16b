package ec2

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"unicode"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/userdata"
)

// Image families: how a node bootstraps, which decides the user data.
const (
	familyAL2023       = config.FamilyAL2023
	familyBottlerocket = config.FamilyBottlerocket
	familyCustom       = config.FamilyCustom
)

// maxUserData is the most user data EC2 takes (before base64).
const maxUserData = 16 << 10

// userData is the user data of a node of the family: Tailor's bootstrap merged with the pool's
// own (the pool's alone for a custom image).
func (p *Provider) userData(family string, nb nodeBootstrap) (string, error) {
	var ud string
	var err error
	switch family {
	case familyBottlerocket:
		ud, err = bottlerocketUserData(p.opts, nb)
	case familyCustom:
		ud = nb.userData
	default:
		ud, err = nodeadmUserData(p.opts, nb)
	}
	if err == nil && len(ud) > maxUserData {
		err = fmt.Errorf("ec2: launch: the user data is %d bytes with Tailor's bootstrap, more than the %d EC2 takes: shorten the pool's userData", len(ud), maxUserData)
	}
	return ud, err
}

// nodeBootstrap is what one launch template tells its nodes beyond the cluster: the labels and
// taints they register with and their pod limit.
type nodeBootstrap struct {
	labels  map[string]string
	taints  []cloud.Taint
	kubelet kubeletSettings
	// userData is the pool's own, merged with Tailor's.
	userData string
	// raid0 stripes the instance store volumes for the kubelet's and containers' storage.
	raid0 bool
}

// nodeadmUserData is the AL2023 user data: a MIME multi-part document with one nodeadm
// NodeConfig that carries the cluster (name, endpoint, CA, service CIDR: nodeadm refuses to
// bootstrap without any of them; empty ones are left out, never guessed), the kubelet's maxPods
// and its --node-labels and --register-with-taints.
func nodeadmUserData(o Options, nb nodeBootstrap) (string, error) {
	flags, err := kubeletFlags(nb.labels, nb.taints)
	if err != nil {
		return "", err
	}
	var b strings.Builder
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
	if nb.raid0 {
		b.WriteString("  instance:\n    localStorage:\n      strategy: RAID0\n")
	}
	if nb.kubelet.maxPods > 0 || nb.kubelet.resolved != nil || len(flags) > 0 {
		b.WriteString("  kubelet:\n")
	}
	writeNodeadmKubelet(&b, nb.kubelet)
	if len(flags) > 0 {
		b.WriteString("    flags:\n")
		for _, f := range flags {
			fmt.Fprintf(&b, "      - %s\n", quote(f))
		}
	}
	// The pool's parts go first: nodeadm merges NodeConfigs in order, so Tailor's cluster, pod
	// limit and reservations, which the planner counted with, win.
	var parts []userdata.Part
	if nb.userData != "" {
		if parts, err = userdata.Parts(nb.userData); err != nil {
			return "", fmt.Errorf("ec2: pool user data: %w", err)
		}
	}
	return userdata.MIME(append(parts, userdata.Part{ContentType: userdata.NodeConfigType, Body: b.String()}))
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
// label or taint is printable ASCII and never contains these characters).
func checkLabelsTaints(labels map[string]string, taints []cloud.Taint) error {
	const bad = ",=: \t\n\"'\\"
	for k, v := range labels {
		if k == "" || strings.ContainsAny(k, bad) || strings.ContainsAny(v, bad) || !printableASCII(k) || !printableASCII(v) {
			return fmt.Errorf("ec2: node label %q=%q cannot be passed to the kubelet", k, v)
		}
	}
	for _, t := range taints {
		if t.Key == "" || strings.ContainsAny(t.Key, bad) || strings.ContainsAny(t.Value, bad) || !printableASCII(t.Key) || !printableASCII(t.Value) {
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

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// bottlerocketUserData is the Bottlerocket user data: TOML settings with the cluster (name, API
// server, CA and the cluster DNS address, which Bottlerocket does not derive itself), max-pods,
// node labels and node taints.
func bottlerocketUserData(o Options, nb nodeBootstrap) (string, error) {
	labels, taints := nb.labels, nb.taints
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
	switch dns := nb.kubelet.clusterDNS(); {
	case len(dns) > 0:
		quoted := make([]string, len(dns))
		for i, a := range dns {
			quoted[i] = quote(a)
		}
		fmt.Fprintf(&b, "cluster-dns-ip = [%s]\n", strings.Join(quoted, ", "))
	case o.ClusterCIDR != "":
		dns, err := clusterDNS(o.ClusterCIDR)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "cluster-dns-ip = %s\n", quote(dns))
	}
	kubeletTables := writeBottlerocketKubelet(&b, nb.kubelet)
	b.WriteString(kubeletTables)
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
	if nb.raid0 {
		// Bottlerocket stripes the instance store and moves the kubelet's and containerd's
		// storage onto it before they start (its documented ephemeral-storage commands).
		b.WriteString("\n[settings.bootstrap-commands.tailor-ephemeral-storage]\n")
		b.WriteString(`commands = [["apiclient", "ephemeral-storage", "init"], ["apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"]]` + "\n")
		b.WriteString("mode = \"always\"\nessential = true\n")
	}
	if nb.userData == "" {
		return b.String(), nil
	}
	// Taints decide where pods may go: the node has Tailor's, which the planner counted with.
	merged, err := userdata.MergeTOML(nb.userData, b.String(), "settings.kubernetes.node-taints")
	if err != nil {
		return "", fmt.Errorf("ec2: pool user data: %w", err)
	}
	return merged, nil
}

// clusterDNS is the cluster DNS service's address in an EKS cluster: the tenth address of the
// service CIDR for IPv4 (10.100.0.10 in 10.100.0.0/16), prefix::a for IPv6.
func clusterDNS(serviceCIDR string) (string, error) {
	p, err := netip.ParsePrefix(serviceCIDR)
	if err != nil {
		return "", fmt.Errorf("ec2: service CIDR %q: %w", serviceCIDR, err)
	}
	a := p.Masked().Addr()
	for range 10 {
		a = a.Next()
	}
	if !p.Contains(a) {
		return "", fmt.Errorf("ec2: service CIDR %s is too small to hold the cluster DNS address", serviceCIDR)
	}
	return a.String(), nil
}

// quote writes s as a double-quoted string that YAML and TOML both read back as s: quotes and
// backslashes escaped, and every character either reader refuses raw (controls, DEL, anything
// not printable) as a \u or \U escape, which both read. Invalid UTF-8 becomes U+FFFD.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r > 0xFFFF && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\U%08X`, r)
		case r < 0x20 || r == 0x7f || !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
