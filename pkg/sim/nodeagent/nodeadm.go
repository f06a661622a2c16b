package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"
)

// imdsToken is the one IMDSv2 session token the loopback metadata service hands out.
const imdsToken = "sim-imds-token"

// nodeadmCheck runs `nodeadm config check -c imds://user-data` against the user data, served by
// a loopback instance metadata service (IMDSv2, as on an AL2023 instance), so nodeadm's own code
// reads and decodes it exactly as on boot. It returns nodeadm's error output when it refuses.
func nodeadmCheck(ctx context.Context, nodeadm, userData string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: imdsHandler(userData), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, nodeadm, "config", "check", "--config-source", "imds://user-data")
	cmd.Env = append(withoutAWSMetadataEnv(os.Environ()),
		"AWS_EC2_METADATA_SERVICE_ENDPOINT=http://"+ln.Addr().String(),
		"AWS_EC2_METADATA_DISABLED=false")
	cmd.WaitDelay = time.Second
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && ctx.Err() == nil:
		return fmt.Errorf("nodeadm config check: %w: %s", err, nodeadmError(string(out)))
	default:
		// nodeadm did not get to judge (not started, timed out on a loaded machine): not a
		// refusal, the instance is booted again next sync.
		return &notJudged{err: err}
	}
}

// notJudged is a check that did not run to a verdict.
type notJudged struct{ err error }

func (e *notJudged) Error() string { return "nodeadm did not run: " + e.err.Error() }
func (e *notJudged) Unwrap() error { return e.err }

// imdsHandler serves the two IMDSv2 calls nodeadm makes: a session token, then the user data.
func imdsHandler(userData string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /latest/api/token", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
		_, _ = w.Write([]byte(imdsToken))
	})
	mux.HandleFunc("GET /latest/user-data", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != imdsToken {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(userData))
	})
	return mux
}

// withoutAWSMetadataEnv drops the process's own metadata settings (the sandbox disables IMDS for
// its SDK clients) so the child sees only the loopback service.
func withoutAWSMetadataEnv(env []string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, "AWS_EC2_METADATA_") {
			out = append(out, kv)
		}
	}
	return out
}

// nodeadmError is the error nodeadm logged last (it logs JSON lines), or its last line.
func nodeadmError(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	var entry struct {
		Error string `json:"error"`
	}
	if json.Unmarshal([]byte(last), &entry) == nil && entry.Error != "" {
		return entry.Error
	}
	return last
}
