package main

import "testing"

func TestVmHWMOfThisProcess(t *testing.T) {
	kib, err := vmHWM("/proc/self/status")
	if err != nil {
		t.Skip("no /proc here:", err)
	}
	if kib <= 0 {
		t.Errorf("VmHWM of this process = %d KiB", kib)
	}
}
