package planning

import (
	"context"
	"fmt"
	"testing"
)

func TestZZDiag(t *testing.T) {
	tmpls := benchTemplates(t)
	offline(t).SetSnapshot(nil, nil)
	pods := []*Pod{pod(t, "big", "3500m", "4Gi", nil), pod(t, "small", "250m", "256Mi", nil)}
	pods[0].Pod.Labels = map[string]string{"app": "big"}
	pods[1].Pod.Labels = map[string]string{"app": "small"}
	pods = []*Pod{pod2(t, "big", "3500m", "4Gi"), pod2(t, "small", "250m", "256Mi")}
	plan := (&Planner{Templates: tmpls}).Plan(context.Background(), pods)
	for _, n := range plan.Nodes {
		fmt.Println(n.Template.Type.Name, n.Template.Offering.PricePerHour, len(n.Pods))
	}
	var w []*Pod
	for i := 0; i < 3; i++ {
		w = append(w, pod2(t, fmt.Sprint("web", i), "400m", "512Mi"))
	}
	plan = (&Planner{Templates: tmpls}).Plan(context.Background(), w)
	for _, n := range plan.Nodes {
		fmt.Println(n.Template.Type.Name, n.Template.Offering.PricePerHour, len(n.Pods))
	}
}

func pod2(t *testing.T, name, cpu, mem string) *Pod {
	p := pod(t, name, cpu, mem, nil)
	return p
}
