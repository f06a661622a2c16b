package provisioning

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/planning"
)

// RecordGang records the planned nodes of a gang (podGroup, as namespace/name) as claims that
// share a spec.gang, admitted under their pools' limits together: all are recorded, or none (any
// recorded before a failure is deleted again). The lifecycle launches them once it sees them all.
func (l *Reservations) RecordGang(ctx context.Context, podGroup string, nodes []*planning.PlannedNode) error {
	gang := &v1alpha1.Gang{PodGroup: podGroup, ID: string(uuid.NewUUID()), Claims: len(nodes)}
	claims := make([]*v1alpha1.Claim, len(nodes))
	want := make([]admission, len(nodes))
	for i, n := range nodes {
		claims[i] = newClaim(n)
		for _, p := range n.Pods {
			claims[i].Spec.Pods = append(claims[i].Spec.Pods, v1alpha1.PodRef{Namespace: p.Pod.Namespace, Name: p.Pod.Name, UID: string(p.Pod.UID)})
		}
		claims[i].Spec.PodCount = len(claims[i].Spec.Pods)
		claims[i].Spec.Gang = gang
		want[i] = admission{pool: n.Template.Pool, types: claims[i].Spec.InstanceTypes}
	}
	created := make([]*v1alpha1.Claim, 0, len(claims))
	_, err := l.limits.admitAll(ctx, l, want, func() ([]string, error) {
		names := make([]string, 0, len(claims))
		for _, c := range claims {
			// A generated name: a claim of a gang is launched only with every sibling of its
			// spec.gang, so one whose answer was lost, never seen here, is failed by the
			// lifecycle rather than found again by name.
			cl, err := l.Claims.Create(ctx, c)
			if err != nil {
				return nil, fmt.Errorf("recording claim %d of %d: %w", len(created)+1, len(claims), err)
			}
			created = append(created, cl)
			names = append(names, cl.Name)
		}
		return names, nil
	})
	if err != nil {
		l.unrecord(ctx, created)
		return err
	}
	for _, cl := range created {
		uids := make([]types.UID, 0, len(cl.Spec.Pods))
		for _, ref := range cl.Spec.Pods {
			uids = append(uids, types.UID(ref.UID))
		}
		l.Ledger.Add(cl.Name, "", uids)
	}
	return nil
}

// unrecord deletes the claims of a gang that could not be recorded whole. Not yet all recorded,
// none was launched; one left behind (the API refused the delete too) is failed by the lifecycle
// when its siblings never come.
func (l *Reservations) unrecord(ctx context.Context, claims []*v1alpha1.Claim) {
	for _, cl := range claims {
		if err := l.Claims.Delete(ctx, cl.Name); err != nil && !apierrors.IsNotFound(err) {
			klog.FromContext(ctx).Error(err, "Cannot delete a claim of a gang recorded in part; the lifecycle fails it", "claim", cl.Name)
		}
	}
}
