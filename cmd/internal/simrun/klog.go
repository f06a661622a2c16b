package simrun

import (
	"flag"
	"os"

	"k8s.io/klog/v2"
)

// LogToFile sends this process's klog output (the control plane's, mostly) to the file at path,
// keeping the terminal for what the command itself prints. Call the returned func at the end.
func LogToFile(path string) (func(), error) {
	logFile, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("logtostderr", "false")
	_ = klogFlags.Set("stderrthreshold", "FATAL")
	klog.SetOutput(logFile)
	return func() {
		klog.Flush()
		logFile.Close()
	}, nil
}
