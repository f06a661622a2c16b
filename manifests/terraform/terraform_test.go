// Package terraform holds the tests of the Terraform module in modules/tailor and its example.
// No provider can be downloaded here, so `terraform validate` and `plan` never run: these tests
// parse the .tf files with HCL and check what a plan could not show wrong without an AWS
// account — that the module loads the repository's policy, wires the chart's real values, and
// creates the rules, roles and tags the README promises.
package terraform

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"
	"sigs.k8s.io/yaml"

	configv1 "github.com/tailor-eks/tailor/apis/config/v1"
)

const (
	moduleDir  = "modules/tailor"
	exampleDir = "examples/basic"
	// The controller policy is the repository's document, shared with hand-made roles.
	policyFile = "../iam/controller-policy.json"
	chartDir   = "../charts/tailor"
)

// The variables manifests/iam/controller-policy.json is written against.
var policyTemplateVars = []string{"account_id", "cluster_name", "node_role_arn", "partition", "queue_arn", "region"}

// What the test's evaluation context gives the module's data sources, so that locals built on
// them (partition, region, account) evaluate and show where they come from.
const (
	testPartition = "aws-test"
	testRegion    = "test-region-1"
	testAccount   = "000000000000"
)

// config is one directory of .tf files, as Terraform reads it.
type config struct {
	dir       string
	bodies    []*hclsyntax.Body
	variables map[string]*hclsyntax.Block
	locals    map[string]*hclsyntax.Attribute
	resources map[string]*hclsyntax.Block // by "<type>.<name>"
	data      map[string]*hclsyntax.Block // by "<type>.<name>"
	calls     map[string]*hclsyntax.Block // module blocks, by name
	providers map[string]*hclsyntax.Block // provider blocks, by name
	terraform []*hclsyntax.Block
}

func load(t *testing.T, dir string) *config {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .tf files in %s: %v", dir, err)
	}
	c := &config{
		dir:       dir,
		variables: map[string]*hclsyntax.Block{},
		locals:    map[string]*hclsyntax.Attribute{},
		resources: map[string]*hclsyntax.Block{},
		data:      map[string]*hclsyntax.Block{},
		calls:     map[string]*hclsyntax.Block{},
		providers: map[string]*hclsyntax.Block{},
	}
	add := func(m map[string]*hclsyntax.Block, key string, b *hclsyntax.Block) {
		if _, dup := m[key]; dup {
			t.Errorf("%s: %s %s is declared twice", dir, b.Type, key)
		}
		m[key] = b
	}
	parser := hclparse.NewParser()
	for _, f := range files {
		file, diags := parser.ParseHCLFile(f)
		if diags.HasErrors() {
			t.Fatalf("%s", diags.Error())
		}
		body := file.Body.(*hclsyntax.Body)
		c.bodies = append(c.bodies, body)
		for _, b := range body.Blocks {
			switch b.Type {
			case "variable":
				add(c.variables, b.Labels[0], b)
			case "locals":
				for name, a := range b.Body.Attributes {
					if _, dup := c.locals[name]; dup {
						t.Errorf("%s: local %s is declared twice", dir, name)
					}
					c.locals[name] = a
				}
			case "resource":
				add(c.resources, b.Labels[0]+"."+b.Labels[1], b)
			case "data":
				add(c.data, b.Labels[0]+"."+b.Labels[1], b)
			case "module":
				add(c.calls, b.Labels[0], b)
			case "provider":
				add(c.providers, b.Labels[0], b)
			case "terraform":
				c.terraform = append(c.terraform, b)
			}
		}
	}
	return c
}

// ofType is the blocks of m whose key starts with "<typ>.", sorted by key.
func ofType(m map[string]*hclsyntax.Block, typ string) []string {
	var keys []string
	for k := range m {
		if strings.HasPrefix(k, typ+".") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func attr(b *hclsyntax.Block, name string) hclsyntax.Expression {
	if a := b.Body.Attributes[name]; a != nil {
		return a.Expr
	}
	return nil
}

func blocks(b *hclsyntax.Block, typ string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, nb := range b.Body.Blocks {
		if nb.Type == typ {
			out = append(out, nb)
		}
	}
	return out
}

// refs names what node refers to, one name per traversal: its root and the attribute steps
// after it, index steps left out (var.x, local.x, data.<type>.<name>.<attr>, <type>.<name>.<attr>,
// each.key, path.module).
func refs(node hclsyntax.Node) []string {
	var out []string
	hclsyntax.VisitAll(node, func(n hclsyntax.Node) hcl.Diagnostics {
		if st, ok := n.(*hclsyntax.ScopeTraversalExpr); ok {
			parts := []string{st.Traversal.RootName()}
			for _, step := range st.Traversal[1:] {
				if a, ok := step.(hcl.TraverseAttr); ok {
					parts = append(parts, a.Name)
				}
			}
			out = append(out, strings.Join(parts, "."))
		}
		return nil
	})
	return out
}

// deepRefs is refs of node and, through every local it names, of that local's expression.
func (c *config) deepRefs(node hclsyntax.Node) []string {
	var out []string
	seenLocal := map[string]bool{}
	var walk func(hclsyntax.Node)
	walk = func(n hclsyntax.Node) {
		for _, r := range refs(n) {
			out = append(out, r)
			if rest, ok := strings.CutPrefix(r, "local."); ok {
				name, _, _ := strings.Cut(rest, ".")
				if a := c.locals[name]; a != nil && !seenLocal[name] {
					seenLocal[name] = true
					walk(a.Expr)
				}
			}
		}
	}
	if node != nil {
		walk(node)
	}
	return out
}

// hasRef tells whether names holds want or a longer traversal starting with it.
func hasRef(names []string, want string) bool {
	return slices.ContainsFunc(names, func(n string) bool { return n == want || strings.HasPrefix(n, want+".") })
}

var toSet = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "list", Type: cty.List(cty.String)}},
	Type:   function.StaticReturnType(cty.Set(cty.String)),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		return convert.Convert(args[0], cty.Set(cty.String))
	},
})

// coalesce is Terraform's coalesce, which unlike cty's stdlib.CoalesceFunc also passes over "":
// the module's name defaults are coalesce(var.<name>, <derived>) with "" as the input's default.
var coalesce = function.New(&function.Spec{
	VarParam: &function.Parameter{Name: "vals", Type: cty.DynamicPseudoType, AllowUnknown: true, AllowDynamicType: true, AllowNull: true},
	Type: func(args []cty.Value) (cty.Type, error) {
		types := make([]cty.Type, len(args))
		for i, a := range args {
			types[i] = a.Type()
		}
		if t, _ := convert.UnifyUnsafe(types); t != cty.NilType {
			return t, nil
		}
		return cty.NilType, fmt.Errorf("all arguments must have the same type")
	},
	Impl: func(args []cty.Value, retType cty.Type) (cty.Value, error) {
		for _, a := range args {
			if !a.IsKnown() {
				return cty.UnknownVal(retType), nil
			}
			if a.IsNull() || retType == cty.String && a.RawEquals(cty.StringVal("")) {
				continue
			}
			return convert.Convert(a, retType)
		}
		return cty.NilVal, fmt.Errorf("no non-null, non-empty-string arguments")
	},
})

// evalContext evaluates what needs no AWS account: literals, the functions below, the data
// sources that name partition, region and account, the variables in vars (every other variable
// is unknown) and the locals computable from these.
func (c *config) evalContext(vars map[string]cty.Value) *hcl.EvalContext {
	varVals := map[string]cty.Value{}
	for name := range c.variables {
		varVals[name] = cty.DynamicVal
	}
	for name, v := range vars {
		varVals[name] = v
	}
	obj := func(kv ...any) cty.Value {
		m := map[string]cty.Value{}
		for i := 0; i < len(kv); i += 2 {
			switch v := kv[i+1].(type) {
			case string:
				m[kv[i].(string)] = cty.StringVal(v)
			case cty.Value:
				m[kv[i].(string)] = v
			}
		}
		return cty.ObjectVal(m)
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":  cty.ObjectVal(varVals),
			"path": obj("module", c.dir),
			"data": obj(
				"aws_partition", obj("current", obj("partition", testPartition)),
				// region only, so that a .name (deprecated by the aws provider 6) does not evaluate.
				"aws_region", obj("current", obj("region", testRegion)),
				"aws_caller_identity", obj("current", obj("account_id", testAccount)),
			),
		},
		Functions: map[string]function.Function{
			"jsonencode": stdlib.JSONEncodeFunc,
			"coalesce":   coalesce,
			"concat":     stdlib.ConcatFunc,
			"merge":      stdlib.MergeFunc,
			"toset":      toSet,
		},
	}
	// A local may need others: evaluate in rounds until no more become known.
	known := map[string]cty.Value{}
	for {
		localVals := map[string]cty.Value{}
		for name := range c.locals {
			localVals[name] = cty.DynamicVal
			if v, ok := known[name]; ok {
				localVals[name] = v
			}
		}
		ctx.Variables["local"] = cty.ObjectVal(localVals)
		progress := false
		for name, a := range c.locals {
			if _, ok := known[name]; ok {
				continue
			}
			if v, diags := a.Expr.Value(ctx); !diags.HasErrors() && v.IsWhollyKnown() {
				known[name] = v
				progress = true
			}
		}
		if !progress {
			return ctx
		}
	}
}

// instances is the for_each keys of a resource with their each.value, or one instance "" for a
// resource without for_each.
func instances(t *testing.T, ctx *hcl.EvalContext, b *hclsyntax.Block) map[string]cty.Value {
	t.Helper()
	fe := attr(b, "for_each")
	if fe == nil {
		return map[string]cty.Value{"": cty.DynamicVal}
	}
	v, diags := fe.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() {
		t.Fatalf("%s %v: for_each does not evaluate without AWS: %s", b.Type, b.Labels, diags.Error())
	}
	out := map[string]cty.Value{}
	if v.Type().IsSetType() {
		for _, e := range v.AsValueSlice() {
			out[e.AsString()] = e
		}
		return out
	}
	for k, e := range v.AsValueMap() {
		out[k] = e
	}
	return out
}

func withEach(ctx *hcl.EvalContext, key string, value cty.Value) *hcl.EvalContext {
	child := ctx.NewChild()
	child.Variables = map[string]cty.Value{"each": cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(key), "value": value})}
	return child
}

// str is expr's value as a string, "" when it does not evaluate here.
func str(ctx *hcl.EvalContext, expr hclsyntax.Expression) string {
	if expr == nil {
		return ""
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return ""
	}
	if v, err := convert.Convert(v, cty.String); err == nil {
		return v.AsString()
	}
	return ""
}

// strs is expr's value as a list of strings, nil when it does not evaluate here.
func strs(ctx *hcl.EvalContext, expr hclsyntax.Expression) []string {
	if expr == nil {
		return nil
	}
	v, diags := expr.Value(ctx)
	if diags.HasErrors() || !v.IsWhollyKnown() || v.IsNull() {
		return nil
	}
	l, err := convert.Convert(v, cty.List(cty.String))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range l.AsValueSlice() {
		out = append(out, e.AsString())
	}
	return out
}

// modulePath resolves a "${path.module}/…" template as Terraform would, relative to the test's
// directory; ok is false for any other expression.
func (c *config) modulePath(expr hclsyntax.Expression) (string, bool) {
	tmpl, isTemplate := expr.(*hclsyntax.TemplateExpr)
	if !isTemplate || len(tmpl.Parts) < 2 {
		return "", false
	}
	if st, ok := tmpl.Parts[0].(*hclsyntax.ScopeTraversalExpr); !ok || !slices.Equal(refs(st), []string{"path.module"}) {
		return "", false
	}
	p := c.dir
	for _, part := range tmpl.Parts[1:] {
		lit, ok := part.(*hclsyntax.LiteralValueExpr)
		if !ok || lit.Val.Type() != cty.String {
			return "", false
		}
		p += lit.Val.AsString()
	}
	return filepath.Clean(p), true
}

// callsOf is every call of the function name in the configuration, with the resource holding it.
func (c *config) callsOf(name string) map[string][]*hclsyntax.FunctionCallExpr {
	out := map[string][]*hclsyntax.FunctionCallExpr{}
	for key, b := range c.resources {
		hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && call.Name == name {
				out[key] = append(out[key], call)
			}
			return nil
		})
	}
	for key, b := range c.data {
		hclsyntax.VisitAll(b.Body, func(n hclsyntax.Node) hcl.Diagnostics {
			if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && call.Name == name {
				out["data."+key] = append(out["data."+key], call)
			}
			return nil
		})
	}
	for lname, a := range c.locals {
		hclsyntax.VisitAll(a.Expr, func(n hclsyntax.Node) hcl.Diagnostics {
			if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && call.Name == name {
				out["local."+lname] = append(out["local."+lname], call)
			}
			return nil
		})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Every variable a directory declares is used outside its own declaration, and every var.<name>
// it uses is declared: an unused input is a knob that does nothing, an undeclared one an error
// only `terraform validate` would show.
func TestVariablesDeclaredAndUsed(t *testing.T) {
	for _, dir := range []string{moduleDir, exampleDir} {
		t.Run(dir, func(t *testing.T) {
			c := load(t, dir)
			used := map[string]bool{}
			for _, body := range c.bodies {
				for _, b := range body.Blocks {
					for _, r := range refs(b.Body) {
						name, ok := strings.CutPrefix(r, "var.")
						if !ok {
							continue
						}
						name, _, _ = strings.Cut(name, ".")
						if c.variables[name] == nil {
							t.Errorf("var.%s is used in %s %v but not declared", name, b.Type, b.Labels)
						}
						// A variable's own validation does not make it used.
						if b.Type != "variable" || b.Labels[0] != name {
							used[name] = true
						}
					}
				}
			}
			for _, name := range sortedKeys(c.variables) {
				if !used[name] {
					t.Errorf("variable %q is declared but never used", name)
				}
				if attr(c.variables[name], "description") == nil {
					t.Errorf("variable %q has no description", name)
				}
				if attr(c.variables[name], "type") == nil {
					t.Errorf("variable %q has no type", name)
				}
			}
		})
	}
}

// The example calls the module with inputs it declares, and with every input it requires.
func TestExampleCallsModule(t *testing.T) {
	mod, ex := load(t, moduleDir), load(t, exampleDir)
	var found bool
	for _, name := range sortedKeys(ex.calls) {
		call := ex.calls[name]
		source := str(nil, attr(call, "source"))
		if filepath.Join(exampleDir, source) != filepath.Clean(moduleDir) {
			continue
		}
		found = true
		meta := []string{"source", "version", "providers", "count", "for_each", "depends_on"}
		for arg := range call.Body.Attributes {
			if !slices.Contains(meta, arg) && mod.variables[arg] == nil {
				t.Errorf("module %q passes %s, which %s does not declare", name, arg, moduleDir)
			}
		}
		for _, v := range sortedKeys(mod.variables) {
			if attr(mod.variables[v], "default") == nil && call.Body.Attributes[v] == nil {
				t.Errorf("module %q does not pass %s, which has no default", name, v)
			}
		}
	}
	if !found {
		t.Fatalf("%s has no module block with source %s", exampleDir, moduleDir)
	}
}

// versionConstraint is one term of a Terraform version constraint, e.g. ">= 6.0" or "~> 3.0".
type versionConstraint struct {
	op       string
	version  [3]int
	segments int // how many of major, minor, patch the term spells out
}

// parseVersion reads "6", "6.0" or "6.0.1"; missing segments are 0. Pre-releases are not
// supported: no constraint here needs one.
func parseVersion(s string) (v [3]int, segments int, err error) {
	parts := strings.Split(strings.TrimSpace(s), ".")
	if len(parts) > 3 {
		return v, 0, fmt.Errorf("version %q has more than three segments", s)
	}
	for i, p := range parts {
		if v[i], err = strconv.Atoi(p); err != nil || v[i] < 0 {
			return v, 0, fmt.Errorf("version %q: segment %q is not a number", s, p)
		}
	}
	return v, len(parts), nil
}

// parseConstraints reads a Terraform version constraint: comma-separated terms, each an
// operator (=, !=, >, >=, <, <=, ~>; none means =) and a version.
func parseConstraints(s string) ([]versionConstraint, error) {
	var out []versionConstraint
	for _, term := range strings.Split(s, ",") {
		term = strings.TrimSpace(term)
		op := "="
		for _, o := range []string{">=", "<=", "~>", "!=", ">", "<", "="} {
			if rest, ok := strings.CutPrefix(term, o); ok {
				op, term = o, rest
				break
			}
		}
		v, n, err := parseVersion(term)
		if err != nil {
			return nil, err
		}
		// "~> 6" reads differently to different people; a constraint here says "~> 6.0".
		if op == "~>" && n < 2 {
			return nil, fmt.Errorf("%q: write ~> with at least major.minor", s)
		}
		out = append(out, versionConstraint{op, v, n})
	}
	return out, nil
}

func compareVersions(a, b [3]int) int {
	for i := range a {
		if a[i] != b[i] {
			return a[i] - b[i]
		}
	}
	return 0
}

// allows tells whether version v meets every term, as Terraform reads them: "~> 6.1" is
// ">= 6.1, < 7.0", "~> 6.1.2" is ">= 6.1.2, < 6.2.0".
func allows(cs []versionConstraint, version string) bool {
	v, _, err := parseVersion(version)
	if err != nil {
		panic(err)
	}
	for _, c := range cs {
		cmp := compareVersions(v, c.version)
		var ok bool
		switch c.op {
		case "=":
			ok = cmp == 0
		case "!=":
			ok = cmp != 0
		case ">":
			ok = cmp > 0
		case ">=":
			ok = cmp >= 0
		case "<":
			ok = cmp < 0
		case "<=":
			ok = cmp <= 0
		case "~>":
			// Every segment before the last one written stays as written.
			ok = cmp >= 0 && slices.Equal(v[:c.segments-1], c.version[:c.segments-1])
		}
		if !ok {
			return false
		}
	}
	return true
}

func TestVersionConstraintReading(t *testing.T) {
	for _, tc := range []struct {
		constraint, version string
		want                bool
	}{
		{">= 6.0", "6.0.0", true},
		{">= 6.0", "7.2.0", true},
		{">= 6.0", "5.100.0", false},
		{"~> 6.0", "6.40.1", true},
		{"~> 6.0", "7.0.0", false},
		{"~> 5.34", "5.34.0", true},
		{"~> 5.34", "5.33.9", false},
		{"~> 6.1.2", "6.1.9", true},
		{"~> 6.1.2", "6.2.0", false},
		{">= 6.0, < 7", "6.9.0", true},
		{">= 6.0, < 7", "7.0.0", false},
		{"6.2.0", "6.2.0", true},
		{"!= 6.2.0", "6.2.0", false},
	} {
		cs, err := parseConstraints(tc.constraint)
		if err != nil {
			t.Fatal(err)
		}
		if got := allows(cs, tc.version); got != tc.want {
			t.Errorf("%q allows %s: %v, want %v", tc.constraint, tc.version, got, tc.want)
		}
	}
	if _, err := parseConstraints("~> 6"); err == nil {
		t.Errorf("~> 6 is read without an error")
	}
}

// Both directories take what the README says: Terraform 1.11 or later, the aws provider 6 (its
// data.aws_region.region; terraform-aws-eks v21 needs 6) and the helm provider 3, and neither
// 5.x nor 2.x. The example, a root, may pin tighter than the module, but never allows a version
// the module refuses.
func TestRequiredVersions(t *testing.T) {
	providers := []struct {
		name          string
		allow, refuse []string
	}{
		{"aws", []string{"6.0.0", "6.40.0"}, []string{"5.34.0", "5.100.0", "4.67.0"}},
		{"helm", []string{"3.0.0", "3.1.1"}, []string{"2.0.0", "2.17.0"}},
	}
	// Versions the example may allow only if the module does too.
	probes := map[string][]string{
		"aws":  {"5.100.0", "6.0.0", "6.99.0", "7.0.0"},
		"helm": {"2.17.0", "3.0.0", "3.99.0", "4.0.0"},
	}
	constraints := map[string]map[string][]versionConstraint{} // by directory, by provider
	for _, dir := range []string{moduleDir, exampleDir} {
		constraints[dir] = map[string][]versionConstraint{}
		t.Run(dir, func(t *testing.T) {
			c := load(t, dir)
			if len(c.terraform) != 1 {
				t.Fatalf("%d terraform blocks, want 1", len(c.terraform))
			}
			tf := c.terraform[0]
			if got := str(nil, attr(tf, "required_version")); got != ">= 1.11" {
				t.Errorf("required_version %q, want \">= 1.11\"", got)
			}
			rp := blocks(tf, "required_providers")
			if len(rp) != 1 {
				t.Fatalf("%d required_providers blocks, want 1", len(rp))
			}
			for _, p := range providers {
				a := rp[0].Body.Attributes[p.name]
				if a == nil {
					t.Errorf("required_providers lacks %s", p.name)
					continue
				}
				v, diags := a.Expr.Value(nil)
				if diags.HasErrors() || !v.Type().IsObjectType() || !v.Type().HasAttribute("source") || !v.Type().HasAttribute("version") {
					t.Errorf("required_providers.%s is not {source, version}: %s", p.name, diags.Error())
					continue
				}
				if src := v.GetAttr("source").AsString(); src != "hashicorp/"+p.name {
					t.Errorf("required_providers.%s.source %q, want hashicorp/%s", p.name, src, p.name)
				}
				ver := v.GetAttr("version").AsString()
				cs, err := parseConstraints(ver)
				if err != nil {
					t.Errorf("required_providers.%s.version: %v", p.name, err)
					continue
				}
				constraints[dir][p.name] = cs
				for _, want := range p.allow {
					if !allows(cs, want) {
						t.Errorf("required_providers.%s.version %q refuses %s", p.name, ver, want)
					}
				}
				for _, refused := range p.refuse {
					if allows(cs, refused) {
						t.Errorf("required_providers.%s.version %q allows %s", p.name, ver, refused)
					}
				}
			}
		})
	}
	for name, versions := range probes {
		mod, ex := constraints[moduleDir][name], constraints[exampleDir][name]
		if mod == nil || ex == nil {
			continue // reported above
		}
		for _, v := range versions {
			if allows(ex, v) && !allows(mod, v) {
				t.Errorf("the example allows %s %s, which the module refuses", name, v)
			}
		}
	}
}

// Nothing the aws provider 6 deprecates, and nothing written in helm provider 2 syntax: a
// deprecated attribute warns in every plan of every root that uses the module, and 6 is the
// last major that still has these.
func TestNoDeprecatedProviderSyntax(t *testing.T) {
	// Arguments of a resource type, as an attribute or a block.
	deprecatedArgs := []struct{ resource, arg, instead string }{
		{"aws_iam_role", "inline_policy", "aws_iam_role_policy"},
		{"aws_iam_role", "managed_policy_arns", "aws_iam_role_policy_attachment"},
		{"aws_cloudwatch_event_rule", "is_enabled", "state"},
	}
	for _, dir := range []string{moduleDir, exampleDir} {
		t.Run(dir, func(t *testing.T) {
			c := load(t, dir)
			for _, body := range c.bodies {
				for _, r := range refs(body) {
					// data.aws_region.<name>.name, index steps left out by refs.
					if parts := strings.Split(r, "."); len(parts) >= 4 && parts[0] == "data" && parts[1] == "aws_region" && parts[3] == "name" {
						t.Errorf("%s uses %s: the aws provider 6 deprecates name, use .region", dir, r)
					}
				}
			}
			for _, d := range deprecatedArgs {
				for _, key := range ofType(c.resources, d.resource) {
					b := c.resources[key]
					if attr(b, d.arg) != nil || len(blocks(b, d.arg)) > 0 {
						t.Errorf("%s sets %s, deprecated in the aws provider 6: use %s", key, d.arg, d.instead)
					}
				}
			}
			// The helm provider 3 takes kubernetes, registries and experiments as attributes
			// and has no blocks left.
			if p := c.providers["helm"]; p != nil {
				for _, b := range p.Body.Blocks {
					t.Errorf("provider \"helm\" has a %s block: the helm provider 3 takes %s = {...}", b.Type, b.Type)
				}
			}
		})
	}
}

// The example's helm provider reaches the cluster as the helm provider 3 takes it:
// kubernetes = {host, cluster_ca_certificate, exec = {...}}, the token from `aws eks get-token`
// for the example's cluster and region.
func TestExampleHelmProvider(t *testing.T) {
	ex := load(t, exampleDir)
	p := ex.providers["helm"]
	if p == nil {
		t.Fatalf("%s configures no helm provider", exampleDir)
	}
	items := func(e hclsyntax.Expression, what string) map[string]hclsyntax.Expression {
		obj, ok := e.(*hclsyntax.ObjectConsExpr)
		if !ok {
			t.Fatalf("%s is not an object attribute (= {...})", what)
		}
		out := map[string]hclsyntax.Expression{}
		for _, item := range obj.Items {
			k, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() || k.Type() != cty.String {
				t.Fatalf("%s has a computed key", what)
			}
			out[k.AsString()] = item.ValueExpr
		}
		return out
	}
	kube := items(attr(p, "kubernetes"), "provider helm's kubernetes")
	for arg, want := range map[string]string{
		"host":                   "data.aws_eks_cluster.this.endpoint",
		"cluster_ca_certificate": "data.aws_eks_cluster.this.certificate_authority",
	} {
		if !hasRef(refs(kube[arg]), want) {
			t.Errorf("kubernetes.%s is not from %s", arg, want)
		}
	}
	if kube["exec"] == nil {
		t.Fatalf("kubernetes has no exec")
	}
	exec := items(kube["exec"], "kubernetes.exec")
	ctx := ex.evalContext(map[string]cty.Value{"cluster_name": cty.StringVal("C"), "region": cty.StringVal("R")})
	if got := str(ctx, exec["api_version"]); got != "client.authentication.k8s.io/v1beta1" {
		t.Errorf("exec.api_version %q", got)
	}
	if got := str(ctx, exec["command"]); got != "aws" {
		t.Errorf("exec.command %q, want aws", got)
	}
	if got, want := strs(ctx, exec["args"]), []string{"eks", "get-token", "--cluster-name", "C", "--region", "R"}; !slices.Equal(got, want) {
		t.Errorf("exec.args %v, want %v", got, want)
	}
}

// The module's one templatefile loads manifests/iam/controller-policy.json, as the controller
// role's policy, with exactly the variables that document is written against; the document
// uses no others and renders to a JSON policy.
func TestControllerPolicyIsRepoDocument(t *testing.T) {
	c := load(t, moduleDir)
	calls := c.callsOf("templatefile")
	if n := len(calls); n != 1 || len(calls["aws_iam_role_policy.controller"]) != 1 {
		t.Fatalf("templatefile is called in %v, want once, in aws_iam_role_policy.controller", sortedKeys(calls))
	}
	holder := c.resources["aws_iam_role_policy.controller"]
	if !hasRef(refs(attr(holder, "role")), "aws_iam_role.controller") {
		t.Errorf("aws_iam_role_policy.controller is not on aws_iam_role.controller")
	}
	call := calls["aws_iam_role_policy.controller"][0]
	if attr(holder, "policy") != hclsyntax.Expression(call) {
		t.Errorf("aws_iam_role_policy.controller's policy is not the templatefile itself")
	}
	if len(call.Args) != 2 {
		t.Fatalf("templatefile has %d arguments", len(call.Args))
	}
	path, ok := c.modulePath(call.Args[0])
	if !ok {
		t.Fatalf("templatefile's path is not \"${path.module}/…\"")
	}
	if path != filepath.Clean(policyFile) {
		t.Errorf("templatefile loads %s, want %s", path, filepath.Clean(policyFile))
	}

	obj, ok := call.Args[1].(*hclsyntax.ObjectConsExpr)
	if !ok {
		t.Fatalf("templatefile's variables are not an object")
	}
	passed := map[string]hclsyntax.Expression{}
	for _, item := range obj.Items {
		k, diags := item.KeyExpr.Value(nil)
		if diags.HasErrors() {
			t.Fatalf("templatefile variable key: %s", diags.Error())
		}
		passed[k.AsString()] = item.ValueExpr
	}
	if got := sortedKeys(passed); !slices.Equal(got, policyTemplateVars) {
		t.Errorf("templatefile passes %v, want %v", got, policyTemplateVars)
	}
	// Where each value comes from.
	for name, from := range map[string]string{
		"partition":     "data.aws_partition.current.partition",
		"region":        "data.aws_region.current.region",
		"account_id":    "data.aws_caller_identity.current.account_id",
		"cluster_name":  "var.cluster_name",
		"node_role_arn": "aws_iam_role.node.arn",
		"queue_arn":     "aws_sqs_queue.interruption.arn",
	} {
		if e := passed[name]; e != nil && !hasRef(c.deepRefs(e), from) {
			t.Errorf("templatefile's %s is %v, want it from %s", name, c.deepRefs(e), from)
		}
	}

	src, err := os.ReadFile(policyFile)
	if err != nil {
		t.Fatalf("the module loads %s: %v", policyFile, err)
	}
	tmpl, diags := hclsyntax.ParseTemplate(src, policyFile, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("%s is not a template templatefile can read: %s", policyFile, diags.Error())
	}
	vars := map[string]cty.Value{}
	for _, name := range policyTemplateVars {
		vars[name] = cty.StringVal("test-" + name)
	}
	for _, tr := range tmpl.Variables() {
		if _, ok := passed[tr.RootName()]; !ok {
			t.Errorf("%s uses ${%s}, which the module does not pass", policyFile, tr.RootName())
		}
	}
	out, diags := tmpl.Value(&hcl.EvalContext{Variables: vars})
	if diags.HasErrors() {
		t.Fatalf("%s does not render: %s", policyFile, diags.Error())
	}
	var doc struct {
		Version   string
		Statement []map[string]any
	}
	if err := json.Unmarshal([]byte(out.AsString()), &doc); err != nil {
		t.Fatalf("%s does not render to JSON: %v", policyFile, err)
	}
	if doc.Version != "2012-10-17" || len(doc.Statement) == 0 {
		t.Errorf("%s renders to Version %q with %d statements, want 2012-10-17 and at least one", policyFile, doc.Version, len(doc.Statement))
	}

	// The values the module passes, evaluated: partition, region and account from the provider's
	// data sources, the cluster from its input; the node role's and the queue's ARNs, known only
	// after apply, get stand-ins. What templatefile renders from them is the document with each
	// ${name} replaced, the substitution the README's manual path and pkg/sim/iamcheck make.
	const nodeRoleARN, queueARN = "arn:aws-test:iam::000000000000:role/test-node", "arn:aws-test:sqs:test-region-1:000000000000:test-queue"
	ctx := c.evalContext(map[string]cty.Value{"cluster_name": cty.StringVal("test-cluster")}).NewChild()
	ctx.Variables = map[string]cty.Value{
		"aws_iam_role":  cty.ObjectVal(map[string]cty.Value{"node": cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal(nodeRoleARN)})}),
		"aws_sqs_queue": cty.ObjectVal(map[string]cty.Value{"interruption": cty.ObjectVal(map[string]cty.Value{"arn": cty.StringVal(queueARN)})}),
	}
	wantVals := map[string]string{
		"partition":     testPartition,
		"region":        testRegion,
		"account_id":    testAccount,
		"cluster_name":  "test-cluster",
		"node_role_arn": nodeRoleARN,
		"queue_arn":     queueARN,
	}
	moduleVars := map[string]cty.Value{}
	var replacements []string
	for _, name := range sortedKeys(passed) {
		got := str(ctx, passed[name])
		if got != wantVals[name] {
			t.Errorf("the module passes %s = %q, want %q", name, got, wantVals[name])
		}
		moduleVars[name] = cty.StringVal(got)
		replacements = append(replacements, "${"+name+"}", got)
	}
	rendered, diags := tmpl.Value(&hcl.EvalContext{Variables: moduleVars})
	if diags.HasErrors() {
		t.Fatalf("%s does not render with the module's values: %s", policyFile, diags.Error())
	}
	if want := strings.NewReplacer(replacements...).Replace(string(src)); rendered.AsString() != want {
		t.Errorf("templatefile renders %s with the module's values to\n%s\nwant the document with its placeholders replaced:\n%s", policyFile, rendered.AsString(), want)
	}
}

// policyStatements is the statement blocks of the aws_iam_policy_document data source name.
func (c *config) policyStatements(t *testing.T, name string) []*hclsyntax.Block {
	t.Helper()
	doc := c.data["aws_iam_policy_document."+name]
	if doc == nil {
		t.Fatalf("no data.aws_iam_policy_document.%s", name)
	}
	return blocks(doc, "statement")
}

// principals is the evaluated identifiers of a statement's principals of type typ.
func principals(ctx *hcl.EvalContext, st *hclsyntax.Block, typ string) []string {
	var out []string
	for _, p := range blocks(st, "principals") {
		if str(ctx, attr(p, "type")) == typ {
			out = append(out, strs(ctx, attr(p, "identifiers"))...)
		}
	}
	return out
}

// trustStatement is the first aws_iam_policy_document in role's assume_role_policy that allows
// action, and that statement.
func (c *config) trustStatement(t *testing.T, ctx *hcl.EvalContext, role, action string) (string, *hclsyntax.Block) {
	t.Helper()
	r := c.resources["aws_iam_role."+role]
	if r == nil {
		t.Fatalf("no aws_iam_role.%s", role)
	}
	for _, ref := range refs(attr(r, "assume_role_policy")) {
		rest, ok := strings.CutPrefix(ref, "data.aws_iam_policy_document.")
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(rest, ".")
		for _, st := range c.policyStatements(t, name) {
			if slices.Contains(strs(ctx, attr(st, "actions")), action) && str(ctx, attr(st, "effect")) != "Deny" {
				return name, st
			}
		}
	}
	t.Fatalf("aws_iam_role.%s's assume_role_policy allows %s in no aws_iam_policy_document", role, action)
	return "", nil
}

// The controller role trusts either the cluster's OIDC provider for exactly Tailor's service
// account (IRSA) or EKS Pod Identity, by var.identity.
func TestControllerTrust(t *testing.T) {
	c := load(t, moduleDir)
	ctx := c.evalContext(map[string]cty.Value{"namespace": cty.StringVal("NS"), "service_account": cty.StringVal("SA")})

	t.Run("irsa", func(t *testing.T) {
		doc, st := c.trustStatement(t, ctx, "controller", "sts:AssumeRoleWithWebIdentity")
		if !hasRef(c.deepRefs(attr(c.data["aws_iam_policy_document."+doc], "count")), "var.identity") {
			t.Errorf("data.aws_iam_policy_document.%s is not counted by var.identity", doc)
		}
		var federated bool
		for _, p := range blocks(st, "principals") {
			if str(ctx, attr(p, "type")) == "Federated" && hasRef(refs(attr(p, "identifiers")), "var.oidc_provider_arn") {
				federated = true
			}
		}
		if !federated {
			t.Errorf("the IRSA trust's principal is not Federated var.oidc_provider_arn")
		}
		for _, tc := range []struct{ key, want string }{
			{":sub", "system:serviceaccount:NS:SA"},
			{":aud", "sts.amazonaws.com"},
		} {
			var found bool
			for _, cond := range blocks(st, "condition") {
				variable := attr(cond, "variable")
				tmpl, ok := variable.(*hclsyntax.TemplateExpr)
				if !ok || len(tmpl.Parts) != 2 {
					continue
				}
				lit, ok := tmpl.Parts[1].(*hclsyntax.LiteralValueExpr)
				if !ok || lit.Val.AsString() != tc.key {
					continue
				}
				found = true
				if got := str(ctx, attr(cond, "test")); got != "StringEquals" {
					t.Errorf("condition …%s tests %q, want StringEquals", tc.key, got)
				}
				issuer := c.deepRefs(tmpl.Parts[0])
				if !hasRef(issuer, "var.oidc_provider_arn") || !hasRef(issuer, "var.oidc_provider_url") {
					t.Errorf("condition …%s's key is not built from the OIDC provider inputs: %v", tc.key, issuer)
				}
				if got := strs(ctx, attr(cond, "values")); !slices.Equal(got, []string{tc.want}) {
					t.Errorf("condition …%s has values %v, want [%s]", tc.key, got, tc.want)
				}
			}
			if !found {
				t.Errorf("the IRSA trust has no condition on <issuer>%s", tc.key)
			}
		}
	})

	t.Run("pod identity", func(t *testing.T) {
		doc, st := c.trustStatement(t, ctx, "controller", "sts:TagSession")
		if !hasRef(c.deepRefs(attr(c.data["aws_iam_policy_document."+doc], "count")), "var.identity") {
			t.Errorf("data.aws_iam_policy_document.%s is not counted by var.identity", doc)
		}
		if got := strs(ctx, attr(st, "actions")); !slices.Equal(got, []string{"sts:AssumeRole", "sts:TagSession"}) {
			t.Errorf("the Pod Identity trust allows %v, want [sts:AssumeRole sts:TagSession]", got)
		}
		if got := principals(ctx, st, "Service"); !slices.Equal(got, []string{"pods.eks.amazonaws.com"}) {
			t.Errorf("the Pod Identity trust's service principals are %v, want [pods.eks.amazonaws.com]", got)
		}
		assoc := c.resources["aws_eks_pod_identity_association.controller"]
		if assoc == nil {
			t.Fatalf("no aws_eks_pod_identity_association.controller")
		}
		for arg, want := range map[string]string{
			"count":           "var.identity",
			"cluster_name":    "var.cluster_name",
			"namespace":       "var.namespace",
			"service_account": "var.service_account",
			"role_arn":        "aws_iam_role.controller.arn",
		} {
			if !hasRef(c.deepRefs(attr(assoc, arg)), want) {
				t.Errorf("aws_eks_pod_identity_association.controller's %s is not from %s", arg, want)
			}
		}
	})
}

// The node role is an EC2 role with the four EKS worker policies, an instance profile and an
// EC2_LINUX access entry.
func TestNodeRole(t *testing.T) {
	c := load(t, moduleDir)
	ctx := c.evalContext(nil)
	_, st := c.trustStatement(t, ctx, "node", "sts:AssumeRole")
	if got := principals(ctx, st, "Service"); !slices.Equal(got, []string{"ec2.amazonaws.com"}) {
		t.Errorf("the node role trusts %v, want [ec2.amazonaws.com]", got)
	}

	var attached []string
	for _, key := range ofType(c.resources, "aws_iam_role_policy_attachment") {
		b := c.resources[key]
		if !hasRef(refs(attr(b, "role")), "aws_iam_role.node") {
			continue
		}
		for k, v := range instances(t, ctx, b) {
			arn := str(withEach(ctx, k, v), attr(b, "policy_arn"))
			if arn == "" {
				t.Errorf("%s[%q]'s policy_arn does not evaluate", key, k)
			}
			attached = append(attached, arn)
		}
	}
	sort.Strings(attached)
	var want []string
	for _, p := range []string{"AmazonEC2ContainerRegistryReadOnly", "AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonSSMManagedInstanceCore"} {
		want = append(want, "arn:"+testPartition+":iam::aws:policy/"+p)
	}
	if !slices.Equal(attached, want) {
		t.Errorf("the node role has policies %v, want %v", attached, want)
	}

	var profile bool
	for _, key := range ofType(c.resources, "aws_iam_instance_profile") {
		profile = profile || hasRef(refs(attr(c.resources[key], "role")), "aws_iam_role.node")
	}
	if !profile {
		t.Errorf("no aws_iam_instance_profile holds aws_iam_role.node")
	}

	var entry bool
	for _, key := range ofType(c.resources, "aws_eks_access_entry") {
		b := c.resources[key]
		if hasRef(refs(attr(b, "principal_arn")), "aws_iam_role.node.arn") && str(ctx, attr(b, "type")) == "EC2_LINUX" &&
			hasRef(refs(attr(b, "cluster_name")), "var.cluster_name") {
			entry = true
		}
	}
	if !entry {
		t.Errorf("no aws_eks_access_entry of type EC2_LINUX for aws_iam_role.node.arn on var.cluster_name")
	}
}

// create_spot_service_linked_role creates the account's spot service-linked role when true and
// only then: it is one per account, so creating it by default would fail wherever spot was
// used before. The chart waits for it, so that Tailor's first spot launch finds it.
func TestSpotServiceLinkedRole(t *testing.T) {
	c := load(t, moduleDir)
	const input = "create_spot_service_linked_role"
	v := c.variables[input]
	if v == nil {
		t.Fatalf("no variable %q (the launch-failure event names it)", input)
	}
	if got := hcl.ExprAsKeyword(attr(v, "type")); got != "bool" {
		t.Errorf("%s's type is %q, want bool", input, got)
	}
	if d, diags := attr(v, "default").Value(nil); diags.HasErrors() || !d.RawEquals(cty.False) {
		t.Errorf("%s does not default to false", input)
	}
	desc := str(nil, attr(v, "description"))
	for _, want := range []string{"spot.amazonaws.com", "has been taken in this account", "aws iam create-service-linked-role --aws-service-name spot.amazonaws.com"} {
		if !strings.Contains(desc, want) {
			t.Errorf("%s's description does not say %q", input, want)
		}
	}

	roles := ofType(c.resources, "aws_iam_service_linked_role")
	if len(roles) != 1 {
		t.Fatalf("aws_iam_service_linked_role resources %v, want one", roles)
	}
	r := c.resources[roles[0]]
	if got := str(nil, attr(r, "aws_service_name")); got != "spot.amazonaws.com" {
		t.Errorf("%s's aws_service_name is %q, want spot.amazonaws.com", roles[0], got)
	}
	for _, tc := range []struct {
		create bool
		want   int64
	}{{false, 0}, {true, 1}} {
		ctx := c.evalContext(map[string]cty.Value{input: cty.BoolVal(tc.create)})
		n, diags := attr(r, "count").Value(ctx)
		if diags.HasErrors() || !n.IsKnown() || n.Type() != cty.Number {
			t.Errorf("%s's count does not evaluate from %s: %s", roles[0], input, diags.Error())
			continue
		}
		if got, _ := n.AsBigFloat().Int64(); got != tc.want {
			t.Errorf("%s = %v: %s's count is %d, want %d", input, tc.create, roles[0], got, tc.want)
		}
	}

	for _, key := range ofType(c.resources, "helm_release") {
		if !hasRef(refs(attr(c.resources[key], "depends_on")), roles[0]) {
			t.Errorf("%s does not depend on %s", key, roles[0])
		}
	}
}

// The interruption queue is encrypted, keeps messages minutes at most, and takes messages from
// EventBridge.
func TestInterruptionQueue(t *testing.T) {
	c := load(t, moduleDir)
	ctx := c.evalContext(nil)
	q := c.resources["aws_sqs_queue.interruption"]
	if q == nil || len(ofType(c.resources, "aws_sqs_queue")) != 1 {
		t.Fatalf("want one aws_sqs_queue, interruption; have %v", ofType(c.resources, "aws_sqs_queue"))
	}
	if v, diags := attr(q, "sqs_managed_sse_enabled").Value(ctx); diags.HasErrors() || !v.RawEquals(cty.True) {
		t.Errorf("the queue does not set sqs_managed_sse_enabled = true")
	}
	// An interruption warning is stale after two minutes; a queue that keeps it for days would
	// have the handler act on instances long gone.
	if v, diags := attr(q, "message_retention_seconds").Value(ctx); diags.HasErrors() || v.Type() != cty.Number {
		t.Errorf("the queue's message_retention_seconds is not a number")
	} else if s, _ := v.AsBigFloat().Int64(); s < 60 || s > 900 {
		t.Errorf("the queue keeps messages %d s, want 60 to 900", s)
	}

	pol := c.resources["aws_sqs_queue_policy.interruption"]
	if pol == nil || !hasRef(refs(attr(pol, "queue_url")), "aws_sqs_queue.interruption.url") {
		t.Fatalf("no aws_sqs_queue_policy.interruption on aws_sqs_queue.interruption.url")
	}
	var doc string
	for _, r := range refs(attr(pol, "policy")) {
		if rest, ok := strings.CutPrefix(r, "data.aws_iam_policy_document."); ok {
			doc, _, _ = strings.Cut(rest, ".")
		}
	}
	if doc == "" {
		t.Fatalf("the queue policy is no aws_iam_policy_document")
	}
	var sends bool
	for _, st := range c.policyStatements(t, doc) {
		if str(ctx, attr(st, "effect")) == "Deny" || !slices.Equal(strs(ctx, attr(st, "actions")), []string{"sqs:SendMessage"}) {
			continue
		}
		got := principals(ctx, st, "Service")
		sort.Strings(got)
		sends = sends || slices.Equal(got, []string{"events.amazonaws.com", "sqs.amazonaws.com"}) &&
			hasRef(refs(attr(st, "resources")), "aws_sqs_queue.interruption.arn")
	}
	if !sends {
		t.Errorf("the queue policy does not allow sqs:SendMessage to the queue from events.amazonaws.com and sqs.amazonaws.com")
	}
}

// Without an interruption queue, the READMEs have ${queue_arn} replaced by hand with the ARN the
// module's queue gets by default (a policy naming a queue not created allows nothing), so that
// a hand-made role and the module's name the same queue.
func TestManualQueueARNIsModuleDefault(t *testing.T) {
	c := load(t, moduleDir)
	ctx := c.evalContext(map[string]cty.Value{
		"cluster_name":            cty.StringVal("<cluster>"),
		"interruption_queue_name": attrValue(t, c.variables["interruption_queue_name"], "default"),
	})
	local := ctx.Variables["local"].GetAttr("queue_name")
	if !local.IsWhollyKnown() || local.Type() != cty.String {
		t.Fatalf("local.queue_name does not evaluate from the cluster name")
	}
	if !hasRef(refs(attr(c.resources["aws_sqs_queue.interruption"], "name")), "local.queue_name") {
		t.Fatalf("aws_sqs_queue.interruption is not named local.queue_name")
	}
	want := "arn:<partition>:sqs:<region>:<account>:" + local.AsString()
	for _, readme := range []string{"../../README.md", "README.md"} {
		raw, err := os.ReadFile(readme)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(raw), "`"+want+"`") {
			t.Errorf("%s does not give `%s` as ${queue_arn} without a queue", readme, want)
		}
	}
}

// attrValue is the value of b's attribute name, which must evaluate without context.
func attrValue(t *testing.T, b *hclsyntax.Block, name string) cty.Value {
	t.Helper()
	v, diags := attr(b, name).Value(nil)
	if diags.HasErrors() {
		t.Fatalf("%s %v: %s: %s", b.Type, b.Labels, name, diags.Error())
	}
	return v
}

// Exactly the four kinds of event the interruption handling needs reach the queue, each by a
// rule with the right source and detail-type and a target on the queue.
func TestInterruptionRules(t *testing.T) {
	c := load(t, moduleDir)
	ctx := c.evalContext(nil)
	want := []struct {
		source, detailType string
		// detail is a filter the rule must have beyond source and detail-type (nil: none checked).
		detail map[string][]string
	}{
		{"aws.ec2", "EC2 Spot Instance Interruption Warning", nil},
		{"aws.ec2", "EC2 Instance Rebalance Recommendation", nil},
		{"aws.ec2", "EC2 Instance State-change Notification", nil},
		{"aws.health", "AWS Health Event", map[string][]string{"service": {"EC2"}, "eventTypeCategory": {"scheduledChange"}}},
	}
	type rule struct {
		resource, key string
		pattern       struct {
			Source     []string            `json:"source"`
			DetailType []string            `json:"detail-type"`
			Detail     map[string][]string `json:"detail"`
		}
	}
	var rules []rule
	for _, key := range ofType(c.resources, "aws_cloudwatch_event_rule") {
		b := c.resources[key]
		for k, v := range instances(t, ctx, b) {
			r := rule{resource: key, key: k}
			s := str(withEach(ctx, k, v), attr(b, "event_pattern"))
			if err := json.Unmarshal([]byte(s), &r.pattern); err != nil {
				t.Errorf("%s[%q]'s event_pattern is not JSON here (%q): %v", key, k, s, err)
				continue
			}
			rules = append(rules, r)
		}
	}
	if len(rules) != len(want) {
		t.Errorf("%d event rules, want %d", len(rules), len(want))
	}

	// The targets by the rule resource they name and by instance key.
	targeted := map[string]map[string]bool{}
	for _, key := range ofType(c.resources, "aws_cloudwatch_event_target") {
		b := c.resources[key]
		if !hasRef(refs(attr(b, "arn")), "aws_sqs_queue.interruption.arn") {
			t.Errorf("%s does not send to aws_sqs_queue.interruption.arn", key)
			continue
		}
		ruleRefs := refs(attr(b, "rule"))
		for _, rk := range ofType(c.resources, "aws_cloudwatch_event_rule") {
			if !hasRef(ruleRefs, rk) {
				continue
			}
			// A target per instance of a for_each rule must pick its own rule by each.key.
			if attr(c.resources[rk], "for_each") != nil && !hasRef(ruleRefs, "each.key") {
				t.Errorf("%s names %s without [each.key]", key, rk)
				continue
			}
			if targeted[rk] == nil {
				targeted[rk] = map[string]bool{}
			}
			for k := range instances(t, ctx, b) {
				targeted[rk][k] = true
			}
		}
	}

	for _, w := range want {
		t.Run(w.detailType, func(t *testing.T) {
			var matched []rule
			for _, r := range rules {
				if slices.Equal(r.pattern.Source, []string{w.source}) && slices.Equal(r.pattern.DetailType, []string{w.detailType}) {
					matched = append(matched, r)
				}
			}
			if len(matched) != 1 {
				t.Fatalf("%d rules match source %s, detail-type %q; want 1", len(matched), w.source, w.detailType)
			}
			r := matched[0]
			for field, values := range w.detail {
				if !slices.Equal(r.pattern.Detail[field], values) {
					t.Errorf("%s[%q] filters detail.%s on %v, want %v", r.resource, r.key, field, r.pattern.Detail[field], values)
				}
			}
			if !targeted[r.resource][r.key] {
				t.Errorf("%s[%q] has no target on the queue", r.resource, r.key)
			}
		})
	}
}

// The subnets and security groups given get the tag the default pool selectors look for, with
// the cluster's name as value.
func TestDiscoveryTags(t *testing.T) {
	c := load(t, moduleDir)
	def := str(nil, attr(c.variables["discovery_tag_key"], "default"))
	if def != configv1.DiscoveryTag {
		t.Errorf("discovery_tag_key defaults to %q; the default selectors read %q", def, configv1.DiscoveryTag)
	}
	for _, input := range []string{"var.discovery_subnet_ids", "var.discovery_security_group_ids"} {
		var tagged bool
		for _, key := range ofType(c.resources, "aws_ec2_tag") {
			b := c.resources[key]
			if hasRef(refs(attr(b, "for_each")), input) && hasRef(refs(attr(b, "resource_id")), "each.value") &&
				hasRef(refs(attr(b, "key")), "var.discovery_tag_key") && hasRef(refs(attr(b, "value")), "var.cluster_name") {
				tagged = true
			}
		}
		if !tagged {
			t.Errorf("no aws_ec2_tag puts var.discovery_tag_key = var.cluster_name on each of %s", input)
		}
	}
}

// helmValue is one value the module sets in the chart: its key path, its expression and the
// conditions it is chosen under.
type helmValue struct {
	path   []string
	expr   hclsyntax.Expression
	guards []hclsyntax.Expression
}

func walkValues(t *testing.T, e hclsyntax.Expression, path []string, guards []hclsyntax.Expression, out *[]helmValue) {
	t.Helper()
	switch e := e.(type) {
	case *hclsyntax.ObjectConsExpr:
		if len(e.Items) == 0 {
			*out = append(*out, helmValue{path, e, guards})
		}
		for _, item := range e.Items {
			k, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() || k.Type() != cty.String {
				t.Errorf("a chart value under %q has a computed key", strings.Join(path, "."))
				continue
			}
			walkValues(t, item.ValueExpr, append(slices.Clone(path), k.AsString()), guards, out)
		}
	case *hclsyntax.ConditionalExpr:
		g := append(slices.Clone(guards), e.Condition)
		walkValues(t, e.TrueResult, path, g, out)
		walkValues(t, e.FalseResult, path, g, out)
	case *hclsyntax.ParenthesesExpr:
		walkValues(t, e.Expression, path, guards, out)
	default:
		*out = append(*out, helmValue{path, e, guards})
	}
}

// inValues tells whether path is a key of the chart's values: every step names a key of the
// map above it, except under an empty map (annotations, podLabels), whose keys are the user's.
func inValues(values map[string]any, path []string) bool {
	node := any(values)
	for _, step := range path {
		m, ok := node.(map[string]any)
		if !ok {
			return false
		}
		if len(m) == 0 {
			return true
		}
		if node, ok = m[step]; !ok {
			return false
		}
	}
	return true
}

// The helm_release installs the repository's chart, and every value the module sets is a key of
// its values.yaml: a misspelt key is silently ignored by helm.
func TestHelmReleaseValues(t *testing.T) {
	c := load(t, moduleDir)
	releases := ofType(c.resources, "helm_release")
	if len(releases) != 1 {
		t.Fatalf("helm releases %v, want one", releases)
	}
	rel := c.resources[releases[0]]
	// One style of values, the one checked here: no set blocks (helm provider 2) nor set
	// attributes (3).
	for _, b := range rel.Body.Blocks {
		if strings.HasPrefix(b.Type, "set") {
			t.Errorf("%s has a %s block: set the chart's values in values = [yamlencode({...})]", releases[0], b.Type)
		}
	}
	for name := range rel.Body.Attributes {
		if strings.HasPrefix(name, "set") {
			t.Errorf("%s sets %s: set the chart's values in values = [yamlencode({...})]", releases[0], name)
		}
	}
	var chart []string
	for _, r := range refs(attr(rel, "chart")) {
		if name, ok := strings.CutPrefix(r, "local."); ok && c.locals[name] != nil {
			hclsyntax.VisitAll(c.locals[name].Expr, func(n hclsyntax.Node) hcl.Diagnostics {
				if e, ok := n.(hclsyntax.Expression); ok {
					if p, ok := c.modulePath(e); ok {
						chart = append(chart, p)
					}
				}
				return nil
			})
		}
	}
	if p, ok := c.modulePath(attr(rel, "chart")); ok {
		chart = append(chart, p)
	}
	if !slices.Equal(chart, []string{filepath.Clean(chartDir)}) {
		t.Errorf("the release's default chart is %v, want [%s]", chart, filepath.Clean(chartDir))
	}
	if !hasRef(c.deepRefs(attr(rel, "chart")), "var.chart") {
		t.Errorf("the release's chart does not take var.chart")
	}
	if !hasRef(refs(attr(rel, "namespace")), "var.namespace") {
		t.Errorf("the release's namespace is not var.namespace")
	}
	if got := str(nil, attr(c.variables["namespace"], "default")); got != "kube-system" {
		t.Errorf("namespace defaults to %q, want kube-system", got)
	}

	raw, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]any
	if err := yaml.Unmarshal(raw, &values); err != nil {
		t.Fatal(err)
	}
	var set []helmValue
	var docs int
	hclsyntax.VisitAll(attr(rel, "values"), func(n hclsyntax.Node) hcl.Diagnostics {
		if call, ok := n.(*hclsyntax.FunctionCallExpr); ok && call.Name == "yamlencode" && len(call.Args) == 1 {
			docs++
			walkValues(t, call.Args[0], nil, nil, &set)
		}
		return nil
	})
	if docs == 0 {
		t.Fatalf("%s's values hold no yamlencode({...})", releases[0])
	}
	byPath := map[string]helmValue{}
	for _, v := range set {
		key := strings.Join(v.path, ".")
		if !inValues(values, v.path) {
			t.Errorf("the module sets %s, which is not in %s/values.yaml", key, chartDir)
		}
		byPath[key] = v
	}

	for _, w := range []struct {
		path, from string
		// guard: the value is set only under a condition on this reference.
		guard string
	}{
		{"settings.clusterName", "var.cluster_name", ""},
		{"settings.region", "data.aws_region.current.region", ""},
		{"settings.clusterEndpoint", "var.cluster_endpoint", ""},
		{"settings.clusterCABundle", "var.cluster_ca_bundle", ""},
		{"settings.interruptionQueue", "aws_sqs_queue.interruption.name", ""},
		{"serviceAccount.name", "var.service_account", ""},
		{"serviceAccount.annotations.eks.amazonaws.com/role-arn", "aws_iam_role.controller.arn", "var.identity"},
		{"controller.image.repository", "var.image_repository", ""},
		{"pools", "aws_iam_instance_profile.node.name", ""},
	} {
		t.Run(w.path, func(t *testing.T) {
			v, ok := byPath[w.path]
			if !ok {
				t.Fatalf("the module does not set %s", w.path)
			}
			if !hasRef(c.deepRefs(v.expr), w.from) {
				t.Errorf("%s is %v, want it from %s", w.path, c.deepRefs(v.expr), w.from)
			}
			var guarded bool
			for _, g := range v.guards {
				guarded = guarded || hasRef(c.deepRefs(g), w.guard)
			}
			if w.guard != "" && !guarded {
				t.Errorf("%s is set whatever %s", w.path, w.guard)
			}
		})
	}
}
