package provisioning

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// poolLimits admits new claims against each pool's cpu and memory limits. Usage is the capacity
// of every live claim of the pool; claims this process created in the last minute are counted
// even before the informer shows them, so concurrent launches of one batch cannot overshoot.
type poolLimits struct {
	mu     sync.Mutex
	recent map[string]recentClaim
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
// break. create runs under the lock and must record the claim (its name is returned).
func (pl *poolLimits) admit(ctx context.Context, l *Launcher, pool *config.Pool, types []string, create func() (string, error)) (string, error) {
	its, err := l.Cloud.InstanceTypes(ctx)
	if err != nil {
		return "", err
	}
	byName := make(map[string]*cloud.InstanceType, len(its))
	for i := range its {
		byName[its[i].Name] = &its[i]
	}
	capacityOf := func(names ...string) corev1.ResourceList {
		var largest corev1.ResourceList
		for _, n := range names {
			if it, ok := byName[n]; ok {
				c := catalog.Capacity(it)
				if largest == nil || c.Cpu().Cmp(*largest.Cpu()) > 0 {
					largest = c
				}
			}
		}
		return largest
	}

	pl.mu.Lock()
	defer pl.mu.Unlock()
	if pl.recent == nil {
		pl.recent = map[string]recentClaim{}
	}
	need := capacityOf(types...)
	if len(pool.Limits) > 0 && need != nil {
		used := corev1.ResourceList{}
		add := func(rl corev1.ResourceList) {
			for name, q := range rl {
				v := used[name]
				v.Add(q)
				used[name] = v
			}
		}
		seen := map[string]bool{}
		for _, c := range l.Claims.List() {
			if c.Spec.Pool != pool.Name || c.Status.Phase == v1alpha1.ClaimFailed {
				continue
			}
			seen[c.Name] = true
			if c.Status.InstanceType != "" {
				add(capacityOf(c.Status.InstanceType))
			} else {
				add(capacityOf(c.Spec.InstanceTypes...))
			}
		}
		for name, r := range pl.recent {
			if l.clock().Since(r.at) > time.Minute {
				delete(pl.recent, name)
			} else if r.pool == pool.Name && !seen[name] {
				add(r.capacity)
			}
		}
		for name, limit := range pool.Limits {
			q := used[name]
			q.Add(need[name])
			if q.Cmp(limit) > 0 {
				u := used[name]
				n := need[name]
				return "", &LimitError{Pool: pool.Name, Resource: name, Limit: limit, Used: u, Need: n}
			}
		}
	}
	name, err := create()
	if err == nil && need != nil {
		pl.recent[name] = recentClaim{pool: pool.Name, capacity: need, at: l.clock().Now()}
	}
	return name, err
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
