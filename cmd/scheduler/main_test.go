package main

import (
	"debug/elf"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

// The AWS SDK's clients have hundreds of operations each and Tailor calls about twenty. Only
// those may be linked: a client converted to an interface (a paginator, a narrow interface, a
// struct field of a type that is itself converted) keeps all of its methods, because
// kube-scheduler's dependencies call methods through reflection. EC2's alone were ~40 MB of the
// binary and most of it stayed resident (pkg/cloud/ec2's api.go).
func TestLinksOnlyTheAWSOperationsItCalls(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "scheduler")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	const sdk = "github.com/aws/aws-sdk-go-v2/service/"
	linked := map[string]int{}
	for _, s := range syms {
		if !strings.HasPrefix(s.Name, sdk) || elf.ST_TYPE(s.Info) != elf.STT_FUNC {
			continue
		}
		service, method, ok := strings.Cut(strings.TrimPrefix(s.Name, sdk), ".(*Client).")
		if ok && method != "" && method[0] >= 'A' && method[0] <= 'Z' && !strings.Contains(method, ".") {
			linked[service]++
		}
	}
	t.Logf("client methods linked: %v", linked)
	if linked["ec2"] == 0 {
		t.Fatalf("no EC2 operation found among the binary's symbols: the check reads them wrong")
	}
	for service, n := range linked {
		if n > 30 {
			t.Errorf("%d methods of the %s client are linked: a client is converted to an interface somewhere", n, service)
		}
	}
}

// The scheduler collects at gcPercent unless GOGC says otherwise.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tt := range []struct {
		name string
		gogc string
		set  int // what the runtime had from GOGC before
		want int
	}{
		{"GOGC unset", "", 100, gcPercent},
		{"GOGC set", "200", 200, 200},
		{"GOGC off", "off", -1, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			debug.SetGCPercent(tt.set)
			got := setGCPercent(func(k string) string {
				if k == "GOGC" {
					return tt.gogc
				}
				return ""
			})
			if now := debug.SetGCPercent(100); got != tt.want || now != tt.want {
				t.Errorf("setGCPercent = %d, runtime at %d; want %d", got, now, tt.want)
			}
		})
	}
}
