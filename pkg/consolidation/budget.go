package consolidation

import (
	"math"
	"time"

	"github.com/tailor-eks/tailor/apis/config"
	"github.com/tailor-eks/tailor/apis/config/validation"
)

// allowed is how many of a pool's nodes may be disrupting at once now: the strictest budget
// active at now, for a pool of poolNodes nodes. A percentage rounds up, so "10%" of a small pool
// still allows one.
func allowed(d *config.Disruption, poolNodes int, now time.Time) int {
	limit := math.MaxInt
	for _, b := range d.Budgets {
		if !active(b, now) {
			continue
		}
		n, percent, err := validation.ParseBudgetNodes(b.Nodes)
		if err != nil {
			return 0 // validated at start; refuse rather than guess
		}
		if percent {
			n = int(math.Ceil(float64(poolNodes) * float64(n) / 100))
		}
		if n < limit {
			limit = n
		}
	}
	if limit == math.MaxInt {
		return poolNodes
	}
	return limit
}

// active says whether a budget applies at now: always, or within Duration of the most recent
// time its schedule fired.
func active(b config.Budget, now time.Time) bool {
	if b.Schedule == "" {
		return true
	}
	sched, err := validation.ParseSchedule(b.Schedule)
	if err != nil {
		return true // validated at start; the stricter reading is that it applies
	}
	now = now.UTC()
	// The window is open if the schedule fired in (now-Duration, now].
	next := sched.Next(now.Add(-b.Duration.Duration))
	return !next.After(now)
}
