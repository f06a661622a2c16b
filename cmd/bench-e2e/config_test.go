package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestVanillaConfigFollowsTailors(t *testing.T) {
	dir := t.TempDir()
	tailor := filepath.Join(dir, "tailor.yaml")
	if err := os.WriteFile(tailor, []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: /sa.kubeconfig, qps: 100, burst: 200}
leaderElection: {leaderElect: true, resourceName: tailor-scheduler}
profiles:
- schedulerName: tailor
`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setClientQPS(tailor, 500); err != nil {
		t.Fatal(err)
	}
	vanilla, err := writeVanillaConfig(tailor, filepath.Join(dir, "vanilla.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := readConfig(vanilla)
	if err != nil {
		t.Fatal(err)
	}
	cc, _ := clientConnection(cfg)
	if cc["kubeconfig"] != "/sa.kubeconfig" || cc["qps"] != 500.0 || cc["burst"] != 1000.0 {
		t.Errorf("vanilla clientConnection = %v, want Tailor's kubeconfig with qps 500, burst 1000", cc)
	}
	if le := cfg["leaderElection"].(map[string]any); le["leaderElect"] != false {
		t.Errorf("vanilla leaderElection = %v, want off", le)
	}
	if p := cfg["profiles"].([]any)[0].(map[string]any); p["schedulerName"] != vanillaSchedulerName || len(cfg["profiles"].([]any)) != 1 {
		t.Errorf("vanilla profiles = %v, want one named %s", cfg["profiles"], vanillaSchedulerName)
	}
	if qps, err := clientQPS(vanilla); err != nil || qps != 500 {
		t.Errorf("clientQPS = %v, %v; want 500", qps, err)
	}
}
