// Package ledger is the in-memory book of in-flight capacity: which pending pod was planned onto
// which claim. It is rebuilt from Claim objects on start, so it never holds anything the API
// server does not.
package ledger

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Reservation is a pod's place on a claim.
type Reservation struct {
	Claim string
	// NodeName is the node the claim's instance registers as; empty until the launch returns.
	NodeName string
}

// Ledger maps pods to the claims planned for them. Safe for concurrent use.
type Ledger struct {
	mu     sync.Mutex
	pods   map[types.UID]Reservation
	claims map[string]map[types.UID]bool
	// consumed remembers reservations Reserve took, so Unreserve can give them back.
	consumed map[types.UID]Reservation
}

// New returns an empty ledger.
func New() *Ledger {
	return &Ledger{pods: map[types.UID]Reservation{}, claims: map[string]map[types.UID]bool{}, consumed: map[types.UID]Reservation{}}
}

// Add records pods as planned onto claim (replacing any earlier reservation of theirs). Pods the
// scheduler has already reserved a node for are left alone.
func (l *Ledger) Add(claim, nodeName string, pods []types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	set := l.claims[claim]
	if set == nil {
		set = map[types.UID]bool{}
		l.claims[claim] = set
	}
	for _, uid := range pods {
		if _, taken := l.consumed[uid]; taken {
			continue
		}
		l.removeLocked(uid)
		l.pods[uid] = Reservation{Claim: claim, NodeName: nodeName}
		set[uid] = true
	}
}

// SetNodeName records the node name of a claim once its instance is known.
func (l *Ledger) SetNodeName(claim, nodeName string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid := range l.claims[claim] {
		r := l.pods[uid]
		r.NodeName = nodeName
		l.pods[uid] = r
	}
}

// Lookup returns the pod's reservation.
func (l *Ledger) Lookup(pod types.UID) (Reservation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.pods[pod]
	return r, ok
}

// Consumed returns the reservation the scheduler took for the pod when it reserved it a node
// (Consume), until Unconsume gives it back or the pod is forgotten.
func (l *Ledger) Consumed(pod types.UID) (Reservation, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.consumed[pod]
	return r, ok
}

// Pods returns the pods still reserved on claim.
func (l *Ledger) Pods(claim string) []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]types.UID, 0, len(l.claims[claim]))
	for uid := range l.claims[claim] {
		out = append(out, uid)
	}
	return out
}

// Waits says whether any pod waits on the claim.
func (l *Ledger) Waits(claim string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.claims[claim]) > 0
}

// Waiting counts the pods planned onto claims and not yet given a node by the scheduler.
func (l *Ledger) Waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pods)
}

// Consume is called when the scheduler reserves a node for the pod: the pod no longer waits for
// its claim, whether it landed on the claim's node or found room elsewhere.
func (l *Ledger) Consume(pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if r, ok := l.pods[pod]; ok {
		l.consumed[pod] = r
		l.removeLocked(pod)
	}
}

// Unconsume undoes Consume when the scheduler unreserves (binding failed): the pod waits for
// its claim again.
func (l *Ledger) Unconsume(pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r, ok := l.consumed[pod]
	if !ok {
		return
	}
	delete(l.consumed, pod)
	if _, live := l.claims[r.Claim]; !live {
		return // the claim is gone; the pod will be planned again
	}
	l.pods[pod] = r
	l.claims[r.Claim][pod] = true
}

// Forget drops a pod (deleted, or bound for good).
func (l *Ledger) Forget(pod types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.removeLocked(pod)
	delete(l.consumed, pod)
}

// DropClaim removes a claim (failed or deleted) and returns the pods that were waiting on it,
// which must now be planned again.
func (l *Ledger) DropClaim(claim string) []types.UID {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []types.UID
	for uid := range l.claims[claim] {
		delete(l.pods, uid)
		out = append(out, uid)
	}
	delete(l.claims, claim)
	return out
}

// Claims returns the names of claims with at least one waiting pod.
func (l *Ledger) Claims() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]string, 0, len(l.claims))
	for c, pods := range l.claims {
		if len(pods) > 0 {
			out = append(out, c)
		}
	}
	return out
}

func (l *Ledger) removeLocked(pod types.UID) {
	r, ok := l.pods[pod]
	if !ok {
		return
	}
	delete(l.pods, pod)
	if set := l.claims[r.Claim]; set != nil {
		delete(set, pod)
	}
}
