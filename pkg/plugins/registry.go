// Package plugins lists the plugins compiled into Tailor's scheduler, so the binary and the
// integration tests build exactly the same scheduler.
package plugins

import (
	"io"

	"github.com/spf13/pflag"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	_ "sigs.k8s.io/scheduler-plugins/apis/config/scheme" // CoschedulingArgs
	"sigs.k8s.io/scheduler-plugins/pkg/coscheduling"

	_ "github.com/tailor-eks/tailor/apis/config/scheme" // TailorArgs
	"github.com/tailor-eks/tailor/pkg/plugins/provisioner"
)

// SchedulerOptions registers Tailor's plugin and the scheduler-plugins it ships with.
// configFile is the scheduler's --config (see ConfigFile).
func SchedulerOptions(configFile string) []app.Option {
	return []app.Option{
		app.WithPlugin(provisioner.Name, provisioner.NewFactory(configFile)),
		// Registered so profiles can enable gang scheduling; gang-aware provisioning comes later.
		app.WithPlugin(coscheduling.Name, coscheduling.New),
	}
}

// ConfigFile finds the --config flag among the scheduler's arguments; kube-scheduler parses it
// too, but does not hand it to plugins.
func ConfigFile(args []string) string {
	fs := pflag.NewFlagSet("config", pflag.ContinueOnError)
	fs.ParseErrorsWhitelist.UnknownFlags = true
	fs.Usage = func() {}
	fs.SetOutput(io.Discard)
	config := fs.String("config", "", "")
	_ = fs.Parse(args)
	return *config
}
