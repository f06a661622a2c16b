package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/tailor-eks/tailor/pkg/dryrun"
)

type jsonPlan struct {
	Nodes             []jsonNode          `json:"nodes"`
	ExistingNodes     []jsonExisting      `json:"existingNodes,omitempty"`
	TotalPricePerHour float64             `json:"totalPricePerHour"`
	LowerBoundPerHour float64             `json:"lowerBoundPerHour"`
	Unschedulable     []jsonUnschedulable `json:"unschedulable"`
}

type jsonNode struct {
	Pool         string   `json:"pool"`
	InstanceType string   `json:"instanceType"`
	Zone         string   `json:"zone"`
	CapacityType string   `json:"capacityType"`
	PricePerHour float64  `json:"pricePerHour"`
	Pods         []string `json:"pods"`
}

type jsonExisting struct {
	Node string   `json:"node"`
	Pods []string `json:"pods"`
}

type jsonUnschedulable struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}

func toJSON(r *dryrun.Result) jsonPlan {
	out := jsonPlan{Nodes: []jsonNode{}, Unschedulable: []jsonUnschedulable{}, TotalPricePerHour: r.Plan.PricePerHour(), LowerBoundPerHour: r.LowerBound}
	for _, n := range r.Plan.Nodes {
		jn := jsonNode{Pool: n.Template.Pool.Name, InstanceType: n.Template.Type.Name, Zone: n.Template.Offering.Zone,
			CapacityType: string(n.Template.Offering.CapacityType), PricePerHour: n.Template.Offering.PricePerHour, Pods: []string{}}
		for _, p := range n.Pods {
			jn.Pods = append(jn.Pods, p.Pod.Namespace+"/"+p.Pod.Name)
		}
		out.Nodes = append(out.Nodes, jn)
	}
	names := make([]string, 0, len(r.Existing))
	for name := range r.Existing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		je := jsonExisting{Node: name}
		for _, p := range r.Existing[name] {
			je.Pods = append(je.Pods, p.Namespace+"/"+p.Name)
		}
		out.ExistingNodes = append(out.ExistingNodes, je)
	}
	for _, u := range r.Plan.Unschedulable {
		out.Unschedulable = append(out.Unschedulable, jsonUnschedulable{Pod: u.Pod.Namespace + "/" + u.Pod.Name, Reason: u.Reason})
	}
	return out
}

func writeJSON(w io.Writer, r *dryrun.Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(toJSON(r))
}

func writeTable(w io.Writer, r *dryrun.Result) error {
	j := toJSON(r)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tPOOL\tINSTANCE TYPE\tZONE\tCAPACITY\t$/H\tPODS")
	for i, n := range j.Nodes {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.4f\t%d\n", i+1, n.Pool, n.InstanceType, n.Zone, n.CapacityType, n.PricePerHour, len(n.Pods))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range j.ExistingNodes {
		fmt.Fprintf(w, "existing node %s takes %d pods\n", e.Node, len(e.Pods))
	}
	fmt.Fprintf(w, "\n%d new nodes, $%.4f/h; lower bound $%.4f/h", len(j.Nodes), j.TotalPricePerHour, j.LowerBoundPerHour)
	if j.LowerBoundPerHour > 0 {
		fmt.Fprintf(w, " (plan = %.3f × bound)", j.TotalPricePerHour/j.LowerBoundPerHour)
	}
	fmt.Fprintln(w)
	for _, u := range j.Unschedulable {
		fmt.Fprintf(w, "unschedulable %s: %s\n", u.Pod, u.Reason)
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(w, "skipped %s\n", s)
	}
	return nil
}
