package catalog

import (
	"strconv"
	"strings"
	"unicode"

	corev1 "k8s.io/api/core/v1"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Labels are the labels a node of this type carries whatever its zone, pool or capacity type.
func Labels(it *cloud.InstanceType) map[string]string {
	family, size, _ := strings.Cut(it.Name, ".")
	category, generation := splitFamily(family)
	l := map[string]string{
		corev1.LabelInstanceTypeStable:   it.Name,
		corev1.LabelArchStable:           it.Arch,
		corev1.LabelOSStable:             "linux",
		v1alpha1.LabelInstanceFamily:     family,
		v1alpha1.LabelInstanceCategory:   category,
		v1alpha1.LabelInstanceSize:       size,
		v1alpha1.LabelInstanceCPU:        strconv.FormatInt(it.VCPUs, 10),
		v1alpha1.LabelInstanceMemory:     strconv.FormatInt(it.MemoryMiB, 10),
		v1alpha1.LabelInstanceGPUCount:   strconv.FormatInt(it.GPUCount, 10),
		v1alpha1.LabelInstanceGPUMemory:  strconv.FormatInt(it.GPUMemoryMiB, 10),
		v1alpha1.LabelInstanceGeneration: generation,
	}
	if generation == "" {
		delete(l, v1alpha1.LabelInstanceGeneration)
	}
	if it.GPUName != "" {
		l[v1alpha1.LabelInstanceGPUName] = strings.ToLower(it.GPUName)
	}
	return l
}

// splitFamily splits "c7gn" into category "c" and generation "7", "inf2" into "inf" and "2",
// "u-6tb1" into "u" and "" (high-memory families carry no generation digit of their own).
func splitFamily(family string) (category, generation string) {
	i := strings.IndexFunc(family, func(r rune) bool { return !unicode.IsLetter(r) })
	if i < 0 {
		return family, ""
	}
	category = family[:i]
	if family[i] == '-' {
		return category, ""
	}
	j := i
	for j < len(family) && unicode.IsDigit(rune(family[j])) {
		j++
	}
	return category, family[i:j]
}
