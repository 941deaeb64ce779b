package cli

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/target"
	"github.com/goodput/goodput/internal/wire"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/wire/protocols"
	"github.com/goodput/goodput/internal/workload"
)

// The flag groups bench, sweep and sim share, each bound to the fields of
// a run spec (target.Spec, LoadSpec, WorkloadSpec, OutputSpec) that
// checks them; fs is the flag set they were declared in, which names a
// field's flag back (settingError, flagGroup).

// targetFlags says where requests go and how they look on the wire.
type targetFlags struct {
	target.Spec
	// TrustRemoteCode and TokenizerMode are vLLM's, accepted as no-ops.
	TrustRemoteCode bool
	TokenizerMode   string
}

func (t *targetFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&t.BaseURL, "base-url", "", "server root URL, e.g. http://127.0.0.1:8000 (none: start the embedded simulator)")
	fs.StringVar(&t.Host, "host", "", "server host (with --port, instead of --base-url)")
	fs.IntVar(&t.Port, "port", 8000, "server port (with --host)")
	fs.StringVar(&t.Backend, "backend", "openai", "wire API: "+protocols.Help()+"; any OpenAI-compatible server speaks openai or openai-chat")
	fs.StringVar(&t.Endpoint, "endpoint", "", "request path (default the backend's: "+backendRoutes()+")")
	fs.StringVar(&t.Model, "model", "", "model id to request (default: the first id from GET /v1/models)")
	fs.StringArrayVar(&t.Headers, "header", nil, "extra request header K=V (repeatable)")
	fs.StringVar(&t.ExtraBody, "extra-body", "", "JSON object merged into every request body")
	fs.StringVar(&t.APIKeyEnv, "api-key-env", target.DefaultKeyEnv, "environment variable holding the API key, never printed or saved"+otherKeyEnvs())
	fs.StringVar(&t.RequestIDPrefix, "request-id-prefix", "", "prefix of the x-request-id header (default goodput-<run id>-)")
	fs.BoolVar(&t.IgnoreEOS, "ignore-eos", false, "send ignore_eos so every request generates exactly its output length")
	fs.StringVar(&t.MaxTokensField, "max-tokens-field", "max_tokens", "body field for the output cap: max_tokens (llama.cpp ignores the other) or max_completion_tokens (OpenAI's reasoning models require it)")
	fs.StringVar(&t.ContinuousUsage, "continuous-usage", "auto", "ask for usage in every chunk (continuous_usage_stats): auto (vLLM and the simulator), on, off")
	fs.DurationVar(&t.ReadyCheckTimeout, "ready-check-timeout", 0, "wait this long for a starting server to answer GET /v1/models before the run (0: do not wait)")
	fs.DurationVar(&t.Timeout, "timeout", time.Hour, "limit on a whole request, so a server that trickles keep-alives forever cannot hang the run (0: none)")
	fs.DurationVar(&t.IdleTimeout, "idle-timeout", 2*time.Minute, "limit on silence from the server, from the send to the first byte and between bytes (0: none); raise it for queues longer than this")
	fs.BoolVar(&t.FollowRedirects, "follow-redirects", false, "follow a server's 307/308 redirects to the same scheme, host and port (counted in the records); a redirect to another origin is never followed, so credentials never leave for it")
	fs.IntVar(&t.MaxResponseTokens, "max-response-tokens", wire.DefaultMaxResponseTokens, "stop reading a response past this many tokens when the request sets no max_tokens (class runaway); with max_tokens N the cap is max(4N, N+1024)")
	fs.Var(seconds(&t.ReadyCheckTimeout), "ready-check-timeout-sec", "--ready-check-timeout in seconds (vLLM's spelling)")
	fs.StringVar(&t.ServedModelName, "served-model-name", "", "model id sent in requests and looked up in GET /v1/models, when it is not --model (which then names the model and tokenizer in the records and result, as in vLLM)")
	fs.Var(optional(&t.Temperature), "temperature", "temperature sent in every request (default: none sent, the server's own)")
	fs.Var(optional(&t.TopP), "top-p", "top_p sent in every request (default: none sent)")
	fs.Var(optional(&t.TopK), "top-k", "top_k sent in every request (default: none sent)")
	fs.Var(optional(&t.MinP), "min-p", "min_p sent in every request (default: none sent)")
	fs.Var(optional(&t.FrequencyPenalty), "frequency-penalty", "frequency_penalty sent in every request (default: none sent)")
	fs.Var(optional(&t.PresencePenalty), "presence-penalty", "presence_penalty sent in every request (default: none sent)")
	fs.Var(optional(&t.RepetitionPenalty), "repetition-penalty", "repetition_penalty sent in every request (vLLM's extension; default: none sent)")
	fs.BoolVar(&t.Insecure, "insecure", false, "do not verify the server's TLS certificate (self-signed https servers)")
	fs.BoolVar(&t.TrustRemoteCode, "trust-remote-code", false, "accepted for vLLM's scripts; no effect (goodput runs no model code)")
	fs.StringVar(&t.TokenizerMode, "tokenizer-mode", "", "accepted for vLLM's scripts; no effect (see --tokenizer)")
}

// registerScrape adds the flags of scraping the server's metrics.
func (t *targetFlags) registerScrape(fs *pflag.FlagSet) {
	fs.StringArrayVar(&t.ServerMetrics, "server-metrics", nil, "also scrape this Prometheus /metrics endpoint during the run, URL or NAME=URL (a DCGM exporter, a second replica; repeatable); the target's own /metrics is scraped when it answers; none: scrape nothing")
	fs.DurationVar(&t.ScrapeInterval, "scrape-interval", time.Second, "time between scrapes of the server's metrics")
}

// backendRoutes lists the protocols' request paths, for --endpoint's help.
func backendRoutes() string {
	var routes []string
	for _, p := range protocols.All() {
		routes = append(routes, p.Route())
	}
	return strings.Join(routes, ", ")
}

// otherKeyEnvs says, for --api-key-env's help, which protocols read their
// key from another variable than the default: " (ANTHROPIC_API_KEY when
// left at its default with --backend anthropic-messages)".
func otherKeyEnvs() string {
	var others []string
	for _, p := range protocols.All() {
		if p.KeyEnv != "" && p.KeyEnv != target.DefaultKeyEnv {
			others = append(others, p.KeyEnv+" when left at its default with --backend "+p.Name())
		}
	}
	if len(others) == 0 {
		return ""
	}
	return " (" + strings.Join(others, "; ") + ")"
}

// value is a flag value of ours filling the field at ptr: set parses the
// text given, show is the field's value ("" for none).
type value struct {
	ptr  any
	typ  string
	set  func(string) error
	show func() string
}

func (v value) Set(s string) error { return v.set(strings.TrimSpace(s)) }
func (v value) Type() string       { return v.typ }
func (v value) Target() any        { return v.ptr }
func (v value) String() string {
	if v.show == nil {
		return "" // pflag's zero value, for help's defaults
	}
	return v.show()
}

// optional is a number flag filling a *T field, nil until given, so an
// unset sampling parameter is left out of the request, not sent as 0.
func optional[T float64 | int](p **T) value {
	_, isInt := any(p).(**int)
	return value{ptr: p, typ: map[bool]string{true: "int", false: "float"}[isInt], set: func(s string) error {
		var v T
		switch q := any(&v).(type) {
		case *float64:
			f, err := strconv.ParseFloat(s, 64)
			if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
				return errors.New("want a number")
			}
			*q = f
		case *int:
			n, err := strconv.Atoi(s)
			if err != nil {
				return errors.New("want an integer")
			}
			*q = n
		}
		*p = &v
		return nil
	}, show: func() string {
		if *p == nil {
			return ""
		}
		return fmt.Sprint(**p)
	}}
}

// seconds sets a duration from a number of seconds (vLLM's
// --ready-check-timeout-sec), so both spellings fill one field.
func seconds(d *time.Duration) value {
	return value{ptr: d, typ: "seconds", set: func(s string) error {
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x >= 0) || x > 1e9 {
			return errors.New("want a number of seconds ≥ 0")
		}
		*d = time.Duration(x * float64(time.Second))
		return nil
	}, show: func() string {
		if *d == 0 {
			return ""
		}
		return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
	}}
}

// loadFlags says how much load and for how long.
type loadFlags struct {
	runspec.LoadSpec
	fs *pflag.FlagSet
}

// registerRetry adds the client-retry flags (bench and sweep, over the
// wire).
func (l *loadFlags) registerRetry(fs *pflag.FlagSet) {
	fs.IntVar(&l.Retries, "retries", 0, "retry a request that failed with 429, 5xx, a timeout or a reset connection up to this many times, as client SDKs do (each attempt is a record; 0: none)")
	fs.StringVar(&l.RetryBackoff, "retry-backoff", "exponential:500ms,8s,full", "wait before each retry: exponential:BASE,CAP[,none|full|equal] (jitter) or constant:WAIT; never shorter than the answer's Retry-After (unless --retry-ignore-retry-after)")
	fs.BoolVar(&l.RetryIgnoreRetryAfter, "retry-ignore-retry-after", false, "wait only the --retry-backoff before a retry, however long the answer's Retry-After: an aggressive client (with constant:0 it hammers, as in a retry storm)")
}

// registerShard adds the flags of a run split over machines (bench, and a
// sweep of explicit levels).
func (l *loadFlags) registerShard(fs *pflag.FlagSet) {
	fs.StringVar(&l.Shard, "shard", "", "send shard I's share (I from 0) of one schedule split over N machines, given as I/N: arrival k goes to shard k mod N, a --max-concurrency cap is split; merge the shards' records with goodput report")
	fs.IntVar(&l.Shards, "shards", 0, "--shard with the index from JOB_COMPLETION_INDEX (a Kubernetes Indexed Job's): N shards")
	fs.StringVar(&l.StartAt, "start-at", "", "start the measured schedule at this wall-clock instant (RFC 3339, e.g. 2026-12-01T10:00:00Z), so that shards started apart share it; within 24 h")
	fs.StringVar(&l.Rendezvous, "rendezvous", "", "with --shard(s): agree the start at shard 0's HOST:PORT (shard 0 listens there; the start is set once every shard has checked in), instead of --start-at")
}

func (l *loadFlags) register(fs *pflag.FlagSet) {
	l.fs = fs
	fs.StringVar(&l.RequestRate, "request-rate", "inf", "open-loop arrival rate in requests/s, or inf to send as fast as the concurrency cap allows")
	fs.Float64Var(&l.Burstiness, "burstiness", 1.0, "gamma shape of inter-arrival gaps (1 = Poisson, <1 burstier, >1 smoother)")
	fs.IntVar(&l.MaxConcurrency, "max-concurrency", 0, "cap on requests in flight (0: none)")
	fs.IntVar(&l.NumPrompts, "num-prompts", 1000, "measured requests to send (bench with no --base-url, against the embedded simulator: 200 unless given)")
	fs.IntVar(&l.NumWarmups, "num-warmups", 0, "warm-up requests sent first and excluded from results")
	fs.DurationVar(&l.Duration, "duration", 0, "stop sending after this long (e.g. 60s; with it, --num-prompts is a cap only if set)")
	fs.StringVar(&l.SteadyState, "steady-state", "report", "each level's warm-up transient (MSER-5) and drift: report says where they were; auto also leaves the transient out of the figures (when the level does not drift after it)")
	fs.IntVar(&l.Repeats, "repeats", 1, "run the load this many times (fresh connections; in virtual time the next seed's arrivals) and report the spread between runs beside each run's own intervals")
	fs.StringVar(&l.TargetPrecision, "target-precision", "", "stop sending a level once these figures are known this precisely (the interval's half-width over the figure, at --confidence), e.g. 'p99_ttft:5%,mean_tpot:2%' (mean_M, median_M, pNN_M of ttft, tpot, itl, e2el, ttp, response; throughput; goodput); --num-prompts and --duration still bound it")
	fs.Int64Var(&l.Seed, "seed", 0, "seed for the workload and the arrival schedule (default: 0 on the simulator; against --base-url a fresh one each run, printed and kept in the meta)")
}

// levelWith is level at the --request-rate text rate (a sweep's holds a
// list, so it passes "inf").
func (l *loadFlags) levelWith(rate string) (runlog.Level, error) {
	c := l.LoadSpec
	c.RequestRate = rate
	return c.Level(flagfield.Given(l.fs, &l.LoadSpec))
}

// workloadFlags say what to send.
type workloadFlags struct {
	runspec.WorkloadSpec
	o workload.Options
	// inputSet and outputSet say vLLM's --input-len and --output-len
	// were given.
	inputSet, outputSet bool
	skipChatTemplate    bool
}

func (w *workloadFlags) register(fs *pflag.FlagSet) {
	o := &w.o
	// --input-len and --output-len set the dataset-specific lengths, as in
	// vLLM (input: random; output: random, sharegpt, custom and
	// prefix-repetition), and win over them whatever the order of flags.
	o.RandomInputLen, o.RandomOutputLen = 1024, 128
	fs.StringVar(&o.DatasetName, "dataset-name", "random", "workload: random, custom, sharegpt, lengths, trace, prefix-repetition")
	fs.StringVar(&o.DatasetPath, "dataset-path", "", "dataset file (custom JSONL, ShareGPT JSON, lengths CSV, trace)")
	fs.Var(lengths([]*int{&o.RandomInputLen}, false, &w.inputSet), "random-input-len", "random dataset: prompt length in tokens")
	fs.Var(lengths([]*int{&o.RandomOutputLen}, false, &w.outputSet), "random-output-len", "random dataset: output length in tokens")
	fs.Float64Var(&o.RandomRangeRatio, "random-range-ratio", 0, "random dataset: lengths uniform in [len*(1-r), len*(1+r)]")
	fs.IntVar(&o.RandomPrefixLen, "random-prefix-len", 0, "random dataset: tokens of a shared prefix before each prompt")
	fs.StringVar(&w.Calibrate, "calibrate", "auto", "fit prompt lengths to the server's token counts (its /tokenize, else probe requests' usage): auto or off")
	fs.StringVar(&o.Tokenizer, "tokenizer", "", "tokenizer for exact prompt lengths: a tokenizer.json path or tiktoken:o200k_base|cl100k_base (default: approximate)")
	fs.StringVar(&o.InputLenDist, "input-len-dist", "", "prompt length distribution: fixed:N, uniform:A,B, normal:MEAN,STD, lognormal:MEAN,STD, lognormal:p50=..,p99=.., empirical:FILE[:column]")
	fs.StringVar(&o.OutputLenDist, "output-len-dist", "", "output length distribution (same forms as --input-len-dist)")
	fs.Var(lengths([]*int{&o.ShareGPTOutputLen}, false, &w.outputSet), "sharegpt-output-len", "sharegpt dataset: output length in tokens (0: the reply's)")
	fs.Var(atLeastOne(&o.PrefixRepetitionPrefixLen, "tokens"), "prefix-repetition-prefix-len", "prefix-repetition dataset: prefix tokens (default 256)")
	fs.Var(atLeastOne(&o.PrefixRepetitionSuffixLen, "tokens"), "prefix-repetition-suffix-len", "prefix-repetition dataset: suffix tokens (default 256)")
	fs.Var(atLeastOne(&o.PrefixRepetitionNumPrefixes, "prefixes"), "prefix-repetition-num-prefixes", "prefix-repetition dataset: distinct prefixes (default 10)")
	fs.Var(lengths([]*int{&o.PrefixRepetitionOutputLen}, false, &w.outputSet), "prefix-repetition-output-len", "prefix-repetition dataset: output tokens (default 128)")
	fs.IntVar(&o.SharedPrefixLen, "shared-prefix-len", 0, "tokens of a shared system prompt before every prompt (exercises prefix caches)")
	fs.IntVar(&o.NumPrefixes, "num-prefixes", 0, "distinct shared system prompts (with --shared-prefix-len; default 1)")
	fs.BoolVar(&o.CacheBust, "cache-bust", false, "prepend a unique random prefix to every prompt so prefix caches cannot hit")
	fs.BoolVar(&o.NoShuffle, "disable-shuffle", false, "sharegpt and lengths files: keep the file's order instead of a seeded shuffle (as vLLM's)")
	fs.BoolVar(&o.NoOversample, "no-oversample", false, "dataset files: send each row at most once; a --num-prompts above the row count sends the rows there are (as vLLM's)")
	fs.Float64Var(&o.TraceSpeedup, "trace-speedup", 1, "trace dataset: compress time by this factor")
	fs.StringVar(&o.TraceWindow, "trace-window", "", "trace dataset: START:END seconds of trace time (from its first arrival, before speed-up)")
	// Declared after the dataset lengths they set, so that those name
	// their fields first.
	fs.Var(lengths([]*int{&o.RandomInputLen}, true, &w.inputSet), "input-len", "prompt length in tokens of the dataset that has one (random), as vLLM maps it; wins over --random-input-len")
	fs.Var(lengths([]*int{&o.RandomOutputLen, &o.ShareGPTOutputLen, &w.CustomOutputLen, &o.PrefixRepetitionOutputLen}, true, &w.outputSet), "output-len", "output length in tokens for every dataset that has one (random, sharegpt, custom, prefix-repetition), as vLLM maps it; wins over their own flags")
	fs.BoolVar(&w.skipChatTemplate, "skip-chat-template", false, "accepted for vLLM's scripts; always so here: goodput never applies a chat template on the client, prompts go as written (openai-chat servers apply their own)")
}

// lengths is a length in tokens filling ps: vLLM's --input-len or
// --output-len (general: every dataset's length it maps to), or one
// dataset's, which a general one given (won) wins over whatever the order.
func lengths(ps []*int, general bool, won *bool) value {
	return value{ptr: ps[0], typ: "int", set: func(s string) error {
		v, err := strconv.Atoi(s)
		switch {
		case general && (err != nil || v < 1):
			// 0 would read as "the dataset's default", not as 0 tokens.
			return errors.New("want a number of tokens ≥ 1")
		case err != nil:
			return errors.New("want an integer")
		case !general && *won:
			return nil
		}
		*won = *won || general
		for _, p := range ps {
			*p = v
		}
		return nil
	}, show: func() string {
		if general && !*won {
			return ""
		}
		return strconv.Itoa(*ps[0])
	}}
}

// atLeastOne is an int flag of a count whose zero the library reads as
// "the default": a 0 given is refused, not silently made the default.
func atLeastOne(p *int, unit string) value {
	return value{ptr: p, typ: "int", set: func(s string) error {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			return fmt.Errorf("want a number of %s ≥ 1 (leave the flag out for the default)", unit)
		}
		*p = v
		return nil
	}, show: func() string {
		if *p == 0 {
			return ""
		}
		return strconv.Itoa(*p)
	}}
}

// outputFlags say what to print and save.
type outputFlags struct {
	summaryFlags
	runspec.OutputSpec
	Quiet bool
}

func (o *outputFlags) register(fs *pflag.FlagSet) {
	registerSummary(fs, &o.SummarySpec)
	fs.BoolVar(&o.SaveResult, "save-result", false, "save the result JSON (vLLM's keys)")
	fs.BoolVar(&o.SaveDetailed, "save-detailed", false, "with --save-result, add vLLM's per-request lists (input_lens, output_lens, ttfts, itls, latencies, start_times, queue_times, generated_texts, errors) and rtfx; the records then keep each answer's text")
	fs.StringVar(&o.ResultDir, "result-dir", "", "directory for the result and records files (default: current)")
	fs.StringVar(&o.ResultFilename, "result-filename", "", "result file name (default like vLLM's: backend-rate-qps-concurrency-model-date.json)")
	fs.StringVar(&o.Records, "records", "", "per-request records JSONL (default: beside the result file, .records.jsonl); none to skip")
	fs.StringArrayVar(&o.Metadata, "metadata", nil, "K=V saved with the result (repeatable)")
	fs.BoolVarP(&o.Quiet, "quiet", "q", false, "no progress output")
	fs.BoolVar(&o.Quiet, "disable-tqdm", false, "no progress output (vLLM's spelling of --quiet)")
	fs.StringVar(&o.HTML, "html", "", "also write a self-contained HTML report (charts inlined, opens offline) to this file")
	fs.BoolVar(&o.Overwrite, "overwrite", false, "replace an existing records or result file of the name given (default: refuse; goodput's own default names never clash)")
}
