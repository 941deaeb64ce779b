package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/run"
)

type sweepOut struct {
	code           int
	stdout, stderr string
	dir            string
}

func runSweepCLI(t *testing.T, args ...string) sweepOut {
	t.Helper()
	var out, errb bytes.Buffer
	dir := t.TempDir()
	env := Env{
		Stdout: &out, Stderr: &errb, Dir: dir,
		Now:    func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) },
		Getenv: func(string) string { return "" },
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := Main(ctx, append([]string{"sweep"}, args...), env)
	return sweepOut{code, out.String(), errb.String(), dir}
}

// resultDoc reads the one sweep result JSON the run saved.
func resultDoc(t *testing.T, dir string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "sweep-rate-20261129-100000.json"))
	if err != nil {
		b, err = os.ReadFile(filepath.Join(dir, "sweep-concurrency-20261129-100000.json"))
	}
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("result JSON: %v", err)
	}
	return m
}

func TestSweepSimCurve(t *testing.T) {
	r := runSweepCLI(t, "--sim", "--request-rate", "3,9,15,21,24,27,30", "--num-prompts", "300",
		"--random-range-ratio", "0.5", "--goodput", "ttft:2000", "tpot:50", "--save-result", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"level 0 rate=3:", "Sweep Curve", "Knee:", "method: knee = first level", "Throughput peak:",
		"Goodput peak:", "Recommended operating point (highest load within SLO", "Findings", "[info] sla:"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	doc := resultDoc(t, r.dir)
	levels, _ := doc["levels"].([]any)
	if len(levels) != 7 {
		t.Fatalf("result has %d levels; want 7", len(levels))
	}
	l0 := levels[0].(map[string]any)
	for _, k := range []string{"request_throughput", "p99_ttft_ms", "request_goodput", "findings", "saturated"} {
		if _, ok := l0[k]; !ok {
			t.Errorf("levels[0] lacks %q", k)
		}
	}
	if l0["request_rate"] != 3.0 {
		t.Errorf("levels[0].request_rate = %v; want 3", l0["request_rate"])
	}
	if doc["capacity_probe"] != nil {
		t.Errorf("capacity_probe = %v with levels given; want null", doc["capacity_probe"])
	}
	sw := doc["sweep"].(map[string]any)
	gp, tp := sw["goodput_peak"].(map[string]any), sw["throughput_peak"].(map[string]any)
	if !(gp["load"].(float64) < tp["load"].(float64)) {
		t.Errorf("goodput peak at %v, throughput peak at %v; want the goodput peak lower", gp["load"], tp["load"])
	}
	if sw["knee"] == nil {
		t.Errorf("no knee: %v", sw["knee_note"])
	}
	if fs, _ := doc["findings"].([]any); len(fs) == 0 {
		t.Error("no findings in the result")
	}

	// The records file: one meta line with the seven levels, every record
	// tagged with its level.
	meta, recs := readRecords(t, filepath.Join(r.dir, "sweep-rate-20261129-100000.records.jsonl"))
	if meta == nil || len(meta.Levels) != 7 || meta.Levels[6].RequestRate != 30 || meta.Command != "sweep" {
		t.Fatalf("meta = %+v; want 7 levels, the last at 30 req/s", meta)
	}
	perLevel := map[int]int{}
	for _, rec := range recs {
		perLevel[rec.Level]++
	}
	for i := range 7 {
		// A level stopped early for saturation still records every request
		// it sent (the rest as cancelled), never more than asked.
		stopped := strings.Contains(fmt.Sprint(levels[i].(map[string]any)["saturated"]), "stopped early")
		if perLevel[i] != 300 && !(stopped && perLevel[i] < 300) {
			t.Errorf("level %d has %d records; want 300", i, perLevel[i])
		}
	}
}

// TestSweepAutoLevels: with no level flags the sweep measures capacity (a
// probe it does not record) and sweeps run.AutoFractions of it.
func TestSweepAutoLevels(t *testing.T) {
	r := runSweepCLI(t, "--sim", "--num-prompts", "200", "--random-range-ratio", "0.5", "--save-result", "--quiet")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	var capacity float64
	for _, line := range strings.Split(r.stdout, "\n") {
		if _, rest, ok := strings.Cut(line, "capacity probe: 200 requests completed in "); ok {
			if _, err := fmt.Sscanf(rest[strings.Index(rest, ", ")+2:], "%g requests/s", &capacity); err != nil {
				t.Fatalf("probe line %q: %v", line, err)
			}
		}
	}
	if capacity <= 0 {
		t.Fatalf("no capacity probe line in:\n%s", r.stdout)
	}
	doc := resultDoc(t, r.dir)
	levels, _ := doc["levels"].([]any)
	if len(levels) == 0 || len(levels) > len(run.AutoFractions) {
		t.Fatalf("result has %d levels; want up to %d", len(levels), len(run.AutoFractions))
	}
	for i, l := range levels {
		got := l.(map[string]any)["request_rate"].(float64)
		// Three significant digits of fraction × capacity, where the probe
		// line printed capacity to three digits: within 1 %.
		if want := run.AutoFractions[i] * capacity; math.Abs(got-want) > 0.01*want {
			t.Errorf("level %d rate %v; want %.3g (%g × %.3g)", i, got, want, run.AutoFractions[i], capacity)
		}
	}
	cp, _ := doc["capacity_probe"].(map[string]any)
	// capacity was printed to three significant digits: within 0.5 %.
	if cp == nil || math.Abs(cp["request_throughput"].(float64)-capacity) > 0.005*capacity || cp["completed"] != 200.0 {
		t.Errorf("capacity_probe = %v; want request_throughput %.3g and 200 completed", doc["capacity_probe"], capacity)
	}
	// The probe is not in the records: level 0 is the first swept rate.
	meta, recs := readRecords(t, filepath.Join(r.dir, "sweep-rate-20261129-100000.records.jsonl"))
	if len(meta.Levels) != len(levels) || len(recs) > 200*len(levels) {
		t.Errorf("records: %d levels, %d records; want %d levels, ≤ %d records", len(meta.Levels), len(recs), len(levels), 200*len(levels))
	}
}

// TestSweepAutoProbeOwnPrompts: on a real server the probe's prompts must
// differ from the sweep's, or a prefix cache the probe warmed would serve
// the first level.
func TestSweepAutoProbeOwnPrompts(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // a server without metrics
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req struct{ Prompt string }
		_ = json.Unmarshal(body, &req)
		mu.Lock()
		seen[req.Prompt]++
		mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"t "}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	r := runSweepCLI(t, "--base-url", srv.URL, "--num-prompts", "10", "--random-input-len", "20",
		"--random-output-len", "1", "--calibrate", "off", "--quiet", "--save-result")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "capacity probe: 10 requests completed") {
		t.Errorf("stdout lacks the probe line:\n%s", r.stdout)
	}
	_, recs := readRecords(t, filepath.Join(r.dir, "sweep-rate-20261129-100000.records.jsonl"))
	mu.Lock()
	defer mu.Unlock()
	// Every prompt is sent once: the sweep's levels use distinct prompts,
	// and the probe's 10 are none of them.
	total := 0
	for p, n := range seen {
		total += n
		if n > 1 {
			t.Errorf("prompt %.30q… sent %d times", p, n)
		}
	}
	if total != len(recs)+10 || len(recs) == 0 {
		t.Errorf("server saw %d requests; want the %d recorded plus 10 for the probe", total, len(recs))
	}
}

func TestSweepFailIf(t *testing.T) {
	args := []string{"--sim", "--request-rate", "4,8", "--num-prompts", "100", "--quiet", "--records", "none"}
	r := runSweepCLI(t, append(args, "--fail-if", "sweep.goodput_peak.request_goodput<1000", "--fail-if", "levels.0.failed>0")...)
	if r.code != ExitGate {
		t.Fatalf("exit %d; want %d\n%s", r.code, ExitGate, r.stderr)
	}
	if !strings.Contains(r.stderr, "sweep.goodput_peak.request_goodput<1000: sweep.goodput_peak.request_goodput is ") ||
		strings.Contains(r.stderr, "levels.0.failed>0") {
		t.Errorf("stderr does not name exactly the failed bound:\n%s", r.stderr)
	}
	r = runSweepCLI(t, append(args, "--fail-if", "levels.0.failed>0", "--fail-if", "sweep.goodput_peak.load>100")...)
	if r.code != 0 {
		t.Errorf("passing gate: exit %d\n%s", r.code, r.stderr)
	}
}

func TestSweepSearchSim(t *testing.T) {
	r := runSweepCLI(t, "--sim", "--search", "--request-rate", "4,40", "--precision", "2", "--num-prompts", "300",
		"--random-range-ratio", "0.5", "--save-result", "--quiet", "--records", "none")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "Max load within SLO (bisection):") || !strings.Contains(r.stdout, "within SLO") {
		t.Errorf("stdout lacks the search result:\n%s", r.stdout)
	}
	s := resultDoc(t, r.dir)["sweep"].(map[string]any)["search"].(map[string]any)
	c := s["capacity"].(float64)
	if s["found"] != true || s["converged"] != true || c <= 4 || c >= 40 || s["hi"].(float64)-s["lo"].(float64) > 2 {
		t.Errorf("search = %v; want a converged capacity inside (4, 40) within 2 req/s", s)
	}
}

func TestSweepConcurrencySim(t *testing.T) {
	r := runSweepCLI(t, "--sim", "--concurrency", "1,4,16,64", "--num-prompts", "200", "--save-result", "--quiet", "--records", "none")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	doc := resultDoc(t, r.dir)
	if doc["sweep"].(map[string]any)["axis"] != "concurrency" {
		t.Errorf("axis = %v; want concurrency", doc["sweep"].(map[string]any)["axis"])
	}
	if mc := doc["levels"].([]any)[3].(map[string]any)["max_concurrency"]; mc != 64.0 {
		t.Errorf("levels[3].max_concurrency = %v; want 64", mc)
	}
}

func TestSweepUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"auto levels check flags first", []string{"--sim", "--knee-k", "0"}, "--knee-k"},
		{"levels without target", []string{"--sim", "--levels", "1x,2x"}, "--levels needs --target-rate"},
		{"bad multiple", []string{"--sim", "--target-rate", "4", "--levels", "1x,zz"}, `--levels: level "zz"`},
		{"bad rate", []string{"--sim", "--request-rate", "1,-2"}, `--request-rate: level "-2"`},
		{"fractional concurrency", []string{"--sim", "--concurrency", "1,2.5"}, "whole numbers"},
		{"both concurrencies", []string{"--sim", "--concurrency", "1,2", "--max-concurrency", "4"}, "give one"},
		{"bad gate", []string{"--sim", "--request-rate", "1,2", "--fail-if", "p99_ttft_ms>>5"}, `--fail-if "p99_ttft_ms>>5"`},
		{"search needs a range", []string{"--sim", "--search", "--request-rate", "4"}, "two different loads"},
		{"attainment", []string{"--sim", "--request-rate", "1,2", "--slo-attainment", "1.5"}, "--slo-attainment"},
		{"bad engine", []string{"--sim", "--request-rate", "1,2", "--sim-model", "no-such-model"}, "no-such-model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSweepCLI(t, tt.args...)
			if r.code != ExitUsage || !strings.Contains(r.stderr, tt.want) {
				t.Errorf("sweep %v: exit %d, stderr %q; want %d and %q", tt.args, r.code, r.stderr, ExitUsage, tt.want)
			}
		})
	}
}

// TestSweepWallClock runs two concurrency levels over HTTP against a tiny
// streaming server and checks the records file tags both levels.
func TestSweepWallClock(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // a server without metrics
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range 4 {
			fmt.Fprintf(w, `data: {"choices":[{"index":0,"text":"t%d "}]}`+"\n\n", i)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":4}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	r := runSweepCLI(t, "--base-url", srv.URL, "--concurrency", "1,4", "--num-prompts", "20", "--random-input-len", "20",
		"--random-output-len", "4", "--calibrate", "off", "--quiet", "--save-result")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	meta, recs := readRecords(t, filepath.Join(r.dir, "sweep-concurrency-20261129-100000.records.jsonl"))
	if len(meta.Levels) != 2 || meta.Levels[1].MaxConcurrency != 4 || len(recs) != 40 {
		t.Fatalf("meta levels %+v, %d records; want 2 levels (c=1, c=4) and 40 records", meta.Levels, len(recs))
	}
	for i, rec := range recs {
		if want := i / 20; rec.Level != want {
			t.Fatalf("record %d has level %d; want %d", i, rec.Level, want)
		}
	}
	if !strings.Contains(r.stdout, "wall clock") || !strings.Contains(r.stdout, "level 1 c=4:") {
		t.Errorf("stdout:\n%s", r.stdout)
	}
}

func TestSweepHTML(t *testing.T) {
	html := filepath.Join(t.TempDir(), "sweep.html")
	r := runSweepCLI(t, "--sim", "--request-rate", "4,12,20,28", "--num-prompts", "200", "--goodput", "ttft:500", "tpot:30",
		"--quiet", "--html", html)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	for _, want := range []string{"goodput sweep", "Load sweep", "goodput peak (rate=", "<svg"} {
		if !strings.Contains(page, want) {
			t.Errorf("the sweep's HTML lacks %q", want)
		}
	}
}

func TestSweepWallClockSaturationStop(t *testing.T) {
	// A server that serves one request at a time, 10 ms each (100 req/s),
	// offered 1,000 req/s: request k arrives at k ms and gets its first
	// token near 10k ms, so the wait grows ~9 ms per request. Watching the
	// records live, the level stops after ~120 of its 600 requests (~1.2 s)
	// instead of draining for 6 s.
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // a server without metrics
			return
		}
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-time.After(10 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"t","finish_reason":"length"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"choices":[],"usage":{"prompt_tokens":20,"completion_tokens":1}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	start := time.Now()
	r := runSweepCLI(t, "--base-url", srv.URL, "--request-rate", "1000", "--num-prompts", "600", "--random-input-len", "20",
		"--random-output-len", "1", "--calibrate", "off", "--quiet")
	if !strings.Contains(r.stdout, "stopped early: queue growing without bound") {
		t.Errorf("exit %d; the saturated level was not stopped early:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("sweep took %v", time.Since(start))
}

func TestSimSweepLevelsFollowInTime(t *testing.T) {
	// Each level runs from virtual time 0 on a fresh engine; in the records
	// file the levels must follow one another, at least a second apart.
	r := runSweepCLI(t, "--sim", "--request-rate", "4,8,12", "--num-prompts", "50", "--quiet", "--save-result")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	_, recs := readRecords(t, filepath.Join(r.dir, "sweep-rate-20261129-100000.records.jsonl"))
	first, last := map[int]int64{}, map[int]int64{}
	for _, rec := range recs {
		if v, ok := first[rec.Level]; !ok || rec.Sent < v {
			first[rec.Level] = rec.Sent
		}
		last[rec.Level] = max(last[rec.Level], rec.End)
	}
	for l := 1; l < 3; l++ {
		if gap := first[l] - last[l-1]; gap < int64(time.Second) {
			t.Errorf("level %d starts %v after level %d ends; want ≥ 1s", l, time.Duration(gap), l-1)
		}
	}
}

// A wall-clock sweep over a trace replays the trace at every level: the
// levels take the trace's length, resolved when the target opens.
func TestSweepTraceWallClock(t *testing.T) {
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 100, "output_length": 4}
{"timestamp": 50, "input_length": 100, "output_length": 4}
{"timestamp": 100, "input_length": 200, "output_length": 4}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runSweepCLI(t, "--dataset-name", "trace", "--dataset-path", trace, "--request-rate", "1,2", "--quiet", "--save-result")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	meta, recs := readRecords(t, filepath.Join(r.dir, "sweep-rate-20261129-100000.records.jsonl"))
	if len(meta.Levels) != 2 || meta.Levels[0].NumPrompts != 3 || len(recs) != 6 {
		t.Errorf("levels %+v, %d records; want 2 levels of the trace's 3 requests", meta.Levels, len(recs))
	}
}
