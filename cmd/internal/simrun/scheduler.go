package simrun

import (
	"path/filepath"
	"time"
)

// StartScheduler runs a kube-scheduler binary (Tailor's or the vanilla one) with a config file,
// its secure port off, logging at -v=2 to <name>.log in dir; awsEnv is added to its environment.
func StartScheduler(name, path, config, dir string, awsEnv map[string]string) (*Child, error) {
	return Start(name, path, []string{"--config", config, "--secure-port=0", "-v=2"}, awsEnv, filepath.Join(dir, name+".log"))
}

// StopGrace is how long a scheduler gets to end after SIGTERM before it is killed.
const StopGrace = 10 * time.Second

// SandboxProfile is the sandbox's edit of the example profile's Tailor args: consolidation looks
// every 5 s and takes nodes quiet for 10 s instead of 30, so a scale-down shows within seconds.
func SandboxProfile(args map[string]any) {
	args["consolidationInterval"] = "5s"
	for _, p := range args["pools"].([]any) {
		p.(map[string]any)["disruption"] = map[string]any{"consolidateAfter": "10s"}
	}
}
