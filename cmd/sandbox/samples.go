package main

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/tailor-eks/tailor/manifests"
)

// SampleNamespace holds the sample workload.
const SampleNamespace = "sample"

// applySamples creates the documents of manifests/examples and returns how many Deployments.
func applySamples(ctx context.Context, client kubernetes.Interface) (int, error) {
	deployments := 0
	for _, doc := range manifests.Examples() {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return 0, fmt.Errorf("sample manifest: %w", err)
		}
		switch o := obj.(type) {
		case *corev1.Namespace:
			_, err = client.CoreV1().Namespaces().Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			_, err = client.AppsV1().Deployments(o.Namespace).Create(ctx, o, metav1.CreateOptions{})
			deployments++
		default:
			return 0, fmt.Errorf("sample manifest: unsupported kind %T", obj)
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return 0, err
		}
	}
	return deployments, nil
}

// The scale-down the sandbox shows once the sample has settled.
const (
	scaleDownDeployment = "web"
	scaleDownTo         = 1
)

// scaleSample sets a sample Deployment's replicas.
func scaleSample(ctx context.Context, client kubernetes.Interface, name string, replicas int32) error {
	s, err := client.AppsV1().Deployments(SampleNamespace).GetScale(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	s.Spec.Replicas = replicas
	_, err = client.AppsV1().Deployments(SampleNamespace).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
	return err
}
