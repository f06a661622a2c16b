package provisioning

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
)

// poolLimits admits new claims against each pool's cpu and memory limits. Usage is the capacity
// of every live claim of the pool; claims this process created in the last minute are counted
// even before the informer shows them, so concurrent launches of one batch cannot overshoot.
type poolLimits struct {
	mu     sync.Mutex
	recent map[string]recentClaim
	// capacity is each instance type's capacity, which never changes: the catalog is asked
	// only about a type not seen yet. (A burst records its claims concurrently; each reading,
	// and copying, the whole catalog held tens of MB at once.)
	capacity map[string]corev1.ResourceList
}

type recentClaim struct {
	pool     string
	capacity corev1.ResourceList
	at       time.Time
}

// forget stops counting a claim created recently: it was deleted.
func (pl *poolLimits) forget(claim string) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	delete(pl.recent, claim)
}

// admit reserves room for a node of the largest of types in pool, or says which limit it would
// break. create runs under the lock and must record the claim (its name is returned). A pool
// without limits admits every claim.
func (pl *poolLimits) admit(ctx context.Context, l *Reservations, pool *config.Pool, types []string, create func() (string, error)) (string, error) {
	names, err := pl.admitAll(ctx, l, []admission{{pool: pool, types: types}}, func() ([]string, error) {
		name, err := create()
		return []string{name}, err
	})
	if len(names) == 0 {
		return "", err
	}
	return names[0], err
}

// admission is one node to admit: the largest of types, in pool.
type admission struct {
	pool  *config.Pool
	types []string
}

// admitAll reserves room for every node of want together, or says which limit they would break
// together (a gang's nodes are admitted all or none). create runs under the lock and must record
// them, returning their claims' names in want's order.
func (pl *poolLimits) admitAll(ctx context.Context, l *Reservations, want []admission, create func() ([]string, error)) ([]string, error) {
	if !slices.ContainsFunc(want, func(a admission) bool { return len(a.pool.Limits) > 0 }) {
		return create()
	}
	pl.mu.Lock()
	defer pl.mu.Unlock()
	used := map[string]corev1.ResourceList{}
	needs := make([]recentClaim, len(want))
	for i, a := range want {
		if len(a.pool.Limits) == 0 {
			continue
		}
		if err := pl.learn(ctx, l, a.types); err != nil {
			return nil, err
		}
		if used[a.pool.Name] == nil {
			u, err := pl.used(ctx, l, a.pool)
			if err != nil {
				return nil, err
			}
			used[a.pool.Name] = u
		}
		need := pl.largest(a.types...)
		if need == nil {
			continue
		}
		if err := overLimit(a.pool, used[a.pool.Name], need); err != nil {
			return nil, err
		}
		addTo(used[a.pool.Name], need)
		needs[i] = recentClaim{pool: a.pool.Name, capacity: need}
	}
	names, err := create()
	for i, name := range names {
		if i < len(needs) && needs[i].capacity != nil && name != "" {
			needs[i].at = l.clock().Now()
			pl.recent[name] = needs[i]
		}
	}
	return names, err
}

// addTo adds rl to sum.
func addTo(sum, rl corev1.ResourceList) {
	for name, q := range rl {
		v := sum[name]
		v.Add(q)
		sum[name] = v
	}
}

// closed says which pools with limits have room for none of their types now, and why: the
// planner then plans their pods onto the next pool by weight. typesOf names a pool's types.
func (pl *poolLimits) closed(ctx context.Context, l *Reservations, pools []config.Pool, typesOf func(pool string) []string) (map[string]string, error) {
	pl.mu.Lock()
	defer pl.mu.Unlock()
	var out map[string]string
	for i := range pools {
		pool := &pools[i]
		types := typesOf(pool.Name)
		if len(pool.Limits) == 0 || len(types) == 0 {
			continue
		}
		if err := pl.learn(ctx, l, types); err != nil {
			return nil, err
		}
		used, err := pl.used(ctx, l, pool)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(types, func(t string) bool { return pl.capacity[t] == nil || overLimit(pool, used, pl.capacity[t]) == nil }) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[pool.Name] = overLimit(pool, used, pl.smallest(types...)).Error()
	}
	return out, nil
}

// used is the capacity the pool's live claims hold, with the claims this process created in
// the last minute that the cache does not show yet. pl.mu is held.
func (pl *poolLimits) used(ctx context.Context, l *Reservations, pool *config.Pool) (corev1.ResourceList, error) {
	claims := l.Claims.View()
	for _, c := range claims {
		if c.Spec.Pool == pool.Name {
			if err := pl.learn(ctx, l, append([]string{c.Status.InstanceType}, c.Spec.InstanceTypes...)); err != nil {
				return nil, err
			}
		}
	}
	if pl.recent == nil {
		pl.recent = map[string]recentClaim{}
	}
	used := corev1.ResourceList{}
	add := func(rl corev1.ResourceList) { addTo(used, rl) }
	seen := map[string]bool{}
	for _, c := range claims {
		if c.Spec.Pool != pool.Name || c.Status.Phase == v1alpha1.ClaimFailed {
			continue
		}
		seen[c.Name] = true
		if c.Status.InstanceType != "" {
			add(pl.largest(c.Status.InstanceType))
		} else {
			add(pl.largest(c.Spec.InstanceTypes...))
		}
	}
	for name, r := range pl.recent {
		if l.clock().Since(r.at) > time.Minute {
			delete(pl.recent, name)
		} else if r.pool == pool.Name && !seen[name] {
			add(r.capacity)
		}
	}
	return used, nil
}

// overLimit says which of the pool's limits a node of capacity need would break, on top of used.
func overLimit(pool *config.Pool, used, need corev1.ResourceList) error {
	for _, name := range slices.Sorted(maps.Keys(pool.Limits)) {
		limit := pool.Limits[name]
		q := used[name]
		q.Add(need[name])
		if q.Cmp(limit) > 0 {
			return &LimitError{Pool: pool.Name, Resource: name, Limit: limit, Used: used[name], Need: need[name]}
		}
	}
	return nil
}

// learn makes sure the capacity of every named type is known, asking the catalog for those
// not seen yet; a name the catalog lacks stays unknown (and is not asked again). pl.mu is held.
func (pl *poolLimits) learn(ctx context.Context, l *Reservations, names []string) error {
	for _, n := range names {
		if _, ok := pl.capacity[n]; n == "" || ok {
			continue
		}
		it, ok, err := l.Cloud.InstanceType(ctx, n)
		if err != nil {
			return err
		}
		if pl.capacity == nil {
			pl.capacity = map[string]corev1.ResourceList{}
		}
		pl.capacity[n] = nil
		if ok {
			pl.capacity[n] = catalog.Capacity(&it)
		}
	}
	return nil
}

// smallest is the capacity of the named type with the least cpu (nil if none is known).
// pl.mu is held.
func (pl *poolLimits) smallest(names ...string) corev1.ResourceList {
	var out corev1.ResourceList
	for _, n := range names {
		if c := pl.capacity[n]; c != nil && (out == nil || c.Cpu().Cmp(*out.Cpu()) < 0) {
			out = c
		}
	}
	return out
}

// largest is the capacity of the named type with the most cpu (nil if none is known).
// pl.mu is held.
func (pl *poolLimits) largest(names ...string) corev1.ResourceList {
	var out corev1.ResourceList
	for _, n := range names {
		if c := pl.capacity[n]; c != nil && (out == nil || c.Cpu().Cmp(*out.Cpu()) > 0) {
			out = c
		}
	}
	return out
}

// LimitError says a pool is at its limit.
type LimitError struct {
	Pool       string
	Resource   corev1.ResourceName
	Limit      resource.Quantity
	Used, Need resource.Quantity
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("pool %s is at its %s limit: %s in use, a new node needs %s, limit %s", e.Pool, e.Resource, e.Used.String(), e.Need.String(), e.Limit.String())
}
