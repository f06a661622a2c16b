package planning

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Which pods compact may move: the rules, apart from the moving.

// hostSelectors are the label selectors of the classes with constraints below the zone
// (hostname spread, hostname affinity or anti-affinity): a pod they select counts for them on
// its node, so compact leaves it where it is.
func (ps *planState) hostSelectors(classes []*class) []labels.Selector {
	return ps.selectors(classes, (*class).hostLevel)
}

// selectors are the label selectors of the hard constraints of the classes keep picks.
func (ps *planState) selectors(classes []*class, keep func(*class) bool) []labels.Selector {
	var out []labels.Selector
	for _, c := range classes {
		if !keep(c) {
			continue
		}
		for _, ls := range constraintSelectors(c.rep().Pod) {
			if sel, err := metav1.LabelSelectorAsSelector(ls); err == nil {
				out = append(out, sel)
			} else {
				out = append(out, labels.Everything()) // unreadable: assume it selects anything
			}
		}
	}
	return out
}

// movable says whether compact may move the pod: its class's constraints are all zone-wide
// (moves stay within a zone) and no class with constraints below the zone selects it.
func (m *member) movable(hostSelectors []labels.Selector) bool {
	if m.class.hostLevel() {
		return false
	}
	return !selected(m, hostSelectors)
}

// hostLevel says whether the class has a hard constraint whose topology is finer than a zone.
func (c *class) hostLevel() bool {
	for _, key := range c.spreadKeys {
		if !zoneWide(key) {
			return true
		}
	}
	if a := c.rep().Pod.Spec.Affinity; a != nil {
		var terms []corev1.PodAffinityTerm
		if a.PodAffinity != nil {
			terms = append(terms, a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		if a.PodAntiAffinity != nil {
			terms = append(terms, a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution...)
		}
		for _, t := range terms {
			if !zoneWide(t.TopologyKey) {
				return true
			}
		}
	}
	return false
}

func zoneWide(key string) bool {
	return key == corev1.LabelTopologyZone || key == corev1.LabelTopologyRegion ||
		key == corev1.LabelFailureDomainBetaZone || key == corev1.LabelFailureDomainBetaRegion
}

// constraintSelectors are the selectors of a pod's hard spread constraints and required
// (anti-)affinity terms.
func constraintSelectors(p *corev1.Pod) []*metav1.LabelSelector {
	var out []*metav1.LabelSelector
	for _, c := range p.Spec.TopologySpreadConstraints {
		if c.WhenUnsatisfiable == corev1.DoNotSchedule {
			out = append(out, c.LabelSelector)
		}
	}
	if a := p.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			for _, t := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				out = append(out, t.LabelSelector)
			}
		}
		if a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				out = append(out, t.LabelSelector)
			}
		}
	}
	return out
}
