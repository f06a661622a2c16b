package ec2

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// kubeletSettings are what one launch template's user data tells the kubelet beyond labels and
// taints.
type kubeletSettings struct {
	maxPods int64
	// resolved is set when the pool has kubelet settings: the reservations and hard thresholds
	// the planner counted with are then written out whole, so the node runs with them whatever
	// the image's own formulas give (nodeadm reserves memory for the ENI pod limit, not the
	// pool's). A pool without settings keeps the image's, which are the same figures.
	resolved *catalog.KubeletConfig
	pool     *config.Kubelet
}

// kubeletFor is the kubelet part of the user data of a node of the type in a pool with k. whole
// writes the resolved reservations even for a pool without settings: the pool's own user data
// might set some, and Tailor's, merged last, must win with what the planner counted.
func kubeletFor(it *cloud.InstanceType, k *config.Kubelet, whole bool) kubeletSettings {
	kc := catalog.KubeletFor(it, k)
	ks := kubeletSettings{maxPods: kc.MaxPods}
	if whole || !k.Empty() {
		ks.resolved, ks.pool = &kc, k
	}
	return ks
}

// writeNodeadmKubelet writes the kubelet config of a NodeConfig (at its 6-space indent), which
// nodeadm merges over its own.
func writeNodeadmKubelet(b *strings.Builder, ks kubeletSettings) {
	if ks.maxPods == 0 && ks.resolved == nil {
		return
	}
	b.WriteString("    config:\n")
	if ks.maxPods > 0 {
		fmt.Fprintf(b, "      maxPods: %d\n", ks.maxPods)
	}
	if ks.resolved == nil {
		return
	}
	writeYAMLMap(b, "kubeReserved", resourceStrings(ks.resolved.KubeReserved))
	writeYAMLMap(b, "systemReserved", resourceStrings(ks.resolved.SystemReserved))
	writeYAMLMap(b, "evictionHard", ks.resolved.EvictionHard)
	writeYAMLMap(b, "evictionSoft", ks.pool.EvictionSoft)
	writeYAMLMap(b, "evictionSoftGracePeriod", gracePeriods(ks.pool))
	if ks.pool.EvictionMaxPodGracePeriod > 0 {
		fmt.Fprintf(b, "      evictionMaxPodGracePeriod: %d\n", ks.pool.EvictionMaxPodGracePeriod)
	}
	if len(ks.pool.ClusterDNS) > 0 {
		b.WriteString("      clusterDNS:\n")
		for _, a := range ks.pool.ClusterDNS {
			fmt.Fprintf(b, "      - %s\n", quote(a))
		}
	}
}

// clusterDNS are the pool's DNS servers for pods, if it sets them.
func (ks kubeletSettings) clusterDNS() []string {
	if ks.pool == nil {
		return nil
	}
	return ks.pool.ClusterDNS
}

func writeYAMLMap(b *strings.Builder, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "      %s:\n", name)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(b, "        %s: %s\n", quote(k), quote(m[k]))
	}
}

// writeBottlerocketKubelet writes the settings.kubernetes keys of the kubelet settings (after
// the table's other keys) and returns the subtables to write after it.
func writeBottlerocketKubelet(b *strings.Builder, ks kubeletSettings) (tables string) {
	if ks.maxPods > 0 {
		fmt.Fprintf(b, "max-pods = %d\n", ks.maxPods)
	}
	if ks.resolved == nil {
		return ""
	}
	if ks.pool.EvictionMaxPodGracePeriod > 0 {
		fmt.Fprintf(b, "eviction-max-pod-grace-period = %d\n", ks.pool.EvictionMaxPodGracePeriod)
	}
	var t strings.Builder
	writeTOMLTable(&t, "kube-reserved", resourceStrings(ks.resolved.KubeReserved))
	writeTOMLTable(&t, "system-reserved", resourceStrings(ks.resolved.SystemReserved))
	writeTOMLTable(&t, "eviction-hard", ks.resolved.EvictionHard)
	writeTOMLTable(&t, "eviction-soft", ks.pool.EvictionSoft)
	writeTOMLTable(&t, "eviction-soft-grace-period", gracePeriods(ks.pool))
	return t.String()
}

func writeTOMLTable(b *strings.Builder, name string, m map[string]string) {
	if len(m) == 0 {
		return
	}
	fmt.Fprintf(b, "\n[settings.kubernetes.%s]\n", name)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(b, "%s = %s\n", quote(k), quote(m[k]))
	}
}

func resourceStrings(rl corev1.ResourceList) map[string]string {
	out := make(map[string]string, len(rl))
	for name, q := range rl {
		out[string(name)] = q.String()
	}
	return out
}

func gracePeriods(k *config.Kubelet) map[string]string {
	out := make(map[string]string, len(k.EvictionSoftGracePeriod))
	for signal, d := range k.EvictionSoftGracePeriod {
		out[signal] = d.Duration.String()
	}
	return out
}
