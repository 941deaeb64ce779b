package cli

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// fakeServer streams a fixed chat-shaped answer of n tokens, gap apart,
// after first; status != 200 answers that status instead.
func fakeServer(t *testing.T, status int, first, gap time.Duration, n int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	return fakeServerHook(t, status, first, gap, n, nil)
}

// fakeServerHook is fakeServer calling onRun, when set, with the count of
// the run's requests so far as each arrives.
func fakeServerHook(t *testing.T, status int, first, gap time.Duration, n int, onRun func(k int64)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"fake-model","owned_by":"test"}]}`)
			return
		}
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r) // a server without metrics
			return
		}
		if r.URL.Path == "/tokenize" {
			http.NotFound(w, r)
			return
		}
		if !strings.HasPrefix(r.Header.Get("X-Request-Id"), "goodput-probe-") {
			k := hits.Add(1) // count the run's requests, not calibration probes
			if onRun != nil {
				onRun(k)
			}
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
		{"bad base url", []string{"--base-url", "localhost:8000", "--model", "m"}, `--base-url "localhost:8000": want http(s)://host[:port]`},
		{"bad sim gpu", []string{"--gpu", "tpu-v9"}, "--gpu"},
		{"bad max tokens field", []string{"--max-tokens-field", "limit"}, "--max-tokens-field"},
		// Server names are not API flavours: no silent aliases.
		{"tgi backend", []string{"--backend", "tgi"}, "want openai (completions; vllm is its alias), openai-chat, openai-responses, anthropic-messages or openai-embeddings"},
		{"sglang backend", []string{"--backend", "sglang"}, "--backend \"sglang\""},
		{"llama.cpp backend", []string{"--backend", "llama.cpp"}, "--backend \"llama.cpp\""},
		{"ramp without rates", []string{"--ramp-up-strategy", "linear"}, "--ramp-up-start-rps"},
		{"ramp with a rate", []string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2", "--request-rate", "4"}, "--request-rate"},
		{"ramp by duration", []string{"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "1", "--ramp-up-end-rps", "2", "--duration", "10s"}, "--num-prompts"},
		{"bad temperature", []string{"--temperature", "warm"}, "--temperature"},
		{"bad ready check", []string{"--ready-check-timeout-sec", "-1"}, "--ready-check-timeout-sec"},
		{"bad custom output len", []string{"--custom-output-len", "-5"}, "--custom-output-len"},
		{"no-stream ttft slo", []string{"--no-stream", "--goodput", "ttft:100"}, "--no-stream"},
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
	// Ctrl-C comes once the third request reached the server, however
	// slowly a loaded host starts the run: requests are then in flight
	// (each streams for 5 s).
	ctx, cancel := context.WithCancel(t.Context())
	srv, hits := fakeServerHook(t, 200, 10*time.Millisecond, 100*time.Millisecond, 50, func(k int64) {
		if k == 3 {
			cancel()
		}
	})
	dir := t.TempDir()
	r := runCLI(t, ctx, nil, "bench", "--base-url", srv.URL, "--num-prompts", "1000", "--request-rate", "20",
		"--quiet", "--calibrate", "off", "--save-result", "--result-dir", dir, "--result-filename", "r.json")
	if r.code != ExitInterrupted || !strings.Contains(r.stderr, "interrupted") {
		t.Errorf("exit %d, stderr %q; want %d and 'interrupted'", r.code, r.stderr, ExitInterrupted)
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
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil {
		t.Errorf("result not saved after interrupt: %v", err)
	} else if !strings.Contains(string(b), `"interrupted": true`) {
		t.Errorf("result JSON has no interrupted mark:\n%s", b)
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
	// The run cannot end before the test has scraped it: after its first
	// request, the server holds every other until the scrape has seen the
	// counter, so no machine is too slow (or too fast) for the scrape to
	// land during the run.
	inner, _ := fakeServer(t, 200, time.Millisecond, time.Millisecond, 5)
	scraped := make(chan struct{})
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" && calls.Add(1) > 1 {
			select {
			case <-scraped:
			case <-r.Context().Done():
				return
			}
		}
		inner.Config.Handler.ServeHTTP(w, r)
	}))
	defer srv.Close()
	var errb syncBuffer
	done := make(chan int)
	go func() {
		done <- Main(t.Context(), []string{"bench", "--base-url", srv.URL, "--num-prompts", "20", "--max-concurrency", "1",
			"--quiet", "--records", "none", "--calibrate", "off", "--metrics-listen", "127.0.0.1:0"},
			Env{Stdout: io.Discard, Stderr: &errb, Getenv: func(string) string { return "" }, Now: time.Now})
	}()
	re := regexp.MustCompile(`http://127\.0\.0\.1:\d+/metrics`)
	var body string
	// A minute is a sanity limit: the run waits for the scrape.
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		u := re.FindString(errb.String())
		if u == "" {
			continue
		}
		resp, err := http.Get(u)
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body = string(b)
		if strings.Contains(body, "goodput_requests_total") {
			break
		}
	}
	close(scraped)
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
		InputLens   []int       `json:"input_lens"`
		OutputLens  []int       `json:"output_lens"`
		TTFTs       []float64   `json:"ttfts"`
		ITLs        [][]float64 `json:"itls"`
		Errors      []string    `json:"errors"`
		Latencies   []float64   `json:"latencies"`
		StartTimes  []float64   `json:"start_times"`
		QueueTimes  []float64   `json:"queue_times"`
		Texts       []string    `json:"generated_texts"`
		RTFx        *float64    `json:"rtfx"`
		TokenizerID string      `json:"tokenizer_id"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	// vLLM's other per-request lists, and its scalars.
	if len(res.Latencies) != 3 || len(res.StartTimes) != 3 || len(res.QueueTimes) != 3 || len(res.Texts) != 3 {
		t.Fatalf("latencies %v start_times %v queue_times %v generated_texts %q; want 3 entries each",
			res.Latencies, res.StartTimes, res.QueueTimes, res.Texts)
	}
	if res.RTFx == nil || *res.RTFx != 0 || res.TokenizerID != "approx" {
		t.Errorf("rtfx %v tokenizer_id %q; want 0 (text, not audio) and approx (no --tokenizer, not calibrated)", res.RTFx, res.TokenizerID)
	}
	for i := range 3 {
		// E2E: 20 ms to the first token and 3 gaps of 2 ms; sent in order,
		// after the warm-up; the text is the streamed content.
		if res.Latencies[i] < 0.026 || res.Latencies[i] < res.TTFTs[i] || res.Texts[i] != "w0 w1 w2 w3 " ||
			res.StartTimes[i] <= 0 || (i > 0 && res.StartTimes[i] < res.StartTimes[i-1]) || res.QueueTimes[i] < 0 {
			t.Errorf("request %d: latency %v (ttft %v) start %v queue %v text %q; want ≥ 0.026 s and ≥ ttft, sends in order, queue ≥ 0, \"w0 w1 w2 w3 \"",
				i, res.Latencies[i], res.TTFTs[i], res.StartTimes[i], res.QueueTimes[i], res.Texts[i])
		}
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
	// Arrivals keep the trace's spacing: 0, 100, 200 ms after the first
	// (records are written as requests end, which a busy host may reorder).
	slices.SortFunc(recs, func(a, b runlog.Record) int { return cmp.Compare(a.Intended, b.Intended) })
	for i, want := range []int64{0, 100, 200} {
		if got := (recs[i].Intended - recs[0].Intended) / int64(time.Millisecond); got != want {
			t.Errorf("request %d intended at +%d ms; want +%d", i, got, want)
		}
	}
}

// vllmServer is a scripted vLLM-like server: GET /v1/models lists listed
// (listStatus != 200 answers that status instead); a generation request
// for a model serves does not accept gets vLLM's 404. It streams two
// tokens, or, for "stream": false, one JSON answer. It keeps every
// generation request's body (probes included).
func vllmServer(t *testing.T, listed []string, listStatus int, serves func(model string) bool) (*httptest.Server, func() []map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var bodies []map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			http.NotFound(w, r) // a server without metrics
			return
		case "/v1/models":
			if listStatus != http.StatusOK {
				http.Error(w, `{"detail":"no"}`, listStatus)
				return
			}
			data := make([]string, len(listed))
			for i, id := range listed {
				data[i] = fmt.Sprintf(`{"id":%q,"owned_by":"vllm","root":"/models/%s"}`, id, id)
			}
			fmt.Fprintf(w, `{"object":"list","data":[%s]}`, strings.Join(data, ","))
			return
		case "/tokenize":
			http.NotFound(w, r)
			return
		}
		var body map[string]any
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		model, _ := body["model"].(string)
		if !serves(model) {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"object":"error","message":"The model `+"`%s`"+` does not exist.","type":"NotFoundError","param":"model","code":404}`, model)
			return
		}
		if body["stream"] == false {
			time.Sleep(30 * time.Millisecond)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"text_completion","choices":[{"index":0,"text":"w0 w1 w2","finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":3}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"w0 "}]}`+"\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(5 * time.Millisecond)
		fmt.Fprint(w, `data: {"choices":[{"index":0,"text":"w1","finish_reason":"length"}]}`+"\n\n"+
			`data: {"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}`+"\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv, func() []map[string]any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(bodies)
	}
}

func TestBenchUnknownModel(t *testing.T) {
	only := func(id string) func(string) bool { return func(m string) bool { return m == id } }
	tests := []struct {
		name       string
		listStatus int
		serves     func(string) bool
		wantCode   int
		wantStderr string
		wantSent   int // generation requests the server saw, the probe included
	}{
		// The list lacks it and the server says it does not exist: one
		// probe, not 20 requests, and the ids the server has.
		{"not listed", 200, only("real-model"), ExitRun,
			`--model "typo-model": the server does not serve it (HTTP 404: The model ` + "`typo-model`" + ` does not exist.); it serves: real-model, other-model`, 1},
		// No list to look in: the probe's 404 decides.
		{"no model list", 500, only("real-model"), ExitRun,
			`--model "typo-model": the server does not serve it (HTTP 404: The model ` + "`typo-model`" + ` does not exist.); GET /v1/models failed`, 1},
		// llama.cpp answers any name: the run goes on (probe + 20).
		{"any name served", 200, func(string) bool { return true }, ExitOK,
			`--model "typo-model" is not in the server's model list (real-model, other-model), but the server answers it`, 21},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, bodies := vllmServer(t, []string{"real-model", "other-model"}, tt.listStatus, tt.serves)
			r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--model", "typo-model", "--num-prompts", "20",
				"--quiet", "--records", "none", "--calibrate", "off")
			if r.code != tt.wantCode || !strings.Contains(r.stderr, tt.wantStderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, tt.wantCode, tt.wantStderr)
			}
			if got := len(bodies()); got != tt.wantSent {
				t.Errorf("server saw %d generation requests; want %d", got, tt.wantSent)
			}
		})
	}
	// A model the list has is not probed; --served-model-name is the id
	// looked up and sent, while --model names the run.
	srv, bodies := vllmServer(t, []string{"real-model"}, 200, only("real-model"))
	dir := t.TempDir()
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--model", "org/Real-Model-8B", "--served-model-name", "real-model",
		"--num-prompts", "3", "--quiet", "--calibrate", "off", "--save-result", "--result-dir", dir)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, b := range bodies() {
		if b["model"] != "real-model" {
			t.Errorf("request model = %v; want the served name real-model", b["model"])
		}
	}
	if n := len(bodies()); n != 3 {
		t.Errorf("server saw %d requests; want 3 (no probe for a listed model)", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "openai-infqps-Real-Model-8B-*.json"))
	if len(files) != 1 {
		t.Fatalf("result files %v; want one named after --model", files)
	}
	b, _ := os.ReadFile(files[0])
	if !strings.Contains(string(b), `"model_id": "org/Real-Model-8B"`) {
		t.Errorf("result model_id is not --model:\n%.600s", b)
	}
}

func TestBenchRequestBody(t *testing.T) {
	// Sampling flags go in the body only when given; --extra-body wins
	// where both set a field; --output-len is the random dataset's.
	srv, bodies := vllmServer(t, []string{"m"}, 200, func(string) bool { return true })
	base := []string{"bench", "--base-url", srv.URL, "--num-prompts", "2", "--quiet", "--records", "none", "--calibrate", "off"}
	if r := runCLI(t, t.Context(), nil, append(base, "--temperature", "0", "--top-p", "0.95", "--top-k", "20",
		"--min-p", "0.05", "--frequency-penalty", "0.5", "--presence-penalty", "-0.5", "--repetition-penalty", "1.1",
		"--extra-body", `{"top_k":5}`, "--output-len", "7", "--random-output-len", "99")...); r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	got := bodies()
	if len(got) != 2 {
		t.Fatalf("server saw %d requests; want 2", len(got))
	}
	if b := got[0]; b["temperature"] != 0.0 || b["top_p"] != 0.95 || b["top_k"] != 5.0 || b["max_tokens"] != 7.0 || b["stream"] != true {
		t.Errorf("body = %v; want temperature 0, top_p 0.95, top_k 5 (--extra-body's), max_tokens 7, stream true", b)
	}
	if b := got[0]; b["min_p"] != 0.05 || b["frequency_penalty"] != 0.5 || b["presence_penalty"] != -0.5 || b["repetition_penalty"] != 1.1 {
		t.Errorf("body = %v; want min_p 0.05, frequency_penalty 0.5, presence_penalty -0.5, repetition_penalty 1.1", b)
	}
	if r := runCLI(t, t.Context(), nil, base...); r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, k := range []string{"temperature", "top_p", "top_k", "min_p", "frequency_penalty", "presence_penalty", "repetition_penalty"} {
		if v, ok := bodies()[2][k]; ok {
			t.Errorf("body has %s = %v without the flag; want none sent", k, v)
		}
	}
}

func TestBenchNoStream(t *testing.T) {
	// Whole answers after 30 ms: E2E is measured from them, and nothing
	// streaming-only is reported.
	srv, bodies := vllmServer(t, []string{"m"}, 200, func(string) bool { return true })
	dir := t.TempDir()
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--no-stream", "--num-prompts", "4", "--quiet",
		"--calibrate", "off", "--save-result", "--save-detailed", "--result-dir", dir, "--result-filename", "n.json")
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, b := range bodies() {
		if b["stream"] != false || b["stream_options"] != nil {
			t.Errorf("body = %v; want stream false and no stream_options", b)
		}
	}
	for _, no := range []string{"Time to First Token", "Time per Output Token", "Inter-token Latency", "Time to Publish"} {
		if strings.Contains(r.stdout, no) {
			t.Errorf("stdout reports %q for a run that did not stream:\n%s", no, r.stdout)
		}
	}
	var res map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, "n.json"))
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mean_ttft_ms", "p99_tpot_ms", "median_itl_ms", "p99_ttp_ms"} {
		if v, ok := res[k]; ok {
			t.Errorf("result has %s = %v; want none (not measured)", k, v)
		}
	}
	if v, _ := res["p50_e2el_ms"].(float64); v < 30 {
		t.Errorf("p50_e2el_ms = %v; want ≥ 30 (answers took 30 ms)", v)
	}
	if res["total_output_tokens"] != 12.0 {
		t.Errorf("total_output_tokens = %v; want 12 (usage's 3 × 4)", res["total_output_tokens"])
	}
	for i, v := range res["ttfts"].([]any) {
		if v != 0.0 || len(res["itls"].([]any)[i].([]any)) != 0 {
			t.Errorf("request %d: ttft %v itls %v; want 0 and none", i, v, res["itls"].([]any)[i])
		}
	}
	if txt := res["generated_texts"].([]any); len(txt) != 4 || txt[0] != "w0 w1 w2" {
		t.Errorf("generated_texts = %v; want the answers' text", txt)
	}
}

func TestBenchRampUp(t *testing.T) {
	// A linear ramp from 20 to 100 req/s over 5 requests: rates 20, 40,
	// 60, 80, 100, so the gaps are 50, 25, 16.7, 12.5 and 10 ms (burstiness
	// 1e12 makes them exact) and the intended sends, from the first, are at
	// 0, 25, 41.7, 54.2 and 64.2 ms.
	srv, _ := fakeServer(t, 200, time.Millisecond, time.Millisecond, 2)
	rec := filepath.Join(t.TempDir(), "r.jsonl")
	r := runCLI(t, t.Context(), nil, "bench", "--base-url", srv.URL, "--num-prompts", "5", "--burstiness", "1e12",
		"--ramp-up-strategy", "linear", "--ramp-up-start-rps", "20", "--ramp-up-end-rps", "100",
		"--quiet", "--calibrate", "off", "--records", rec)
	if r.code != ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	meta, recs := readRecords(t, rec)
	if len(recs) != 5 {
		t.Fatalf("records = %d; want 5", len(recs))
	}
	slices.SortFunc(recs, func(a, b runlog.Record) int { return int(a.Intended - b.Intended) })
	for i, want := range []float64{0, 25, 125.0 / 3, 325.0 / 6, 385.0 / 6} {
		if got := float64(recs[i].Intended-recs[0].Intended) / 1e6; got < want-0.5 || got > want+0.5 {
			t.Errorf("request %d intended at +%.2f ms; want +%.2f ms", i, got, want)
		}
	}
	if lv := meta.Levels[0]; lv.Label != "ramp-up linear 20→100 req/s" || lv.RequestRate != 0 {
		t.Errorf("level = %+v; want the ramp's label and no fixed rate", lv)
	}
}
