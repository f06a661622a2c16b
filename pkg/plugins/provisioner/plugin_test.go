package provisioner

import (
	"testing"

	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// A status is the gang's when Coscheduling's PreFilter set it: absent nodes carry it, and a node
// a Filter plugin refused does not.
func TestHeldForGang(t *testing.T) {
	prefiltered := framework.NewDefaultNodeToStatus()
	prefiltered.SetAbsentNodesStatus(fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "too few pods").WithPlugin("Coscheduling"))
	filtered := framework.NewDefaultNodeToStatus()
	filtered.Set("node-1", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	for _, tc := range []struct {
		name     string
		statuses framework.NodeToStatusReader
		node     string
		want     bool
	}{
		{"Coscheduling's PreFilter, any node", prefiltered, "node-1", true},
		{"Coscheduling's PreFilter, no node", prefiltered, "", true},
		{"a Filter plugin refused the node", filtered, "node-1", false},
		{"another node, Filter statuses", filtered, "", false},
		{"no statuses", nil, "node-1", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := heldForGang(tc.statuses, tc.node); got != tc.want {
				t.Errorf("heldForGang = %v, want %v", got, tc.want)
			}
		})
	}
}

// A node refused the pod for where its siblings run when a topology spread or pod (anti-)affinity
// turned it away; resources, taints or a missing node say nothing of the siblings.
func TestRefusedForSiblings(t *testing.T) {
	statuses := framework.NewDefaultNodeToStatus()
	statuses.Set("spread", fwk.NewStatus(fwk.Unschedulable, "node(s) didn't match pod topology spread constraints").WithPlugin("PodTopologySpread"))
	statuses.Set("affinity", fwk.NewStatus(fwk.Unschedulable, "node(s) didn't satisfy existing pods anti-affinity rules").WithPlugin("InterPodAffinity"))
	statuses.Set("full", fwk.NewStatus(fwk.Unschedulable, "Insufficient cpu").WithPlugin("NodeResourcesFit"))
	for _, tc := range []struct {
		statuses framework.NodeToStatusReader
		node     string
		want     bool
	}{
		{statuses, "spread", true},
		{statuses, "affinity", true},
		{statuses, "full", false},
		{statuses, "absent", false},
		{nil, "spread", false},
	} {
		t.Run(tc.node, func(t *testing.T) {
			if got := refusedForSiblings(tc.statuses, tc.node); got != tc.want {
				t.Errorf("refusedForSiblings = %v, want %v", got, tc.want)
			}
		})
	}
}
