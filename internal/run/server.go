package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/scrape"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
)

// ScrapeConfig says which metrics endpoints a wall-clock run polls while it
// measures, so the report can say what the server saw: running and waiting
// requests, KV cache usage, queue vs prefill time, cache hits, GPU power.
type ScrapeConfig struct {
	// Targets are the endpoints to poll (a DCGM exporter, a second replica).
	Targets []scrape.Target
	// Auto adds the target's own /metrics, as "server", when it answers.
	Auto bool
	// Interval is the time between scrapes (0: scrape.DefaultInterval).
	Interval time.Duration
}

// ServerWindow is what one scraped endpoint saw during one level.
type ServerWindow struct {
	Target string
	servermetrics.Window
}

// serverScrapes holds a run's scrapes as they come: parsed off the request
// path (on the scraper's goroutines) and written to the records file.
type serverScrapes struct {
	mu     sync.Mutex
	snaps  map[string][]servermetrics.Snapshot
	order  []string // targets in first-seen order
	failed map[string]string
	// crowded marks the endpoints whose series past the parse's bounds
	// were noted.
	crowded map[string]bool
	// missed counts, by target, the scrapes that brought nothing: failed,
	// skipped ticks, and probes of the server's /metrics that did not
	// answer; scrapes counts those tried.
	missed, scrapes map[string]int
	file            func(*runlog.Scrape) error
	note            func(string)
	stop            context.CancelFunc
	done            chan struct{}
	// cfg is the scrapers' configuration, for the closing scrape; auto
	// is the server's own /metrics while its probe has not answered.
	cfg       scrape.Config
	auto      string
	client    *http.Client
	closeOnce sync.Once
}

// probeWaitMetrics bounds one probe of the server's /metrics; a variable
// so that tests can shorten it.
var probeWaitMetrics = scrape.MaxDefaultTimeout

// startScrapes starts polling cfg's endpoints on the run clock now; base is
// the target's root URL. For Auto the server's /metrics is probed first,
// before the run's load, on the scrapes' own connection, which they then
// keep: a server that serves one connection per thread (llama-server)
// never gives it to the load. A probe that gets no answer (the server's
// threads busy, as while calibrating) is tried again on every interval
// during the run. It returns nil when nothing is to be scraped.
func startScrapes(ctx context.Context, cfg *ScrapeConfig, base string, now func() int64, file func(*runlog.Scrape) error,
	note func(string)) (*serverScrapes, error) {
	if cfg == nil || (len(cfg.Targets) == 0 && (!cfg.Auto || base == "")) {
		return nil, nil
	}
	sc := scrape.Config{Targets: cfg.Targets, Interval: cfg.Interval, Now: now}
	if len(sc.Targets) > 0 {
		if err := checkScrape(sc); err != nil {
			return nil, err
		}
	}
	s := &serverScrapes{snaps: map[string][]servermetrics.Snapshot{}, failed: map[string]string{}, file: file, note: note,
		missed: map[string]int{}, scrapes: map[string]int{}, done: make(chan struct{})}
	s.client = scrape.NewClient(len(cfg.Targets) + 1)
	sc.Client = s.client
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	s.stop = stop
	targets := slices.Clone(cfg.Targets)
	var url string
	if cfg.Auto && base != "" {
		url = strings.TrimSuffix(base, "/") + "/metrics"
		switch err := s.probe(sctx, url); {
		case err == nil:
			targets = append([]scrape.Target{{Name: "server", URL: url}}, targets...)
			url = ""
		case !retryable(err):
			note(fmt.Sprintf("the server's /metrics did not answer (%v): its side of the run is not scraped (--server-metrics URL to name one)", err))
			url = ""
		default:
			note(fmt.Sprintf("the server's /metrics did not answer (%v): probing it again during the run", err))
		}
	}
	iv := cfg.Interval
	if iv <= 0 {
		iv = scrape.DefaultInterval
	}
	run := sc
	run.Targets = targets
	s.cfg, s.auto = run, url
	go func() {
		defer close(s.done)
		var wg sync.WaitGroup
		if len(targets) > 0 {
			wg.Go(func() { _ = scrape.Run(sctx, run, s.add) })
		}
		if url != "" {
			wg.Go(func() { s.probeAgain(sctx, run, url, iv) })
		}
		wg.Wait()
	}()
	return s, nil
}

// probe probes the server's /metrics once on the scrapes' connection; a
// probe that fails counts as a missed scrape of "server".
func (s *serverScrapes) probe(ctx context.Context, url string) error {
	err := scrape.Probe(ctx, url, probeWaitMetrics, s.client)
	if err != nil && ctx.Err() == nil {
		s.mu.Lock()
		s.missed["server"]++
		s.scrapes["server"]++
		s.mu.Unlock()
	}
	return err
}

// retryable says a probe's failure may pass: no answer in time, or a
// connection that failed; an answer that is not metrics will not change.
func retryable(err error) bool {
	var se *scrape.StatusError
	return !errors.As(err, &se) && !errors.Is(err, scrape.ErrNotMetrics)
}

// probeAgain probes the server's /metrics every interval until it answers,
// then scrapes it with the others' configuration.
func (s *serverScrapes) probeAgain(ctx context.Context, run scrape.Config, url string, iv time.Duration) {
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := s.probe(ctx, url)
		if ctx.Err() != nil {
			return
		}
		if err != nil && retryable(err) {
			continue
		}
		if err != nil {
			s.note(fmt.Sprintf("the server's /metrics: %v: its side of the run is not scraped", err))
			s.mu.Lock()
			s.auto = ""
			s.mu.Unlock()
			return
		}
		srv := scrape.Target{Name: "server", URL: url}
		s.mu.Lock()
		s.cfg.Targets = append([]scrape.Target{srv}, s.cfg.Targets...)
		s.auto = ""
		s.mu.Unlock()
		one := run
		one.Targets = []scrape.Target{srv}
		_ = scrape.Run(ctx, one, s.add)
		return
	}
}

// checkScrape validates the scrape configuration before the run starts.
func checkScrape(sc scrape.Config) error {
	err := sc.Check()
	var ce *scrape.ConfigError
	if errors.As(err, &ce) {
		return &ConfigError{Field: "Scrape." + ce.Field, Err: err}
	}
	return nil
}

// newServerStore keeps snapshots that come from elsewhere than scrapers
// (the virtual-time engine's state), written to file as scrape lines.
func newServerStore(file func(*runlog.Scrape) error) *serverScrapes {
	s := &serverScrapes{snaps: map[string][]servermetrics.Snapshot{}, failed: map[string]string{}, file: file,
		missed: map[string]int{}, scrapes: map[string]int{}, note: func(string) {}, stop: func() {}, done: make(chan struct{})}
	close(s.done)
	s.closeOnce.Do(func() {}) // nothing to stop, nothing to scrape last
	return s
}

// addSnapshot keeps a snapshot taken at snap.TimeNS and writes its line.
func (s *serverScrapes) addSnapshot(target string, snap servermetrics.Snapshot) {
	b, err := json.Marshal(snap)
	if err != nil {
		return
	}
	s.keep(runlog.Scrape{Target: target, At: snap.TimeNS, Sample: b}, &snap)
}

// keep records one scrape: its snapshot (nil for a gap) in memory, its
// line in the records file.
func (s *serverScrapes) keep(line runlog.Scrape, snap *servermetrics.Snapshot) {
	s.mu.Lock()
	if snap != nil {
		if _, seen := s.snaps[line.Target]; !seen {
			s.order = append(s.order, line.Target)
		}
		s.snaps[line.Target] = append(s.snaps[line.Target], *snap)
	}
	s.mu.Unlock()
	if s.file != nil {
		_ = s.file(&line)
	}
}

// engineSnapshot is the simulated engine's state as its /metrics would
// say it (goodput serve exports the same figures under vLLM's names).
func engineSnapshot(at int64, e sim.Snapshot) servermetrics.Snapshot {
	return servermetrics.Snapshot{TimeNS: at, Kind: servermetrics.KindVLLM, Values: map[servermetrics.Name]float64{
		servermetrics.Running: float64(e.Running), servermetrics.Waiting: float64(e.Waiting), servermetrics.KVUsage: e.KVUsage,
		servermetrics.PrefixQueries: float64(e.PrefixQueryTokens), servermetrics.PrefixHits: float64(e.PrefixHitTokens),
		servermetrics.Preemptions: float64(e.Preemptions), servermetrics.PromptTokens: float64(e.PromptTokens),
		servermetrics.GenerationTokens: float64(e.GenerationTokens), servermetrics.RequestsFinished: float64(e.Finished),
	}}
}

// add parses one scrape and keeps it; a failed scrape is a gap, noted once
// per endpoint.
func (s *serverScrapes) add(sm scrape.Sample) {
	line := runlog.Scrape{Target: sm.Target, At: sm.At, LatencyNs: int64(sm.Latency), Skipped: sm.Skipped}
	s.mu.Lock()
	s.scrapes[sm.Target] += 1 + sm.Skipped
	s.missed[sm.Target] += sm.Skipped
	s.mu.Unlock()
	var snap servermetrics.Snapshot
	err := sm.Err
	if err == nil {
		snap, err = servermetrics.ParseBytes(sm.Body, sm.At)
	}
	if err == nil {
		line.Sample, err = json.Marshal(snap)
	}
	if err == nil {
		if snap.DroppedSeries > 0 {
			s.noteOnce(sm.Target, fmt.Sprintf("server metrics %q: %d series past the parse's bounds were counted, not parsed (it reads the families it knows and %d others a scrape)",
				sm.Target, snap.DroppedSeries, servermetrics.MaxRawSeries))
		}
		// The raw families are in the line written; the windows and charts
		// read only the mapped figures, so a long run does not hold every
		// scrape's raw series.
		snap.Raw = nil
		s.keep(line, &snap)
		return
	}
	line.Error = err.Error()
	s.mu.Lock()
	s.missed[sm.Target]++
	_, seen := s.failed[sm.Target]
	s.failed[sm.Target] = line.Error
	s.mu.Unlock()
	if !seen {
		s.note(fmt.Sprintf("server metrics %q: %v (a gap in its record, not a stall; later failures are in the records file)", sm.Target, err))
	}
	s.keep(line, nil)
}

// noteOnce says msg the first time target has a body too many series.
func (s *serverScrapes) noteOnce(target, msg string) {
	s.mu.Lock()
	if s.crowded == nil {
		s.crowded = map[string]bool{}
	}
	seen := s.crowded[target]
	s.crowded[target] = true
	s.mu.Unlock()
	if !seen {
		s.note(msg)
	}
}

// close stops the scrapers, waits for them, and scrapes once more, so the
// last level's window ends after its last request.
func (s *serverScrapes) close() {
	if s == nil {
		return
	}
	s.closeOnce.Do(func() {
		s.stop()
		<-s.done
		s.mu.Lock()
		cfg, auto := s.cfg, s.auto
		s.mu.Unlock()
		if auto != "" && s.probe(context.Background(), auto) == nil {
			// The server's threads were busy all run long: its closing
			// scrape still says what it counted.
			cfg.Targets = append([]scrape.Target{{Name: "server", URL: auto}}, cfg.Targets...)
		}
		if len(cfg.Targets) > 0 {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = scrape.Once(ctx, cfg, s.add)
			cancel()
		}
		if s.client != nil {
			s.client.CloseIdleConnections()
		}
		missed, tried := s.missedScrapes()
		for _, t := range slices.Sorted(maps.Keys(missed)) {
			if missed[t] > 0 {
				s.note(fmt.Sprintf("server metrics %q: %d of %d scrapes missed (no answer in time: gaps in its record)", t, missed[t], tried[t]))
			}
		}
	})
}

// missedScrapes is how many scrapes of each target brought nothing
// (failed, skipped, or a probe unanswered) and how many were tried.
func (s *serverScrapes) missedScrapes() (missed, tried map[string]int) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.missed), maps.Clone(s.scrapes)
}

// snapshots returns the scrapes kept, by endpoint, in first-seen order.
func (s *serverScrapes) snapshots() ([]string, map[string][]servermetrics.Snapshot) {
	if s == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string][]servermetrics.Snapshot, len(s.snaps))
	for k, v := range s.snaps {
		out[k] = append([]servermetrics.Snapshot(nil), v...)
	}
	return append([]string(nil), s.order...), out
}

// decodeScrapes turns a records file's scrape lines back into snapshots.
func decodeScrapes(lines []runlog.Scrape) ([]string, map[string][]servermetrics.Snapshot) {
	var order []string
	out := map[string][]servermetrics.Snapshot{}
	for _, l := range lines {
		if l.Error != "" || len(l.Sample) == 0 {
			continue
		}
		var s servermetrics.Snapshot
		if json.Unmarshal(l.Sample, &s) != nil {
			continue
		}
		s.TimeNS = l.At
		if _, seen := out[l.Target]; !seen {
			order = append(order, l.Target)
		}
		out[l.Target] = append(out[l.Target], s)
	}
	return order, out
}

// serverWindows is what each endpoint saw over [start, end] (ns): its
// scrapes in the span plus the last one before it and the first after, so
// that the counters' increase covers the whole span.
func serverWindows(order []string, snaps map[string][]servermetrics.Snapshot, start, end int64) []ServerWindow {
	var out []ServerWindow
	for _, t := range order {
		ss := snaps[t]
		before, after := start, end
		haveBefore, haveAfter := false, false
		for _, s := range ss {
			if s.TimeNS <= start && (!haveBefore || s.TimeNS > before) {
				before, haveBefore = s.TimeNS, true
			}
			if s.TimeNS >= end && (!haveAfter || s.TimeNS < after) {
				after, haveAfter = s.TimeNS, true
			}
		}
		w, err := servermetrics.Compute(servermetrics.Between(ss, before, after))
		if err != nil {
			continue // fewer than two scrapes: nothing to say
		}
		out = append(out, ServerWindow{Target: t, Window: w})
	}
	return out
}

// capDurations bounds the windows' duration histograms' percentiles by
// the longest request the client had in flight, and the server's TTFT by
// the longest time to a first token the client saw (ns; 0: none seen): a
// server's queue, prefill, decode or TTFT of a request is part of the
// client's wait for it, so a bucket reaching past it proves nothing past
// it.
func capDurations(ws []ServerWindow, longest, longestTTFT int64) {
	if longest <= 0 {
		return
	}
	for i := range ws {
		for n, h := range ws[i].Histograms {
			if d, ok := servermetrics.Lookup(n); ok && d.Unit == "seconds" {
				at := longest
				if n == servermetrics.TTFT && longestTTFT > 0 {
					at = min(at, longestTTFT)
				}
				ws[i].Histograms[n] = h.Capped(float64(at) / 1e9)
			}
		}
	}
}

// evidenceWindow is the window the server-evidence findings judge: the
// inference server's, with the GPUs of a separate DCGM exporter's window
// when it has none of its own; nil without an inference server's.
func evidenceWindow(ws []ServerWindow) *servermetrics.Window {
	var w *servermetrics.Window
	var gpus map[string]map[servermetrics.Name]servermetrics.GaugeStats
	for i := range ws {
		if ws[i].Kind == servermetrics.KindDCGM {
			if gpus == nil {
				gpus = ws[i].GPUs
			}
			continue
		}
		if w == nil {
			c := ws[i].Window
			w = &c
		}
	}
	if w != nil && len(w.GPUs) == 0 {
		w.GPUs = gpus
	}
	return w
}

// levelCost is a level's per-GPU and cost figures, from the analysis
// settings the run stored (nil when the run asked for none: no price and
// no GPU count given, and nothing simulated to count its GPUs).
func levelCost(meta *runlog.Meta, s *stats.Summary, ws []ServerWindow) *breakdown.LevelCost {
	if meta == nil || meta.Analysis == nil {
		return nil
	}
	a := meta.Analysis
	if a.NumGPUs <= 0 && a.GPUCostPerHour <= 0 {
		return nil
	}
	n := servingGPUs(meta)
	good := s.RequestThroughput // no SLO: every successful request counts
	if s.SLO.Set {
		good = s.SLO.Goodput
	}
	c := &breakdown.LevelCost{NumGPUs: n, GoodputPerGPU: good / float64(n), OutputPerGPU: s.OutputThroughput / float64(n),
		CostPerHour: a.GPUCostPerHour}
	if a.GPUCostPerHour > 0 && s.OutputThroughput > 0 {
		// n GPUs for an hour produce 3,600 × throughput tokens.
		c.CostPerMOutput = a.GPUCostPerHour * float64(n) / (s.OutputThroughput * 3600) * 1e6
	}
	for _, w := range ws {
		if g, ok := w.Gauges[servermetrics.GPUPowerWatts]; ok && g.N > 0 && g.Mean > 0 {
			c.PowerWatts = g.Mean
			if s.OutputThroughput > 0 {
				c.JoulesPerOutput = g.Mean / s.OutputThroughput
			}
			break
		}
	}
	return c
}

// engineHistograms are the per-request histograms a vLLM server exports
// (queue, prefill, decode, end-to-end and first-token time), built in
// virtual time from each finished request's engine timing as the engine
// would observe it, so the samples carry what a scrape would.
type engineHistograms map[servermetrics.Name]*servermetrics.HistogramBuilder

func newEngineHistograms() engineHistograms {
	h := engineHistograms{servermetrics.TTFT: servermetrics.NewHistogramBuilder(servermetrics.VLLMTTFTBuckets)}
	for _, n := range []servermetrics.Name{servermetrics.QueueTime, servermetrics.PrefillTime, servermetrics.DecodeTime, servermetrics.E2E} {
		h[n] = servermetrics.NewHistogramBuilder(servermetrics.VLLMRequestLatencyBuckets)
	}
	return h
}

// observe adds a finished request's engine timing.
func (h engineHistograms) observe(r *runlog.Record) {
	t := r.Server
	if t == nil || !r.OK() || r.Warmup {
		return
	}
	s := func(ns int64) float64 { return float64(ns) / 1e9 }
	h[servermetrics.QueueTime].Observe(s(t.QueueNs))
	h[servermetrics.PrefillTime].Observe(s(t.PrefillNs))
	h[servermetrics.DecodeTime].Observe(s(t.DecodeNs))
	h[servermetrics.TTFT].Observe(s(t.QueueNs + t.PrefillNs))
	h[servermetrics.E2E].Observe(s(t.QueueNs + t.PrefillNs + t.DecodeNs))
}

// attach gives snap the histograms as they stand.
func (h engineHistograms) attach(snap servermetrics.Snapshot) servermetrics.Snapshot {
	snap.Histograms = make(map[servermetrics.Name]servermetrics.Histogram, len(h))
	for n, b := range h {
		snap.Histograms[n] = b.Histogram()
	}
	return snap
}
