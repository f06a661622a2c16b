// Package nodeagent plays the part of the kubelets and the AWS cloud controller for simulated
// instances: each running instance of the cluster registers a Node the way an EKS node would
// (name = private DNS name, providerID, the labels the kubelet derives from the instance, the
// capacity and allocatable of its type, and the unregistered taint the launch user data asks
// for), and a Node whose instance is gone is deleted. kwok keeps the Nodes Ready and runs their
// pods; the agent marks its Nodes with the annotation kwok is told to manage.
package nodeagent

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/catalog"
	"github.com/tailor-eks/tailor/pkg/cloud"
)

// Annotation kwok selects the agent's nodes by (--manage-nodes-with-annotation-selector).
const (
	KwokAnnotation = "kwok.x-k8s.io/node"
	KwokValue      = "fake"
	// RegisteredByAnnotation marks the Nodes the agent registered; it deletes no other Node.
	RegisteredByAnnotation = "sim.tailor.dev/registered-by"
	registeredByValue      = "nodeagent"
)

// Agent registers and deregisters Nodes for simulated instances.
type Agent struct {
	Cloud       cloud.Provider
	Client      kubernetes.Interface
	ClusterName string
	Region      string
	// Period between polls of the cloud (default 500ms).
	Period time.Duration
}

// Run polls until ctx ends.
func (a *Agent) Run(ctx context.Context) {
	if a.Period == 0 {
		a.Period = 500 * time.Millisecond
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := a.Sync(ctx); err != nil && ctx.Err() == nil {
			klog.FromContext(ctx).V(2).Info("Node agent sync failed", "err", err)
		}
	}, a.Period)
}

// Sync registers Nodes for running instances and deletes Nodes of vanished ones.
func (a *Agent) Sync(ctx context.Context) error {
	insts, err := a.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + a.ClusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		return err
	}
	nodes, err := a.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	existing := map[string]*corev1.Node{}
	for i := range nodes.Items {
		existing[nodes.Items[i].Name] = &nodes.Items[i]
	}
	running := map[string]bool{}
	var types map[string]*cloud.InstanceType
	for i := range insts {
		in := &insts[i]
		if in.State != cloud.StateRunning || in.PrivateDNSName == "" {
			continue
		}
		running[in.PrivateDNSName] = true
		if _, ok := existing[in.PrivateDNSName]; ok {
			continue
		}
		if types == nil {
			its, err := a.Cloud.InstanceTypes(ctx)
			if err != nil {
				return err
			}
			types = map[string]*cloud.InstanceType{}
			for j := range its {
				types[its[j].Name] = &its[j]
			}
		}
		it, ok := types[in.Type]
		if !ok {
			continue
		}
		node := a.node(in, it)
		if _, err := a.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Node registered", "node", node.Name, "instance", in.ID, "type", in.Type)
	}
	for name, n := range existing {
		if n.Annotations[RegisteredByAnnotation] != registeredByValue || running[name] {
			continue
		}
		if err := a.Client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		klog.FromContext(ctx).V(2).Info("Node deleted: instance gone", "node", name)
	}
	return nil
}

func (a *Agent) node(in *cloud.Instance, it *cloud.InstanceType) *corev1.Node {
	labels := map[string]string{
		corev1.LabelHostname:             in.PrivateDNSName,
		corev1.LabelInstanceTypeStable:   in.Type,
		corev1.LabelInstanceType:         in.Type,
		corev1.LabelTopologyZone:         in.Zone,
		corev1.LabelTopologyRegion:       a.Region,
		corev1.LabelArchStable:           it.Arch,
		corev1.LabelOSStable:             "linux",
		"eks.amazonaws.com/compute-type": "ec2",
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        in.PrivateDNSName,
			Labels:      labels,
			Annotations: map[string]string{KwokAnnotation: KwokValue, RegisteredByAnnotation: registeredByValue},
		},
		Spec: corev1.NodeSpec{
			ProviderID: in.ProviderID(),
			Taints:     []corev1.Taint{{Key: v1alpha1.TaintUnregistered, Effect: corev1.TaintEffectNoExecute}},
		},
		Status: corev1.NodeStatus{
			Capacity:    catalog.Capacity(it),
			Allocatable: catalog.Allocatable(it),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: in.PrivateIP},
				{Type: corev1.NodeInternalDNS, Address: in.PrivateDNSName},
				{Type: corev1.NodeHostName, Address: in.PrivateDNSName},
			},
			NodeInfo: corev1.NodeSystemInfo{Architecture: it.Arch, OperatingSystem: "linux", KubeletVersion: "v1.34.7"},
		},
	}
}
