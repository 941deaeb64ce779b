package report

import (
	"iter"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// span is what the timeline and the over-time charts keep of a request.
type span struct {
	level               int32
	sent, first, last   int64 // ns; first and last are -1 without a token
	end                 int64
	queue, prefill      int64 // server-side ns, -1 when unknown
	ok, met, hasServer  bool
	outTokens, inTokens int32
}

// maxITLSamples bounds the inter-token gaps kept for the histogram: a
// uniform reservoir sample of them, plenty for 60 bins.
const maxITLSamples = 200_000

// chartMetrics are the per-request metrics drawn as CDFs, in page order.
var chartMetrics = []string{stats.MetricTTFT, stats.MetricTTP, stats.MetricTPOT, stats.MetricE2E}

// chartData is everything the charts need, gathered in one pass over the
// records so they can come from a file iterator.
type chartData struct {
	nLevels int
	// values[metric][level] are the metric's per-request values, ms.
	values map[string][][]float64
	itl    []float64 // reservoir of ITL gaps over all levels, ms
	itlN   int       // gaps seen
	spans  []span
	tokens timeBins // output tokens by chunk arrival
	rng    *rand.Rand
	// failSamples[level][class] are the first distinct error messages of
	// failed requests, at most maxFailSamples per class, each shortened to
	// maxFailMessage bytes.
	failSamples map[int]map[runlog.ErrorClass][]string
	// sessionRecs are deep copies of the records of sessions, for the
	// sessions section (the iterator may reuse its records).
	sessionRecs []runlog.Record
}

// maxFailSamples and maxFailMessage bound the failure samples shown.
const (
	maxFailSamples = 3
	maxFailMessage = 300
)

// addFailure keeps r's error message as a sample of its class, unless the
// class has enough or already holds the same message.
func (cd *chartData) addFailure(lvl int, r *runlog.Record) {
	msg := strings.TrimSpace(r.Error)
	if msg == "" {
		return
	}
	if len(msg) > maxFailMessage {
		cut := maxFailMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	if cd.failSamples == nil {
		cd.failSamples = map[int]map[runlog.ErrorClass][]string{}
	}
	byClass := cd.failSamples[lvl]
	if byClass == nil {
		byClass = map[runlog.ErrorClass][]string{}
		cd.failSamples[lvl] = byClass
	}
	if ss := byClass[r.ErrorClass]; len(ss) < maxFailSamples && !slices.Contains(ss, msg) {
		byClass[r.ErrorClass] = append(ss, msg)
	}
}

// timeBins counts a quantity per fixed-width bin from time 0, doubling the
// width (merging neighbours) whenever a time falls past maxTimeBins, so any
// run length fits in bounded memory.
type timeBins struct {
	width  int64 // ns
	counts []float64
}

const maxTimeBins = 4096

func (tb *timeBins) add(t int64, v float64) {
	if tb.width == 0 {
		tb.width = 10e6 // 10 ms
	}
	t = max(t, 0)
	i := t / tb.width
	for i >= maxTimeBins {
		for j := 0; j < len(tb.counts); j += 2 {
			s := tb.counts[j]
			if j+1 < len(tb.counts) {
				s += tb.counts[j+1]
			}
			tb.counts[j/2] = s
		}
		tb.counts = tb.counts[:(len(tb.counts)+1)/2]
		tb.width *= 2
		i = t / tb.width
	}
	if int(i) >= len(tb.counts) {
		tb.counts = append(tb.counts, make([]float64, int(i)+1-len(tb.counts))...)
	}
	tb.counts[i] += v
}

// collect reads every non-warm-up record once.
func collect(recs iter.Seq[*runlog.Record], slo stats.SLO, nLevels int) *chartData {
	cd := &chartData{
		nLevels: max(nLevels, 1),
		values:  map[string][][]float64{},
		rng:     rand.New(rand.NewPCG(1, 2)), // fixed: the same records draw the same chart
	}
	var gaps []int64
	for r := range recs {
		if r.Warmup {
			continue
		}
		lvl := max(r.Level, 0)
		if lvl >= cd.nLevels {
			cd.nLevels = lvl + 1
		}
		sp := span{
			level: int32(lvl), sent: r.Sent, first: r.FirstTokenAt(), last: r.LastTokenAt(),
			end: max(r.End, r.Sent), queue: -1, prefill: -1, ok: r.OK(),
			met: slo.Met(r), outTokens: int32(r.OutputTokens()), inTokens: int32(inputTokens(r)),
		}
		if s := r.Server; s != nil {
			sp.hasServer, sp.queue, sp.prefill = true, s.QueueNs, s.PrefillNs
		}
		cd.spans = append(cd.spans, sp)
		if r.SessionID != "" {
			var c runlog.Record
			r.CopyTo(&c)
			cd.sessionRecs = append(cd.sessionRecs, c)
		}
		if !r.OK() {
			cd.addFailure(lvl, r)
			continue
		}
		for _, name := range chartMetrics {
			d, ok := stats.RequestMetric(r, name)
			if !ok {
				continue
			}
			per := cd.values[name]
			for len(per) <= lvl {
				per = append(per, nil)
			}
			per[lvl] = append(per[lvl], float64(d)/1e6)
			cd.values[name] = per
		}
		prev := int64(-1)
		gaps = gaps[:0]
		for _, c := range r.Chunks {
			if c.Tokens <= 0 {
				continue
			}
			cd.tokens.add(c.T, float64(c.Tokens))
			if prev >= 0 {
				gaps = append(gaps, c.T-prev)
			}
			prev = c.T
		}
		for _, g := range gaps {
			cd.addITL(float64(g) / 1e6)
		}
	}
	for name, per := range cd.values {
		for i := range per {
			slices.Sort(per[i])
		}
		cd.values[name] = per
	}
	return cd
}

// addITL keeps a uniform sample of the gaps (Vitter's algorithm R).
func (cd *chartData) addITL(v float64) {
	cd.itlN++
	if len(cd.itl) < maxITLSamples {
		cd.itl = append(cd.itl, v)
		return
	}
	if j := cd.rng.IntN(cd.itlN); j < maxITLSamples {
		cd.itl[j] = v
	}
}

// timeRange is the first send and the last end over all spans, ns.
func (cd *chartData) timeRange() (lo, hi int64) {
	for i, s := range cd.spans {
		if i == 0 {
			lo, hi = s.sent, s.end
		}
		lo, hi = min(lo, s.sent), max(hi, s.end)
	}
	return lo, hi
}
