package promexport

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Label values used when a request's own value may not become a label.
const (
	// ModelOther labels models beyond the allow-list or the size cap.
	ModelOther = "other"
	// ModelUnknown labels requests whose body named no model (or could not
	// be read).
	ModelUnknown = "unknown"
)

// DefaultMaxModels is how many distinct model names get their own label
// when MetricsOptions gives no allow-list.
const DefaultMaxModels = 10

// maxModelLen bounds a model label's length in bytes.
const maxModelLen = 128

// Classic histogram buckets (the native histogram needs none).
var (
	// requestBuckets (seconds) cover TTFT, TTP and E2E: 1 ms to 10 min.
	requestBuckets = []float64{
		0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
		2.5, 5, 10, 25, 50, 100, 250, 600,
	}
	// tokenGapBuckets (seconds) cover ITL and TPOT: 1 ms to 5 s.
	tokenGapBuckets = []float64{
		0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03, 0.04, 0.05,
		0.075, 0.1, 0.15, 0.2, 0.3, 0.5, 1, 2.5, 5,
	}
	// tokenCountBuckets (tokens) are powers of two up to 128K.
	tokenCountBuckets = prometheus.ExponentialBuckets(1, 2, 18)
)

// MetricsOptions configures Metrics. Only Registerer is required.
type MetricsOptions struct {
	// Registerer receives the metrics. The global registry is never used
	// implicitly; pass it explicitly if that is what you want.
	Registerer prometheus.Registerer
	// Models is the allow-list of model names that get their own label;
	// others are labelled "other". Empty means: the first MaxModels
	// distinct names seen.
	Models []string
	// MaxModels caps distinct model labels when Models is empty; 0 means
	// DefaultMaxModels.
	MaxModels int
	// Buckets are the input-length bucket edges in tokens (as stats
	// Options.Buckets); nil means stats.DefaultBuckets, empty means one
	// bucket labelled "all".
	Buckets []int
	// SLO, when set, enables the SLO counters and the sliding-window
	// attainment and goodput gauges.
	SLO stats.SLO
	// Model and Route label records given to Observe (bench's one model
	// and endpoint path); ObserveLabeled takes them per record instead.
	Model, Route string
	// Now is the monotonic clock in ns that places observations in the
	// sliding windows; nil means time since NewMetrics.
	Now func() int64
}

// Metrics turns finished requests (runlog.Records) into Prometheus series:
// latency and length histograms (classic and native buckets), request,
// token and failure counters, and SLO attainment and goodput over sliding
// 1 m and 5 m windows. Labels come only from small fixed sets: model
// (allow-listed or capped), route, input-length bucket, status class, and
// error class. Observing a record costs a map lookup under a read lock and
// one atomic add per sample; nothing is buffered.
//
// Metrics is safe for concurrent use.
type Metrics struct {
	slo      stats.SLO
	edges    []int
	bnames   []string
	models   modelSet
	defModel string
	defRoute string
	now      func() int64

	ttft, ttp, itl, tpot, e2e, inTok, outTok *prometheus.HistogramVec
	requests, met                            *prometheus.CounterVec
	failures                                 *prometheus.CounterVec
	inTokTotal, outTokTotal, cachedTotal     *prometheus.CounterVec

	mu     sync.RWMutex
	series map[seriesKey]*seriesSet

	win *windows // nil without an SLO
}

// seriesKey identifies one label combination.
type seriesKey struct {
	model, route string
	bucket       int
}

// seriesSet caches the observers of one label combination, so observing a
// record does not hash label values once per metric.
type seriesSet struct {
	ttft, ttp, itl, tpot, e2e, inTok, outTok prometheus.Observer
	met                                      prometheus.Counter
	inTotal, outTotal, cachedTotal           prometheus.Counter
}

// NewMetrics registers the metrics on o.Registerer.
func NewMetrics(o MetricsOptions) (*Metrics, error) {
	if o.Registerer == nil {
		return nil, errors.New("promexport: no Registerer")
	}
	edges := o.Buckets
	if edges == nil {
		edges = stats.DefaultBuckets
	}
	edges = slices.Clone(edges)
	slices.Sort(edges)
	m := &Metrics{
		slo:      o.SLO,
		edges:    edges,
		bnames:   bucketNames(edges),
		defModel: o.Model,
		defRoute: o.Route,
		now:      o.Now,
		series:   map[seriesKey]*seriesSet{},
	}
	if m.defRoute == "" {
		m.defRoute = RouteOther
	}
	m.models.init(o.Models, o.MaxModels)
	if m.now == nil {
		start := time.Now()
		m.now = func() int64 { return int64(time.Since(start)) }
	}
	lat := []string{"model", "route", "input_bucket"}
	hist := func(name, help string, buckets []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "goodput", Name: name, Help: help, Buckets: buckets,
			NativeHistogramBucketFactor:     1.1,
			NativeHistogramMaxBucketNumber:  160,
			NativeHistogramMinResetDuration: time.Hour,
		}, lat)
	}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "goodput", Name: name, Help: help}, labels)
	}
	m.ttft = hist("time_to_first_token_seconds", "Time from sending a request to the first chunk carrying a generated token (content or reasoning), successful streamed requests.", requestBuckets)
	m.ttp = hist("time_to_publish_seconds", "Time from sending a request to the first chunk carrying a visible token, successful streamed requests.", requestBuckets)
	m.itl = hist("inter_token_latency_seconds", "Gaps between consecutive token-carrying chunks, successful streamed requests.", tokenGapBuckets)
	m.tpot = hist("time_per_output_token_seconds", "Per request (last token time - first token time) / (output tokens - 1), successful requests of two or more tokens.", tokenGapBuckets)
	m.e2e = hist("e2e_request_latency_seconds", "Time from sending a request to its last token-carrying chunk, successful streamed requests.", requestBuckets)
	m.inTok = hist("request_input_tokens", "Prompt length of successful streamed requests in tokens (server usage, else estimated).", tokenCountBuckets)
	m.outTok = hist("request_output_tokens", "Generated tokens of successful streamed requests (server usage, else counted chunks).", tokenCountBuckets)
	m.requests = counter("requests_total", "Finished streamed completion requests by upstream status class (none: no response).", "model", "route", "input_bucket", "status_class")
	m.failures = counter("request_failures_total", "Failed streamed completion requests by error class.", "model", "route", "class")
	m.inTokTotal = counter("input_tokens_total", "Prompt tokens of successful streamed requests.", "model", "route")
	m.outTokTotal = counter("output_tokens_total", "Generated tokens of successful streamed requests.", "model", "route")
	m.cachedTotal = counter("cached_input_tokens_total", "Prompt tokens served from the server's prefix cache, successful streamed requests.", "model", "route")
	cs := []prometheus.Collector{m.ttft, m.ttp, m.itl, m.tpot, m.e2e, m.inTok, m.outTok,
		m.requests, m.failures, m.inTokTotal, m.outTokTotal, m.cachedTotal}
	if !o.SLO.IsZero() {
		m.met = counter("slo_met_requests_total", "Finished streamed requests that met every --goodput constraint.", "model", "route", "input_bucket")
		m.win = newWindows(o.SLO, m.now)
		cs = append(cs, m.met, m.win)
	}
	for _, c := range cs {
		if err := o.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("promexport: %w", err)
		}
	}
	return m, nil
}

// Observe records one finished request under the model and route given in
// MetricsOptions. Warm-up records are ignored.
func (m *Metrics) Observe(rec *runlog.Record) {
	m.ObserveLabeled(rec, m.defModel, m.defRoute)
}

// ObserveLabeled records one finished request under model (passed through
// the allow-list or size cap) and route (one of the Route constants; any
// other value is labelled "other"). Warm-up records are ignored.
func (m *Metrics) ObserveLabeled(rec *runlog.Record, model, route string) {
	m.observe(rec, model, route, false)
}

// ObserveUnstreamed records one finished request whose answer was not
// streamed, under model and route as ObserveLabeled does. Its one chunk is
// the whole body, so it counts (requests, E2E, tokens, SLO) but gives no
// TTFT, TTP, TPOT or ITL sample, which would only say how long the whole
// answer took. Warm-up records are ignored.
func (m *Metrics) ObserveUnstreamed(rec *runlog.Record, model, route string) {
	m.observe(rec, model, route, true)
}

// observe is ObserveLabeled; whole marks the record of a non-streamed
// answer (see ObserveUnstreamed).
func (m *Metrics) observe(rec *runlog.Record, model, route string, whole bool) {
	if rec.Warmup {
		return
	}
	switch route {
	case RouteChat, RouteCompletions:
	default:
		route = RouteOther
	}
	key := seriesKey{model: m.models.label(model), route: route, bucket: m.bucketOf(promptLen(rec))}
	bucket := m.bnames[key.bucket]
	m.requests.WithLabelValues(key.model, route, bucket, StatusClass(rec.Status)).Inc()
	good := false
	if rec.OK() {
		s := m.seriesFor(key)
		observe(s.e2e, rec.E2E)
		if !whole {
			observe(s.ttft, rec.TTFT)
			observe(s.ttp, rec.TTP)
			observe(s.tpot, rec.TPOT)
			prev := int64(-1)
			for _, c := range rec.Chunks {
				if c.Tokens <= 0 {
					continue
				}
				if prev >= 0 {
					s.itl.Observe(float64(c.T-prev) / 1e9)
				}
				prev = c.T
			}
		}
		in, out := promptLen(rec), rec.OutputTokens()
		s.inTok.Observe(float64(in))
		s.outTok.Observe(float64(out))
		s.inTotal.Add(float64(in))
		s.outTotal.Add(float64(out))
		s.cachedTotal.Add(float64(rec.CachedTokens))
		if m.win != nil && m.slo.Met(rec) {
			good = true
			s.met.Inc()
		}
	} else {
		m.failures.WithLabelValues(key.model, route, string(rec.ErrorClass)).Inc()
	}
	if m.win != nil {
		m.win.add(m.now(), good)
	}
}

// seriesFor returns the cached observers of key, creating them once.
func (m *Metrics) seriesFor(k seriesKey) *seriesSet {
	m.mu.RLock()
	s := m.series[k]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.series[k]; s != nil {
		return s
	}
	lv := []string{k.model, k.route, m.bnames[k.bucket]}
	s = &seriesSet{
		ttft: m.ttft.WithLabelValues(lv...), ttp: m.ttp.WithLabelValues(lv...),
		itl: m.itl.WithLabelValues(lv...), tpot: m.tpot.WithLabelValues(lv...),
		e2e: m.e2e.WithLabelValues(lv...), inTok: m.inTok.WithLabelValues(lv...),
		outTok:      m.outTok.WithLabelValues(lv...),
		inTotal:     m.inTokTotal.WithLabelValues(k.model, k.route),
		outTotal:    m.outTokTotal.WithLabelValues(k.model, k.route),
		cachedTotal: m.cachedTotal.WithLabelValues(k.model, k.route),
	}
	if m.met != nil {
		s.met = m.met.WithLabelValues(lv...)
	}
	m.series[k] = s
	return s
}

func observe(o prometheus.Observer, f func() (time.Duration, bool)) {
	if d, ok := f(); ok {
		o.Observe(d.Seconds())
	}
}

// bucketOf returns the index of the input-length bucket holding n tokens:
// bucket i holds edges[i-1] ≤ n < edges[i], as stats buckets do.
func (m *Metrics) bucketOf(n int) int {
	i, found := slices.BinarySearch(m.edges, n)
	if found {
		i++
	}
	return i
}

// promptLen is the input length a record was sent with, as stats counts
// it: the server's count when known, else what was asked for.
func promptLen(r *runlog.Record) int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.RequestedPromptTokens
}

// bucketNames labels the buckets cut by ascending edges as stats does; no
// edges means one bucket, "all".
func bucketNames(edges []int) []string {
	if len(edges) == 0 {
		return []string{"all"}
	}
	return stats.BucketLabels(edges)
}

// StatusClass labels an HTTP status by its class ("2xx", "4xx", …);
// "none" when no response arrived (code 0) or the code is out of range.
func StatusClass(code int) string {
	switch {
	case code >= 100 && code < 200:
		return "1xx"
	case code < 300 && code >= 200:
		return "2xx"
	case code < 400 && code >= 300:
		return "3xx"
	case code < 500 && code >= 400:
		return "4xx"
	case code < 600 && code >= 500:
		return "5xx"
	}
	return "none"
}

// modelSet maps request model names onto a bounded set of labels.
type modelSet struct {
	mu    sync.RWMutex
	known map[string]bool
	fixed bool // an allow-list: never admit more
	max   int
}

func (s *modelSet) init(allow []string, max int) {
	s.known = map[string]bool{}
	for _, a := range allow {
		if validModel(a) {
			s.known[a] = true
		}
	}
	s.fixed = len(allow) > 0
	s.max = max
	if s.max <= 0 {
		s.max = DefaultMaxModels
	}
}

// label returns name when it may be a label value, else "other" (or
// "unknown" for no name).
func (s *modelSet) label(name string) string {
	if name == "" {
		return ModelUnknown
	}
	s.mu.RLock()
	ok, full := s.known[name], s.fixed || len(s.known) >= s.max
	s.mu.RUnlock()
	if ok {
		return name
	}
	if full || !validModel(name) {
		return ModelOther
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.known[name] {
		return name
	}
	if len(s.known) >= s.max {
		return ModelOther
	}
	s.known[name] = true
	return name
}

// validModel accepts printable UTF-8 names of reasonable length, so a
// client cannot put control bytes or a paragraph into a label.
func validModel(name string) bool {
	if name == "" || len(name) > maxModelLen || !utf8.ValidString(name) ||
		name == ModelOther || name == ModelUnknown {
		return false
	}
	for _, r := range name {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// MetricsHandler serves g in the Prometheus exposition formats (protobuf,
// which carries native histograms, when the scraper asks for it; text
// otherwise).
func MetricsHandler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
