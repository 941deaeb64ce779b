package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// fakeServer streams a fixed chat-shaped answer of n tokens, gap apart,
// after first; status != 200 answers that status instead.
func fakeServer(t *testing.T, status int, first, gap time.Duration, n int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","owned_by":"test"}]}`)
			return
		}
		if r.URL.Path == "/tokenize" {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "goodput-probe-") {
			hits.Add(1) // count the run's requests, not calibration probes
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if status != http.StatusOK {
			w.WriteHeader(status)
			fmt.Fprint(w, `{"error":{"message":"overloaded"}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		fmt.Fprint(w, `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`+"\n\n")
		fl.Flush()
		wait := first
		for i := range n {
			select {
			case <-time.After(wait):
			case <-r.Context().Done():
				return
			}
			wait = gap
			fin := "null"
			if i == n-1 {
				fin = `"length"`
			}
			fmt.Fprintf(w, `data: {"choices":[{"index":0,"delta":{"content":"w%d "},"finish_reason":%s}]}`+"\n\n", i, fin)
			fl.Flush()
		}
		fmt.Fprintf(w, `data: {"choices":[],"usage":{"prompt_tokens":100,"completion_tokens":%d}}`+"\n\ndata: [DONE]\n\n", n)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

type result struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, ctx context.Context, env map[string]string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	e := Env{
		Stdout: &out, Stderr: &errb, Now: func() time.Time { return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC) },
		Getenv: func(k string) string { return env[k] }, Dir: t.TempDir(),
	}
	code := Main(ctx, args, e)
	return result{code, out.String(), errb.String()}
}

func readRecords(t *testing.T, path string) (*runlog.Meta, []runlog.Record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	meta, recs, warns, err := runlog.ReadAll(f, path)
	if err != nil || len(warns) > 0 {
		t.Fatalf("ReadAll(%s) = %v, warnings %v", path, err, warns)
	}
	return meta, recs
}

func TestBenchAgainstServer(t *testing.T) {
	srv, hits := fakeServer(t, 200, 20*time.Millisecond, 2*time.Millisecond, 8)
	dir := t.TempDir()
	r := runCLI(t, t.Context(), map[string]string{"OPENAI_API_KEY": "sk-very-secret"},
		"bench", "--base-url", srv.URL, "--backend", "openai-chat", "--num-prompts", "12", "--max-concurrency", "4",
		"--num-warmups", "2", "--random-input-len", "100", "--random-output-len", "8", "--quiet",
		"--goodput", "ttft:5000", "tpot:1000", "--save-result", "--result-dir", dir, "--result-filename", "res.json",
		"--metadata", "team=perf")
	if r.code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"Serving Benchmark Result", "Successful requests:", "12", "Time to First Token", "Request goodput (req/s):"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	// Warm-ups are sent and recorded too: 14 requests, 14 records.
	if got := hits.Load(); got != 14 {
		t.Errorf("server saw %d requests; want 14 (12 + 2 warm-ups)", got)
	}
	meta, recs := readRecords(t, filepath.Join(dir, "res.records.jsonl"))
	if len(recs) != 14 {
		t.Errorf("records = %d; want 14 (records written == requests sent)", len(recs))
	}
	if meta == nil || meta.Model != "fake-model" || len(meta.Levels) != 1 || meta.Levels[0].MaxConcurrency != 4 {
		t.Errorf("meta = %+v; want model fake-model and one level with concurrency 4", meta)
	}
	b, err := os.ReadFile(filepath.Join(dir, "res.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res map[string]any
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"date", "backend", "model_id", "num_prompts", "request_rate", "burstiness", "max_concurrency",
		"duration", "completed", "failed", "total_input_tokens", "total_output_tokens", "request_throughput",
		"request_goodput", "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
		"max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99_ttft_ms", "mean_tpot_ms",
		"p99_itl_ms", "p99_e2el_ms", "p99_ttp_ms", "slo_attainment", "buckets", "failures", "conditions"} {
		if _, ok := res[k]; !ok {
			t.Errorf("result JSON lacks %q", k)
		}
	}
	if res["completed"] != 12.0 || res["team"] != "perf" {
		t.Errorf("completed = %v, team = %v; want 12, perf", res["completed"], res["team"])
	}
	// TTFT is at least the server's 20 ms first-token delay.
	if v, _ := res["median_ttft_ms"].(float64); v < 20 {
		t.Errorf("median_ttft_ms = %v; want ≥ 20", v)
	}
	all := r.stdout + r.stderr + string(b)
	rb, _ := os.ReadFile(filepath.Join(dir, "res.records.jsonl"))
	if strings.Contains(all+string(rb), "sk-very-secret") {
		t.Error("the API key was written to an output")
	}
}

func TestBenchUsageErrors(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"bad rate", []string{"--request-rate", "fast"}, "--request-rate"},
		{"zero rate", []string{"--request-rate", "0"}, "--request-rate"},
		{"bad slo", []string{"--goodput", "ttft=5"}, "--goodput"},
		{"stray arg", []string{"ttft:5"}, "unexpected argument"},
		{"bad percentile", []string{"--metric-percentiles", "101"}, "--metric-percentiles"},
		{"bad metric", []string{"--percentile-metrics", "ttft,bogus"}, "--percentile-metrics"},
		{"bad buckets", []string{"--buckets", "1024,lots"}, "--buckets"},
		{"bad backend", []string{"--backend", "grpc"}, "--backend"},
		{"bad extra body", []string{"--extra-body", "{nope"}, "--extra-body"},
		{"bad header", []string{"--header", "novalue"}, "--header"},
		{"bad burstiness", []string{"--burstiness", "0"}, "--burstiness"},
		{"negative concurrency", []string{"--max-concurrency", "-1"}, "--max-concurrency"},
		{"unknown flag", []string{"--no-such-flag"}, "unknown flag"},
		{"missing dataset", []string{"--dataset-name", "custom", "--dataset-path", "/no/such/file.jsonl"}, "/no/such/file.jsonl"},
		{"bad base url", []string{"--base-url", "localhost:8000", "--model", "m"}, "--base-url"},
		{"bad sim gpu", []string{"--gpu", "tpu-v9"}, "--gpu"},
		{"bad max tokens field", []string{"--max-tokens-field", "limit"}, "--max-tokens-field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, t.Context(), nil, append([]string{"bench", "--quiet", "--records", "none"}, tc.args...)...)
			if r.code != ExitUsage {
				t.Errorf("exit %d; want %d (stderr %q)", r.code, ExitUsage, r.stderr)
			}
			lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
			if len(lines) != 1 || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("stderr = %q; want one line naming %q", r.stderr, tc.want)
			}
		})
	}
}

func TestBenchAllFailed(t *testing.T) {
	srv, _ := fakeServer(t, 503, 0, 0, 0)
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "5", "--quiet", "--records", "none")
	if r.code != ExitRun || !strings.Contains(r.stderr, "all 5 requests failed (http_5xx 5)") {
		t.Errorf("exit %d, stderr %q; want %d and the failure classes", r.code, r.stderr, ExitRun)
	}
	if !strings.Contains(r.stdout, "Failed requests:") {
		t.Errorf("no summary printed:\n%s", r.stdout)
	}
}

func TestBenchInterrupted(t *testing.T) {
	// A slow server; the run is cancelled (Ctrl-C) while requests are in
	// flight: every sent request still has a record, and the summary and
	// result are still written.
	srv, hits := fakeServer(t, 200, 10*time.Millisecond, 100*time.Millisecond, 50)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	time.AfterFunc(400*time.Millisecond, cancel)
	r := runCLI(t, ctx, nil, "bench", "--base-url", srv.URL, "--num-prompts", "1000", "--request-rate", "20",
		"--quiet", "--calibrate", "off", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if r.code != ExitRun || !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("exit %d, stderr %q; want %d and 'interrupted'", r.code, r.stderr, ExitRun)
	}
	_, recs := readRecords(t, filepath.Join(dir, "r.records.jsonl"))
	if int64(len(recs)) != hits.Load() || len(recs) == 0 {
		t.Errorf("records = %d, requests the server saw = %d; want equal and > 0", len(recs), hits.Load())
	}
	cancelled := 0
	for _, rec := range recs {
		if rec.ErrorClass == runlog.ErrCancelled {
			cancelled++
		}
	}
	if cancelled == 0 {
		t.Error("no record is marked cancelled")
	}
	if _, err := os.Stat(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("result not saved after interrupt: %v", err)
	}
	if !strings.Contains(r.stdout, "Serving Benchmark Result") {
		t.Error("summary not printed after interrupt")
	}
}

func TestBenchEmbeddedSimulator(t *testing.T) {
	r := runCLI(t, t.Context(), nil, "bench", "--num-prompts", "8", "--random-input-len", "256", "--random-output-len", "16",
		"--ignore-eos", "--quiet", "--records", "none")
	if r.code != ExitOK {
		t.Fatalf("exit %d; stderr:\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "embedded simulator") || !strings.Contains(r.stderr, "llama-3.1-8b") {
		t.Errorf("stderr does not say which simulated model runs: %q", r.stderr)
	}
	// With --ignore-eos every request generates exactly 16 tokens.
	if !strings.Contains(r.stdout, "Total generated tokens:                  128") {
		t.Errorf("want 8 × 16 = 128 generated tokens:\n%s", r.stdout)
	}
}

func TestBenchFailIf(t *testing.T) {
	srv, _ := fakeServer(t, 200, 5*time.Millisecond, time.Millisecond, 4)
	base := []string{"bench", "--base-url", srv.URL, "--num-prompts", "5", "--quiet", "--records", "none", "--calibrate", "off"}
	for _, tc := range []struct {
		name string
		expr string
		code int
		want string
	}{
		// TTFT is at least the server's 5 ms, so "> 1" holds: the gate fails.
		{"bound fails", "p99_ttft_ms>1", ExitGate, "p99_ttft_ms>1"},
		{"bound holds", "p99_ttft_ms>100000", ExitOK, ""},
		{"another key", "completed<5", ExitOK, ""},
		{"bad expression", "p99_ttft_ms>>1", ExitUsage, "p99_ttft_ms>>1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, t.Context(), nil, append(base, "--fail-if", tc.expr)...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("--fail-if %q: exit %d, stderr %q; want %d naming %q", tc.expr, r.code, r.stderr, tc.code, tc.want)
			}
		})
	}
	r := runCLI(t, t.Context(), nil, base...)
	if !strings.Contains(r.stdout, "Findings") {
		t.Errorf("no findings printed after the summary:\n%s", r.stdout)
	}
}

func TestBenchLiveMetrics(t *testing.T) {
	// A run long enough to scrape while it goes on: 20 requests, 1 at a
	// time, ~60 ms each.
	srv, _ := fakeServer(t, 200, 20*time.Millisecond, 10*time.Millisecond, 5)
	var errb syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(t.Context(), []string{"bench", "--base-url", srv.URL, "--num-prompts", "20", "--max-concurrency", "1",
			"--quiet", "--records", "none", "--calibrate", "off", "--metrics-listen", "127.0.0.1:0"},
			Env{Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now})
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/metrics`)
	var body string
	for range 300 {
		if u := re.FindString(errb.String()); u != "" {
			if resp, err := http.Get(u); err == nil {
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
				if strings.Contains(body, "goodput_requests_total") {
					break
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if code := <-done; code != ExitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(body, "goodput_requests_total") || !strings.Contains(body, `model="fake-model"`) {
		t.Errorf("live /metrics during the run lacks the request counter for the model:\n%.2000s", body)
	}
}

func TestBenchReadyCheck(t *testing.T) {
	// The server answers 503 to its first three model lists, as a server
	// still loading its weights does, then serves.
	var calls atomic.Int64
	inner, _ := fakeServer(t, 200, time.Millisecond, time.Millisecond, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" && calls.Add(1) <= 3 {
			http.Error(w, "loading", http.StatusServiceUnavailable)
			return
		}
		resp, err := http.Post(inner.URL+r.URL.Path, "application/json", r.Body)
		if r.Method == http.MethodGet {
			resp, err = http.Get(inner.URL + r.URL.Path)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer srv.Close()
	args := []string{"bench", "--base-url", srv.URL, "--num-prompts", "2", "--quiet", "--records", "none", "--calibrate", "off"}
	if r := runCLI(t, t.Context(), nil, args...); r.code != ExitRun || !strings.Contains(r.stderr, "503") {
		t.Errorf("without waiting: exit %d, stderr %q; want %d naming the 503", r.code, r.stderr, ExitRun)
	}
	calls.Store(0)
	defer func(p time.Duration) { readyPoll = p }(readyPoll)
	readyPoll = 10 * time.Millisecond
	if r := runCLI(t, t.Context(), nil, append(args, "--ready-check-timeout", "10s")...); r.code != ExitOK {
		t.Errorf("with --ready-check-timeout: exit %d, stderr %q; want 0", r.code, r.stderr)
	}
	if calls.Load() < 4 {
		t.Errorf("model list asked %d times; want the 3 refusals and a success", calls.Load())
	}
}

func TestBenchSaveDetailed(t *testing.T) {
	// 3 requests of 4 tokens: first after 20 ms, then 2 ms apart.
	srv, _ := fakeServer(t, 200, 20*time.Millisecond, 2*time.Millisecond, 4)
	dir := t.TempDir()
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "3", "--num-warmups", "1", "--quiet",
		"--calibrate", "off", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "d.json",
		"--html", filepath.Join(dir, "d.html"))
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	// Both outputs come from one reading of the records file.
	if page, err := os.ReadFile(filepath.Join(dir, "d.html")); err != nil || !strings.Contains(string(page), "<svg") {
		t.Errorf("--html beside --save-detailed: %v (%d bytes)", err, len(page))
	}
	b, _ := os.ReadFile(filepath.Join(dir, "d.json"))
	var res struct {
		InputLens  []int       `json:"input_lens"`
		OutputLens []int       `json:"output_lens"`
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		Errors     []string    `json:"errors"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// Warm-ups are left out, like vLLM: three entries each.
	if len(res.InputLens) != 3 || len(res.OutputLens) != 3 || len(res.TTFTs) != 3 || len(res.ITLs) != 3 || len(res.Errors) != 3 {
		t.Fatalf("lists = %+v; want 3 entries each", res)
	}
	for i := range 3 {
		// Usage reports 100 prompt and 4 output tokens; 4 chunks give 3
		// gaps; TTFT in seconds is at least the 20 ms first-token delay.
		if res.InputLens[i] != 100 || res.OutputLens[i] != 4 || len(res.ITLs[i]) != 3 || res.TTFTs[i] < 0.020 || res.Errors[i] != "" {
			t.Errorf("request %d: input %d output %d itls %v ttft %v error %q; want 100, 4, 3 gaps, ≥ 0.020 s, none",
				i, res.InputLens[i], res.OutputLens[i], res.ITLs[i], res.TTFTs[i], res.Errors[i])
		}
	}
}

func TestBenchTraceReplayedOnce(t *testing.T) {
	// Three arrivals 100 ms apart; asking for 10 requests replays the 3.
	dir := t.TempDir()
	trace := filepath.Join(dir, "trace.csv")
	csv := "TIMESTAMP,ContextTokens,GeneratedTokens\r\n" +
		"2023-11-16 18:00:00.0000000,100,4\r\n2023-11-16 18:00:00.1000000,120,4\r\n2023-11-16 18:00:00.2000000,140,4"
	if err := os.WriteFile(trace, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, hits := fakeServer(t, 200, time.Millisecond, time.Millisecond, 4)
	rec := filepath.Join(dir, "r.jsonl")
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--dataset-name", "trace", "--dataset-path", trace,
		"--num-prompts", "10", "--quiet", "--calibrate", "off", "--records", rec)
	if r.code != ExitOK || !strings.Contains(r.stderr, "the trace has 3 requests: replaying 3") {
		t.Errorf("exit %d, stderr %q; want 0 and a note that the trace is replayed once", r.code, r.stderr)
	}
	_, recs := readRecords(t, rec)
	if len(recs) != 3 || hits.Load() != 3 {
		t.Fatalf("records %d, requests %d; want 3 and 3", len(recs), hits.Load())
	}
	// Arrivals keep the trace's spacing: 0, 100, 200 ms after the first.
	for i, want := range []int64{0, 100, 200} {
		if got := (recs[i].Intended - recs[0].Intended) / int64(time.Millisecond); got != want {
			t.Errorf("request %d intended at +%d ms; want +%d", i, got, want)
		}
	}
}
