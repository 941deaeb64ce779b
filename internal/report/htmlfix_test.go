package report

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
)

// TestHTMLSeverityStyles: every severity a finding can have has a rule in
// the page's stylesheet for the class the page gives it (the page said
// sev-warning, the CSS sev-warn, so warnings rendered grey).
func TestHTMLSeverityStyles(t *testing.T) {
	for _, sev := range []findings.Severity{findings.Critical, findings.Warning, findings.Info} {
		in := sweepInput(t, 50, 10)
		in.Findings = []findings.Finding{{ID: "x", Severity: sev, Message: "m"}}
		page := renderHTML(t, in)
		class := `class="sev-` + string(sev) + `"`
		if !bytes.Contains(page, []byte(class)) {
			t.Errorf("HTML(%s finding) lacks %s", sev, class)
		}
		if rule := "li.sev-" + string(sev) + "{"; !bytes.Contains(page, []byte(rule)) {
			t.Errorf("HTML stylesheet has no %q rule for its %s findings", rule, sev)
		}
	}
}

// TestEvidenceText: nested evidence (server-queueing's metric names) reads
// as "k: v" pairs, not Go's map[k:v].
func TestEvidenceText(t *testing.T) {
	got := evidenceText(map[string]any{
		"waiting_mean":   99.38123,
		"server_metrics": map[string]any{"waiting": "vllm:num_requests_waiting", "kv_usage": "vllm:kv_cache_usage_perc"},
		"labels":         map[string]string{"b": "2", "a": "1"},
		"levels":         []any{1.0, 2.5},
	})
	want := "labels = a: 1, b: 2; levels = 1, 2.5; server_metrics = kv_usage: vllm:kv_cache_usage_perc, waiting: vllm:num_requests_waiting; waiting_mean = 99.3812"
	if got != want {
		t.Errorf("evidenceText = %q; want %q", got, want)
	}
}

// TestConditionsSimulatedEngine: the simulated engine's settings are
// pairs the page can wrap, not one JSON line, and speculative decoding has
// a row of its own, from memory (ints) or read back (float64s).
func TestConditionsSimulatedEngine(t *testing.T) {
	for _, tt := range []struct {
		name string
		sim  runlog.Engine
		spec string
	}{
		{"in memory", runlog.Engine{GPU: "h100-sxm", NumSpeculativeTokens: 4, SpecAcceptance: 0.7, SpecDraft: "ngram", ProfileTable: ""},
			"4 draft tokens per step (ngram draft), acceptance rate 0.7 per draft token (simulated)"},
		{"read back", readEngine(t, `{"gpu": "h100-sxm", "num_speculative_tokens": 2.0, "spec_acceptance": 0.5}`),
			"2 draft tokens per step, acceptance rate 0.5 per draft token (simulated)"},
		{"off", runlog.Engine{GPU: "h100-sxm"}, "off"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meta := &runlog.Meta{Model: "m", Simulated: tt.sim}
			rows := map[string]string{}
			for _, r := range conditionRows(meta, nil) {
				rows[r[0]] = r[1]
			}
			eng := rows["Simulated engine"]
			if strings.ContainsAny(eng, "{}\"") || !strings.Contains(eng, "gpu h100-sxm") || strings.Contains(eng, "profile_table") {
				t.Errorf("Simulated engine = %q; want key value pairs, empty ones left out", eng)
			}
			if got := rows["Speculative decoding"]; got != tt.spec {
				t.Errorf("Speculative decoding = %q; want %q", got, tt.spec)
			}
		})
	}
}

// readEngine is an engine description as read back from a records file.
func readEngine(t *testing.T, js string) runlog.Engine {
	t.Helper()
	var e runlog.Engine
	if err := json.Unmarshal([]byte(js), &e); err != nil {
		t.Fatal(err)
	}
	return e
}

// TestTimelineLegendCoversShades: every colour a timeline bar is filled
// with has a legend entry. An overloaded run is mostly the missed queue's
// light red, which the legend did not have.
func TestTimelineLegendCoversShades(t *testing.T) {
	spans := []span{
		{sent: 0, first: 50e6, last: 90e6, end: 90e6, queue: 10e6, prefill: 40e6, ok: true, met: true, hasServer: true},
		{sent: 10e6, first: 900e6, last: 990e6, end: 990e6, queue: 800e6, prefill: 80e6, ok: true, met: false, hasServer: true},
		{sent: 20e6, first: -1, last: -1, end: 30e6, queue: -1, prefill: -1},
	}
	for _, hasSLO := range []bool{true, false} {
		svg, _ := timelineSVG(spans, hasSLO)
		legend := map[string]bool{}
		bars := map[string]bool{}
		for _, m := range regexp.MustCompile(`<rect x="[^"]*" y="([^"]*)" width="[^"]*" height="[^"]*" fill="([^"]*)"/>`).FindAllStringSubmatch(string(svg), -1) {
			if m[1] == "10" {
				legend[m[2]] = true
			} else if m[2] != "#ffffff" {
				bars[m[2]] = true
			}
		}
		for fill := range bars {
			if !legend[fill] {
				t.Errorf("timelineSVG(hasSLO %v) fills bars with %s, which the legend lacks (legend %v)", hasSLO, fill, legend)
			}
		}
	}
}

// TestTickLabels: tick labels carry no padding zeros.
func TestTickLabels(t *testing.T) {
	for _, tt := range []struct {
		lo, hi float64
		want   []string
	}{
		{0, 2500, []string{"0", "1000", "2000"}},
		{7.5, 27.5, []string{"10", "15", "20", "25"}},
		{0, 1, []string{"0", "0.5", "1"}},
	} {
		var got []string
		for _, tk := range (plainTicks{}).Ticks(tt.lo, tt.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("plainTicks.Ticks(%g, %g) labels = %q; want %q", tt.lo, tt.hi, got, tt.want)
		}
	}
	if got := tickLabel(0.30000000000000004); got != "0.3" {
		t.Errorf("tickLabel(0.30000000000000004) = %q; want 0.3", got)
	}
}

// TestHTMLServerBlock: the terminal's server block (preemptions, prefix
// cache hit rate, queue and prefill time from the histograms) is in the
// page's Server side section, even without snapshots to chart.
func TestHTMLServerBlock(t *testing.T) {
	in := sweepInput(t, 50, 10)
	in.ServerWindows = []ServerWindow{{Target: "server", Window: vllmWindow()}, {Target: "dcgm", Window: dcgmWindow()}}
	sec := string(section(t, renderHTML(t, in), "Server side"))
	for _, w := range []string{`<pre class="block">`, "Preemptions:", "Prefix cache hit rate (%):", "Queue time (ms)", "Prefill time (ms)", "(dcgm)"} {
		if !strings.Contains(sec, w) {
			t.Errorf("Server side section lacks %q:\n%.3000s", w, sec)
		}
	}
}

// TestHTMLSweepLead: a sweep's curves come first, draw the SLO's limits
// and mark the highest load within the SLO, which a sentence names.
func TestHTMLSweepLead(t *testing.T) {
	in := sweepInput(t, 300, 60)
	in.Sweep.WithinSLO = 0
	page := string(renderHTML(t, in))
	sw, fi, su := strings.Index(page, "<h2>Load sweep</h2>"), strings.Index(page, "<h2>Findings</h2>"), strings.Index(page, "<h2>Summary</h2>")
	if sw < 0 || sw > fi || sw > su {
		t.Errorf("Load sweep at %d, Findings at %d, Summary at %d; want the sweep first", sw, fi, su)
	}
	for _, w := range []string{`<p class="lead">Recommended operating point, the highest load within SLO: 2 req/s (`, ">highest load within SLO (2 req/s)<", ">SLO 300 ms<", ">SLO 30 ms<"} {
		if !strings.Contains(page, w) {
			t.Errorf("sweep page lacks %q", w)
		}
	}
	// Without marks given, the highest level keeping the SLO is found.
	in.Sweep = nil
	page = string(renderHTML(t, in))
	if !strings.Contains(page, ">highest load within SLO (") && !strings.Contains(page, "No level kept the SLO.") {
		t.Error("sweep page without marks neither marks the highest load within SLO nor says none kept it")
	}
}

// TestSpecDecodeMeasured: a vLLM server's spec_decode counters give the
// measured acceptance rate, in the server block and in Conditions.
func TestSpecDecodeMeasured(t *testing.T) {
	win := vllmWindow()
	win.Increase[servermetrics.SpecDraftTokens] = 1000
	win.Increase[servermetrics.SpecAcceptedTokens] = 720
	var b bytes.Buffer
	if err := ServerTerminal(&b, win); err != nil {
		t.Fatal(err)
	}
	if w := "Spec. decoding acceptance (%):           72.0 (720 of 1000 draft tokens)"; !strings.Contains(b.String(), w) {
		t.Errorf("ServerTerminal lacks %q:\n%s", w, b.String())
	}
	in := sweepInput(t, 50, 10)
	in.ServerWindows = []ServerWindow{{Target: "server", Window: win}}
	page := string(renderHTML(t, in))
	if w := "<th>Speculative decoding, measured</th><td>acceptance rate 72.0 %: 720 of 1000 draft tokens accepted (server /metrics)</td>"; !strings.Contains(page, w) {
		t.Errorf("HTML Conditions lack %q", w)
	}
	if _, ok := SpecAcceptance(vllmWindow()); ok {
		t.Error("SpecAcceptance of a window without spec_decode counters reports a rate")
	}
}

// TestSpecDecodeVocabulary: vLLM's spec_decode counters map to the
// vocabulary's names.
func TestSpecDecodeVocabulary(t *testing.T) {
	body := "# TYPE vllm:spec_decode_num_draft_tokens_total counter\nvllm:spec_decode_num_draft_tokens_total{model_name=\"m\"} 40\n" +
		"# TYPE vllm:spec_decode_num_accepted_tokens_total counter\nvllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 30\n" +
		"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 1\n"
	var snaps []servermetrics.Snapshot
	for i, b := range []string{body, strings.ReplaceAll(strings.ReplaceAll(body, "} 40", "} 140"), "} 30", "} 100")} {
		snap, err := servermetrics.Parse(strings.NewReader(b), int64(i)*1e9)
		if err != nil {
			t.Fatal(err)
		}
		snaps = append(snaps, snap)
	}
	win, err := servermetrics.Compute(snaps)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := SpecAcceptance(&win); !ok || r != 0.7 {
		t.Errorf("SpecAcceptance over 100 drafts, 70 accepted = %v, %v; want 0.7, true", r, ok)
	}
}
