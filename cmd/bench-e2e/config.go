package main

import (
	"fmt"
	"os"
	"time"

	"sigs.k8s.io/yaml"
)

// The scheduler configuration files: Tailor's, as the sandbox writes it, and the vanilla
// kube-scheduler's, made to match it.

func readConfig(path string) (map[string]any, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var cfg map[string]any
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
}

func writeConfig(path string, cfg map[string]any) error {
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// clientConnection is the config's clientConnection section.
func clientConnection(cfg map[string]any) (map[string]any, error) {
	cc, ok := cfg["clientConnection"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the scheduler config has no clientConnection")
	}
	return cc, nil
}

// setClientQPS sets the config's API client rate limit: qps, and a burst of twice that.
func setClientQPS(path string, qps float64) error {
	cfg, err := readConfig(path)
	if err != nil {
		return err
	}
	cc, err := clientConnection(cfg)
	if err != nil {
		return err
	}
	cc["qps"], cc["burst"] = qps, int(2*qps)
	return writeConfig(path, cfg)
}

// clientQPS reads the config's API client QPS.
func clientQPS(path string) (float64, error) {
	cfg, err := readConfig(path)
	if err != nil {
		return 0, err
	}
	cc, err := clientConnection(cfg)
	if err != nil {
		return 0, err
	}
	qps, ok := cc["qps"].(float64)
	if !ok {
		return 0, fmt.Errorf("%s: clientConnection.qps is %v", path, cc["qps"])
	}
	return qps, nil
}

// writeVanillaConfig writes a KubeSchedulerConfiguration for the vanilla kube-scheduler: one
// profile of the default plugins named vanilla, no leader election, and the client connection
// of Tailor's config (the chart's service account, the same QPS), so both run alike.
func writeVanillaConfig(tailorConfig, path string) (string, error) {
	tailor, err := readConfig(tailorConfig)
	if err != nil {
		return "", err
	}
	cc, err := clientConnection(tailor)
	if err != nil {
		return "", err
	}
	return path, writeConfig(path, map[string]any{
		"apiVersion":       tailor["apiVersion"],
		"kind":             "KubeSchedulerConfiguration",
		"clientConnection": cc,
		"leaderElection":   map[string]any{"leaderElect": false},
		"profiles":         []any{map[string]any{"schedulerName": vanillaSchedulerName}},
	})
}

// Tailor's defaults for the two settings consolidationLook reads (apis/config/v1).
const (
	defaultConsolidationInterval = 15 * time.Second
	defaultConsolidateAfter      = 30 * time.Second
)

// consolidationLook is how long consolidation takes to first look at a burst that has settled
// and to carry out what it decides then: the longest consolidateAfter of the config's pools
// (it waits that long after the last scale-up) and two consolidationIntervals (the pass that
// decides, and one for its drain to show).
func consolidationLook(path string) (time.Duration, error) {
	cfg, err := readConfig(path)
	if err != nil {
		return 0, err
	}
	interval, after := defaultConsolidationInterval, time.Duration(0)
	profiles, _ := cfg["profiles"].([]any)
	for _, prof := range profiles {
		pcs, _ := prof.(map[string]any)["pluginConfig"].([]any)
		for _, pc := range pcs {
			args, _ := pc.(map[string]any)["args"].(map[string]any)
			if args == nil || args["pools"] == nil {
				continue
			}
			if v, ok := args["consolidationInterval"].(string); ok {
				if interval, err = time.ParseDuration(v); err != nil {
					return 0, fmt.Errorf("%s: consolidationInterval: %w", path, err)
				}
			}
			pools, _ := args["pools"].([]any)
			for _, p := range pools {
				d := defaultConsolidateAfter
				if disruption, ok := p.(map[string]any)["disruption"].(map[string]any); ok {
					if v, ok := disruption["consolidateAfter"].(string); ok {
						if d, err = time.ParseDuration(v); err != nil {
							return 0, fmt.Errorf("%s: consolidateAfter: %w", path, err)
						}
					}
				}
				after = max(after, d)
			}
		}
	}
	return after + 2*interval, nil
}
