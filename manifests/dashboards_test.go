package manifests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/component-base/metrics/legacyregistry"
	schedulermetrics "k8s.io/kubernetes/pkg/scheduler/metrics"

	"github.com/tailor-eks/tailor/pkg/consolidation"
	"github.com/tailor-eks/tailor/pkg/interruption"
	"github.com/tailor-eks/tailor/pkg/metrics"
)

// The Grafana dashboards of dashboards/ query only metrics the scheduler serves: every panel has a
// query, and every metric a query or a variable names is registered in the registry /metrics
// serves, so a renamed or removed metric fails here and not on someone's empty panel.
func TestDashboardsQueryExportedMetrics(t *testing.T) {
	exported := exportedMetrics(t)
	files, err := filepath.Glob("dashboards/*.json")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	for _, want := range []string{"provisioning.json", "consolidation.json", "cost.json"} {
		if !slices.Contains(names, want) {
			t.Errorf("dashboards/ has %v, no %s", names, want)
		}
	}
	uids := map[string]string{}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var d dashboard
			if err := json.Unmarshal(raw, &d); err != nil {
				t.Fatalf("not a dashboard: %v", err)
			}
			if d.Title == "" || d.UID == "" {
				t.Errorf("title %q uid %q: both are needed to import and link it", d.Title, d.UID)
			}
			if other, ok := uids[d.UID]; ok {
				t.Errorf("uid %s is %s's too", d.UID, other)
			}
			uids[d.UID] = f
			check := func(where, expr string) {
				found, err := metricNames(expr)
				if err != nil {
					t.Errorf("%s: %v", where, err)
				}
				if len(found) == 0 && err == nil {
					t.Errorf("%s: %q names no metric", where, expr)
				}
				for _, name := range found {
					if !exported(name) {
						t.Errorf("%s: %s is not a metric the scheduler serves (in %q)", where, name, expr)
					}
				}
			}
			panels := d.allPanels()
			if len(panels) == 0 {
				t.Fatal("no panels")
			}
			for _, p := range panels {
				where := fmt.Sprintf("panel %q", p.Title)
				if p.Datasource.UID != "${datasource}" {
					t.Errorf("%s: data source %+v, want the dashboard's ${datasource} variable, so it works in any Grafana", where, p.Datasource)
				}
				if len(p.Targets) == 0 {
					t.Errorf("%s has no query", where)
				}
				for _, tg := range p.Targets {
					if strings.TrimSpace(tg.Expr) == "" {
						t.Errorf("%s: query %s has no expr", where, tg.RefID)
						continue
					}
					check(where, tg.Expr)
				}
			}
			for _, v := range d.Templating.List {
				if v.Type != "query" {
					continue
				}
				q, err := v.queryString()
				if err != nil {
					t.Errorf("variable %s: %v", v.Name, err)
					continue
				}
				// label_values(<series selector>, <label>); label_values(<label>) names no metric.
				if inner, ok := strings.CutPrefix(q, "label_values("); ok && strings.HasSuffix(inner, ")") {
					if i := strings.LastIndex(inner, ","); i >= 0 {
						check("variable "+v.Name, inner[:i])
					}
					continue
				}
				t.Errorf("variable %s: query %q is not label_values(...), which this test reads", v.Name, q)
			}
		})
	}
}

type dashboard struct {
	Title      string  `json:"title"`
	UID        string  `json:"uid"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	// Panels are those of a collapsed row.
	Panels []panel `json:"panels"`
}

type variable struct {
	Name  string          `json:"name"`
	Type  string          `json:"type"`
	Query json.RawMessage `json:"query"`
}

// queryString is the variable's query: Grafana stores it as a string or as {query: ...}.
func (v variable) queryString() (string, error) {
	var s string
	if err := json.Unmarshal(v.Query, &s); err == nil {
		return s, nil
	}
	var o struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &o); err != nil {
		return "", fmt.Errorf("query %s is neither a string nor {query: ...}", v.Query)
	}
	return o.Query, nil
}

// allPanels are the dashboard's panels that show something: rows are left out and the panels of
// collapsed rows taken in.
func (d dashboard) allPanels() []panel {
	var out []panel
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			out = append(out, p)
		}
	}
	walk(d.Panels)
	return out
}

// exportedMetrics registers what the scheduler registers at start in the registry its /metrics
// serves (legacyregistry): Tailor's metrics as pkg/operator registers them, and kube-scheduler's
// (scheduler.New calls its metrics.Register). It returns whether a name is one of them, a
// histogram's _bucket, _sum and _count series included.
//
// The registry is asked, not scraped: component-base metrics show in a scrape only once they have
// a value, but the registry knows every registered descriptor from the start. It refuses a
// descriptor whose name is registered already with other labels or help, and only then, so a
// probe of that name with its own help string tells whether the name is registered.
func exportedMetrics(t *testing.T) func(name string) bool {
	t.Helper()
	metrics.Register(metrics.State{})
	consolidation.RegisterMetrics()
	interruption.RegisterMetrics()
	schedulermetrics.Register()
	reg := legacyregistry.Registerer()
	registered := func(name string) bool {
		probe := probeCollector{prometheus.NewDesc(name, "manifests dashboards_test probe", nil, nil)}
		err := reg.Register(probe)
		if err == nil {
			reg.Unregister(probe)
			return false
		}
		if !strings.Contains(err.Error(), "different label names or a different help string") {
			t.Fatalf("probing the registry for %s: %v", name, err)
		}
		return true
	}
	if !registered("tailor_claims") || registered("tailor_no_such_metric") {
		t.Fatal("the registry probe cannot tell registered metrics from others")
	}
	return func(name string) bool {
		if registered(name) {
			return true
		}
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && registered(base) {
				return true
			}
		}
		return false
	}
}

type probeCollector struct{ desc *prometheus.Desc }

func (p probeCollector) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }
func (p probeCollector) Collect(chan<- prometheus.Metric)    {}

// promQLWords are PromQL's keywords and aggregation operators: words that are never a metric.
// Functions are told by the parenthesis after them.
var promQLWords = map[string]bool{
	"and": true, "or": true, "unless": true, "bool": true, "offset": true, "atan2": true, "inf": true, "nan": true,
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true, "count": true,
	"count_values": true, "bottomk": true, "topk": true, "quantile": true, "limitk": true, "limit_ratio": true,
}

// promQLLabelLists are the words followed by a parenthesized list of label names.
var promQLLabelLists = map[string]bool{"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true}

// metricNames returns the metric names an expression of Grafana's PromQL selects: string literals,
// Grafana variables ($name, ${name}), label matchers ({...}), ranges ([...]) and numbers are
// dropped, and of the words left a metric name is one that is no keyword, no function (a word
// followed by "(") and not in a label list after by, without, on, ignoring, group_left or
// group_right. It is a tokenizer, not a parser: enough for dashboards' queries, and its own test
// says what it reads.
func metricNames(expr string) ([]string, error) {
	var b strings.Builder
	for i := 0; i < len(expr); i++ {
		switch c := expr[i]; c {
		case '"', '\'', '`':
			j := i + 1
			for ; j < len(expr) && expr[j] != c; j++ {
				if expr[j] == '\\' && c != '`' {
					j++
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unterminated string in %q", expr)
			}
			i = j
			b.WriteByte(' ')
		case '$':
			j := i + 1
			if j < len(expr) && expr[j] == '{' {
				end := strings.IndexByte(expr[j:], '}')
				if end < 0 {
					return nil, fmt.Errorf("unterminated ${ in %q", expr)
				}
				j += end + 1
			} else {
				for j < len(expr) && isWordByte(expr[j]) {
					j++
				}
			}
			i = j - 1
			b.WriteString(" 1 ")
		case '{', '[':
			closing := byte('}')
			if c == '[' {
				closing = ']'
			}
			j := i + 1
			for ; j < len(expr) && expr[j] != closing; j++ {
				if q := expr[j]; q == '"' || q == '\'' || q == '`' { // a matcher's value may hold the closing character
					for j++; j < len(expr) && expr[j] != q; j++ {
						if expr[j] == '\\' && q != '`' {
							j++
						}
					}
				}
			}
			if j >= len(expr) {
				return nil, fmt.Errorf("unclosed %c in %q", c, expr)
			}
			i = j
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	rest := b.String()

	// Tokens: words, and single punctuation characters; numbers (durations included) are dropped.
	var tokens []string
	for i := 0; i < len(rest); {
		c := rest[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c >= '0' && c <= '9' || c == '.':
			for i < len(rest) && (isWordByte(rest[i]) || rest[i] == '.') {
				i++
			}
		case isWordByte(c) || c == ':':
			j := i
			for j < len(rest) && (isWordByte(rest[j]) || rest[j] == ':') {
				j++
			}
			tokens = append(tokens, rest[i:j])
			i = j
		default:
			tokens = append(tokens, string(c))
			i++
		}
	}
	var names []string
	for i := 0; i < len(tokens); i++ {
		tok := tokens[i]
		if !isWordByte(tok[0]) && tok[0] != ':' {
			continue
		}
		next := ""
		if i+1 < len(tokens) {
			next = tokens[i+1]
		}
		switch {
		case promQLLabelLists[tok]:
			if next != "(" {
				continue // group_left and group_right may go without a list
			}
			for i += 2; i < len(tokens) && tokens[i] != ")"; i++ {
				if l := tokens[i]; l != "," && !isWordByte(l[0]) {
					return nil, fmt.Errorf("%q in the label list after %s in %q", l, tok, expr)
				}
			}
			if i >= len(tokens) {
				return nil, fmt.Errorf("unclosed label list after %s in %q", tok, expr)
			}
		case promQLWords[tok], next == "(":
		default:
			if !slices.Contains(names, tok) {
				names = append(names, tok)
			}
		}
	}
	return names, nil
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func TestMetricNames(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want []string
	}{
		{`tailor_claims`, []string{"tailor_claims"}},
		{`max by (phase) (tailor_claims{job=~"$job", phase=~"Pending|Launched"})`, []string{"tailor_claims"}},
		{`sum by (result) (increase(tailor_provisioning_launches_total{job=~"$job"}[$__rate_interval]))`, []string{"tailor_provisioning_launches_total"}},
		{`histogram_quantile(0.99, sum by (le, pool) (rate(a_bucket{x="}"}[5m])))`, []string{"a_bucket"}},
		{`sum(a) by (pool) / ignoring (pool) group_left b * 730`, []string{"a", "b"}},
		{`max by (pool) (avg_over_time(a{job=~"${job}"}[$__range])) * $__range_s / 3600`, []string{"a"}},
		{`a offset 1h30m and on(instance) b unless c or bool d`, []string{"a", "b", "c", "d"}},
		{`topk(5, count_values("le", x:recorded:rate5m)) + 1e3`, []string{"x:recorded:rate5m"}},
		{`-rate(a[5m:1m]) > bool 0`, []string{"a"}},
		{`vector(1)`, nil},
	} {
		got, err := metricNames(tc.expr)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("metricNames(%q) = %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
	for _, bad := range []string{`a{job="x}`, `rate(a[5m)`, `sum by (pool (a)`} {
		if _, err := metricNames(bad); err == nil {
			t.Errorf("metricNames(%q) finds no fault", bad)
		}
	}
}
