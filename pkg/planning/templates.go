// Package planning decides what to launch for a batch of pods the scheduler could not place.
// It is pure: no API server, no cloud. Whether a pod may run on a node is never decided here but
// asked of the profile's own Filter plugins, through each pod's FilterState.
package planning

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/nodeshape"
)

// Template is a node Tailor could launch: one pool × instance type × zone × capacity type. Node is
// the Node object a real instance of it would register as, which is what the Filter plugins see.
type Template struct {
	Pool        *config.Pool
	Type        *cloud.InstanceType
	Offering    cloud.Offering
	Allocatable corev1.ResourceList
	Node        *corev1.Node
	// Daemons are the DaemonSet pods that would run on the node; Available is Allocatable less
	// their requests (and pod slots), which is what the planner packs into.
	Daemons   []*corev1.Pod
	Available corev1.ResourceList
}

// Key names the template for logs and caches.
func (t *Template) Key() string {
	return fmt.Sprintf("%s/%s/%s/%s", t.Pool.Name, t.Type.Name, t.Offering.Zone, t.Offering.CapacityType)
}

// TemplateNodeName is the placeholder name of hypothetical nodes; planned nodes get their own.
const TemplateNodeName = "tailor-template"

// Templates lists every launchable template of the pools: offerings of types that meet the pool's
// requirements, in zones where the pool has a subnet. zones maps a pool name to its usable zones.
func Templates(pools []config.Pool, types []cloud.InstanceType, zones map[string][]string) ([]*Template, error) {
	var out []*Template
	// A type's allocatable, capacity and labels are the same in every pool whose nodes run the
	// same kubelet settings on the same volume: made once and shared by its templates, which
	// nothing changes (UseObserved and AddDaemons replace them).
	shapesBySettings := map[string][]*typeShape{}
	for pi := range pools {
		pool := &pools[pi]
		sel, err := poolSelector(pool)
		if err != nil {
			return nil, err
		}
		settings := nodeSettingsKey(pool)
		shapes, ok := shapesBySettings[settings]
		if !ok {
			shapes = make([]*typeShape, len(types))
			shapesBySettings[settings] = shapes
		}
		allowedZones := map[string]bool{}
		for _, z := range zones[pool.Name] {
			allowedZones[z] = true
		}
		// Every template of the pool has its taints; nothing changes a template's node.
		taints := nodeshape.TemplateTaints(pool)
		allowedCT := map[cloud.CapacityType]bool{}
		for _, ct := range pool.CapacityTypes {
			allowedCT[cloud.CapacityType(ct)] = true
		}
		for ti := range types {
			it := &types[ti]
			for _, off := range it.Offerings {
				if !allowedZones[off.Zone] || !allowedCT[off.CapacityType] {
					continue
				}
				if shapes[ti] == nil {
					kc := catalog.KubeletFor(it, &pool.Kubelet)
					storage := catalog.Storage(pool, it)
					shapes[ti] = &typeShape{alloc: catalog.AllocatableWith(it, kc, storage), capacity: catalog.CapacityWith(it, kc, storage), labels: catalog.Labels(it)}
				}
				sh := shapes[ti]
				node := templateNode(pool, sh.labels, off, sh.capacity, sh.alloc, taints)
				if !sel.Match(node) {
					continue
				}
				out = append(out, &Template{Pool: pool, Type: it, Offering: off, Allocatable: sh.alloc, Available: sh.alloc, Node: node})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Offering.PricePerHour < out[j].Offering.PricePerHour })
	return out, nil
}

// nodeSettingsKey says which pools' nodes of a type have the same capacity and allocatable.
func nodeSettingsKey(pool *config.Pool) string {
	b, _ := json.Marshal([]any{pool.Kubelet, catalog.VolumeGiB(pool), pool.InstanceStorePolicy})
	return string(b)
}

// typeShape is what a node of one instance type has whatever its zone or capacity type.
type typeShape struct {
	alloc, capacity corev1.ResourceList
	labels          map[string]string
}

func poolSelector(pool *config.Pool) (*nodeaffinity.NodeSelector, error) {
	reqs := make([]corev1.NodeSelectorRequirement, 0, len(pool.Requirements))
	for _, r := range pool.Requirements {
		reqs = append(reqs, r.NodeSelectorRequirement)
	}
	if len(reqs) == 0 {
		reqs = []corev1.NodeSelectorRequirement{{Key: corev1.LabelOSStable, Operator: corev1.NodeSelectorOpExists}}
	}
	sel, err := nodeaffinity.NewNodeSelector(&corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: reqs}}})
	if err != nil {
		return nil, fmt.Errorf("pool %s requirements: %w", pool.Name, err)
	}
	return sel, nil
}

// templateNode is the Node a real instance of the offering would register as: its labels and
// taints are nodeshape's, as launch and registration put them on the real node.
func templateNode(pool *config.Pool, typeLabels map[string]string, off cloud.Offering, capacity, alloc corev1.ResourceList, taints []corev1.Taint) *corev1.Node {
	labels := nodeshape.TemplateLabels(pool, typeLabels, off.Zone, string(off.CapacityType))
	labels[corev1.LabelHostname] = TemplateNodeName
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: TemplateNodeName, Labels: labels},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Capacity: capacity, Allocatable: alloc, Conditions: ready},
	}
}

// ready are the conditions of every template's node, shared as templates number in thousands.
var ready = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}

// nodeNamed copies a template's node under a planned node's own name and hostname, so hostname
// topology sees each planned node as distinct.
func nodeNamed(t *Template, name string) *corev1.Node {
	n := t.Node.DeepCopy()
	n.Name = name
	n.Labels[corev1.LabelHostname] = name
	return n
}

// UseObserved replaces the modelled allocatable of every template whose instance type has been
// seen on a real node by what that node reported. Call it before AddDaemons.
func UseObserved(templates []*Template, observed func(pool, instanceType string) (corev1.ResourceList, bool)) {
	for _, t := range templates {
		if rl, ok := observed(t.Pool.Name, t.Type.Name); ok {
			t.Allocatable, t.Available = rl, rl
			// The node may be shared with other copies of the template: change a copy.
			n := *t.Node
			n.Status.Allocatable = rl
			t.Node = &n
		}
	}
}

// AddDaemons finds, for every template, the DaemonSet pods that would run on such a node (the
// profile's Filter plugins decide where each DaemonSet lands) and takes their requests out of
// the template's Available resources.
func AddDaemons(ctx context.Context, templates []*Template, daemons []*Pod) {
	if len(daemons) == 0 {
		return
	}
	for _, t := range templates {
		var used corev1.ResourceList
		t.Daemons = nil
		for _, d := range daemons {
			if d.Filter.Filter(ctx, nodeInfo(t.Node)) != "" {
				continue
			}
			t.Daemons = append(t.Daemons, d.Pod)
			used = addResources(used, d.Requests)
		}
		t.Available = t.Allocatable
		if len(t.Daemons) == 0 {
			continue
		}
		avail := t.Allocatable.DeepCopy()
		for name, q := range used {
			v := avail[name]
			v.Sub(q)
			avail[name] = v
		}
		pods := avail[corev1.ResourcePods]
		pods.Sub(*resource.NewQuantity(int64(len(t.Daemons)), resource.DecimalSI))
		avail[corev1.ResourcePods] = pods
		// Daemons that overfill a small type leave nothing, not less than nothing.
		for name, q := range avail {
			if q.Sign() < 0 {
				avail[name] = *resource.NewQuantity(0, q.Format)
			}
		}
		t.Available = avail
	}
}
