package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	schedv1alpha1 "sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"
)

// burstCodecs decode the kinds a burst may hold: the built-in ones and Coscheduling's PodGroup.
var burstCodecs = func() serializer.CodecFactory {
	s := runtime.NewScheme()
	utilruntime.Must(scheme.AddToScheme(s))
	utilruntime.Must(schedv1alpha1.AddToScheme(s))
	return serializer.NewCodecFactory(s)
}()

// readBurst decodes the documents of a burst file. Every object goes into the bench's
// namespace, whatever its manifest says, so the bench knows which pods are the burst's.
func readBurst(path, namespace string) ([]runtime.Object, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	rd := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var objs []runtime.Object
	for {
		doc, err := rd.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if blank(doc) {
			continue
		}
		obj, gvk, err := burstCodecs.UniversalDeserializer().Decode(doc, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		m, ok := obj.(metav1.Object)
		if !ok {
			return nil, fmt.Errorf("%s: %s is not an object", path, gvk)
		}
		switch obj.(type) {
		case *appsv1.Deployment, *appsv1.StatefulSet, *appsv1.DaemonSet, *appsv1.ReplicaSet, *batchv1.Job,
			*corev1.Pod, *corev1.Service, *policyv1.PodDisruptionBudget, *schedv1alpha1.PodGroup:
		default:
			return nil, fmt.Errorf("%s: %s %s: the bench applies Deployments, StatefulSets, DaemonSets, ReplicaSets, Jobs, Pods, Services, PodDisruptionBudgets and PodGroups", path, gvk.Kind, m.GetName())
		}
		m.SetNamespace(namespace)
		objs = append(objs, obj)
	}
}

// applyBurst creates the namespace and the burst's objects in it, in file order.
func applyBurst(ctx context.Context, client kubernetes.Interface, podGroups pgclientset.Interface, namespace string, objs []runtime.Object) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, obj := range objs {
		var err error
		opts := metav1.CreateOptions{}
		switch o := obj.(type) {
		case *appsv1.Deployment:
			_, err = client.AppsV1().Deployments(namespace).Create(ctx, o, opts)
		case *appsv1.StatefulSet:
			_, err = client.AppsV1().StatefulSets(namespace).Create(ctx, o, opts)
		case *appsv1.DaemonSet:
			_, err = client.AppsV1().DaemonSets(namespace).Create(ctx, o, opts)
		case *appsv1.ReplicaSet:
			_, err = client.AppsV1().ReplicaSets(namespace).Create(ctx, o, opts)
		case *batchv1.Job:
			_, err = client.BatchV1().Jobs(namespace).Create(ctx, o, opts)
		case *corev1.Pod:
			_, err = client.CoreV1().Pods(namespace).Create(ctx, o, opts)
		case *corev1.Service:
			_, err = client.CoreV1().Services(namespace).Create(ctx, o, opts)
		case *policyv1.PodDisruptionBudget:
			_, err = client.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, o, opts)
		case *schedv1alpha1.PodGroup:
			_, err = podGroups.SchedulingV1alpha1().PodGroups(namespace).Create(ctx, o, opts)
		}
		if err != nil {
			return fmt.Errorf("creating %s: %w", obj.(metav1.Object).GetName(), err)
		}
	}
	return nil
}

// blank says whether a YAML document holds nothing but comments and space.
func blank(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if line = bytes.TrimSpace(line); len(line) > 0 && line[0] != '#' && string(line) != "---" {
			return false
		}
	}
	return true
}
