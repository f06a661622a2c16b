// Package manifests embeds the YAML Tailor ships, so the sandbox and tests install exactly the
// files users apply.
//
// manifests/deploy/tailor.yaml is rendered from the Helm chart in charts/tailor with the example
// values of deploy/values.yaml (`make manifests`; chart_test.go checks it is current), and the
// KubeSchedulerConfiguration in its ConfigMap is the example scheduler configuration.
//
// iam/controller-policy.json is the controller's IAM policy for Terraform's templatefile.
package manifests

import (
	"bufio"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

//go:embed crds/*.yaml
var crds embed.FS

//go:embed examples/*.yaml
var examples embed.FS

//go:embed deploy/tailor.yaml
var deployYAML []byte

// ControllerPolicy is the controller's IAM policy, a Terraform templatefile template with the
// placeholders ${partition}, ${region}, ${account_id}, ${cluster_name}, ${node_role_arn} and
// ${queue_arn} (pkg/sim/iamcheck renders it and proves it against the simulator's calls).
//
//go:embed iam/controller-policy.json
var ControllerPolicy string

// SchedulerConfigKey is the key of the scheduler configuration in the chart's ConfigMap.
const SchedulerConfigKey = "scheduler-config.yaml"

// SchedulerConfig is the example KubeSchedulerConfiguration: the one the chart renders into its
// ConfigMap in deploy/tailor.yaml. It is nil only if that file cannot be read, and then
// LoadSchedulerConfig says why.
var SchedulerConfig, errSchedulerConfig = schedulerConfig(deployYAML)

// LoadSchedulerConfig returns SchedulerConfig, or why it could not be taken from
// deploy/tailor.yaml.
func LoadSchedulerConfig() ([]byte, error) { return SchedulerConfig, errSchedulerConfig }

// CRDs returns each CustomResourceDefinition document.
func CRDs() [][]byte { return readAll(crds, "crds") }

// Examples returns the sample workload documents, in file order.
func Examples() [][]byte { return readAll(examples, "examples") }

// Deploy returns the documents of deploy/tailor.yaml in the order Helm installs them (service
// account, ConfigMap and RBAC before the Deployment). The CRDs are not among them: apply CRDs()
// first. Every namespaced document names its namespace (kube-system).
func Deploy() [][]byte {
	docs, _ := splitDocuments(deployYAML) // a bytes.Reader never fails; chart_test.go checks the split
	return docs
}

// splitDocuments splits a multi-document YAML stream into its documents, leaving out those that
// hold nothing but comments and blank lines (Helm's output starts each with "---" and a
// "# Source:" comment).
func splitDocuments(data []byte) ([][]byte, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return docs, err
		}
		if hasContent(doc) {
			docs = append(docs, doc)
		}
	}
}

func hasContent(doc []byte) bool {
	for _, line := range bytes.Split(doc, []byte("\n")) {
		line = bytes.TrimSpace(line)
		if len(line) > 0 && line[0] != '#' && !bytes.Equal(line, []byte("---")) {
			return true
		}
	}
	return false
}

// schedulerConfig finds the ConfigMap that carries SchedulerConfigKey among the documents.
func schedulerConfig(data []byte) ([]byte, error) {
	docs, err := splitDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("deploy/tailor.yaml: %w", err)
	}
	for i, doc := range docs {
		var cm struct {
			Kind string            `json:"kind"`
			Data map[string]string `json:"data"`
		}
		if err := yaml.Unmarshal(doc, &cm); err != nil {
			return nil, fmt.Errorf("deploy/tailor.yaml: document %d: %w", i, err)
		}
		if cfg, ok := cm.Data[SchedulerConfigKey]; ok && cm.Kind == "ConfigMap" {
			return []byte(cfg), nil
		}
	}
	return nil, fmt.Errorf("deploy/tailor.yaml has no ConfigMap with %s (run make manifests)", SchedulerConfigKey)
}

func readAll(fsys embed.FS, dir string) [][]byte {
	entries, _ := fs.ReadDir(fsys, dir)
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	var out [][]byte
	for _, n := range names {
		b, _ := fsys.ReadFile(path.Join(dir, n))
		out = append(out, b)
	}
	return out
}
