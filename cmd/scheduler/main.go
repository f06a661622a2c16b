// Command scheduler is kube-scheduler with Tailor's plugin compiled in. Run it as a secondary
// scheduler; pods opt in with spec.schedulerName, and profiles enable the Tailor plugin with its
// pools in TailorArgs. The Helm chart in manifests/charts/tailor renders that configuration into a
// ConfigMap and runs this binary with --config pointing at it (the example is in
// manifests/deploy/tailor.yaml, rendered from manifests/deploy/values.yaml). `scheduler cleanup`
// (pkg/cleanup) gives back Tailor's nodes and removes its finalizers before an uninstall.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/tailor-eks/tailor/pkg/cleanup"
	"github.com/tailor-eks/tailor/pkg/plugins"
)

func main() {
	setGCPercent(os.Getenv)
	command := app.NewSchedulerCommand(plugins.SchedulerOptions(plugins.ConfigFile(os.Args[1:]))...)
	// In the same binary, so the chart's uninstall hook runs it from the scheduler's image.
	command.AddCommand(cleanup.NewCommand())
	os.Exit(cli.Run(command))
}
