package watch

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// The Grafana board shipped in deploy/, checked as simserve checks the
// main one: a sound grid, balanced expressions, and only metric names the
// watch exports. scripts/prometheus-check.sh also runs every query against
// a real Prometheus scraping goodput watch.
const watchDashboard = "../../deploy/grafana/goodput-watch-dashboard.json"

type board struct {
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []boardPanel `json:"panels"`
}

type boardPanel struct {
	ID      int                      `json:"id"`
	Type    string                   `json:"type"`
	Title   string                   `json:"title"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

// watchName matches a goodput_watch_ series name in PromQL.
var watchName = regexp.MustCompile(`goodput_watch_[a-z0-9_]+`)

// exportedFamilies are the metric families a Watcher exports once it has
// seen every kind of probe (a rate-limited one with an advertised wait
// included), by name.
func exportedFamilies(t *testing.T) map[string]bool {
	t.Helper()
	fams := map[string]bool{}
	synctest.Test(t, func(t *testing.T) {
		seq := []answer{{ttft: time.Second, gap: 10 * time.Millisecond, tokens: 4}, {class: runlog.ErrHTTP429}}
		fs := &fakes{answers: map[string]func(int) answer{"a": func(k int) answer { return seq[k%2] }}}
		cfg := testTargets(1, 30*time.Second)
		cfg.Targets[0].SLO = stats.SLO{TTFT: time.Second, TPOT: time.Second, E2E: time.Second, TTP: time.Second}
		reg := prometheus.NewRegistry()
		w, err := New(cfg, Options{Open: fs.open, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		w.Once(t.Context())
		w.Once(t.Context())
		w.metrics.missed.WithLabelValues("a", "m").Add(0)
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			fams[mf.GetName()] = true
		}
	})
	return fams
}

// seriesFamily maps a series name to its family (a histogram's _bucket,
// _sum and _count belong to the histogram).
func seriesFamily(name string, fams map[string]bool) string {
	if fams[name] {
		return name
	}
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok && fams[base] {
			return base
		}
	}
	return name
}

// bracketsBalanced reports whether (), [] and {} nest in expr, outside
// string literals.
func bracketsBalanced(expr string) error {
	var stack []rune
	open := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	for i, c := range expr {
		switch {
		case quote != 0:
			if c == quote && (i == 0 || expr[i-1] != '\\') {
				quote = 0
			}
		case c == '"' || c == '\'' || c == '`':
			quote = c
		case c == '(' || c == '[' || c == '{':
			stack = append(stack, c)
		case open[c] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != open[c] {
				return fmt.Errorf("unmatched %q at byte %d", c, i)
			}
			stack = stack[:len(stack)-1]
		}
	}
	if quote != 0 || len(stack) > 0 {
		return fmt.Errorf("unclosed string or bracket")
	}
	return nil
}

func boardProblems(b board, fams map[string]bool) []string {
	var probs []string
	ids := map[int]bool{}
	for i, p := range b.Panels {
		if ids[p.ID] {
			probs = append(probs, fmt.Sprintf("panel id %d twice", p.ID))
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.W <= 0 || g.H <= 0 || g.X < 0 || g.Y < 0 || g.X+g.W > 24 {
			probs = append(probs, fmt.Sprintf("panel %d %q: gridPos %+v outside the 24-column grid", p.ID, p.Title, g))
		}
		for _, q := range b.Panels[i+1:] {
			h := q.GridPos
			if g.X < h.X+h.W && h.X < g.X+g.W && g.Y < h.Y+h.H && h.Y < g.Y+g.H {
				probs = append(probs, fmt.Sprintf("panels %d and %d overlap", p.ID, q.ID))
			}
		}
		if p.Type != "row" && len(p.Targets) == 0 {
			probs = append(probs, fmt.Sprintf("panel %d %q has no targets", p.ID, p.Title))
		}
	}
	var exprs []string
	for _, p := range b.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range b.Templating.List {
		if v.Definition != "" {
			exprs = append(exprs, v.Definition)
		}
	}
	for _, e := range exprs {
		if err := bracketsBalanced(e); err != nil {
			probs = append(probs, fmt.Sprintf("%v: %s", err, e))
		}
		for _, name := range watchName.FindAllString(e, -1) {
			if !fams[seriesFamily(name, fams)] {
				probs = append(probs, fmt.Sprintf("%s is not a metric goodput watch exports: %s", name, e))
			}
		}
	}
	return probs
}

func readBoard(t *testing.T) board {
	t.Helper()
	data, err := os.ReadFile(watchDashboard)
	if err != nil {
		t.Fatal(err)
	}
	var b board
	if err := json.Unmarshal(data, &b); err != nil {
		t.Fatalf("%s: %v", watchDashboard, err)
	}
	return b
}

func TestDashboard(t *testing.T) {
	b := readBoard(t)
	fams := exportedFamilies(t)
	for _, p := range boardProblems(b, fams) {
		t.Error(p)
	}
	// Every family the watch exports has a panel, so one dropped by
	// mistake shows.
	used := map[string]bool{}
	for _, p := range b.Panels {
		for _, tg := range p.Targets {
			for _, name := range watchName.FindAllString(tg.Expr, -1) {
				used[seriesFamily(name, fams)] = true
			}
		}
	}
	for name := range fams {
		if !used[name] {
			t.Errorf("no dashboard panel reads %s", name)
		}
	}
	var vars []string
	for _, v := range b.Templating.List {
		vars = append(vars, v.Name)
	}
	for _, want := range []string{"datasource", "vendor", "model", "window"} {
		if !slices.Contains(vars, want) {
			t.Errorf("no $%s variable (have %v)", want, vars)
		}
	}
}

// TestDashboardCheckCatchesMistakes: the check above can fail.
func TestDashboardCheckCatchesMistakes(t *testing.T) {
	fams := exportedFamilies(t)
	last := func(b *board) *boardPanel { return &b.Panels[len(b.Panels)-1] }
	for _, tc := range []struct {
		name   string
		mutate func(*board)
		want   string
	}{
		{"misspelt metric", func(b *board) { last(b).Targets[0].Expr = `goodput_watch_probe_total` }, "not a metric"},
		{"misspelt histogram", func(b *board) {
			last(b).Targets[0].Expr = `histogram_quantile(0.5, sum by (le) (rate(goodput_watch_ttft_seconds_bucket[5m])))`
		}, "not a metric"},
		{"duplicate id", func(b *board) { last(b).ID = b.Panels[0].ID }, "twice"},
		{"overlap", func(b *board) { last(b).GridPos = b.Panels[len(b.Panels)-2].GridPos }, "overlap"},
		{"unbalanced", func(b *board) { last(b).Targets[0].Expr += ")" }, "unmatched"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readBoard(t)
			tc.mutate(&b)
			if probs := boardProblems(b, fams); !strings.Contains(strings.Join(probs, "\n"), tc.want) {
				t.Errorf("problems = %q; want one with %q", probs, tc.want)
			}
		})
	}
}
