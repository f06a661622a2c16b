// Command plan shows what Tailor would launch for a set of Kubernetes manifests, with no
// cluster: the same planner and the same scheduler plugins as the running scheduler, over the
// shipped us-east-1 catalog (or the live EC2 catalog with --catalog=aws).
//
//	go run ./cmd/plan -f manifests/examples/ [--config my-scheduler-config.yaml] [-o json]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tailor-eks/tailor/pkg/dryrun"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "plan:", err)
		os.Exit(2)
	}
}

// paths collects repeated -f flags.
type paths []string

func (p *paths) String() string     { return strings.Join(*p, ",") }
func (p *paths) Set(v string) error { *p = append(*p, v); return nil }

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var files paths
	fs.Var(&files, "f", "manifest file, directory or - for stdin (repeatable): Pods, Deployments, ReplicaSets, StatefulSets, Jobs, CronJobs, DaemonSets, Nodes")
	o := dryrun.Options{Stdin: stdin, Warnings: stderr}
	var output, zones string
	fs.StringVar(&o.Config, "config", "", "KubeSchedulerConfiguration file (default: the shipped example, the ConfigMap of manifests/deploy/tailor.yaml rendered from manifests/deploy/values.yaml)")
	fs.StringVar(&o.SchedulerName, "scheduler-name", "", "profile to plan for (default: the profile that configures Tailor)")
	fs.StringVar(&output, "o", "table", "output format: table or json")
	fs.StringVar(&o.Catalog, "catalog", "shipped", "instance types and prices: shipped (us-east-1 data in the binary, spot prices synthetic) or aws (the live EC2 and Pricing APIs, default AWS credentials)")
	fs.StringVar(&zones, "zones", "us-east-1a,us-east-1b,us-east-1c", "zones the pools have subnets in (shipped catalog only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q (manifests go after -f)", fs.Arg(0))
	}
	if len(files) == 0 {
		return fmt.Errorf("-f: give at least one manifest file, directory or -")
	}
	o.Files = files
	for _, z := range strings.Split(zones, ",") {
		if z = strings.TrimSpace(z); z != "" {
			o.Zones = append(o.Zones, z)
		}
	}
	switch output {
	case "table", "json":
	default:
		return fmt.Errorf("-o: unsupported format %q (table or json)", output)
	}
	switch o.Catalog {
	case "shipped", "aws":
	default:
		return fmt.Errorf("--catalog: unsupported value %q (shipped or aws)", o.Catalog)
	}
	if o.Catalog == "shipped" && len(o.Zones) == 0 {
		return fmt.Errorf("--zones: give at least one zone")
	}
	res, err := dryrun.Plan(ctx, o)
	if err != nil {
		return err
	}
	if output == "json" {
		return writeJSON(stdout, res)
	}
	return writeTable(stdout, res)
}
