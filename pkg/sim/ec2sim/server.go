package ec2sim

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// apiError is an EC2 error answer.
type apiError struct {
	status  int
	code    string
	message string
	// queryCode is the query-protocol code of an SQS error (X-Amzn-Query-Error).
	queryCode string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func errf(code, format string, args ...any) *apiError {
	return &apiError{status: defaultStatus(code), code: code, message: fmt.Sprintf(format, args...)}
}

func missing(param string) *apiError {
	return errf("MissingParameter", "The request must contain the parameter %s", param)
}

func invalidValue(param, value string) *apiError {
	return errf("InvalidParameterValue", "Invalid value '%s' for %s", value, param)
}

// handler answers one EC2 action with an output struct for the encoder. It runs with s.mu held.
type handler func(s *Sim, q query) (any, error)

var handlers map[string]handler

func init() {
	handlers = map[string]handler{
		"DescribeInstanceTypes":         (*Sim).describeInstanceTypes,
		"DescribeInstanceTypeOfferings": (*Sim).describeInstanceTypeOfferings,
		"DescribeSubnets":               (*Sim).describeSubnets,
		"DescribeSecurityGroups":        (*Sim).describeSecurityGroups,
		"DescribeImages":                (*Sim).describeImages,
		"DescribeSpotPriceHistory":      (*Sim).describeSpotPriceHistory,
		"DescribeCapacityReservations":  (*Sim).describeCapacityReservations,
		"CreateLaunchTemplate":          (*Sim).createLaunchTemplate,
		"DescribeLaunchTemplates":       (*Sim).describeLaunchTemplates,
		"DeleteLaunchTemplate":          (*Sim).deleteLaunchTemplate,
		"CreateFleet":                   (*Sim).createFleet,
		"DescribeInstances":             (*Sim).describeInstances,
		"TerminateInstances":            (*Sim).terminateInstances,
		"CreateTags":                    (*Sim).createTags,
	}
}

// maxBody bounds request bodies.
const maxBody = 8 << 20

// record counts and keeps a request (the newest maxRecorded per action) and returns the fault
// that applies to it, if any.
func (s *Sim) record(action string, params url.Values) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[action]++
	rec := s.requests[action]
	if len(rec) >= maxRecorded {
		rec = slices.Delete(rec, 0, 1)
	}
	s.requests[action] = append(rec, params)
	return s.takeFault(action, params)
}

// ServeHTTP answers EC2 Query protocol requests, SSM, Pricing and SQS JSON requests
// (X-Amz-Target: AmazonSSM.*, AWSPriceListService.*, AmazonSQS.*), EKS REST requests, GET
// /_ec2sim/state, a JSON summary of the world for people, and POST /_ec2sim/sqs/<queue>, which
// puts an interruption event (or any body) on a queue (see serveSend).
func (s *Sim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	begin := time.Now()
	if r.Method == http.MethodGet && r.URL.Path == "/_ec2sim/state" {
		s.serveState(w)
		return
	}
	if strings.HasPrefix(r.URL.Path, sendPath) {
		s.serveSend(w, r)
		return
	}
	if isEKSRequest(r) {
		s.serveEKS(w, r, begin)
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		s.serveJSON(w, r, target, begin)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if err := r.ParseForm(); err != nil {
		s.writeError(w, "", errf("MalformedQueryString", "%v", err), begin)
		return
	}
	action := r.Form.Get("Action")
	if action == "" {
		s.writeError(w, "", missing("Action"), begin)
		return
	}
	fault := s.record(action, cloneValues(r.Form))
	s.enter(action)
	defer s.leave(action)

	writeErr := func(e *apiError) { s.writeError(w, action, e, begin) }
	var fleetFault *Fault
	if fault != nil && fault.InFleet && action == "CreateFleet" {
		if !sleep(r, fault.Latency) {
			return
		}
		fleetFault, fault = fault, nil
	}
	if fault != nil && !fault.AfterEffect && fault.delayAndFail(r, writeErr) {
		return
	}
	h, ok := handlers[action]
	if !ok {
		s.writeError(w, action, errf("InvalidAction", "The action %s is not valid for this web service.", action), begin)
		return
	}
	if r.Form.Get("DryRun") == "true" {
		s.writeError(w, action, &apiError{status: 412, code: "DryRunOperation", message: "Request would have succeeded, but DryRun flag is set."}, begin)
		return
	}
	s.mu.Lock()
	s.sweep()
	s.caller = principalOf(r)
	s.fleetFault = fleetFault
	out, err := h(s, query{v: r.Form})
	s.fleetFault = nil
	if !slices.Contains(resourceActions, action) {
		s.authorize("ec2:"+action, nil, nil)
	}
	reqID := s.newRequestID()
	s.mu.Unlock()
	if fault != nil && fault.AfterEffect && fault.delayAndFail(r, writeErr) {
		return
	}
	if err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = &apiError{status: 500, code: "InternalError", message: err.Error()}
		}
		s.writeError(w, action, ae, begin)
		return
	}
	body := encodeResponse(action, reqID, out)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	s.log.Debug("ec2sim request", "action", action, "status", 200, "duration", time.Since(begin))
}

// sleep waits d or until the request is cancelled; false when cancelled.
func sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

func (s *Sim) writeError(w http.ResponseWriter, action string, e *apiError, begin time.Time) {
	s.mu.Lock()
	reqID := s.newRequestID()
	s.refusals[e.code]++
	s.mu.Unlock()
	body := encodeError(e.code, e.message, reqID)
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("X-Amzn-RequestId", reqID)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.status)
	_, _ = w.Write(body)
	s.log.Debug("ec2sim request", "action", action, "status", e.status, "code", e.code, "message", e.message, "duration", time.Since(begin))
}

func (s *Sim) serveState(w http.ResponseWriter) {
	s.mu.Lock()
	s.sweep()
	now := s.clock.Now()
	type inst struct {
		ID, Type, Zone, State, CapacityType, PrivateIP string
		LaunchTime                                     time.Time
		Tags                                           map[string]string
	}
	state := struct {
		Region        string
		Now           time.Time
		FleetRequests int
		Calls         map[string]int
		Instances     []inst
	}{Region: s.opts.Region, Now: now, FleetRequests: s.fleetsCreated, Calls: map[string]int{}}
	for k, v := range s.calls {
		state.Calls[k] = v
	}
	for _, in := range s.instances {
		c := in.cloud(now, s.opts)
		state.Instances = append(state.Instances, inst{c.ID, c.Type, c.Zone, c.State, string(c.CapacityType), c.PrivateIP, c.LaunchTime, c.Tags})
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(state)
}

// query reads the flattened parameters of an EC2 Query request under a prefix.
type query struct {
	v      url.Values
	prefix string
}

func (q query) get(key string) string { return q.v.Get(q.prefix + key) }

func (q query) has(key string) bool {
	_, ok := q.v[q.prefix+key]
	return ok
}

// sub returns the parameters under key (key.X → X).
func (q query) sub(key string) query { return query{v: q.v, prefix: q.prefix + key + "."} }

// indices returns the list positions N present under key (key.N or key.N.X), ascending.
func (q query) indices(key string) []int {
	p := q.prefix + key + "."
	seen := map[int]bool{}
	for k := range q.v {
		rest, ok := strings.CutPrefix(k, p)
		if !ok {
			continue
		}
		num, _, _ := strings.Cut(rest, ".")
		if n, err := strconv.Atoi(num); err == nil && n > 0 {
			seen[n] = true
		}
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Ints(out)
	return out
}

// members returns the structures of list key.
func (q query) members(key string) []query {
	var out []query
	for _, n := range q.indices(key) {
		out = append(out, q.sub(key+"."+strconv.Itoa(n)))
	}
	return out
}

// list returns the scalar values of list key.
func (q query) list(key string) []string {
	var out []string
	for _, n := range q.indices(key) {
		out = append(out, q.get(key+"."+strconv.Itoa(n)))
	}
	return out
}

// int returns an integer parameter; ok is false when absent.
func (q query) int(key string) (n int, ok bool, err error) {
	s := q.get(key)
	if !q.has(key) {
		return 0, false, nil
	}
	n, perr := strconv.Atoi(s)
	if perr != nil {
		return 0, true, invalidValue(key, s)
	}
	return n, true, nil
}

// timestamp returns a date-time parameter (ISO 8601, as the SDK sends it); ok is false when
// absent.
func (q query) timestamp(key string) (t time.Time, ok bool, err error) {
	if !q.has(key) {
		return time.Time{}, false, nil
	}
	v := q.get(key)
	t, perr := time.Parse(time.RFC3339Nano, v)
	if perr != nil {
		return time.Time{}, true, invalidValue(key, v)
	}
	return t, true, nil
}

// tags reads a Tag.N.Key / Tag.N.Value list.
func (q query) tags(key string) (map[string]string, error) {
	out := map[string]string{}
	for _, m := range q.members(key) {
		k := m.get("Key")
		if k == "" {
			return nil, errf("InvalidParameterValue", "Tag key must not be empty")
		}
		if err := checkTag(k, m.get("Value")); err != nil {
			return nil, err
		}
		out[k] = m.get("Value")
	}
	return out, nil
}

func checkTag(k, v string) error {
	switch {
	case strings.HasPrefix(strings.ToLower(k), "aws:"):
		return errf("InvalidParameterValue", "Tag keys starting with 'aws:' are reserved for internal use")
	case len(k) > 128:
		return errf("InvalidParameterValue", "Tag key exceeds the maximum length of 128 characters")
	case len(v) > 256:
		return errf("InvalidParameterValue", "Tag value exceeds the maximum length of 256 characters")
	}
	return nil
}

// tagSpecs reads TagSpecification.N.{ResourceType,Tag.M.*} into tags by resource type.
func (q query) tagSpecs(key string, allowed ...string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	for _, m := range q.members(key) {
		rt := m.get("ResourceType")
		if rt == "" {
			return nil, missing(m.prefix + "ResourceType")
		}
		if !slices.Contains(allowed, rt) {
			return nil, errf("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		tags, err := m.tags("Tag")
		if err != nil {
			return nil, err
		}
		if out[rt] == nil {
			out[rt] = map[string]string{}
		}
		for k, v := range tags {
			out[rt][k] = v
		}
	}
	return out, nil
}

// filter is one Filter.N of a describe request.
type filter struct {
	name   string
	values []string
}

func (q query) filters() ([]filter, error) {
	var out []filter
	for _, m := range q.members("Filter") {
		f := filter{name: m.get("Name"), values: m.list("Value")}
		if f.name == "" {
			return nil, missing("Filter.N.Name")
		}
		out = append(out, f)
	}
	return out, nil
}

// attrFunc returns the values of a resource for a filter name; ok is false when the filter name
// is not valid for the resource.
type attrFunc func(name string) (values []string, ok bool)

// tagAttrs answers the tag filters (tag:KEY, tag-key, tag-value) for a tag set.
func tagAttrs(tags map[string]string, name string) ([]string, bool) {
	if k, ok := strings.CutPrefix(name, "tag:"); ok {
		if v, present := tags[k]; present {
			return []string{v}, true
		}
		return nil, true
	}
	switch name {
	case "tag-key":
		out := make([]string, 0, len(tags))
		for k := range tags {
			out = append(out, k)
		}
		return out, true
	case "tag-value":
		out := make([]string, 0, len(tags))
		for _, v := range tags {
			out = append(out, v)
		}
		return out, true
	}
	return nil, false
}

// matchFilters reports whether a resource passes every filter: some value of the resource must
// match some value of each filter, with EC2's wildcards (* and ?).
func matchFilters(filters []filter, attrs attrFunc) (bool, error) {
	for _, f := range filters {
		vals, ok := attrs(f.name)
		if !ok {
			return false, errf("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
		if !anyMatch(f.values, vals) {
			return false, nil
		}
	}
	return true, nil
}

// validateFilters checks the filter names against a resource's attributes without a resource.
func validateFilters(filters []filter, attrs attrFunc) error {
	for _, f := range filters {
		if _, ok := attrs(f.name); !ok {
			return errf("InvalidParameterValue", "The filter '%s' is invalid", f.name)
		}
	}
	return nil
}

func anyMatch(patterns, values []string) bool {
	for _, p := range patterns {
		for _, v := range values {
			if wildcard(p, v) {
				return true
			}
		}
	}
	return false
}

// wildcard matches s against an EC2 filter pattern: * any run, ? one character, \ escapes.
func wildcard(pattern, s string) bool {
	if !strings.ContainsAny(pattern, `*?\`) {
		return pattern == s
	}
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		case '\\':
			if i+1 < len(pattern) {
				i++
				b.WriteString(regexp.QuoteMeta(string(pattern[i])))
			}
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(s)
}

func boolAttr(b bool) []string { return []string{strconv.FormatBool(b)} }

// page is a slice of a result list.
type page struct {
	start, end int
	next       string
}

// pageLimits are EC2's MaxResults rules for one action: min and max allowed, and the page size
// without MaxResults (0 = everything).
type pageLimits struct {
	min, max, def int
}

// paginate cuts n results into the page the request asks for.
func paginate(q query, action string, n int, lim pageLimits) (page, error) {
	size := lim.def
	if m, ok, err := q.int("MaxResults"); err != nil {
		return page{}, err
	} else if ok {
		if m < lim.min || m > lim.max {
			return page{}, errf("InvalidParameterValue", "Value ( %d ) for parameter maxResults is invalid. Parameter must be between %d and %d.", m, lim.min, lim.max)
		}
		size = m
	}
	start := 0
	if tok := q.get("NextToken"); tok != "" {
		raw, err := base64.RawURLEncoding.DecodeString(tok)
		rest, ok := strings.CutPrefix(string(raw), action+":")
		off, aerr := strconv.Atoi(rest)
		if err != nil || !ok || aerr != nil || off < 0 {
			return page{}, errf("InvalidParameterValue", "Invalid NextToken value %q", tok)
		}
		start = min(off, n)
	}
	end := n
	if size > 0 && start+size < n {
		end = start + size
	}
	p := page{start: start, end: end}
	if end < n {
		p.next = base64.RawURLEncoding.EncodeToString([]byte(action + ":" + strconv.Itoa(end)))
	}
	return p, nil
}

// ptrIfSet returns a pointer to s, or nil for "".
func ptrIfSet(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ID shapes, for the Malformed errors.
var (
	instanceIDRe = regexp.MustCompile(`^i-[0-9a-f]{8}([0-9a-f]{9})?$`)
	subnetIDRe   = regexp.MustCompile(`^subnet-[0-9a-f]{8}([0-9a-f]{9})?$`)
	groupIDRe    = regexp.MustCompile(`^sg-[0-9a-f]{8}([0-9a-f]{9})?$`)
	imageIDRe    = regexp.MustCompile(`^ami-[0-9a-f]{8}([0-9a-f]{9})?$`)
	ltIDRe       = regexp.MustCompile(`^lt-[0-9a-f]{17}$`)
)

// notFoundList formats EC2's "does not exist" message for one or several IDs.
func notFoundList(code, noun string, ids []string) *apiError {
	if len(ids) == 1 {
		return errf(code, "The %s ID '%s' does not exist", noun, ids[0])
	}
	return errf(code, "The %s IDs '%s' do not exist", noun, strings.Join(ids, ", "))
}
