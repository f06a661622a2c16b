package validation

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tailor-eks/tailor/apis/config"
)

var (
	maxPodsPolicies = sets.New(config.MaxPodsENI, config.MaxPodsPrefixDelegation)
	// reservedResources are what systemReserved and kubeReserved may hold (the kubelet's list).
	reservedResources = sets.New(corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, "pid")
	// EvictionSignals are the kubelet's eviction signals on Linux with containerd (the
	// containerfs ones need CRI-O's split image filesystem), which Bottlerocket takes too.
	EvictionSignals = sets.New("memory.available", "nodefs.available", "nodefs.inodesFree",
		"imagefs.available", "imagefs.inodesFree", "pid.available")
	// quantitySignals take a quantity as well as a percentage; the others only a percentage.
	quantitySignals = sets.New("memory.available", "nodefs.available", "imagefs.available")
)

// maxKubeletPods is the most pods a kubelet setting may ask for; EKS recommends at most 250.
const maxKubeletPods = 1000

// validateKubelet checks a pool's kubelet settings the way the kubelet, or the image family
// that writes its configuration, would refuse them.
func validateKubelet(path *field.Path, k *config.Kubelet, family string) field.ErrorList {
	var errs field.ErrorList
	if family == config.FamilyCustom && !k.Empty() {
		return field.ErrorList{field.Forbidden(path, "a custom image bootstraps from the pool's userData alone, which must configure its kubelet; Tailor would plan with settings no node has")}
	}
	if k.MaxPods < 0 || k.MaxPods > maxKubeletPods {
		errs = append(errs, field.Invalid(path.Child("maxPods"), k.MaxPods, fmt.Sprintf("must be between 1 and %d (or unset)", maxKubeletPods)))
	}
	if !maxPodsPolicies.Has(k.MaxPodsPolicy) {
		errs = append(errs, field.NotSupported(path.Child("maxPodsPolicy"), k.MaxPodsPolicy, sets.List(maxPodsPolicies)))
	}
	if k.PodsPerCore < 0 || k.PodsPerCore > maxKubeletPods {
		errs = append(errs, field.Invalid(path.Child("podsPerCore"), k.PodsPerCore, fmt.Sprintf("must be between 0 and %d", maxKubeletPods)))
	}
	errs = append(errs, validateReserved(path.Child("systemReserved"), k.SystemReserved, family)...)
	errs = append(errs, validateReserved(path.Child("kubeReserved"), k.KubeReserved, family)...)
	errs = append(errs, validateThresholds(path.Child("evictionHard"), k.EvictionHard)...)
	errs = append(errs, validateThresholds(path.Child("evictionSoft"), k.EvictionSoft)...)
	for signal := range k.EvictionSoft {
		if _, ok := k.EvictionSoftGracePeriod[signal]; !ok {
			errs = append(errs, field.Required(path.Child("evictionSoftGracePeriod").Key(signal), "every soft eviction threshold needs a grace period"))
		}
	}
	for signal, d := range k.EvictionSoftGracePeriod {
		gp := path.Child("evictionSoftGracePeriod").Key(signal)
		if _, ok := k.EvictionSoft[signal]; !ok {
			errs = append(errs, field.Invalid(gp, d.Duration.String(), "a grace period needs a soft eviction threshold of the same signal"))
		} else if d.Duration < 0 {
			errs = append(errs, field.Invalid(gp, d.Duration.String(), "must not be negative"))
		}
	}
	if k.EvictionMaxPodGracePeriod < 0 {
		errs = append(errs, field.Invalid(path.Child("evictionMaxPodGracePeriod"), k.EvictionMaxPodGracePeriod, "must not be negative"))
	}
	for i, a := range k.ClusterDNS {
		if _, err := netip.ParseAddr(a); err != nil || strings.Contains(a, "%") {
			errs = append(errs, field.Invalid(path.Child("clusterDNS").Index(i), a, "must be an IP address"))
		}
	}
	return errs
}

func validateReserved(path *field.Path, rl corev1.ResourceList, family string) field.ErrorList {
	var errs field.ErrorList
	for name, q := range rl {
		rp := path.Key(string(name))
		switch {
		case !reservedResources.Has(name):
			errs = append(errs, field.NotSupported(rp, name, []string{"cpu", "ephemeral-storage", "memory", "pid"}))
		case name == "pid" && family == config.FamilyBottlerocket:
			errs = append(errs, field.Forbidden(rp, "Bottlerocket reserves cpu, memory and ephemeral-storage only"))
		case q.Sign() < 0:
			errs = append(errs, field.Invalid(rp, q.String(), "must not be negative"))
		}
	}
	return errs
}

func validateThresholds(path *field.Path, thresholds map[string]string) field.ErrorList {
	var errs field.ErrorList
	for signal, v := range thresholds {
		tp := path.Key(signal)
		if !EvictionSignals.Has(signal) {
			errs = append(errs, field.NotSupported(tp, signal, sets.List(EvictionSignals)))
			continue
		}
		if _, err := config.ParseThreshold(v); err != nil {
			errs = append(errs, field.Invalid(tp, v, err.Error()))
		} else if !strings.HasSuffix(v, "%") && !quantitySignals.Has(signal) {
			errs = append(errs, field.Invalid(tp, v, "this signal takes a percentage"))
		}
	}
	return errs
}
