// Command funclen lists the functions of product code longer than a limit, longest first, and
// counts them: `go run ./hack/funclen` (tests, generated code and the simulators aside). Issue 21
// counts them to see the long functions that hide a second job go.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	limit := flag.Int("over", 80, "list functions longer than this many lines")
	flag.Parse()
	roots := flag.Args()
	if len(roots) == 0 {
		roots = []string{"pkg", "cmd", "apis"}
	}
	type long struct {
		where string
		lines int
	}
	var found []long
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
				strings.Contains(path, "generated") || strings.Contains(path, "/sim/") {
				return err
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			for _, decl := range f.Decls {
				if fd, ok := decl.(*ast.FuncDecl); ok && fd.Body != nil {
					if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > *limit {
						found = append(found, long{path + " " + fd.Name.Name, n})
					}
				}
			}
			return nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].lines > found[j].lines })
	for _, l := range found {
		fmt.Printf("%4d %s\n", l.lines, l.where)
	}
	fmt.Printf("%d functions over %d lines\n", len(found), *limit)
}
