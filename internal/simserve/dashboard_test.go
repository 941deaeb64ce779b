package simserve

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// dashboardPath is the Grafana dashboard shipped in deploy/, relative to
// this package's directory (where go test runs).
const dashboardPath = "../../deploy/grafana/goodput-dashboard.json"

// grafanaDashboard is the part of a Grafana dashboard the checks read.
type grafanaDashboard struct {
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaPanel struct {
	ID      int    `json:"id"`
	Type    string `json:"type"`
	Title   string `json:"title"`
	GridPos struct {
		X, Y, W, H int
	} `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// vllmName matches a vllm: metric name inside a PromQL expression.
var vllmName = regexp.MustCompile(`vllm:[a-zA-Z0-9_:]+`)

// dashboardProblems lists what is wrong with d: duplicate panel ids,
// panels that overlap or leave the 24-column grid, expressions whose
// brackets do not balance, and vllm: names that are not among families
// (the metric families goodput serve's /metrics exposes).
func dashboardProblems(d grafanaDashboard, families map[string]bool) []string {
	var probs []string
	var panels []grafanaPanel
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			panels = append(panels, p)
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(panels) == 0 {
		probs = append(probs, "no panels")
	}

	ids := map[int]string{}
	for _, p := range panels {
		if prev, ok := ids[p.ID]; ok {
			probs = append(probs, fmt.Sprintf("panel id %d used by %q and %q", p.ID, prev, p.Title))
		}
		ids[p.ID] = p.Title
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			probs = append(probs, fmt.Sprintf("panel %d %q: gridPos %+v outside the 24-column grid", p.ID, p.Title, g))
		}
	}
	for i, a := range panels {
		for _, b := range panels[i+1:] {
			ga, gb := a.GridPos, b.GridPos
			if ga.X < gb.X+gb.W && gb.X < ga.X+ga.W && ga.Y < gb.Y+gb.H && gb.Y < ga.Y+ga.H {
				probs = append(probs, fmt.Sprintf("panels %d %q %+v and %d %q %+v overlap",
					a.ID, a.Title, ga, b.ID, b.Title, gb))
			}
		}
	}

	// Every PromQL string: the panels' expressions and the variables'
	// label_values queries.
	type query struct{ where, expr string }
	var queries []query
	for _, p := range panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			probs = append(probs, fmt.Sprintf("panel %d %q has no targets", p.ID, p.Title))
		}
		for _, t := range p.Targets {
			if strings.TrimSpace(t.Expr) == "" {
				probs = append(probs, fmt.Sprintf("panel %d %q target %s: empty expr", p.ID, p.Title, t.RefID))
				continue
			}
			queries = append(queries, query{fmt.Sprintf("panel %d %q target %s", p.ID, p.Title, t.RefID), t.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" {
			queries = append(queries, query{fmt.Sprintf("variable %s", v.Name), v.Definition})
		}
	}
	for _, q := range queries {
		if err := balanced(q.expr); err != nil {
			probs = append(probs, fmt.Sprintf("%s: %v: %s", q.where, err, q.expr))
		}
		for _, name := range vllmName.FindAllString(q.expr, -1) {
			if !families[familyName(name, families)] {
				probs = append(probs, fmt.Sprintf("%s: %s is not a metric goodput serve exports", q.where, name))
			}
		}
	}
	return probs
}

// familyName maps a sample name to its family: a histogram's _bucket, _sum
// and _count series belong to the family without the suffix. A name that is
// itself a family (vllm:iteration_tokens_total is a histogram whose name
// ends in _total) stays as it is.
func familyName(name string, families map[string]bool) string {
	if families[name] {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok {
			return base
		}
	}
	return name
}

// balanced reports whether the (), [] and {} in a PromQL expression nest
// properly, ignoring those inside string literals.
func balanced(expr string) error {
	var stack []rune
	closer := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	escaped := false
	for i, c := range expr {
		switch {
		case quote != 0:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == quote:
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case closer[c] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != closer[c] {
				return fmt.Errorf("unmatched %q at byte %d", c, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 {
		return fmt.Errorf("unterminated string")
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack[len(stack)-1])
	}
	return nil
}

// servedFamilies starts goodput serve's server on loopback, as the other
// tests do, and returns the metric families its /metrics exposes.
func servedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	_, url := newTestServer(t, testConfig(), Options{})
	code, body := httpGet(t, url+"/metrics")
	if code != 200 {
		t.Fatalf("GET /metrics = %d:\n%s", code, tail(body, 500))
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	families := map[string]bool{}
	for name := range mfs {
		families[name] = true
	}
	return families
}

func readDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	return d
}

func TestDashboard(t *testing.T) {
	d := readDashboard(t)
	families := servedFamilies(t)
	for _, p := range dashboardProblems(d, families) {
		t.Error(p)
	}

	// The Server row reads the serving engine's metrics: each of these
	// must be used somewhere, so a panel dropped by mistake shows.
	used := map[string]bool{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			for _, name := range vllmName.FindAllString(tg.Expr, -1) {
				used[name] = true
			}
		}
	}
	want := []string{
		"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
		"vllm:request_queue_time_seconds_bucket", "vllm:request_queue_time_seconds_sum",
		"vllm:request_queue_time_seconds_count", "vllm:request_prefill_time_seconds_bucket",
		"vllm:request_prefill_time_seconds_sum", "vllm:request_prefill_time_seconds_count",
		"vllm:prefix_cache_hits_total", "vllm:prefix_cache_queries_total", "vllm:num_preemptions_total",
		"vllm:prompt_tokens_total", "vllm:generation_tokens_total",
	}
	for _, name := range want {
		if !used[name] {
			t.Errorf("no dashboard panel reads %s", name)
		}
	}
}

// TestDashboardCheckCatchesMistakes shows dashboardProblems fails a
// dashboard with a misspelt metric, a duplicate id, an overlap or an
// unbalanced expression, so TestDashboard can fail.
func TestDashboardCheckCatchesMistakes(t *testing.T) {
	families := servedFamilies(t)
	if probs := dashboardProblems(readDashboard(t), families); len(probs) > 0 {
		t.Fatalf("the shipped dashboard already has problems: %v", probs)
	}
	last := func(d *grafanaDashboard) *grafanaPanel { return &d.Panels[len(d.Panels)-1] }
	for _, tc := range []struct {
		name   string
		mutate func(d *grafanaDashboard)
		want   string
	}{
		{"misspelt metric", func(d *grafanaDashboard) {
			last(d).Targets[0].Expr = `sum(rate(vllm:prompt_token_total[5m]))`
		}, "vllm:prompt_token_total is not a metric"},
		{"misspelt histogram", func(d *grafanaDashboard) {
			last(d).Targets[0].Expr = `histogram_quantile(0.5, sum by (le) (rate(vllm:request_queue_seconds_bucket[5m])))`
		}, "vllm:request_queue_seconds_bucket is not a metric"},
		{"misspelt variable query", func(d *grafanaDashboard) {
			d.Templating.List[len(d.Templating.List)-1].Definition = `label_values(vllm:num_request_running, model_name)`
		}, "vllm:num_request_running is not a metric"},
		{"duplicate id", func(d *grafanaDashboard) {
			last(d).ID = d.Panels[0].ID
		}, "panel id"},
		{"overlap", func(d *grafanaDashboard) {
			last(d).GridPos = d.Panels[len(d.Panels)-2].GridPos
		}, "overlap"},
		{"unbalanced", func(d *grafanaDashboard) {
			last(d).Targets[0].Expr += ")"
		}, "unmatched"},
		{"unclosed", func(d *grafanaDashboard) {
			last(d).Targets[0].Expr = `sum(rate(vllm:prompt_tokens_total{job=~"a)"}[5m])`
		}, "unclosed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := readDashboard(t)
			tc.mutate(&d)
			probs := dashboardProblems(d, families)
			sort.Strings(probs)
			if !strings.Contains(strings.Join(probs, "\n"), tc.want) {
				t.Errorf("problems = %q; want one containing %q", probs, tc.want)
			}
		})
	}
}
