package cleanup

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
)

// DefaultStopTimeout is how long ScaleDown waits for the scheduler's pods to be gone: their
// termination grace period (30 s by default) and some.
const DefaultStopTimeout = 2 * time.Minute

// ScaleDown returns a Cleaner.StopTailor that scales the scheduler's Deployment to zero and
// waits until none of its pods is left (a Deployment that does not exist is stopped already:
// cleanup run by hand after an uninstall). Helm deletes the Deployment right after its
// pre-delete hook anyway; scaling it first only closes the moment between the two.
func ScaleDown(client kubernetes.Interface, namespace, name string, timeout time.Duration) func(context.Context) error {
	return func(ctx context.Context) error {
		logger := klog.FromContext(ctx).WithValues("deployment", namespace+"/"+name)
		deployments := client.AppsV1().Deployments(namespace)
		scale, err := deployments.GetScale(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			logger.Info("The scheduler's Deployment does not exist: nothing to stop")
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the scale of deployment %s/%s: %w", namespace, name, err)
		}
		if scale.Spec.Replicas != 0 {
			scale.Spec.Replicas = 0
			if _, err := deployments.UpdateScale(ctx, name, scale, metav1.UpdateOptions{}); err != nil {
				return fmt.Errorf("scaling deployment %s/%s to 0: %w", namespace, name, err)
			}
			logger.Info("Scaled the scheduler's Deployment to 0", "replicasBefore", scale.Status.Replicas)
		}
		// The scale's selector is the Deployment's, as a string: what its pods are listed by.
		sel := scale.Status.Selector
		if sel == "" {
			return fmt.Errorf("deployment %s/%s reports no pod selector in its scale", namespace, name)
		}
		var left int
		err = wait.PollUntilContextTimeout(ctx, time.Second, timeout, true, func(ctx context.Context) (bool, error) {
			pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false, nil
			}
			left = len(pods.Items)
			return left == 0, nil
		})
		if err != nil {
			return fmt.Errorf("%d pods of deployment %s/%s still there after %s: %w", left, namespace, name, timeout, err)
		}
		logger.Info("The scheduler's pods are gone")
		return nil
	}
}
