package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// levelSpec is the load of one level.
type levelSpec struct {
	Rate           float64 // requests/s; 0 = unpaced
	Burstiness     float64
	MaxConcurrency int
	NumPrompts     int // 0 with Duration: until the duration ends
	Duration       time.Duration
	NumWarmups     int
	Label          string
	// Ramp, when set, raises the rate over the level instead of Rate.
	Ramp *rampSpec
	// observe, when set, sees every finished record (one at a time).
	observe func(*runlog.Record)
}

// level checks the load flags and returns the level they describe.
func (l *loadFlags) level() (levelSpec, error) {
	rate, err := l.rate()
	if err != nil {
		return levelSpec{}, err
	}
	if l.Burstiness <= 0 {
		return levelSpec{}, usagef("--burstiness %v: want > 0", l.Burstiness)
	}
	switch {
	case l.MaxConcurrency < 0:
		return levelSpec{}, usagef("--max-concurrency %d: want ≥ 0", l.MaxConcurrency)
	case l.NumPrompts < 0:
		return levelSpec{}, usagef("--num-prompts %d: want ≥ 0", l.NumPrompts)
	case l.NumWarmups < 0:
		return levelSpec{}, usagef("--num-warmups %d: want ≥ 0", l.NumWarmups)
	case l.Duration < 0:
		return levelSpec{}, usagef("--duration %v: want ≥ 0", l.Duration)
	}
	n := l.NumPrompts
	if l.Duration > 0 && !l.numSet {
		n = 0
	}
	if n == 0 && l.Duration == 0 {
		return levelSpec{}, usagef("--num-prompts 0 needs --duration")
	}
	ramp, err := l.ramp(rate, n)
	if err != nil {
		return levelSpec{}, err
	}
	lv := levelSpec{Rate: rate, Burstiness: l.Burstiness, MaxConcurrency: l.MaxConcurrency,
		NumPrompts: n, Duration: l.Duration, NumWarmups: l.NumWarmups, Ramp: ramp}
	if ramp != nil {
		lv.Label = ramp.label()
	}
	return lv, nil
}

// runlog is the level as records files describe it.
func (lv levelSpec) runlog() runlog.Level {
	return runlog.Level{
		RequestRate: lv.Rate, Burstiness: lv.Burstiness, MaxConcurrency: lv.MaxConcurrency,
		NumPrompts: lv.NumPrompts, DurationS: lv.Duration.Seconds(), NumWarmups: lv.NumWarmups, Label: lv.Label,
	}
}

// session is one measuring run against one target: the client, the
// workload, the records file and the clock shared by all its levels.
type session struct {
	env    Env
	o      *BenchOptions
	so     stats.Options
	cancel context.CancelCauseFunc

	client *openai.Client
	ds     workload.Dataset
	// tokenizerID names the tokenizer the prompts were sized with (the
	// result's tokenizer_id).
	tokenizerID string
	now         func() int64
	meta        *runlog.Meta
	prefix      string
	next        int // dataset index of the next request

	resultPath, recordsPath string
	recFile                 *os.File
	rw                      *runlog.Writer
	stopEmb                 func()

	mu       sync.Mutex
	writeErr error
}

// openSession resolves the target (starting the embedded simulator when no
// URL is given), builds the client and the workload, and opens the records
// file. cancel is called with the cause if writing records fails.
func openSession(ctx context.Context, cancel context.CancelCauseFunc, env Env, o *BenchOptions, command string) (*session, error) {
	s := &session{env: env, o: o, cancel: cancel, stopEmb: func() {}}
	var err error
	if s.so, err = o.out.statsOptions(o.args); err != nil {
		return nil, err
	}
	if o.target.NoStream {
		if err := noStreamStats(&s.so, o.out.metricsSet); err != nil {
			return nil, err
		}
	}
	if _, err := o.load.level(); err != nil {
		return nil, err
	}
	meta, err := parseKV("--metadata", o.out.Metadata)
	if err != nil {
		return nil, err
	}
	headers, err := parseKV("--header", o.target.Headers)
	if err != nil {
		return nil, err
	}
	// Sampling flags first, so --extra-body wins where both set a field
	// (as in vLLM).
	extra := o.target.sampling()
	if strings.TrimSpace(o.target.ExtraBody) != "" {
		var body map[string]any
		if err := json.Unmarshal([]byte(o.target.ExtraBody), &body); err != nil {
			return nil, usagef("--extra-body: not a JSON object: %v", err)
		}
		maps.Copy(extra, body)
	}
	if f := o.target.MaxTokensField; f != "max_tokens" && f != "max_completion_tokens" {
		return nil, usagef("--max-tokens-field %q: want max_tokens or max_completion_tokens", f)
	}
	backend, endpoint, err := o.target.backend()
	if err != nil {
		return nil, err
	}
	if o.target.Endpoint != "" {
		endpoint = o.target.Endpoint
	}
	if n := o.work.customOutputLen; n < -1 {
		return nil, usagef("--custom-output-len %d: want a number of tokens, or 0 or -1 for the file's", n)
	}
	if o.target.TrustRemoteCode {
		fmt.Fprintln(env.Stderr, "goodput: --trust-remote-code has no effect: goodput runs no model code")
	}
	if o.target.TokenizerMode != "" {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer-mode %s has no effect: prompt lengths come from --tokenizer and the server's own counts\n", o.target.TokenizerMode)
	}
	if o.load.Duration == 0 && !o.load.numSet && isTraceName(o.work.o.DatasetName) {
		o.load.NumPrompts = 0 // a trace replays whole unless told otherwise
	}

	// The workload first: a bad file should fail before a server starts.
	wo := o.work.o
	wo.NumPrompts = o.load.NumPrompts
	if wo.NumPrompts > 0 {
		wo.NumPrompts += o.load.NumWarmups
	}
	wo.Seed = o.load.Seed
	if s.ds, err = workload.FromOptions(wo); err != nil {
		return nil, datasetError(err)
	}
	if n := o.work.customOutputLen; n > 0 && strings.EqualFold(o.work.o.DatasetName, "custom") {
		s.ds = customOutput{s.ds, n}
	}
	if isTrace(s.ds) && o.load.RampUpStrategy != "" {
		return nil, usagef("--ramp-up-strategy: the trace dataset brings its own arrival times")
	}
	if s.ds.Len() == 0 {
		return nil, usagef("--dataset-name %s: the dataset has no requests", o.work.o.DatasetName)
	}
	if isTrace(s.ds) && o.load.NumPrompts == 0 && o.load.Duration == 0 {
		o.load.NumPrompts = max(s.ds.Len()-o.load.NumWarmups, 1)
	}
	if o.work.o.NoOversample && !isTrace(s.ds) && o.load.NumPrompts+o.load.NumWarmups > s.ds.Len() && isFileDataset(o.work.o.DatasetName) {
		n := max(s.ds.Len()-o.load.NumWarmups, 1)
		fmt.Fprintf(env.Stderr, "goodput: --no-oversample: the dataset has %d requests: sending %d (after %d warm-ups), not %d\n",
			s.ds.Len(), n, o.load.NumWarmups, o.load.NumPrompts)
		o.load.NumPrompts = n
	}
	if isTrace(s.ds) && o.load.NumPrompts+o.load.NumWarmups > s.ds.Len() {
		// A trace is replayed once: past its end the arrival times would
		// start over in the past and fire at once.
		n := max(s.ds.Len()-o.load.NumWarmups, 1)
		fmt.Fprintf(env.Stderr, "goodput: the trace has %d requests: replaying %d (after %d warm-ups), not %d\n",
			s.ds.Len(), n, o.load.NumWarmups, o.load.NumPrompts)
		o.load.NumPrompts = n
	}

	// The target: a real server, or the embedded simulator.
	base := o.target.BaseURL
	if base == "" && o.target.Host != "" {
		base = fmt.Sprintf("http://%s:%d", o.target.Host, o.target.Port)
	}
	var simDesc map[string]any
	// The target as records and reports name it: no user info, no
	// credential-like query values.
	targetName := redact.URLString(base)
	if u, err := url.Parse(base); err == nil && env.secrets != nil {
		env.secrets.AddURL(u)
	}
	if base == "" {
		emb, err := startEmbedded(ctx, &o.sim, env)
		if err != nil {
			return nil, err
		}
		s.stopEmb = emb.stop
		base, simDesc, targetName = emb.url, emb.desc, "embedded-sim"
		if !o.load.numSet && o.load.Duration == 0 && !isTrace(s.ds) {
			o.load.NumPrompts = 200
		}
		fmt.Fprintf(env.Stderr, "goodput: no --base-url: benchmarking the embedded simulator (%s) at %s\n", emb.summary, base)
	}
	apiKey := ""
	if o.target.APIKeyEnv != "" && env.Getenv != nil {
		apiKey = env.Getenv(o.target.APIKeyEnv)
	}
	hdr := http.Header{}
	for k, v := range headers {
		hdr.Set(k, v)
	}
	if env.secrets != nil {
		// Never written or printed: the key, and every header value given
		// (goodput cannot tell which of them are credentials).
		env.secrets.Add(apiKey)
		env.secrets.AddHeader(hdr, true)
	}
	start := time.Now()
	s.now = func() int64 { return int64(time.Since(start)) }
	maxConns := o.load.MaxConcurrency
	if maxConns == 0 {
		maxConns = min(max(o.load.NumPrompts, 64), 16384)
	}
	if len(extra) == 0 {
		extra = nil
	}
	s.client, err = openai.NewClient(openai.Config{
		BaseURL: base, Endpoint: endpoint, Model: o.target.requestModel(), APIKey: apiKey, Headers: hdr,
		ExtraBody: extra, IgnoreEOS: o.target.IgnoreEOS, MaxTokensField: o.target.MaxTokensField, Timeout: o.target.Timeout,
		IdleTimeout: o.target.IdleTimeout, MaxConns: maxConns, Now: s.now,
		NoStream: o.target.NoStream, KeepText: o.out.SaveDetailed, Insecure: o.target.Insecure,
		FollowRedirects: o.target.FollowRedirects, MaxResponseTokens: o.target.MaxResponseTokens,
	})
	if err != nil {
		s.stopEmb()
		return nil, usageError{err}
	}
	if err := discover(ctx, s.client, &o.target, env.Stderr); err != nil {
		s.close()
		return nil, err
	}
	if o.target.Model == "" {
		// --served-model-name alone names the model in the records too.
		o.target.Model = o.target.ServedModelName
	}
	tokDesc := ""
	switch strings.ToLower(o.work.calibrate) {
	case "off":
	case "auto", "":
		if synthesizes(o.work.o) {
			cal, err := calibrate(ctx, s.client, o.work.o.Tokenizer)
			if err != nil {
				s.close()
				return nil, err
			}
			if !cal.cal.IsZero() {
				wo.Calibration = cal.cal
				if s.ds, err = workload.FromOptions(wo); err != nil {
					s.close()
					return nil, usageError{err}
				}
			}
			tokDesc = cal.describe(o.work.o.Tokenizer)
			if strings.HasPrefix(cal.method, "none") {
				fmt.Fprintf(env.Stderr, "goodput: prompt lengths not calibrated: %s\n", strings.TrimPrefix(cal.method, "none "))
			}
			n := o.load.NumPrompts + o.load.NumWarmups
			if n == 0 || o.load.Duration > 0 {
				n = s.ds.Len()
			}
			if w := contextWarning(s.ds, n, cal.contextLen, cal.contextFrom); w != "" {
				fmt.Fprintf(env.Stderr, "goodput: %s\n", w)
			}
			if cal.counter != nil {
				// The server can count: make every prompt exact, not just
				// calibrated, when the run is small enough to hold them.
				if n <= maxExactPrompts {
					ds, checked, off, err := exactPrompts(ctx, cal.counter, s.ds, n)
					if err != nil {
						s.close()
						return nil, err
					}
					s.ds = ds
					tokDesc += fmt.Sprintf("; each prompt fitted to /tokenize (%d checked, %d not exact)", checked, off)
				}
			}
		}
	default:
		s.close()
		return nil, usagef("--calibrate %q: want auto or off", o.work.calibrate)
	}
	s.tokenizerID = tokenizerID(o.work.o.Tokenizer, tokDesc, o.target.Model)
	s.prefix = o.target.RequestIDPrefix
	if s.prefix == "" {
		s.prefix = "goodput-" + runID() + "-"
	}

	stamp := env.Now().Format("20060102-150405")
	rate, _ := o.load.rate()
	load := rateLoad(rate)
	if lv, err := o.load.level(); err == nil && lv.Ramp != nil {
		load = rampLoad(lv.Ramp)
	}
	label := o.out.Label
	if label == "" {
		label = backend
	}
	s.resultPath, s.recordsPath = outputPathsLoad(env, &o.out, label, o.target.Model, o.load.MaxConcurrency, load, stamp)
	s.meta = &runlog.Meta{
		Tool: "goodput", Version: Version, Command: command, Started: env.Now().UTC(),
		Target: targetName, Backend: backend, Endpoint: endpoint, Model: o.target.Model,
		Dataset: s.ds.Name(), Seed: o.load.Seed, Tokenizer: tokDesc, Simulated: simDesc, Metadata: meta,
		NoStream: o.target.NoStream,
	}
	if lv, err := o.load.level(); err == nil {
		if isTrace(s.ds) {
			lv.Label = traceLabel(o.work.o.TraceSpeedup)
		}
		// The planned level, so a killed run's file still states its load;
		// the end line replaces it with what happened.
		s.meta.Levels = []runlog.Level{lv.runlog()}
	}
	if s.recFile, s.rw, err = openRecords(env, &o.out, &s.resultPath, &s.recordsPath, s.meta); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// levelOutcome is what one level measured.
type levelOutcome struct {
	level   runlog.Level
	summary stats.Summary
	load    loadgen.Result
}

// runLevel sends one level's requests and summarises them.
func (s *session) runLevel(ctx context.Context, idx int, lv levelSpec) (levelOutcome, error) {
	if isTrace(s.ds) && lv.Label == "" {
		lv.Label = traceLabel(s.o.work.o.TraceSpeedup)
	}
	acc := stats.NewAccumulator(s.so)
	total := lv.NumPrompts
	if total > 0 {
		total += lv.NumWarmups
	}
	prog := newProgress(s.env, s.o.out.Quiet, total, lv.Duration)
	var accMu sync.Mutex
	onRecord := func(r *runlog.Record) {
		if s.rw != nil {
			if err := s.rw.Write(r); err != nil {
				s.mu.Lock()
				if s.writeErr == nil {
					s.writeErr = err
					s.cancel(fmt.Errorf("writing records to %s: %w", s.recordsPath, err))
				}
				s.mu.Unlock()
			}
		}
		accMu.Lock()
		acc.Add(r)
		if lv.observe != nil {
			lv.observe(r)
		}
		accMu.Unlock()
		prog.observe(r)
	}
	var sched loadgen.Schedule
	switch {
	case isTrace(s.ds):
		sched = &traceSchedule{ds: s.ds, i: s.next + lv.NumWarmups}
	case lv.Ramp != nil:
		ramp, err := workload.NewRamp(lv.Ramp.strategy, lv.Ramp.start, lv.Ramp.end, lv.Burstiness, lv.NumPrompts, s.o.load.Seed+int64(idx))
		if err != nil {
			return levelOutcome{}, usageError{fmt.Errorf("--ramp-up-strategy: %w", err)}
		}
		sched = ramp
	case lv.Rate > 0:
		sched = workload.NewArrivals(lv.Rate, lv.Burstiness, s.o.load.Seed+int64(idx))
	}
	target := loadgen.TargetFunc(func(i int) (loadgen.Call, error) {
		wr := s.ds.Request(i % s.ds.Len())
		req := &openai.Request{ID: s.prefix + strconv.Itoa(i), Prompt: wr.Prompt, MaxTokens: wr.OutputTokens, PromptTokens: wr.PromptTokens}
		for _, msg := range wr.Messages {
			req.Messages = append(req.Messages, openai.Message{Role: msg.Role, Content: msg.Content})
		}
		body, err := s.client.Body(req)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context, rec *runlog.Record) {
			prog.send()
			s.client.Stream(ctx, req, body, rec)
		}, nil
	})
	prog.start(ctx)
	res, err := loadgen.Run(ctx, loadgen.Config{
		Schedule: sched, MaxConcurrency: lv.MaxConcurrency, NumPrompts: lv.NumPrompts, Precise: true,
		Duration: lv.Duration, NumWarmups: lv.NumWarmups, Level: idx, IDPrefix: s.prefix,
		FirstIndex: s.next, Now: s.now, OnRecord: onRecord,
	}, target)
	prog.stop()
	s.next += res.Sent
	if err != nil {
		return levelOutcome{}, usageError{fmt.Errorf("workload: %w", err)}
	}
	out := levelOutcome{level: lv.runlog(), summary: acc.Summary(), load: res}
	out.level.DelayedArrivals = res.Delayed
	return out, nil
}

// finish appends the end line (the levels as they ran, known only now) and
// syncs the records file.
func (s *session) finish() error {
	if s.rw == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.rw.WriteEnd(s.meta); err != nil && s.writeErr == nil {
		s.writeErr = err
	}
	if err := s.recFile.Sync(); err != nil && s.writeErr == nil {
		s.writeErr = err
	}
	return nil
}

// printFiles says where the records went.
func (s *session) printFiles() {
	if s.rw != nil {
		fmt.Fprintf(s.env.Stderr, "goodput: %d records in %s\n", s.rw.Count(), s.recordsPath)
	}
}

// err reports a records-file failure, if any.
func (s *session) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.writeErr != nil {
		return fmt.Errorf("records file %s: %w (%d records written)", s.recordsPath, s.writeErr, s.rw.Count())
	}
	return nil
}

// close releases the client, the records file and the embedded simulator.
func (s *session) close() {
	if s.client != nil {
		s.client.Close()
	}
	if s.recFile != nil {
		_ = s.recFile.Close()
	}
	s.stopEmb()
}

func isTraceName(name string) bool { return strings.EqualFold(name, "trace") }

// isFileDataset reports whether the dataset's requests are a file's rows
// (which --no-oversample sends at most once), not generated.
func isFileDataset(name string) bool {
	switch strings.ToLower(name) {
	case "custom", "sharegpt", "lengths":
		return true
	}
	return false
}

var _ loadgen.Schedule = (*workload.Ramp)(nil)

// noStreamStats fits the summary to --no-stream, where only E2E (and
// response time) is measured: the streaming metrics are dropped rather than
// reported from the one chunk a whole answer makes (TTFT would equal E2E,
// TPOT be 0). Asking for them, or for an SLO on them, is a usage error.
func noStreamStats(so *stats.Options, metricsSet bool) error {
	streaming := []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricITL, stats.MetricTTP}
	for i, limit := range []time.Duration{so.SLO.TTFT, so.SLO.TPOT, so.SLO.TTP} {
		if limit > 0 {
			return usagef("--goodput %s: --no-stream measures E2E only (use e2el)", []string{stats.MetricTTFT, stats.MetricTPOT, stats.MetricTTP}[i])
		}
	}
	ms := so.Metrics
	if ms == nil {
		ms = stats.AllMetrics
	}
	var kept []string
	for _, m := range ms {
		switch {
		case !slices.Contains(streaming, m):
			kept = append(kept, m)
		case metricsSet:
			return usagef("--percentile-metrics %s: --no-stream measures E2E only (e2el, response)", m)
		}
	}
	if len(kept) == 0 {
		kept = []string{stats.MetricE2E}
	}
	so.Metrics = kept
	return nil
}

// tokenizerID names the tokenizer the prompts were sized with, as vLLM's
// tokenizer_id: --tokenizer when given; else, when the prompts were
// calibrated to (or checked against) the server's counts, the server's own,
// named by the model as vLLM names it; else goodput's approximation.
// tokDesc is the run's tokenizer description (calibration.describe).
func tokenizerID(tok, tokDesc, model string) string {
	switch {
	case tok != "":
		return tok
	case strings.Contains(tokDesc, "calibrated with") || strings.Contains(tokDesc, "exact for the server"):
		return model
	}
	return "approx"
}

// traceLabel names a level whose arrivals come from a trace, not the rate.
func traceLabel(speedup float64) string {
	if speedup <= 0 || speedup == 1 {
		return "trace replay"
	}
	return fmt.Sprintf("trace replay ×%g", speedup)
}
