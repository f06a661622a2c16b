// Command scheduler is kube-scheduler with Tailor's plugin compiled in. Run it as a secondary
// scheduler; pods opt in with spec.schedulerName, and profiles enable the Tailor plugin with its
// pools in TailorArgs (see manifests/scheduler-config.yaml).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme"
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	_ "github.com/tailor-eks/tailor/apis/config/scheme"
	"github.com/tailor-eks/tailor/pkg/plugins/provisioner"
)

func main() {
	command := app.NewSchedulerCommand(
		app.WithPlugin(provisioner.Name, provisioner.New),
		// Registered so profiles can enable gang scheduling; Tailor provisions for gangs later.
		app.WithPlugin(coscheduling.Name, coscheduling.New),
	)
	os.Exit(cli.Run(command))
}
