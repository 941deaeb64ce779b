package watch

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Probe outcomes besides the error classes of runlog (http_429, http_5xx,
// timeout, connect, …), the value of the outcome label.
const (
	// OutcomeOK is a successful probe that met the target's SLO.
	OutcomeOK = "ok"
	// OutcomeSLOMiss is a successful probe that missed the SLO.
	OutcomeSLOMiss = "slo_miss"
	// OutcomeResolve is a probe not sent because the model could not be
	// resolved against the server (it is retried on the next probe).
	OutcomeResolve = "resolve_error"
	// OutcomePrepare is a probe whose request the backend could not build.
	OutcomePrepare = "prepare_error"
)

// Histogram buckets in seconds, for commercial APIs reached over the
// internet: TTFT from tens of milliseconds to a reasoning model's minute,
// TPOT from a fast model's few milliseconds to a stalled stream's second.
var (
	firstTokenBuckets = []float64{0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120}
	e2eBuckets        = []float64{0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300}
	tpotBuckets       = []float64{0.002, 0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1}
)

// Outcome classifies a finished probe's record under slo: its outcome
// label, whether it counts toward the SLO (rate-limited and cancelled
// probes do not) and, if it does, whether it was good.
//
// A 429 says the vendor refused us our quota, not that it served badly:
// it is counted apart (rate_limited) and spends no latency budget, so a
// burst of throttling cannot page as a latency SLA breach. A probe
// cancelled because the watch stopped says nothing about the vendor.
func Outcome(rec *runlog.Record, slo stats.SLO) (outcome string, counted, good bool) {
	switch rec.ErrorClass {
	case runlog.ErrNone:
		if slo.Met(rec) {
			return OutcomeOK, true, true
		}
		return OutcomeSLOMiss, true, false
	case runlog.ErrHTTP429, runlog.ErrCancelled:
		return string(rec.ErrorClass), false, false
	}
	return string(rec.ErrorClass), true, false
}

// Metrics is the Prometheus face of a watch: per target (labels vendor and
// model) latency histograms of successful probes, counters of probes by
// outcome, of missed probes and of rate limiting, SLO good/total counters,
// and, computed when scraped, the burn rate over each of Windows, the
// objective, the SLO's limits and the last advertised Retry-After. It is
// safe for concurrent use.
type Metrics struct {
	ttft, ttp, tpot, e2e *prometheus.HistogramVec
	probes, missed       *prometheus.CounterVec
	rateLimited          *prometheus.CounterVec
	good, total          *prometheus.CounterVec

	clock Clock

	mu      sync.Mutex
	targets []*targetState // in config order, for a stable exposition
}

// targetState is what the scrape-time collector reads of one target.
type targetState struct {
	name      string
	slo       stats.SLO
	objective float64
	budget    *Budget

	mu         sync.Mutex
	model      string
	retryAfter time.Duration // last advertised, 0 unknown
}

func (s *targetState) labels() (vendor, model string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.name, s.model
}

// modelUnknown labels a target whose model is not configured and not yet
// resolved.
const modelUnknown = "unknown"

// maxLabelLen bounds a model label in bytes.
const maxLabelLen = 128

// labelValue is a model id as a label value: valid UTF-8 (the client
// library refuses anything else) and at most maxLabelLen bytes, whatever
// a server answered.
func labelValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) > maxLabelLen {
		cut := maxLabelLen
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	return s
}

var (
	burnDesc = prometheus.NewDesc("goodput_watch_slo_burn_rate",
		"Error-budget burn rate of the probes over the window: (1 - good/total) / (1 - objective); rate-limited probes are not counted. Absent while the window holds no counted probe.",
		[]string{"vendor", "model", "window"}, nil)
	objectiveDesc = prometheus.NewDesc("goodput_watch_slo_objective_ratio",
		"The share of probes that must meet the SLO (the objective burn rates are measured against).",
		[]string{"vendor", "model"}, nil)
	limitDesc = prometheus.NewDesc("goodput_watch_slo_limit_seconds",
		"The target's SLO limit on a per-probe metric (ttft, tpot, e2el, ttp), for alerts comparing the histograms with it.",
		[]string{"vendor", "model", "metric"}, nil)
	retryDesc = prometheus.NewDesc("goodput_watch_rate_limit_retry_after_seconds",
		"The wait the vendor advertised (Retry-After, or its rate-limit reset headers) with its last 429 answer to a probe; absent until one advertised a wait.",
		[]string{"vendor", "model"}, nil)
)

// NewMetrics registers the watch metrics on reg (never the global
// registry implicitly); clock dates the burn-rate windows (nil: the system
// clock).
func NewMetrics(reg prometheus.Registerer, clock Clock) (*Metrics, error) {
	if reg == nil {
		return nil, errors.New("watch: no Registerer")
	}
	if clock == nil {
		clock = systemClock{}
	}
	labels := []string{"vendor", "model"}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
	}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, labels...), extra...))
	}
	m := &Metrics{
		ttft: hist("goodput_watch_time_to_first_token_seconds", "Probe's time from sending to the first chunk carrying a generated token (content or reasoning), successful probes.", firstTokenBuckets),
		ttp:  hist("goodput_watch_time_to_publish_seconds", "Probe's time from sending to the first chunk carrying a visible token, successful probes.", firstTokenBuckets),
		tpot: hist("goodput_watch_time_per_output_token_seconds", "Probe's (last token time - first token time) / (output tokens - 1), successful probes of two or more tokens.", tpotBuckets),
		e2e:  hist("goodput_watch_e2e_request_latency_seconds", "Probe's time from sending to its last token-carrying chunk, successful probes.", e2eBuckets),
		probes: counter("goodput_watch_probes_total",
			"Probes by outcome: ok, slo_miss, resolve_error, prepare_error, or the error class (http_429, http_5xx, timeout, connect, ...).", "outcome"),
		missed:      counter("goodput_watch_probes_missed_total", "Probes skipped because the previous probe of the target was still running when they were due, or fell within the wait a rate-limited answer asked for (Retry-After)."),
		rateLimited: counter("goodput_watch_rate_limited_total", "Probes answered 429 (rate limited): counted apart, never as server failures, and outside the SLO."),
		good:        counter("goodput_watch_slo_good_total", "Probes that met the target's SLO."),
		total:       counter("goodput_watch_slo_total", "Probes that count toward the SLO: all but rate-limited and cancelled ones."),
		clock:       clock,
	}
	for _, c := range []prometheus.Collector{m.ttft, m.ttp, m.tpot, m.e2e, m.probes, m.missed, m.rateLimited, m.good, m.total, (*scrapeCollector)(m)} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("watch: %w", err)
		}
	}
	return m, nil
}

// track adds a target to the scrape-time gauges.
func (m *Metrics) track(s *targetState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.targets = append(m.targets, s)
}

// observe counts one finished probe of s.
func (m *Metrics) observe(s *targetState, r *Result) {
	vendor, model := s.labels()
	m.probes.WithLabelValues(vendor, model, r.Outcome).Inc()
	if r.Counted {
		m.total.WithLabelValues(vendor, model).Inc()
		// The good series exists from the first counted probe, so a
		// vendor that never answered well still has a ratio to alert on.
		good := m.good.WithLabelValues(vendor, model)
		if r.Good {
			good.Inc()
		}
	}
	rec := r.Record
	if rec == nil {
		return
	}
	if rec.ErrorClass == runlog.ErrHTTP429 {
		m.rateLimited.WithLabelValues(vendor, model).Inc()
		if rec.RetryAfterNs > 0 {
			s.mu.Lock()
			s.retryAfter = time.Duration(rec.RetryAfterNs)
			s.mu.Unlock()
		}
	}
	if !rec.OK() {
		return
	}
	for _, h := range []struct {
		v   *prometheus.HistogramVec
		get func() (time.Duration, bool)
	}{{m.ttft, rec.TTFT}, {m.ttp, rec.TTP}, {m.tpot, rec.TPOT}, {m.e2e, rec.E2E}} {
		if d, ok := h.get(); ok {
			h.v.WithLabelValues(vendor, model).Observe(d.Seconds())
		}
	}
}

// scrapeCollector is Metrics's collector of the values computed when
// scraped: burn rates, objectives, SLO limits, advertised waits.
type scrapeCollector Metrics

func (c *scrapeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{burnDesc, objectiveDesc, limitDesc, retryDesc} {
		ch <- d
	}
}

func (c *scrapeCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	targets := append([]*targetState(nil), c.targets...)
	c.mu.Unlock()
	now := c.clock.Now()
	for _, s := range targets {
		vendor, model := s.labels()
		for _, w := range Windows {
			if rate, _, _, ok := s.budget.Burn(now, w.D); ok {
				ch <- prometheus.MustNewConstMetric(burnDesc, prometheus.GaugeValue, rate, vendor, model, w.Label)
			}
		}
		ch <- prometheus.MustNewConstMetric(objectiveDesc, prometheus.GaugeValue, s.objective, vendor, model)
		for _, l := range []struct {
			name string
			d    time.Duration
		}{{stats.MetricTTFT, s.slo.TTFT}, {stats.MetricTPOT, s.slo.TPOT}, {stats.MetricE2E, s.slo.E2E}, {stats.MetricTTP, s.slo.TTP}} {
			if l.d > 0 {
				ch <- prometheus.MustNewConstMetric(limitDesc, prometheus.GaugeValue, l.d.Seconds(), vendor, model, l.name)
			}
		}
		s.mu.Lock()
		ra := s.retryAfter
		s.mu.Unlock()
		if ra > 0 {
			ch <- prometheus.MustNewConstMetric(retryDesc, prometheus.GaugeValue, ra.Seconds(), vendor, model)
		}
	}
}
