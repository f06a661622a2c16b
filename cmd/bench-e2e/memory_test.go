package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadStatus(t *testing.T) {
	for _, tt := range []struct {
		name    string
		text    string
		want    status
		wantErr string
	}{
		{"both lines", "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t1024 kB\nRssAnon:\t  512 kB\n", status{hwm: 2048, anon: 512}, ""},
		{"no RssAnon", "VmHWM:\t2048 kB\n", status{hwm: 2048}, ""},
		{"no VmHWM", "RssAnon:\t512 kB\n", status{}, "has no VmHWM"},
		{"a bad number", "VmHWM:\tlots kB\nRssAnon:\t512 kB\n", status{}, "VmHWM: strconv"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "status")
			if err := os.WriteFile(path, []byte(tt.text), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := readStatus(path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("readStatus = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestReadStatusOfThisProcess(t *testing.T) {
	st, err := readStatus("/proc/self/status")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if st.hwm <= 0 || st.anon <= 0 || st.anon > st.hwm {
		t.Errorf("this process's VmHWM %d KiB, RssAnon %d KiB", st.hwm, st.anon)
	}
}

func TestEvictPageCache(t *testing.T) {
	path := filepath.Join(t.TempDir(), "binary")
	if err := os.WriteFile(path, []byte("text"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := evictPageCache(path); err != nil {
		t.Errorf("evicting a file just written: %v", err)
	}
	if err := evictPageCache(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("evicting a missing file: no error")
	}
}
