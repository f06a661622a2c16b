// Package manifests embeds the YAML Tailor ships, so the sandbox and tests install exactly the
// files users apply.
package manifests

import (
	"embed"
	"io/fs"
	"path"
	"sort"
)

//go:embed crds/*.yaml
var crds embed.FS

//go:embed scheduler-config.yaml
var SchedulerConfig []byte

//go:embed examples/*.yaml
var examples embed.FS

// CRDs returns each CustomResourceDefinition document.
func CRDs() [][]byte { return readAll(crds, "crds") }

// Examples returns the sample workload documents, in file order.
func Examples() [][]byte { return readAll(examples, "examples") }

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
