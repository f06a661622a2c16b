package planning

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// dims maps the resource names of one plan to positions in a vector. Packing compares vectors of
// int64 milli-units: resource.Quantity arithmetic is far too slow for tens of thousands of pods.
type dims struct {
	index map[corev1.ResourceName]int
	names []corev1.ResourceName
}

// podsDim is the position of the pod-count dimension in every vector.
const podsDim = 0

func newDims() *dims {
	d := &dims{index: map[corev1.ResourceName]int{}}
	d.add(corev1.ResourcePods)
	return d
}

func (d *dims) add(name corev1.ResourceName) int {
	if i, ok := d.index[name]; ok {
		return i
	}
	d.index[name] = len(d.names)
	d.names = append(d.names, name)
	return len(d.names) - 1
}

// vec converts a resource list; names not yet known are added. A pod's vector counts itself
// in the pods dimension.
func (d *dims) vec(rl corev1.ResourceList, isPod bool) vec {
	for name := range rl {
		d.add(name)
	}
	v := make(vec, len(d.names))
	for name, q := range rl {
		v[d.index[name]] = q.MilliValue()
	}
	if isPod {
		v[podsDim] = 1000
	}
	return v
}

// requested is what the pods of info request, as the scheduler's NodeInfo sums it (each pod's
// requests computed once, on its PodInfo), with the pods counted in the pods dimension. The
// NodeInfo keeps memory, storage and extended resources in whole units, the vector in
// milli-units. It is the scheduler's own count of a node's room: a pod resized in place counts
// with the larger of its spec and its status, as kube-scheduler counts it.
func (d *dims) requested(info *framework.NodeInfo) vec {
	r := info.Requested
	amounts := map[corev1.ResourceName]int64{corev1.ResourcePods: int64(len(info.Pods)) * 1000, corev1.ResourceCPU: r.MilliCPU,
		corev1.ResourceMemory: r.Memory * 1000, corev1.ResourceEphemeralStorage: r.EphemeralStorage * 1000}
	for name, q := range r.ScalarResources {
		amounts[name] = q * 1000
	}
	for name, q := range amounts {
		if q != 0 {
			d.add(name)
		}
	}
	v := make(vec, len(d.names))
	for name, q := range amounts {
		if q != 0 {
			v[d.index[name]] = q
		}
	}
	return v
}

// vec is a resource vector in milli-units, indexed by dims.
type vec []int64

// fits says whether used+req stays within capacity in every dimension.
func fits(capacity, used, req vec) bool { return short(capacity, used, req) < 0 }

// short is the first dimension in which capacity cannot hold used+req, or -1. Vectors made
// before a dimension was added are shorter; missing entries are zero.
func short(capacity, used, req vec) int {
	for i, r := range req {
		if r == 0 {
			continue
		}
		var u, c int64
		if i < len(used) {
			u = used[i]
		}
		if i < len(capacity) {
			c = capacity[i]
		}
		if u+r > c {
			return i
		}
	}
	return -1
}

// max is the larger of v and o in every dimension, as a new vector.
func (v vec) max(o vec) vec {
	out := make(vec, max(len(v), len(o)))
	copy(out, v)
	for i, x := range o {
		out[i] = max(out[i], x)
	}
	return out
}

// sub subtracts o from v in place (see add).
func (v vec) sub(o vec) vec {
	for i, x := range o {
		if i < len(v) {
			v[i] -= x
		}
	}
	return v
}

// addTimes adds n times o to v.
func (v vec) addTimes(o vec, n int64) vec {
	if len(o) > len(v) {
		v = append(v, make(vec, len(o)-len(v))...)
	}
	for i, x := range o {
		v[i] += n * x
	}
	return v
}

func (v vec) add(o vec) vec {
	if len(o) > len(v) {
		v = append(v, make(vec, len(o)-len(v))...)
	}
	for i, x := range o {
		v[i] += x
	}
	return v
}

// missing names the first dimension in which capacity cannot hold used+req, the way the
// scheduler's NodeResourcesFit words it.
func (d *dims) missing(capacity, used, req vec) string {
	switch i := short(capacity, used, req); i {
	case -1:
		return ""
	case podsDim:
		return "Too many pods"
	default:
		return "Insufficient " + string(d.names[i])
	}
}

// fitCount is how many pods requesting req an empty node with capacity c holds.
func fitCount(c, req vec) int {
	n := int64(-1)
	for i, r := range req {
		if r == 0 {
			continue
		}
		var ci int64
		if i < len(c) {
			ci = c[i]
		}
		if k := ci / r; n < 0 || k < n {
			n = k
		}
	}
	if n < 0 {
		return 0
	}
	return int(n)
}

// size orders pods for packing by their CPU plus memory (1 CPU ~ 4 GiB).
func size(req corev1.ResourceList) float64 {
	cpu, mem := req[corev1.ResourceCPU], req[corev1.ResourceMemory]
	return float64(cpu.MilliValue())/1000 + float64(mem.Value())/float64(4<<30)
}

func addResources(sum, add corev1.ResourceList) corev1.ResourceList {
	if sum == nil {
		sum = corev1.ResourceList{}
	}
	for name, q := range add {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
	return sum
}
