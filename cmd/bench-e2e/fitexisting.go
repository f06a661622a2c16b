package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/tailor-eks/tailor/pkg/sim/nodeagent"
)

// The fit-existing phase: pods that fit nodes already there, so no scheduler needs to launch
// anything and the comparison is of scheduling alone. Its nodes are kwok nodes nobody launched
// (no Tailor label, no claim), labelled and tainted so that only its pods land on them.
const (
	fitNamespace   = "fit-existing"
	fitLabel       = "bench.tailor.dev/fit"
	fitSchedulerBy = "bench.tailor.dev/scheduler"
	fitPodsPerNode = 100
	// fitCreators create the pods in parallel, so creation outpaces either scheduler.
	fitCreators = 16
	fitTimeout  = 5 * time.Minute
)

// fitPhase measures one scheduler after the other on the same nodes.
type fitPhase struct {
	client kubernetes.Interface
	pods   int

	mu    sync.Mutex
	bound map[string]time.Time // pod name → first seen with a node
}

// runFitExisting creates the nodes, then the pods for Tailor (schedulerName tailor) and, once
// those are gone, for the vanilla kube-scheduler (schedulerName vanilla).
func runFitExisting(ctx context.Context, cfg *rest.Config, pods int, zones []string, tailorRSS, vanillaRSS *peakRSS) (*fitReport, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 1000, 2000
	f := &fitPhase{client: kubernetes.NewForConfigOrDie(cfg), pods: pods, bound: map[string]time.Time{}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fitNamespace}}
	if _, err := f.client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	nodes := (pods + fitPodsPerNode - 1) / fitPodsPerNode
	if err := f.createNodes(ctx, nodes, zones); err != nil {
		return nil, err
	}
	if err := f.watchBindings(ctx); err != nil {
		return nil, err
	}
	rep := &fitReport{Pods: pods, Nodes: nodes}
	for _, s := range []struct {
		name string
		rss  *peakRSS
		into *fitScheduler
	}{{"tailor", tailorRSS, &rep.Tailor}, {"vanilla", vanillaRSS, &rep.Vanilla}} {
		took, err := f.measure(ctx, s.name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		*s.into = fitScheduler{PodsPerSecond: round(float64(pods)/took.Seconds(), 1), Seconds: seconds(took), PeakRSSMiB: s.rss.MiB()}
		if err := f.deletePods(ctx, s.name); err != nil {
			return nil, err
		}
	}
	rep.PodsPerSecondRatio = ratio(rep.Tailor.PodsPerSecond, rep.Vanilla.PodsPerSecond)
	rep.PeakRSSRatio = ratio(rep.Tailor.PeakRSSMiB, rep.Vanilla.PeakRSSMiB)
	rep.RunPeakRSSMiB = schedulerPair{Tailor: tailorRSS.MiB(), Vanilla: vanillaRSS.MiB()}
	rep.RunPeakRSSRatio = ratio(rep.RunPeakRSSMiB.Tailor, rep.RunPeakRSSMiB.Vanilla)
	rep.RunPeakAnonMiB = schedulerPair{Tailor: tailorRSS.AnonMiB(), Vanilla: vanillaRSS.AnonMiB()}
	rep.RunPeakAnonRatio = ratio(rep.RunPeakAnonMiB.Tailor, rep.RunPeakAnonMiB.Vanilla)
	return rep, nil
}

// createNodes registers kwok nodes of 32 CPUs, 128 GiB and 110 pods, and waits until kwok has
// made them Ready.
func (f *fitPhase) createNodes(ctx context.Context, n int, zones []string) error {
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("32"), corev1.ResourceMemory: resource.MustParse("128Gi"),
		corev1.ResourcePods: resource.MustParse("110")}
	for i := range n {
		name := fmt.Sprintf("fit-%03d", i)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name: name,
				Labels: map[string]string{corev1.LabelHostname: name, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
					corev1.LabelTopologyZone: zones[i%len(zones)], fitLabel: "true"},
				Annotations: map[string]string{nodeagent.KwokAnnotation: nodeagent.KwokValue},
			},
			Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: fitLabel, Value: "true", Effect: corev1.TaintEffectNoSchedule}}},
			Status: corev1.NodeStatus{Capacity: rl, Allocatable: rl},
		}
		if _, err := f.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := f.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fitLabel + "=true"})
		if err != nil {
			return false, err
		}
		ready := 0
		for _, node := range list.Items {
			for _, c := range node.Status.Conditions {
				if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
					ready++
				}
			}
		}
		return ready == n, nil
	})
}

// watchBindings stamps each of the phase's pods when it is first seen bound.
func (f *fitPhase) watchBindings(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(f.client, 0, informers.WithNamespace(fitNamespace))
	inf := factory.Core().V1().Pods().Informer()
	seen := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName == "" {
			return
		}
		now := time.Now()
		f.mu.Lock()
		defer f.mu.Unlock()
		if _, ok := f.bound[p.Name]; !ok {
			f.bound[p.Name] = now
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: seen, UpdateFunc: func(_, obj any) { seen(obj) }}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	for _, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("pod cache of %s did not sync", fitNamespace)
		}
	}
	return nil
}

// measure creates the pods for the scheduler and returns the time from the first create call
// to the last pod seen bound.
func (f *fitPhase) measure(ctx context.Context, scheduler string) (time.Duration, error) {
	errs := make(chan error, fitCreators)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range fitCreators {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < f.pods; i += fitCreators {
				if _, err := f.client.CoreV1().Pods(fitNamespace).Create(ctx, fitPod(fitPodName(scheduler, i), scheduler), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return 0, fmt.Errorf("creating pods: %w", err)
	}
	var last time.Time
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, fitTimeout, true, func(context.Context) (bool, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := 0
		for i := range f.pods {
			if t, ok := f.bound[fitPodName(scheduler, i)]; ok {
				n++
				last = later(last, t)
			}
		}
		return n == f.pods, nil
	})
	if err != nil {
		return 0, fmt.Errorf("pods not all bound within %s: %w", fitTimeout, err)
	}
	return last.Sub(start), nil
}

func fitPodName(scheduler string, i int) string { return fmt.Sprintf("%s-%05d", scheduler, i) }

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func fitPod(name, scheduler string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: fitNamespace, Labels: map[string]string{fitSchedulerBy: scheduler}},
		Spec: corev1.PodSpec{
			SchedulerName: scheduler,
			NodeSelector:  map[string]string{fitLabel: "true"},
			Tolerations:   []corev1.Toleration{{Key: fitLabel, Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10", Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}}}},
		},
	}
}

// deleteAttempts is how many times deletePods asks for the scheduler's pods to go. A collection
// delete of thousands of pods on a loaded API server can outlast its request timeout, which
// ends the call part-way ("stream error ... INTERNAL_ERROR" after a 5000-pod burst); asking
// again deletes what is left.
const deleteAttempts = 3

// deletePods removes the scheduler's pods at once and waits until they are gone, so the next
// scheduler finds the nodes empty.
func (f *fitPhase) deletePods(ctx context.Context, scheduler string) error {
	sel := metav1.ListOptions{LabelSelector: fitSchedulerBy + "=" + scheduler}
	zero := int64(0)
	for attempt := 1; ; attempt++ {
		err := f.client.CoreV1().Pods(fitNamespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, sel)
		if err == nil {
			break
		}
		if attempt == deleteAttempts || ctx.Err() != nil {
			return fmt.Errorf("deleting the pods scheduled by %s (%d attempts): %w", scheduler, attempt, err)
		}
		progressf("deleting the pods scheduled by %s: %v; asking again", scheduler, err)
	}
	return wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, fitTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := f.client.CoreV1().Pods(fitNamespace).List(ctx, sel)
		return err == nil && len(list.Items) == 0, err
	})
}
