package provisioning

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
)

// createClaim creates the claim under a name derived from what it is for (key: its pods) rather
// than a generated one, so that asking again after the API server's
// answer was lost (a timeout after the write) finds the claim the first request created instead
// of making a second claim, and a second instance. AlreadyExists from a live claim for the same
// pods that has not reached its node yet is that claim; a name held by a claim that failed or is
// going, by one whose node registered (those pods were planned onto its node before: planned
// again, the node refused them), or (a hash collision) by one for other pods, falls back to a
// generated name.
func (l *Reservations) createClaim(ctx context.Context, claim *v1alpha1.Claim, key string) (*v1alpha1.Claim, error) {
	named := claim.DeepCopy()
	named.Name, named.GenerateName = claimName(claim.GenerateName, key), ""
	created, err := l.Claims.Create(ctx, named)
	if !apierrors.IsAlreadyExists(err) {
		return created, err
	}
	existing, ferr := l.Claims.Fetch(ctx, named.Name)
	if ferr == nil && existing.DeletionTimestamp == nil && existing.Status.Phase != v1alpha1.ClaimFailed &&
		existing.Status.Phase != v1alpha1.ClaimRegistered && samePods(existing.Spec.Pods, claim.Spec.Pods) {
		return existing, nil
	}
	return l.Claims.Create(ctx, claim) // GenerateName: a new attempt for the same pods
}

// claimName is prefix (the pool and a dash) and 10 hex digits of key's SHA-256.
func claimName(prefix, key string) string {
	sum := sha256.Sum256([]byte(key))
	return prefix + hex.EncodeToString(sum[:5])
}

// podsKey names a set of pods by their UIDs, in any order.
func podsKey(pods []v1alpha1.PodRef) string {
	uids := make([]string, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	slices.Sort(uids)
	return "pods:" + strings.Join(uids, ",")
}

func samePods(a, b []v1alpha1.PodRef) bool { return podsKey(a) == podsKey(b) }
