package dryrun

import (
	"context"
	"strconv"
	"strings"
	"testing"
)

// gangManifests is a PodGroup of minMember and pods of it, each requesting cpu, kept one per node.
func gangManifests(name string, minMember, pods int, podGroup bool) string {
	var b strings.Builder
	if podGroup {
		b.WriteString("apiVersion: scheduling.x-k8s.io/v1alpha1\nkind: PodGroup\nmetadata: {name: " + name + ", namespace: ml}\nspec: {minMember: " + strconv.Itoa(minMember) + "}\n")
	}
	for i := range pods {
		b.WriteString("---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: " + name + "-" + strconv.Itoa(i) + "\n  namespace: ml\n  labels: {scheduling.x-k8s.io/pod-group: " + name + ", app: " + name + "}\n" +
			"spec:\n  affinity:\n    podAntiAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n" +
			"      - {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: " + name + "}}}\n" +
			"  containers: [{name: c, image: x, resources: {requests: {cpu: \"2\", memory: 4Gi}}}]\n")
	}
	return b.String()
}

// A gang is placed whole, in one zone, or each of its pods is listed unschedulable with why.
func TestPlanGangs(t *testing.T) {
	for _, tc := range []struct {
		name      string
		manifests string
		placed    int
		why       string
	}{
		{"whole gang", gangManifests("train", 4, 4, true), 4, ""},
		{"short of minMember", gangManifests("train", 5, 4, true), 0, "gang ml/train has 4 of its minMember 5 pods"},
		{"no PodGroup", gangManifests("train", 4, 4, false), 0, "its PodGroup ml/train is not in the manifests"},
		{"beside other pods", gangManifests("train", 2, 2, true) + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: ml}\n" +
			"spec: {containers: [{name: c, image: x, resources: {requests: {cpu: \"30\", memory: 4Gi}}}]}\n", 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Plan(context.Background(), Options{Files: []string{"-"}, Stdin: strings.NewReader(tc.manifests), Catalog: "shipped", Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}})
			if err != nil {
				t.Fatal(err)
			}
			zones, placed := map[string]bool{}, 0
			for _, n := range res.Plan.Nodes {
				for _, p := range n.Pods {
					if strings.HasPrefix(p.Pod.Name, "train-") {
						placed++
						zones[n.Template.Offering.Zone] = true
					}
				}
			}
			if placed != tc.placed || placed > 0 && len(zones) != 1 {
				t.Errorf("%d gang pods placed in zones %v, want %d in one zone", placed, zones, tc.placed)
			}
			refused := 0
			for _, u := range res.Plan.Unschedulable {
				if strings.HasPrefix(u.Pod.Name, "train-") {
					refused++
					if !strings.Contains(u.Reason, tc.why) {
						t.Errorf("pod %s: %q, want it to say %q", u.Pod.Name, u.Reason, tc.why)
					}
				}
			}
			if tc.why != "" && refused != 4 {
				t.Errorf("%d gang pods unschedulable, want all 4", refused)
			}
			if tc.name == "beside other pods" && len(res.Plan.Nodes) != 3 {
				t.Errorf("%d nodes, want the gang's 2 and web's own", len(res.Plan.Nodes))
			}
			if res.LowerBound <= 0 && len(res.Plan.Nodes) > 0 {
				t.Errorf("lower bound %v for a plan of %d nodes", res.LowerBound, len(res.Plan.Nodes))
			}
		})
	}
}
