package planning

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Checker answers, for one pod, whether the scheduler's Filter plugins accept a node that already
// runs the placed pods. An empty reason means the pod fits.
type Checker interface {
	Fits(ctx context.Context, node *corev1.Node, placed []*corev1.Pod) (reason string)
}

// CheckerFunc adapts a function to Checker.
type CheckerFunc func(ctx context.Context, node *corev1.Node, placed []*corev1.Pod) string

// Fits calls f.
func (f CheckerFunc) Fits(ctx context.Context, node *corev1.Node, placed []*corev1.Pod) string {
	return f(ctx, node, placed)
}

// Plan is the planner's answer for one batch.
type Plan struct {
	Nodes         []*PlannedNode
	Unschedulable []Unschedulable
}

// PricePerHour is the plan's total.
func (p *Plan) PricePerHour() float64 {
	var sum float64
	for _, n := range p.Nodes {
		sum += n.Template.Offering.PricePerHour
	}
	return sum
}

// Unschedulable is a pod no template can serve, and why.
type Unschedulable struct {
	Pod    *corev1.Pod
	Reason string
}

// PlannedNode is one node to launch and the pods it is for.
type PlannedNode struct {
	// Name is the planned node's placeholder name, unique within the plan.
	Name string
	// Template is the cheapest template that holds Pods; Alternatives starts with it and lists
	// the other types of the same pool, zone and capacity type that hold them, cheapest first,
	// so the launch can fall back when EC2 lacks capacity for the first.
	Template     *Template
	Alternatives []*Template
	Pods         []*Pod
	Requests     corev1.ResourceList
}

// Planner packs batches onto templates.
type Planner struct {
	Templates []*Template
	// MaxAlternatives bounds how many types a planned node offers the launch (default 10).
	MaxAlternatives int
}

// Plan packs pods onto new nodes: pods of one class fill a node of the template that is cheapest
// per pod it can hold, every placement confirmed by the pods' Checker with the node's other
// planned pods in place; each node is then shrunk to the cheapest type that still holds its pods.
func (pl *Planner) Plan(ctx context.Context, pods []*Pod) *Plan {
	plan := &Plan{}
	classes := pl.classify(ctx, pods)
	var nodes []*plannedNode
	for _, c := range classes {
		if len(c.compatible) == 0 {
			reason := pl.explain(c)
			for _, p := range c.pods {
				plan.Unschedulable = append(plan.Unschedulable, Unschedulable{Pod: p.Pod, Reason: reason})
			}
			continue
		}
		compatible := make(map[int]bool, len(c.compatible))
		for _, ti := range c.compatible {
			compatible[ti] = true
		}
		for i, p := range c.pods {
			placed := false
			for _, n := range nodes {
				if compatible[n.template] && n.tryAdd(ctx, pl.Templates[n.template], p) {
					n.classes[c] = true
					placed = true
					break
				}
			}
			if placed {
				continue
			}
			ti := pl.bestTemplate(c, len(c.pods)-i)
			n := &plannedNode{name: fmt.Sprintf("planned-%d", len(nodes)), template: ti, classes: map[*class]bool{c: true}}
			if !n.tryAdd(ctx, pl.Templates[ti], p) {
				// The template held the pod alone when classified; only pods of this batch can
				// make it refuse now, which a fresh node of the same template cannot fix.
				plan.Unschedulable = append(plan.Unschedulable, Unschedulable{Pod: p.Pod, Reason: "conflicts with other pods of the same batch on every planned node"})
				continue
			}
			nodes = append(nodes, n)
		}
	}
	for _, n := range nodes {
		plan.Nodes = append(plan.Nodes, pl.finish(n))
	}
	return plan
}

// classify groups the pods into classes and finds each class's compatible templates.
func (pl *Planner) classify(ctx context.Context, pods []*Pod) []*class {
	byKey := map[uint64]*class{}
	var classes []*class
	for _, p := range pods {
		k := classKey(p)
		c, ok := byKey[k]
		if !ok {
			c = &class{key: k, reasons: map[string]int{}}
			byKey[k] = c
			classes = append(classes, c)
		}
		c.pods = append(c.pods, p)
	}
	for _, c := range classes {
		rep := c.pods[0]
		bestWeight := int32(math.MinInt32)
		for ti, t := range pl.Templates {
			if t.Pool.Weight < bestWeight {
				continue
			}
			if r := insufficient(t.Available, nil, 0, rep.Requests); r != "" {
				c.reasons[r]++
				continue
			}
			if r := rep.Check.Fits(ctx, t.Node, t.Daemons); r != "" {
				c.reasons[r]++
				continue
			}
			if t.Pool.Weight > bestWeight {
				bestWeight, c.compatible = t.Pool.Weight, c.compatible[:0]
			}
			c.compatible = append(c.compatible, ti)
		}
	}
	// Big pods first: they decide node sizes, small ones fill the gaps.
	sort.SliceStable(classes, func(i, j int) bool {
		return size(classes[i].pods[0].Requests) > size(classes[j].pods[0].Requests)
	})
	return classes
}

// bestTemplate picks, among the class's templates, the one with the lowest price per pod of the
// class it would hold, counting at most the pods still to place.
func (pl *Planner) bestTemplate(c *class, remaining int) int {
	best, bestCost := -1, math.Inf(1)
	for _, ti := range c.compatible {
		t := pl.Templates[ti]
		k := fitCount(t.Available, c.pods[0].Requests)
		if k > remaining {
			k = remaining
		}
		if k < 1 {
			continue
		}
		if cost := t.Offering.PricePerHour / float64(k); cost < bestCost {
			best, bestCost = ti, cost
		}
	}
	if best < 0 {
		return c.compatible[0]
	}
	return best
}

// finish shrinks a planned node to the cheapest template of its pool, zone and capacity type that
// every one of its classes accepts and whose allocatable holds the node's pods.
func (pl *Planner) finish(n *plannedNode) *PlannedNode {
	max := pl.MaxAlternatives
	if max <= 0 {
		max = 10
	}
	chosen := pl.Templates[n.template]
	var alts []*Template
	var common map[int]bool
	for c := range n.classes {
		set := make(map[int]bool, len(c.compatible))
		for _, ti := range c.compatible {
			if common == nil || common[ti] {
				set[ti] = true
			}
		}
		common = set
	}
	for ti, t := range pl.Templates { // templates are sorted by price
		if len(alts) == max {
			break
		}
		if !common[ti] || !launchableTogether(t, chosen) {
			continue
		}
		if insufficient(t.Available, nil, len(n.pods)-1, n.requests) != "" {
			continue
		}
		alts = append(alts, t)
	}
	if len(alts) == 0 {
		alts = []*Template{chosen}
	}
	return &PlannedNode{Name: n.name, Template: alts[0], Alternatives: alts, Pods: n.pods, Requests: n.requests}
}

// launchableTogether says whether two templates can be alternatives of one launch: same pool,
// zone and capacity type, and one image for both (same architecture, same GPU-ness).
func launchableTogether(a, b *Template) bool {
	return a.Pool == b.Pool && a.Offering.Zone == b.Offering.Zone && a.Offering.CapacityType == b.Offering.CapacityType &&
		a.Type.Arch == b.Type.Arch && (a.Type.GPUCount > 0) == (b.Type.GPUCount > 0)
}

type plannedNode struct {
	name     string
	template int
	pods     []*Pod
	requests corev1.ResourceList
	classes  map[*class]bool
}

func (n *plannedNode) tryAdd(ctx context.Context, t *Template, p *Pod) bool {
	if insufficient(t.Available, n.requests, len(n.pods), p.Requests) != "" {
		return false
	}
	placed := make([]*corev1.Pod, 0, len(t.Daemons)+len(n.pods))
	placed = append(placed, t.Daemons...)
	for _, q := range n.pods {
		placed = append(placed, q.Pod)
	}
	if p.Check.Fits(context.WithoutCancel(ctx), nodeNamed(t, n.name), placed) != "" {
		return false
	}
	n.pods = append(n.pods, p)
	n.requests = addResources(n.requests, p.Requests)
	return true
}

// insufficient says which resource a node with allocatable alloc, already holding podCount pods
// that request used, lacks for a pod requesting req ("" if none).
func insufficient(alloc, used corev1.ResourceList, podCount int, req corev1.ResourceList) string {
	podsAlloc := alloc[corev1.ResourcePods]
	if int64(podCount+1) > podsAlloc.Value() {
		return "Too many pods"
	}
	for name, q := range req {
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		need := q.DeepCopy()
		if u, ok := used[name]; ok {
			need.Add(u)
		}
		if a, ok := alloc[name]; !ok || need.Cmp(a) > 0 {
			return "Insufficient " + string(name)
		}
	}
	return ""
}

// fitCount is how many pods requesting req an empty node with allocatable alloc holds.
func fitCount(alloc, req corev1.ResourceList) int {
	pods := alloc[corev1.ResourcePods]
	n := pods.Value()
	for name, q := range req {
		if q.IsZero() || name == corev1.ResourcePods {
			continue
		}
		a := alloc[name]
		if k := a.MilliValue() / q.MilliValue(); k < n {
			n = k
		}
	}
	return int(n)
}

// size orders pods for packing by their CPU plus memory (1 CPU ~ 4 GiB).
func size(req corev1.ResourceList) float64 {
	cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
	return float64(cpu.MilliValue())/1000 + float64(mem.Value())/float64(4<<30)
}

// explain says why no template accepted a class: first a request beyond the largest allowed
// type, else the Filter plugins' most common verdicts.
func (pl *Planner) explain(c *class) string {
	if len(pl.Templates) == 0 {
		return "no pool has a launchable instance type (check the pools' requirements, zones and subnets)"
	}
	req := c.pods[0].Requests
	names := make([]string, 0, len(req))
	for name := range req {
		names = append(names, string(name))
	}
	sort.Strings(names)
	for _, name := range names {
		q := req[corev1.ResourceName(name)]
		if q.IsZero() {
			continue
		}
		var largest resource.Quantity
		largestType := ""
		for _, t := range pl.Templates {
			if a, ok := t.Available[corev1.ResourceName(name)]; ok && a.Cmp(largest) > 0 {
				largest, largestType = a.DeepCopy(), t.Type.Name
			}
		}
		if q.Cmp(largest) > 0 {
			if largestType == "" {
				return fmt.Sprintf("requests %s %s; no allowed instance type offers %s", q.String(), name, name)
			}
			return fmt.Sprintf("requests %s %s; the largest allowed instance type (%s) has %s allocatable (after DaemonSets)", q.String(), name, largestType, largest.String())
		}
	}
	type rc struct {
		reason string
		n      int
	}
	var rcs []rc
	for r, n := range c.reasons {
		rcs = append(rcs, rc{r, n})
	}
	sort.Slice(rcs, func(i, j int) bool {
		return rcs[i].n > rcs[j].n || rcs[i].n == rcs[j].n && rcs[i].reason < rcs[j].reason
	})
	var parts []string
	for i, r := range rcs {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%d)", r.reason, r.n))
	}
	return fmt.Sprintf("no allowed instance type passes the scheduler's filters (of %d candidates): %s", len(pl.Templates), strings.Join(parts, "; "))
}

// FitOnto places as many of the candidate pods as fit on an in-flight node of template t (named
// nodeName, already planned to hold placed), each confirmed by its Checker with the daemons and
// every pod placed so far on the node. It returns the accepted pods, so capacity already being
// launched is used before anything new is.
func FitOnto(ctx context.Context, t *Template, nodeName string, placed []*Pod, candidates []*Pod) []*Pod {
	n := &plannedNode{name: nodeName}
	for _, p := range placed {
		n.pods = append(n.pods, p)
		n.requests = addResources(n.requests, p.Requests)
	}
	var accepted []*Pod
	for _, p := range candidates {
		if n.tryAdd(ctx, t, p) {
			accepted = append(accepted, p)
		}
	}
	return accepted
}
