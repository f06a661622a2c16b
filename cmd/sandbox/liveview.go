package main

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/tailor-eks/tailor/apis/tailor/v1alpha1"
	"github.com/tailor-eks/tailor/pkg/claims"
)

// liveView prints the cluster's progress: a status line whenever it changes, and one line per
// launch.
type liveView struct {
	client   kubernetes.Interface
	dyn      dynamic.Interface
	start    time.Time
	reported map[string]bool
	last     string
	// known are the launched claims last seen, so a removal can be reported; draining the
	// nodes already reported draining.
	known    map[string]*v1alpha1.Claim
	draining map[string]bool
}

type snapshot struct {
	samplePods, sampleRunning int
	pending, running          int
	nodes, disrupting         int
	claims                    []*v1alpha1.Claim
	pricePerHour              float64
}

func newLiveView(client kubernetes.Interface, cfg *rest.Config) *liveView {
	return &liveView{client: client, dyn: dynamic.NewForConfigOrDie(cfg), start: time.Now(), reported: map[string]bool{},
		known: map[string]*v1alpha1.Claim{}, draining: map[string]bool{}}
}

func (v *liveView) take(ctx context.Context) (*snapshot, error) {
	s := &snapshot{}
	pods, err := v.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, p := range pods.Items {
		running := p.Status.Phase == corev1.PodRunning
		if running {
			s.running++
		} else if p.Status.Phase == corev1.PodPending {
			s.pending++
		}
		if p.Namespace == SampleNamespace {
			s.samplePods++
			if running {
				s.sampleRunning++
			}
		}
	}
	nodes, err := v.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	s.nodes = len(nodes.Items)
	for _, n := range nodes.Items {
		for _, t := range n.Spec.Taints {
			if t.Key == v1alpha1.TaintDisrupting {
				s.disrupting++
				if !v.draining[n.Name] {
					v.draining[n.Name] = true
					fmt.Printf("[%6.1fs] drain  %-16s (%s)\n", v.elapsed(), n.Name, t.Value)
				}
			}
		}
	}
	list, err := v.dyn.Resource(v1alpha1.ClaimResource).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		c, err := claims.FromUnstructured(&list.Items[i])
		if err != nil {
			continue
		}
		s.claims = append(s.claims, c)
		if p, err := strconv.ParseFloat(c.Status.PricePerHour, 64); err == nil {
			s.pricePerHour += p
		}
	}
	sort.Slice(s.claims, func(i, j int) bool { return s.claims[i].CreationTimestamp.Before(&s.claims[j].CreationTimestamp) })
	return s, nil
}

// watch prints progress every second until done says so (true) or ctx ends (false).
func (v *liveView) watch(ctx context.Context, done func(*snapshot) bool) bool {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		if s, err := v.take(ctx); err == nil {
			v.print(s)
			if done(s) {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func (v *liveView) print(s *snapshot) {
	current := map[string]bool{}
	for _, c := range s.claims {
		current[c.Name] = true
	}
	for name, c := range v.known {
		if !current[name] {
			delete(v.known, name)
			fmt.Printf("[%6.1fs] remove %-16s %-14s %-11s %-9s $%s/h  (consolidated)\n", v.elapsed(), name, c.Status.InstanceType,
				c.Status.Zone, c.Status.CapacityType, c.Status.PricePerHour)
		}
	}
	for _, c := range s.claims {
		if c.Status.InstanceID != "" {
			v.known[c.Name] = c
		}
		if c.Status.InstanceID == "" || v.reported[c.Name] {
			continue
		}
		v.reported[c.Name] = true
		fmt.Printf("[%6.1fs] launch %-16s %-14s %-11s %-9s $%s/h  %d pods  %s\n", v.elapsed(), c.Name, c.Status.InstanceType,
			c.Status.Zone, c.Status.CapacityType, c.Status.PricePerHour, c.Spec.PodCount, c.Status.InstanceID)
	}
	line := fmt.Sprintf("pods: %d pending, %d running (sample %d/%d) | nodes: %d (%d draining) | claims: %d | fleet $%.4f/h",
		s.pending, s.running, s.sampleRunning, s.samplePods, s.nodes, s.disrupting, len(s.claims), s.pricePerHour)
	if line != v.last {
		v.last = line
		fmt.Printf("[%6.1fs] %s\n", v.elapsed(), line)
	}
}

func (v *liveView) elapsed() float64 { return time.Since(v.start).Seconds() }

// fleetPrice is the fleet's $/h now.
func (v *liveView) fleetPrice(ctx context.Context) float64 {
	s, err := v.take(ctx)
	if err != nil {
		return 0
	}
	return s.pricePerHour
}

// summary prints the fleet: one row per claim, with the pods it runs.
func (v *liveView) summary(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	s, err := v.take(ctx)
	if err != nil {
		fmt.Println("summary unavailable:", err)
		return
	}
	podsOn := map[string]int{}
	if pods, err := v.client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{}); err == nil {
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				podsOn[p.Spec.NodeName]++
			}
		}
	}
	fmt.Println("\nFleet summary")
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "CLAIM\tPOOL\tTYPE\tZONE\tCAPACITY\t$/H\tPODS\tNODE\tPHASE")
	for _, c := range s.claims {
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", c.Name, c.Spec.Pool, c.Status.InstanceType, c.Status.Zone,
			c.Spec.CapacityType, c.Status.PricePerHour, podsOn[c.Status.NodeName], c.Status.NodeName, c.Status.Phase)
	}
	fmt.Fprintf(w, "TOTAL\t\t%d nodes\t\t\t%.4f\t%d\t\t\n", len(s.claims), s.pricePerHour, s.running)
	_ = w.Flush()
	fmt.Printf("Elapsed %.1fs\n", v.elapsed())
}

// pendingReasons says why sample pods are still pending.
func (v *liveView) pendingReasons(ctx context.Context) string {
	pods, err := v.client.CoreV1().Pods(SampleNamespace).List(context.WithoutCancel(ctx), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning {
			continue
		}
		why := string(p.Status.Phase)
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue {
				why = c.Message
			}
		}
		out = append(out, fmt.Sprintf("%s: %s", p.Name, why))
	}
	if len(out) == 0 {
		return "no sample pods were created"
	}
	return strings.Join(out, "; ")
}
