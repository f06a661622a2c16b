package planning

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
)

// pickWindow bounds how far from each end of the shape order fill looks for a pod that fits.
const pickWindow = 64

// fillClass places a class without inter-pod terms or spread constraints node by node: each node
// (first those already planned, then new ones in the proportions of the LP mix) takes pods chosen
// to keep its free cpu and free memory in step, cpu-heavy pods while its cpu is the more free,
// memory-heavy ones while its memory is. Nodes of a compute type end up with the cpu-heavy pods
// and nodes of a memory type with the rest, and every node fills in both resources at once.
// The Filter plugins still judge every placement (host ports, volumes, anything the profile
// runs).
//
// With openNew false it only fills the nodes there are, and leaves the rest of the class for a
// later call.
func (ps *planState) fillClass(c *class, openNew bool) []Unschedulable {
	ps.begin(c)
	f := &filler{ps: ps, c: c}
	for _, m := range c.members {
		if !m.placed {
			f.members = append(f.members, m)
		}
	}
	sort.SliceStable(f.members, func(i, j int) bool {
		return f.ratio(f.members[i]) < f.ratio(f.members[j])
	})
	f.taken = make([]bool, len(f.members))
	f.left, f.hi = len(f.members), len(f.members)-1
	for _, n := range ps.nodes {
		if f.left == 0 {
			break
		}
		if n.accepts(c) && fits(n.capacity, n.used, c.minReq) {
			f.fill(n)
		}
	}
	if !openNew || f.left == 0 {
		return nil
	}
	order := ps.openOrder(c)
	var out []Unschedulable
	for f.left > 0 {
		seed := f.largest()
		m := f.members[seed]
		n := ps.open(c, m, order)
		f.take(seed)
		if n == nil {
			out = append(out, Unschedulable{Pod: m.pod.Pod, Reason: ps.whyNot(c, m)})
			continue
		}
		ps.place(c, n, m)
		f.fill(n)
	}
	return out
}

type filler struct {
	ps      *planState
	c       *class
	members []*member
	taken   []bool
	left    int
	lo, hi  int
}

func (f *filler) ratio(m *member) float64 {
	cpu, mem := f.dim(m.req, corev1.ResourceCPU), f.dim(m.req, corev1.ResourceMemory)
	if cpu == 0 {
		return float64(mem)
	}
	return float64(mem) / float64(cpu)
}

func (f *filler) dim(v vec, name corev1.ResourceName) int64 { return f.ps.dimOf(v, name) }

// dimOf is one resource of a vector (0 if the plan has no such resource).
func (ps *planState) dimOf(v vec, name corev1.ResourceName) int64 {
	i, ok := ps.dims.index[name]
	if !ok || i >= len(v) {
		return 0
	}
	return v[i]
}

// ratio is the class's memory per cpu over all its pods (0 without cpu requests).
func (c *class) ratio(ps *planState) float64 {
	var cpu, mem int64
	for _, m := range c.members {
		cpu += ps.dimOf(m.req, corev1.ResourceCPU)
		mem += ps.dimOf(m.req, corev1.ResourceMemory)
	}
	if cpu == 0 {
		return 0
	}
	return float64(mem) / float64(cpu)
}

func (f *filler) take(i int) {
	f.taken[i] = true
	f.left--
	for f.lo < len(f.taken) && f.taken[f.lo] {
		f.lo++
	}
	for f.hi >= 0 && f.taken[f.hi] {
		f.hi--
	}
}

// largest is the remaining pod with the biggest requests, which a new node must hold first.
func (f *filler) largest() int {
	best := -1
	for i := f.lo; i <= f.hi; i++ {
		if !f.taken[i] && (best < 0 || size(f.members[i].pod.Requests) > size(f.members[best].pod.Requests)) {
			best = i
		}
	}
	return best
}

// fill adds pods to n until none of those it looks at fits or the Filter plugins refuse.
func (f *filler) fill(n *openNode) {
	capacity := n.capacity
	for f.left > 0 {
		cpuFree := free(f.dim(capacity, corev1.ResourceCPU), f.dim(n.used, corev1.ResourceCPU))
		memFree := free(f.dim(capacity, corev1.ResourceMemory), f.dim(n.used, corev1.ResourceMemory))
		i := f.pick(capacity, n.used, memFree > cpuFree)
		if i < 0 {
			i = f.pick(capacity, n.used, memFree <= cpuFree)
		}
		if i < 0 || f.ps.filter(f.c, n.info) != "" {
			return
		}
		f.ps.place(f.c, n, f.members[i])
		f.take(i)
	}
}

// pick returns the first remaining pod from the memory-heavy end (or the cpu-heavy end) that fits.
func (f *filler) pick(capacity, used vec, memoryHeavy bool) int {
	for k, seen := 0, 0; seen < pickWindow; k++ {
		i := f.lo + k
		if memoryHeavy {
			i = f.hi - k
		}
		if i < f.lo || i > f.hi {
			return -1
		}
		if f.taken[i] {
			continue
		}
		seen++
		if fits(capacity, used, f.members[i].req) {
			return i
		}
	}
	return -1
}

func free(capacity, used int64) float64 {
	if capacity <= 0 {
		return 0
	}
	return float64(capacity-used) / float64(capacity)
}
