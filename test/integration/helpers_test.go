package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
	"github.com/tailor-eks/tailor/pkg/cloud"
	"github.com/tailor-eks/tailor/pkg/cloud/ec2"
	"github.com/tailor-eks/tailor/pkg/sim/env"
)

const waitTimeout = 60 * time.Second

// newNamespace gives a test its own namespace and, when it ends, a clean cluster: its pods
// gone, every launched instance terminated, every claim and launched node removed.
func newNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	ns := "t-" + rand.String(6)
	if _, err := world.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resetCluster(t, ns) })
	return ns
}

func resetCluster(t *testing.T, ns string) {
	ctx := context.Background()
	zero := int64(0)
	// The namespace goes first: once it is terminating, no controller can create a pod in it
	// again (a ReplicaSet whose Deployment was just deleted would, until the garbage collector
	// took it), so no pod of this test is planned during the next one.
	_ = world.Client.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	_ = world.Client.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = world.Client.AppsV1().StatefulSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	background := metav1.DeletePropagationBackground
	_ = world.Client.BatchV1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{PropagationPolicy: &background}, metav1.ListOptions{})
	// DaemonSets count against every plan: make sure none outlives its test (namespace deletion
	// is asynchronous).
	_ = world.Client.AppsV1().DaemonSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	_ = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		dss, err := world.Client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(dss.Items) == 0, nil
	})
	_ = world.Client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
	insts, err := world.Cloud.Instances(ctx, map[string]string{v1alpha1.TagClusterPrefix + clusterName: v1alpha1.TagOwnedValue})
	if err != nil {
		t.Errorf("listing instances: %v", err)
	}
	var ids []string
	for _, in := range insts {
		ids = append(ids, in.ID)
	}
	if len(ids) > 0 {
		if err := world.Cloud.Terminate(ctx, ids...); err != nil {
			t.Errorf("terminating: %v", err)
		}
	}
	dc := dynamic.NewForConfigOrDie(world.CP.Config)
	_ = dc.Resource(v1alpha1.ClaimResource).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{})
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		nodes, err := world.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, n := range nodes.Items {
			if n.Spec.ProviderID != "" {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Errorf("launched nodes did not go away: %v", err)
	}
	// A claim still launching when it was deleted goes once its launch ends; until then it is
	// in-flight capacity the next test's pods would be planned onto.
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := dc.Resource(v1alpha1.ClaimResource).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) == 0, nil
	})
	if err != nil {
		t.Errorf("claims did not go away: %v", err)
	}
}

type podOption func(*corev1.Pod)

func withNodeSelector(k, v string) podOption {
	return func(p *corev1.Pod) {
		if p.Spec.NodeSelector == nil {
			p.Spec.NodeSelector = map[string]string{}
		}
		p.Spec.NodeSelector[k] = v
	}
}

func withToleration(key, value string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpEqual, Value: value, Effect: corev1.TaintEffectNoSchedule})
	}
}

func podSpec(cpu, mem string, opts ...podOption) corev1.PodSpec {
	p := &corev1.Pod{Spec: corev1.PodSpec{
		SchedulerName: "tailor",
		Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}}}},
	}}
	for _, o := range opts {
		o(p)
	}
	return p.Spec
}

func createPod(t *testing.T, ns, name, cpu, mem string, opts ...podOption) *corev1.Pod {
	t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}}, Spec: podSpec(cpu, mem, opts...)}
	p, err := world.Client.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitRunning waits until n pods of the namespace are Running on a node and returns them.
func waitRunning(t *testing.T, ns string, n int) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := world.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		pods = pods[:0]
		for _, p := range list.Items {
			if p.Status.Phase == corev1.PodRunning && p.Spec.NodeName != "" {
				pods = append(pods, p)
			}
		}
		return len(pods) >= n, nil
	})
	if err != nil {
		t.Fatalf("%d of %d pods Running in %s: %v\n%s", len(pods), n, ns, err, describePods(ns))
	}
	return pods
}

func describePods(ns string) string {
	list, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range list.Items {
		fmt.Fprintf(&b, "  %s phase=%s node=%s nominated=%s", p.Name, p.Status.Phase, p.Spec.NodeName, p.Status.NominatedNodeName)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " unschedulable=%q", c.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// waitEvent waits for an event on the pod with the reason and returns its message.
func waitEvent(t *testing.T, ns, pod, reason string) string {
	t.Helper()
	return waitEventOn(t, ns, "involvedObject.name="+pod, reason)
}

// waitEventOn waits for an event with the reason on the objects the field selector picks, and
// returns its message; with saying, only an event whose message has it counts.
func waitEventOn(t *testing.T, ns, selector, reason string, saying ...string) string {
	t.Helper()
	var msg string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		evs, err := world.Client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		if err != nil {
			return false, nil
		}
		for _, e := range evs.Items {
			if e.Reason == reason && (len(saying) == 0 || strings.Contains(e.Message, saying[0])) {
				msg = e.Message
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("no %s event %v on %s in %s: %v\n%s", reason, saying, selector, ns, err, describePods(ns))
	}
	return msg
}

func listClaims(t *testing.T) []*v1alpha1.Claim {
	t.Helper()
	dc := dynamic.NewForConfigOrDie(world.CP.Config)
	list, err := dc.Resource(v1alpha1.ClaimResource).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*v1alpha1.Claim
	for i := range list.Items {
		c, err := claims.FromUnstructured(&list.Items[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

func getNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n, err := world.Client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func instanceTypes(t *testing.T) map[string]*cloud.InstanceType {
	t.Helper()
	its, err := world.Cloud.InstanceTypes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]*cloud.InstanceType{}
	for i := range its {
		m[its[i].Name] = &its[i]
	}
	return m
}

// liveInstances are the simulator's instances that are not terminated.
func liveInstances() []cloud.Instance {
	var out []cloud.Instance
	for _, in := range world.Sim.Instances() {
		if in.State != cloud.StateTerminated && in.State != cloud.StateShuttingDown {
			out = append(out, in)
		}
	}
	return out
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// createDeployment creates a Deployment of replicas pods with the given spec, labelled app=name.
func createDeployment(t *testing.T, ns, name string, replicas int32, spec corev1.PodSpec) {
	t.Helper()
	if _, err := world.Client.AppsV1().Deployments(ns).Create(context.Background(), deployment(ns, name, replicas, spec), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// deployment is a Deployment of replicas pods labelled app=name.
func deployment(ns, name string, replicas int32, spec corev1.PodSpec) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	}
}

// watchPods calls f with the namespace's pods every 100 ms, in the background, until the
// returned stop is called. stop waits for the call under way and then calls f once more, so f
// has seen every pod that exists when stop is called (a pod created and Running within one
// interval is not missed). A list that fails is skipped.
func watchPods(ns string, f func(pods []corev1.Pod)) (stop func()) {
	observe := func() {
		if list, err := world.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{}); err == nil {
			f(list.Items)
		}
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			observe()
		}
	}()
	return func() { close(quit); <-done; observe() }
}

// leaseHolder is the holder of the named lease of Tailor's namespace ("" when none holds it).
func leaseHolder(t *testing.T, name string) string {
	t.Helper()
	l, err := world.Client.CoordinationV1().Leases(env.InstallNamespace).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// denyCreates makes the API server answer 403 Forbidden to every create of the rule's resources
// (in the namespaces the selector picks, or all), through a ValidatingAdmissionPolicy, as a
// policy engine would, until the returned func is called or the test ends. It returns once the
// policy is in force.
func denyCreates(t *testing.T, name string, rule admissionregistrationv1.Rule, namespaces *metav1.LabelSelector, message string) (remove func()) {
	t.Helper()
	ctx := context.Background()
	fail, forbidden := admissionregistrationv1.Fail, metav1.StatusReasonForbidden
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create}, Rule: rule},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: message, Reason: &forbidden}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: namespaces},
		},
	}
	api := world.Client.AdmissionregistrationV1()
	if _, err := api.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := api.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove = func() {
		_ = api.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{})
		_ = api.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	return remove
}

// launchDirect launches an instance of the cluster outside Tailor, with the cluster's ownership
// and pool tags and the given ones, whose user data lacks the cluster endpoint so it never
// registers (a client that knows only the cluster's name, as in
// TestUserDataWithoutEndpointNeverRegisters).
func launchDirect(t *testing.T, token string, tags map[string]string) cloud.Instance {
	t.Helper()
	ctx := context.Background()
	direct, err := ec2.New(ctx, ec2.Options{Region: world.Region, ClusterName: clusterName, KubernetesVersion: "1.34"})
	if err != nil {
		t.Fatal(err)
	}
	tags[v1alpha1.TagClusterPrefix+clusterName] = v1alpha1.TagOwnedValue
	tags[v1alpha1.TagPool] = "general"
	res, err := direct.Launch(ctx, cloud.LaunchRequest{
		ClientToken:      token + "-" + rand.String(5),
		CapacityType:     cloud.OnDemand,
		Overrides:        []cloud.Override{{InstanceType: "m5.large", SubnetID: world.Sim.Subnets()[0].ID}},
		Image:            "al2023",
		InstanceProfile:  "tailor-node",
		SecurityGroupIDs: []string{world.Sim.ClusterSecurityGroupID()},
		Tags:             tags,
		TemplateTags:     map[string]string{v1alpha1.TagPool: "general"},
	})
	if err != nil || res.Instance == nil {
		t.Fatalf("launch: %+v %v", res, err)
	}
	expectedRejections.Store(res.Instance.ID, true) // no endpoint in its user data
	return *res.Instance
}

// al2023Param is the SSM parameter of the AL2023 alias (for the control plane's 1.34) that
// resolves to image now.
func al2023Param(t *testing.T, image string) string {
	t.Helper()
	for _, arch := range []string{"x86_64", "arm64"} {
		p := "/aws/service/eks/optimized-ami/1.34/amazon-linux-2023/" + arch + "/standard/recommended/image_id"
		if cur, _ := world.Sim.SSMParameter(p); cur == image {
			return p
		}
	}
	t.Fatalf("image %q is what no AL2023 alias names", image)
	return ""
}

// createDaemonSet creates ds and waits until the running scheduler's informer has it. A plan
// counts the DaemonSets the scheduler has seen when the pods' batch closes; a pod created at
// once after its DaemonSet may be planned before the DaemonSet's watch event arrives (the
// same race a user has who applies both together), which these tests do not mean to measure.
func createDaemonSet(t *testing.T, ds *appsv1.DaemonSet) {
	t.Helper()
	if _, err := world.Client.AppsV1().DaemonSets(ds.Namespace).Create(context.Background(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lister := schedulerInformers.Load().(informers.SharedInformerFactory).Apps().V1().DaemonSets().Lister()
	if !pollWithin(waitTimeout, func() bool {
		_, err := lister.DaemonSets(ds.Namespace).Get(ds.Name)
		return err == nil
	}) {
		t.Fatalf("the scheduler never saw DaemonSet %s/%s", ds.Namespace, ds.Name)
	}
}
