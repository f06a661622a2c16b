// Package plugins lists the plugins compiled into Tailor's scheduler, so the binary and the
// integration tests build exactly the same scheduler.
package plugins

import (
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme" // CoschedulingArgs
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	_ "github.com/tailor-eks/tailor/apis/config/scheme" // TailorArgs
	"github.com/tailor-eks/tailor/pkg/plugins/provisioner"
)

// SchedulerOptions registers Tailor's plugin and the scheduler-plugins it ships with.
func SchedulerOptions() []app.Option {
	return []app.Option{
		app.WithPlugin(provisioner.Name, provisioner.New),
		// Registered so profiles can enable gang scheduling; gang-aware provisioning comes later.
		app.WithPlugin(coscheduling.Name, coscheduling.New),
	}
}
