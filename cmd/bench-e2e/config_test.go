package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
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

func TestConsolidationLook(t *testing.T) {
	for _, tc := range []struct {
		name, args string
		want       time.Duration
		wantErr    bool
	}{
		{"the sandbox's settings", `consolidationInterval: 5s
      pools:
      - name: a
        disruption: {consolidateAfter: 10s}
      - name: b
        disruption: {consolidateAfter: 7s}`, 20 * time.Second, false},
		{"Tailor's defaults", `pools:
      - name: a`, 60 * time.Second, false},
		{"a bad duration names its field", `consolidationInterval: soon
      pools:
      - name: a`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			cfg := "profiles:\n- schedulerName: tailor\n  pluginConfig:\n  - name: Tailor\n    args:\n      " + tc.args + "\n"
			if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := consolidationLook(path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("consolidationLook = %s, want %s", got, tc.want)
			}
		})
	}
}
