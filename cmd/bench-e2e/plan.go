package main

import (
	"context"
	"os"

	"github.com/tailor-eks/tailor/pkg/dryrun"
)

// planBurst plans the burst's manifests in process, as `plan -f <burst> --config <config>`
// would: the profile of the config file Tailor's scheduler runs with, over the shipped catalog
// served by an in-process simulator of the same region and zones as the cluster's, so the
// types, offerings and (synthetic) spot prices are the ones the running scheduler reads.
func planBurst(ctx context.Context, burst, config string, zones []string) (*dryrun.Result, error) {
	return dryrun.Plan(ctx, dryrun.Options{Files: []string{burst}, Config: config, Catalog: "shipped", Zones: zones, Warnings: os.Stderr})
}

// plannedPods is how many pods the manifests make, DaemonSets aside: every pod the plan placed
// or could not.
func plannedPods(res *dryrun.Result) int {
	n := len(res.Plan.Unschedulable)
	for _, node := range res.Plan.Nodes {
		n += len(node.Pods)
	}
	for _, pods := range res.Existing {
		n += len(pods)
	}
	return n
}
