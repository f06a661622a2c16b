package nodeagent

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// KubeletReservations are the reservations and hard eviction thresholds a node's user data sets;
// what it leaves out the image sets (nodeadm and Bottlerocket merge the user's over theirs).
type KubeletReservations struct {
	KubeReserved   corev1.ResourceList
	SystemReserved corev1.ResourceList
	EvictionHard   map[string]string
}

// kubeletConfig is what the kubelet of an instance of the type runs with: the image's defaults
// for the user data's pod limit (or the ENI-derived one), with the user data's values over them.
func (b *Bootstrap) kubeletConfig(it *cloud.InstanceType) catalog.KubeletConfig {
	kc := catalog.KubeletFor(it, &config.Kubelet{MaxPods: int32(b.MaxPods)})
	maps.Copy(kc.KubeReserved, b.Reservations.KubeReserved)
	kc.SystemReserved = maps.Clone(b.Reservations.SystemReserved)
	maps.Copy(kc.EvictionHard, b.Reservations.EvictionHard)
	return kc
}

// reservedResources reads a kubeReserved or systemReserved map as the kubelet does.
func reservedResources(field string, m map[string]string) (corev1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	rl := corev1.ResourceList{}
	for _, name := range slices.Sorted(maps.Keys(m)) {
		switch corev1.ResourceName(name) {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "pid":
		default:
			return nil, fmt.Errorf("%s: unknown resource %q", field, name)
		}
		q, err := resource.ParseQuantity(m[name])
		if err != nil || q.Sign() < 0 {
			return nil, fmt.Errorf("%s.%s: %q is not a non-negative quantity", field, name, m[name])
		}
		rl[corev1.ResourceName(name)] = q
	}
	return rl, nil
}

// thresholds checks eviction thresholds as the kubelet parses them.
func thresholds(field string, m map[string]string) error {
	for _, signal := range slices.Sorted(maps.Keys(m)) {
		if !validation.EvictionSignals.Has(signal) {
			return fmt.Errorf("%s: unknown eviction signal %q", field, signal)
		}
		if _, err := config.ParseThreshold(m[signal]); err != nil {
			return fmt.Errorf("%s.%s: %w", field, signal, err)
		}
	}
	return nil
}

// readReservations reads the reservations and thresholds of either family's user data.
func readReservations(names [3]string, kube, system, hard map[string]string, soft ...map[string]string) (KubeletReservations, error) {
	var r KubeletReservations
	var err error
	if r.KubeReserved, err = reservedResources(names[0], kube); err != nil {
		return r, err
	}
	if r.SystemReserved, err = reservedResources(names[1], system); err != nil {
		return r, err
	}
	for _, m := range append([]map[string]string{hard}, soft...) {
		if err := thresholds(names[2], m); err != nil {
			return r, err
		}
	}
	r.EvictionHard = hard
	return r, nil
}

// gracePeriods checks soft eviction grace periods: durations the kubelet parses.
func gracePeriods(field string, m map[string]string) error {
	for _, signal := range slices.Sorted(maps.Keys(m)) {
		if d, err := time.ParseDuration(m[signal]); err != nil || d < 0 {
			return fmt.Errorf("%s.%s: %q is not a duration", field, signal, m[signal])
		}
	}
	return nil
}

// dnsAddresses checks the kubelet's cluster DNS addresses.
func dnsAddresses(field string, addrs []string) error {
	for _, a := range addrs {
		if _, err := netip.ParseAddr(a); err != nil {
			return fmt.Errorf("%s: %q is not an IP address", field, a)
		}
	}
	return nil
}

// stringMap reads a YAML map of strings from a decoded kubelet config.
func stringMap(field string, v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("kubelet config %s is not a map", field)
	}
	out := make(map[string]string, len(m))
	for k, x := range m {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("kubelet config %s.%s is not a string", field, k)
		}
		out[k] = s
	}
	return out, nil
}

// readNodeadmKubelet reads the reservations, thresholds and DNS servers of a NodeConfig's
// kubelet config.
func (b *Bootstrap) readNodeadmKubelet(cfg map[string]any) error {
	var m [5]map[string]string
	for i, field := range []string{"kubeReserved", "systemReserved", "evictionHard", "evictionSoft", "evictionSoftGracePeriod"} {
		var err error
		if m[i], err = stringMap(field, cfg[field]); err != nil {
			return err
		}
	}
	res, err := readReservations([3]string{"kubelet config kubeReserved", "kubelet config systemReserved", "kubelet config evictionHard"}, m[0], m[1], m[2], m[3])
	if err != nil {
		return err
	}
	if err := gracePeriods("kubelet config evictionSoftGracePeriod", m[4]); err != nil {
		return err
	}
	b.Reservations = res
	if v, ok := cfg["clusterDNS"]; ok {
		list, ok := v.([]any)
		if !ok {
			return fmt.Errorf("kubelet config clusterDNS is not a list")
		}
		addrs := make([]string, 0, len(list))
		for _, a := range list {
			s, _ := a.(string)
			addrs = append(addrs, s)
		}
		return dnsAddresses("kubelet config clusterDNS", addrs)
	}
	return nil
}

// checkBottlerocketDNS checks cluster-dns-ip: one address, which must be the cluster DNS
// service's (in the service CIDR: a wrong CIDR breaks every pod's DNS), or a list of the
// servers the pool chose.
func checkBottlerocketDNS(v any, serviceCIDR string) error {
	switch dns := v.(type) {
	case string:
		a, err := netip.ParseAddr(dns)
		if err != nil {
			return fmt.Errorf("settings.kubernetes.cluster-dns-ip: %w", err)
		}
		if p, err := netip.ParsePrefix(serviceCIDR); err != nil || !p.Contains(a) {
			return fmt.Errorf("settings.kubernetes.cluster-dns-ip %s is outside the service CIDR %s", a, serviceCIDR)
		}
		return nil
	case []any:
		addrs := make([]string, 0, len(dns))
		for _, a := range dns {
			s, _ := a.(string)
			addrs = append(addrs, s)
		}
		if len(addrs) == 0 {
			return fmt.Errorf("settings.kubernetes.cluster-dns-ip is an empty list")
		}
		return dnsAddresses("settings.kubernetes.cluster-dns-ip", addrs)
	}
	return fmt.Errorf("settings.kubernetes.cluster-dns-ip is neither an address nor a list of them")
}
