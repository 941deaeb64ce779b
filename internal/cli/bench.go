package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// targetFlags says where requests go and how they look on the wire.
type targetFlags struct {
	BaseURL           string
	Host              string
	Port              int
	Backend           string
	Endpoint          string
	Model             string
	Headers           []string
	ExtraBody         string
	APIKeyEnv         string
	RequestIDPrefix   string
	IgnoreEOS         bool
	MaxTokensField    string
	ContinuousUsage   string
	Timeout           time.Duration
	IdleTimeout       time.Duration
	ReadyCheckTimeout time.Duration
}

func (t *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.BaseURL, "base-url", "", "server root URL, e.g. http://127.0.0.1:8000 (none: start the embedded simulator)")
	fs.StringVar(&t.Host, "host", "", "server host (with --port, instead of --base-url)")
	fs.IntVar(&t.Port, "port", 8000, "server port (with --host)")
	fs.StringVar(&t.Backend, "backend", "openai", "API flavour: openai (completions) or openai-chat (vllm = openai)")
	fs.StringVar(&t.Endpoint, "endpoint", "", "request path (default /v1/completions, or /v1/chat/completions for openai-chat)")
	fs.StringVar(&t.Model, "model", "", "model id to request (default: the first id from GET /v1/models)")
	fs.StringArrayVar(&t.Headers, "header", nil, "extra request header K=V (repeatable)")
	fs.StringVar(&t.ExtraBody, "extra-body", "", "JSON object merged into every request body")
	fs.StringVar(&t.APIKeyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key (never printed or saved)")
	fs.StringVar(&t.RequestIDPrefix, "request-id-prefix", "", "prefix of the x-request-id header (default goodput-<run id>-)")
	fs.BoolVar(&t.IgnoreEOS, "ignore-eos", false, "send ignore_eos so every request generates exactly its output length")
	fs.StringVar(&t.MaxTokensField, "max-tokens-field", "max_tokens", "body field for the output cap: max_tokens (llama.cpp ignores the other) or max_completion_tokens (OpenAI's reasoning models require it)")
	fs.StringVar(&t.ContinuousUsage, "continuous-usage", "auto", "ask for usage in every chunk (continuous_usage_stats): auto (vLLM and the simulator), on, off")
	fs.DurationVar(&t.ReadyCheckTimeout, "ready-check-timeout", 0, "wait this long for a starting server to answer GET /v1/models before the run (0: do not wait)")
	fs.DurationVar(&t.Timeout, "timeout", time.Hour, "limit on a whole request, so a server that trickles keep-alives forever cannot hang the run (0: none)")
	fs.DurationVar(&t.IdleTimeout, "idle-timeout", 2*time.Minute, "limit on silence from the server, from the send to the first byte and between bytes (0: none); raise it for queues longer than this")
}

// loadFlags says how much load and for how long.
type loadFlags struct {
	RequestRate    string
	Burstiness     float64
	MaxConcurrency int
	NumPrompts     int
	NumWarmups     int
	Duration       time.Duration
	Seed           int64
	numSet         bool // --num-prompts given explicitly
}

func (l *loadFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&l.RequestRate, "request-rate", "inf", "open-loop arrival rate in requests/s, or inf to send as fast as the concurrency cap allows")
	fs.Float64Var(&l.Burstiness, "burstiness", 1.0, "gamma shape of inter-arrival gaps (1 = Poisson, <1 burstier, >1 smoother)")
	fs.IntVar(&l.MaxConcurrency, "max-concurrency", 0, "cap on requests in flight (0: none)")
	fs.IntVar(&l.NumPrompts, "num-prompts", 1000, "measured requests to send")
	fs.IntVar(&l.NumWarmups, "num-warmups", 0, "warm-up requests sent first and excluded from results")
	fs.DurationVar(&l.Duration, "duration", 0, "stop sending after this long (e.g. 60s; with it, --num-prompts is a cap only if set)")
	fs.Int64Var(&l.Seed, "seed", 0, "seed for the workload and the arrival schedule")
}

// rate parses --request-rate; 0 means unpaced.
func (l *loadFlags) rate() (float64, error) {
	s := strings.TrimSpace(strings.ToLower(l.RequestRate))
	if s == "inf" || s == "" {
		return 0, nil
	}
	r, err := strconv.ParseFloat(s, 64)
	if err != nil || r <= 0 || math.IsNaN(r) {
		return 0, usagef("--request-rate %q: want a positive number of requests/s or inf", l.RequestRate)
	}
	if math.IsInf(r, 1) {
		return 0, nil
	}
	return r, nil
}

// workloadFlags say what to send.
type workloadFlags struct {
	o         workload.Options
	calibrate string
}

func (w *workloadFlags) register(fs *pflag.FlagSet) {
	o := &w.o
	fs.StringVar(&o.DatasetName, "dataset-name", "random", "workload: random, custom, sharegpt, lengths, trace, prefix-repetition")
	fs.StringVar(&o.DatasetPath, "dataset-path", "", "dataset file (custom JSONL, ShareGPT JSON, lengths CSV, trace)")
	fs.IntVar(&o.RandomInputLen, "random-input-len", 1024, "random dataset: prompt length in tokens")
	fs.IntVar(&o.RandomOutputLen, "random-output-len", 128, "random dataset: output length in tokens")
	fs.Float64Var(&o.RandomRangeRatio, "random-range-ratio", 0, "random dataset: lengths uniform in [len*(1-r), len*(1+r)]")
	fs.IntVar(&o.RandomPrefixLen, "random-prefix-len", 0, "random dataset: tokens of a shared prefix before each prompt")
	fs.StringVar(&w.calibrate, "calibrate", "auto", "fit prompt lengths to the server's token counts (its /tokenize, else probe requests' usage): auto or off")
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer for exact prompt lengths: a tokenizer.json path or tiktoken:o200k_base|cl100k_base (default: approximate)")
	fs.StringVar(&o.InputLenDist, "input-len-dist", "", "prompt length distribution: fixed:N, uniform:A,B, normal:MEAN,STD, lognormal:MEAN,STD, lognormal:p50=..,p99=.., empirical:FILE[:column]")
	fs.StringVar(&o.OutputLenDist, "output-len-dist", "", "output length distribution (same forms as --input-len-dist)")
	fs.IntVar(&o.ShareGPTOutputLen, "sharegpt-output-len", 0, "sharegpt dataset: output length in tokens (0: the reply's)")
	fs.IntVar(&o.PrefixRepetitionPrefixLen, "prefix-repetition-prefix-len", 0, "prefix-repetition dataset: prefix tokens (default 256)")
	fs.IntVar(&o.PrefixRepetitionSuffixLen, "prefix-repetition-suffix-len", 0, "prefix-repetition dataset: suffix tokens (default 256)")
	fs.IntVar(&o.PrefixRepetitionNumPrefixes, "prefix-repetition-num-prefixes", 0, "prefix-repetition dataset: distinct prefixes (default 10)")
	fs.IntVar(&o.PrefixRepetitionOutputLen, "prefix-repetition-output-len", 0, "prefix-repetition dataset: output tokens (default 128)")
	fs.IntVar(&o.SharedPrefixLen, "shared-prefix-len", 0, "tokens of a shared system prompt before every prompt (exercises prefix caches)")
	fs.IntVar(&o.NumPrefixes, "num-prefixes", 0, "distinct shared system prompts (with --shared-prefix-len; default 1)")
	fs.BoolVar(&o.CacheBust, "cache-bust", false, "prepend a unique random prefix to every prompt so prefix caches cannot hit")
	fs.Float64Var(&o.TraceSpeedup, "trace-speedup", 1, "trace dataset: compress time by this factor")
	fs.StringVar(&o.TraceWindow, "trace-window", "", "trace dataset: START:END seconds of trace time (from its first arrival, before speed-up)")
}

// outputFlags say what to print and save.
type outputFlags struct {
	Goodput           []string
	PercentileMetrics string
	MetricPercentiles string
	Buckets           string
	SaveResult        bool
	SaveDetailed      bool
	ResultDir         string
	ResultFilename    string
	Records           string
	Metadata          []string
	Quiet             bool
	HTML              string
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&o.Goodput, "goodput", nil, "SLO for goodput, e.g. --goodput ttft:2000 tpot:50 (ms; ttft, tpot, e2el, ttp)")
	fs.StringVar(&o.PercentileMetrics, "percentile-metrics", "ttft,tpot,itl,e2el,ttp", "metrics to report percentiles for")
	fs.StringVar(&o.MetricPercentiles, "metric-percentiles", "50,90,95,99", "percentiles to report")
	fs.StringVar(&o.Buckets, "buckets", "1024,8192", "input-length bucket edges in tokens")
	fs.BoolVar(&o.SaveResult, "save-result", false, "save the result JSON (vLLM's keys)")
	fs.BoolVar(&o.SaveDetailed, "save-detailed", false, "with --save-result, add vLLM's per-request lists (input_lens, output_lens, ttfts, itls, errors)")
	fs.StringVar(&o.ResultDir, "result-dir", "", "directory for the result and records files (default: current)")
	fs.StringVar(&o.ResultFilename, "result-filename", "", "result file name (default like vLLM's: backend-rate-qps-concurrency-model-date.json)")
	fs.StringVar(&o.Records, "records", "", "per-request records JSONL (default: beside the result file, .records.jsonl); none to skip")
	fs.StringArrayVar(&o.Metadata, "metadata", nil, "K=V saved with the result (repeatable)")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output")
	fs.StringVar(&o.HTML, "html", "", "also write a self-contained HTML report (charts inlined, opens offline) to this file")
}

var sloArg = regexp.MustCompile(`^(ttft|tpot|e2el|ttp|itl):[0-9.]+$`)

// statsOptions turns the output flags into stats.Options. args are stray
// positional "name:ms" words: vLLM's --goodput takes several values.
func (o *outputFlags) statsOptions(args []string) (stats.Options, error) {
	var so stats.Options
	spec := strings.Join(o.Goodput, " ")
	for _, a := range args {
		if !sloArg.MatchString(a) || len(o.Goodput) == 0 {
			return so, usagef("unexpected argument %q (SLO terms follow --goodput, e.g. --goodput ttft:2000 tpot:50)", a)
		}
		spec += " " + a
	}
	if strings.TrimSpace(spec) != "" {
		slo, err := stats.ParseSLO(spec)
		if err != nil {
			return so, usagef("--goodput: %v", err)
		}
		so.SLO = slo
	}
	var err error
	if so.Percentiles, err = stats.ParsePercentiles(o.MetricPercentiles); err != nil {
		return so, usagef("--metric-percentiles: %v", err)
	}
	if so.Metrics, err = stats.ParseMetrics(o.PercentileMetrics); err != nil {
		return so, usagef("--percentile-metrics: %v", err)
	}
	if so.Buckets, err = stats.ParseBuckets(o.Buckets); err != nil {
		return so, usagef("--buckets: %v", err)
	}
	return so, nil
}

func parseKV(flag string, kvs []string) (map[string]string, error) {
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usagef("%s %q: want KEY=VALUE", flag, kv)
		}
		m[strings.TrimSpace(k)] = v
	}
	return m, nil
}

// BenchOptions is everything "goodput bench" needs.
type BenchOptions struct {
	target  targetFlags
	load    loadFlags
	work    workloadFlags
	out     outputFlags
	sim     simFlags
	verdict verdictFlags // bench only: sweep has its own
	// metricsListen serves live Prometheus metrics of the run (bench only).
	metricsListen string
	args          []string
}

func newBenchCmd(env Env) *cobra.Command {
	var o BenchOptions
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Load-test an OpenAI-compatible streaming endpoint (default: the embedded simulator)",
		Long: `Load-test an OpenAI-compatible streaming endpoint and report TTFT, time to
publish, TPOT, ITL, end-to-end latency, throughput and goodput, as percentiles
and per input-length bucket. Flags follow "vllm bench serve".

With no --base-url (or --host), an embedded simulated engine is started on
loopback and benchmarked, so this works with no GPU and no network.`,
		Example: `  goodput bench
  goodput bench --base-url http://127.0.0.1:8000 --backend openai-chat --request-rate 8 --num-prompts 500 --goodput ttft:2000 tpot:50
  goodput bench --max-concurrency 64 --random-input-len 2048 --random-output-len 256 --save-result`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			o.load.numSet = cmd.Flags().Changed("num-prompts")
			return runBench(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	group(fs, "Target flags", o.target.register)
	group(fs, "Load flags", o.load.register)
	group(fs, "Workload flags", o.work.register)
	group(fs, "Output flags", func(fs *pflag.FlagSet) {
		o.out.register(fs)
		o.verdict.register(fs)
		fs.StringVar(&o.metricsListen, "metrics-listen", "", "serve the client's view as Prometheus /metrics on this address during the run (goodput proxy's metric names), e.g. 127.0.0.1:9465")
	})
	group(fs, "Embedded simulator flags (used without --base-url)", o.sim.register)
	groupedUsage(cmd, "Flags", "Target flags", "Load flags", "Workload flags", "Output flags", "Embedded simulator flags (used without --base-url)")
	return cmd
}

// runBench measures one load level and reports it.
func runBench(ctx context.Context, env Env, o *BenchOptions) error {
	if err := o.verdict.parse(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	s, err := openSession(ctx, cancel, env, o, "bench")
	if err != nil {
		return err
	}
	defer s.close()
	lv, err := o.load.level()
	if err != nil {
		return err
	}
	tracker := findings.NewTracker()
	live, err := startLiveMetrics(o.metricsListen, s.so, s.meta.Model, s.meta.Endpoint)
	if err != nil {
		return err
	}
	defer live.stop()
	if live != nil {
		fmt.Fprintf(env.Stderr, "goodput: live metrics at %s\n", live.url)
	}
	lv.observe = func(r *runlog.Record) {
		tracker.Add(r)
		live.observe(r)
	}
	cpu := startCPU(s.meta.Target == "embedded-sim")
	out, err := s.runLevel(ctx, 0, lv)
	if err != nil {
		return err
	}
	clientCPU := cpu.share()
	s.meta.Levels = []runlog.Level{out.level}
	if err := s.finish(); err != nil {
		return err
	}
	fs := o.verdict.analyze(&out.summary, s.meta, &s.meta.Levels[0], tracker, clientCPU)
	if err := report.Terminal(env.Stdout, &out.summary, s.meta, report.TermOptions{TTY: env.TTY, NoColor: env.Getenv("NO_COLOR") != ""}); err != nil {
		return err
	}
	if err := findings.Render(env.Stdout, fs); err != nil {
		return err
	}
	s.printFiles()
	extra := map[string]any{"records_file": s.recordsPath, "findings": nonNil(fs)}
	saved := &savedRun{path: s.recordsPath}
	if o.out.SaveDetailed {
		d, err := detailed(env, saved, 0)
		if err != nil {
			return err
		}
		maps.Copy(extra, d)
	}
	result, err := report.ResultJSON(&out.summary, s.meta, extra)
	if err != nil {
		return err
	}
	if o.out.SaveResult {
		if err := writeResult(s.resultPath, result); err != nil {
			return fmt.Errorf("--save-result: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", s.resultPath)
	}
	if err := s.err(); err != nil {
		return err
	}
	if o.out.HTML != "" {
		h := runHTML{path: o.out.HTML, run: saved, title: "goodput bench", meta: s.meta, so: s.so,
			findings: htmlFindings(fs), sla: findings.SLASentence(findings.Input{Summary: &out.summary, Meta: s.meta})}
		if err := h.write(env); err != nil {
			return err
		}
	}
	if out.load.Stopped == "cancelled" {
		return fmt.Errorf("interrupted: %d requests sent; the summary above covers what finished", out.load.Sent)
	}
	if err := allFailed(&out.summary); err != nil {
		return err
	}
	return o.verdict.check(result)
}

// allFailed is a run error when not one measured request succeeded: the
// numbers above then describe failures, not the server.
func allFailed(s *stats.Summary) error {
	if s.Completed > 0 || s.Failed == 0 {
		return nil
	}
	classes := make([]string, 0, len(s.Failures))
	for _, c := range runlog.ErrorClasses {
		if n := s.Failures[c]; n > 0 {
			classes = append(classes, fmt.Sprintf("%s %d", c, n))
		}
	}
	return fmt.Errorf("all %d requests failed (%s)", s.Failed, strings.Join(classes, ", "))
}

// readyPoll is how often a starting server is asked again.
var readyPoll = time.Second

// waitModels lists the server's models, retrying every readyPoll for up to
// wait while the server is not answering yet (it may still be loading).
func waitModels(ctx context.Context, c *openai.Client, wait time.Duration) ([]openai.Model, error) {
	deadline := time.Now().Add(wait)
	for {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		models, err := c.Models(dctx)
		cancel()
		if err == nil || wait <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil && wait > 0 && ctx.Err() == nil {
				err = fmt.Errorf("not ready after --ready-check-timeout %v: %w", wait, err)
			}
			return models, err
		}
		t := time.NewTimer(readyPoll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// discover fills in the model id from the server when none was given.
func discover(ctx context.Context, c *openai.Client, t *targetFlags) error {
	mode := strings.ToLower(t.ContinuousUsage)
	switch mode {
	case "on", "true":
		c.SetContinuousUsage(true)
	case "off", "false":
	case "auto":
	default:
		return usagef("--continuous-usage %q: want auto, on or off", t.ContinuousUsage)
	}
	if t.Model != "" && mode != "auto" && t.ReadyCheckTimeout == 0 {
		return nil
	}
	models, err := waitModels(ctx, c, t.ReadyCheckTimeout)
	if err != nil {
		if t.Model != "" && t.ReadyCheckTimeout == 0 {
			return nil // the list is only a convenience when the model is known
		}
		if t.Model != "" {
			return err
		}
		return fmt.Errorf("no --model given and the model list failed: %w", err)
	}
	if t.Model == "" {
		if len(models) == 0 {
			return errors.New("no --model given and GET /v1/models listed none")
		}
		t.Model = models[0].ID
		c.SetModel(t.Model)
	}
	if mode == "auto" {
		for _, m := range models {
			// vLLM and our simulator accept continuous_usage_stats; other
			// servers may reject unknown stream_options.
			if m.ID == t.Model && (m.OwnedBy == "vllm" || m.OwnedBy == "goodput-sim") {
				c.SetContinuousUsage(true)
			}
		}
	}
	return nil
}

// outputPaths names the result and records files like vLLM names its
// result: backend-RATEqps[-concurrencyN]-model-date.json.
func outputPaths(env Env, out *outputFlags, backend, model string, conc int, rate float64, stamp string) (result, records string) {
	dir := out.ResultDir
	if dir == "" {
		dir = env.Dir
	}
	name := out.ResultFilename
	if name == "" {
		rs := "inf"
		if rate > 0 {
			rs = strconv.FormatFloat(rate, 'f', -1, 64)
		}
		cs := ""
		if conc > 0 {
			cs = fmt.Sprintf("-concurrency%d", conc)
		}
		if i := strings.LastIndex(model, "/"); i >= 0 {
			model = model[i+1:]
		}
		name = fmt.Sprintf("%s-%sqps%s-%s-%s.json", backend, rs, cs, sanitize(model), stamp)
	}
	result = filepath.Join(dir, name)
	switch out.Records {
	case "none", "-":
		records = ""
	case "":
		records = strings.TrimSuffix(result, ".json") + ".records.jsonl"
	default:
		records = out.Records
	}
	return result, records
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == ':' || r == '\\' {
			return '_'
		}
		return r
	}, s)
}

func runID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// traceSchedule replays a dataset's own arrival times.
type traceSchedule struct {
	ds workload.Dataset
	i  int
}

func (t *traceSchedule) Next() time.Duration {
	r := t.ds.Shape(t.i % max(t.ds.Len(), 1))
	t.i++
	return r.Arrival
}

func isTrace(ds workload.Dataset) bool {
	return ds.Len() > 0 && ds.Shape(0).HasArrival
}
