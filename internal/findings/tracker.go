package findings

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// Thresholds of the prefill-stall rule.
const (
	// SpikeFactor: an inter-token gap is a spike when it exceeds this many
	// times its own request's median gap (and the median by 1 ms).
	SpikeFactor = 3.0
	// spikeMinExtra is how far (ns) a spike must exceed the median gap.
	spikeMinExtra = int64(time.Millisecond)
	// coincideTol is how close (ns) another request's first token must be
	// to the end of a gap to coincide with it: the iteration that ran the
	// prefill is the one that delayed the decode, and both show up at its
	// end.
	coincideTol = int64(time.Millisecond)
	// sampleCap bounds the spikes and ordinary gaps kept for the test.
	sampleCap = 4096
	// minSpikes, minSpikeShare, minCoincide and coincideOverBase: the rule
	// needs ≥ 10 spikes making ≥ 0.5 % of gaps, ≥ 50 % of them ending with
	// another request's first token, and that share ≥ 2× the share among
	// ordinary gaps.
	minSpikes        = 10
	minSpikeShare    = 0.005
	minCoincide      = 0.5
	coincideOverBase = 2.0
)

// gap is one sampled inter-token gap: (prev, end] in ns from the run start.
type gap struct{ prev, end int64 }

// sendSpan is one sampled measured request's schedule: its intended and
// actual send, its first token (its end when it had none) and its end, ns
// from the run start.
type sendSpan struct{ intended, sent, first, end int64 }

// spanCap bounds the request spans kept for the overload rule: exact up to
// that many requests, a uniform sample beyond.
const spanCap = 8192

// reservoir keeps a uniform sample of at most limit items (limit 0 means
// sampleCap).
type reservoir[T any] struct {
	limit int
	seen  int64
	items []T
}

func (r *reservoir[T]) add(x T, rng *rand.Rand) {
	limit := r.limit
	if limit == 0 {
		limit = sampleCap
	}
	r.seen++
	if len(r.items) < limit {
		r.items = append(r.items, x)
		return
	}
	if j := rng.Int64N(r.seen); j < int64(limit) {
		r.items[j] = x
	}
}

// firstsCap bounds the first-token times a Tracker keeps: 262,144, 2 MiB.
const firstsCap = 1 << 18

// slotNs is the width of the time slots a Tracker past firstsCap samples:
// far wider than coincideTol, so a gap's coincidence window touches at most
// two slots.
const slotNs = int64(100 * time.Millisecond)

// filter keeps the items keep selects, scaling seen by the share kept so
// later items still enter with the right probability.
func (r *reservoir[T]) filter(keep func(T) bool) {
	n := len(r.items)
	r.items = slices.DeleteFunc(r.items, func(x T) bool { return !keep(x) })
	if n > 0 {
		r.seen = r.seen * int64(len(r.items)) / int64(n)
	}
}

// Tracker is the compact per-request view the timing rules need, built in
// one pass over the records (in any order): the first-token times (8 bytes
// each), bounded samples of inter-token gaps, split into spikes and ordinary
// gaps, and a bounded sample of the measured requests' send schedules (8,192
// of 32 bytes). The samples are deterministic for a given record order.
//
// Memory is bounded however long the run: past firstsCap first tokens the
// Tracker keeps only the time slots (slotNs wide) that a hash of the slot
// selects, halving the selection each time the cap is reached again, and
// both first tokens and gap samples come from the selected slots only. The
// slots are chosen independently of what happens in them, so the spike
// share among sampled gaps and their coincidence with first tokens stay
// unbiased estimates; every first token near a sampled gap is kept, so the
// coincidence of a sampled gap is exact. Counts (gaps, spikes) stay exact.
type Tracker struct {
	firsts      []int64
	sorted      bool
	limit       int // firstsCap; tests lower it
	level       uint
	spikes      reservoir[gap]
	normals     reservoir[gap]
	nSpikes     int64
	nNormals    int64
	spans       reservoir[sendSpan]
	gaps        int64
	spikeMs     float64 // sum of spike lengths, ms
	normalMs    float64 // sum of ordinary gap lengths, ms
	rng         *rand.Rand
	times, gbuf []int64 // scratch: one record's token times and gaps
	sbuf        []int64 // scratch: its gaps sorted
}

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker {
	return &Tracker{rng: rand.New(rand.NewPCG(0x60047, 0x5eed)), spans: reservoir[sendSpan]{limit: spanCap}, limit: firstsCap}
}

// sampled reports whether the slot holding time ns is selected at the
// current level (every slot at level 0).
func (t *Tracker) sampled(ns int64) bool {
	if t.level == 0 {
		return true
	}
	// splitmix64's finaliser: slots adjacent in time hash apart.
	z := uint64(ns/slotNs) + 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	z ^= z >> 31
	return z&(1<<t.level-1) == 0
}

// keepFirst reports whether a first token at f may be near a sampled gap's
// end: one within coincideTol of a selected slot.
func (t *Tracker) keepFirst(f int64) bool {
	return t.sampled(f-coincideTol) || t.sampled(f+coincideTol)
}

// addFirst keeps first-token time f, raising the level (and dropping what
// the new level does not select) when the cap is reached.
func (t *Tracker) addFirst(f int64) {
	if !t.keepFirst(f) {
		return
	}
	t.firsts = append(t.firsts, f)
	t.sorted = false
	for len(t.firsts) > t.limit && t.level < 63 {
		t.level++
		t.firsts = slices.DeleteFunc(t.firsts, func(f int64) bool { return !t.keepFirst(f) })
		t.spikes.filter(func(g gap) bool { return t.sampled(g.end) })
		t.normals.filter(func(g gap) bool { return t.sampled(g.end) })
	}
}

// Add folds one record in. Every request's first token counts as a prefill
// finishing (warm-ups and failures included: their prefills stall others
// too); every measured request contributes its send schedule, and only
// successful measured requests contribute gaps. The Tracker
// keeps no reference to r.
func (t *Tracker) Add(r *runlog.Record) {
	if f := r.FirstTokenAt(); f >= 0 {
		t.addFirst(f)
	}
	if r.Warmup {
		return
	}
	first := r.FirstTokenAt()
	if first < 0 {
		first = r.End
	}
	t.spans.add(sendSpan{intended: r.Intended, sent: r.Sent, first: first, end: max(r.End, r.Sent)}, t.rng)
	if !r.OK() {
		return
	}
	t.times = t.times[:0]
	for _, c := range r.Chunks {
		if c.Tokens > 0 {
			t.times = append(t.times, c.T)
		}
	}
	if len(t.times) < 5 { // fewer than four gaps: no meaningful median
		return
	}
	t.gbuf = t.gbuf[:0]
	for i := 1; i < len(t.times); i++ {
		t.gbuf = append(t.gbuf, t.times[i]-t.times[i-1])
	}
	t.sbuf = append(t.sbuf[:0], t.gbuf...)
	slices.Sort(t.sbuf)
	med := t.sbuf[len(t.sbuf)/2]
	for i, d := range t.gbuf {
		t.gaps++
		g := gap{t.times[i], t.times[i+1]}
		spike := float64(d) > SpikeFactor*float64(med) && d-med >= spikeMinExtra
		if spike {
			t.nSpikes++
			t.spikeMs += float64(d) / 1e6
		} else {
			t.nNormals++
			t.normalMs += float64(d) / 1e6
		}
		switch {
		case !t.sampled(g.end):
		case spike:
			t.spikes.add(g, t.rng)
		default:
			t.normals.add(g, t.rng)
		}
	}
}

// sortFirsts sorts the first-token times once for the coincidence search.
func (t *Tracker) sortFirsts() {
	if !t.sorted {
		slices.Sort(t.firsts)
		t.sorted = true
	}
}

// coincideShare is the share of gs ending within coincideTol of some
// request's first token (after the gap's start).
func (t *Tracker) coincideShare(gs []gap) float64 {
	if len(gs) == 0 {
		return 0
	}
	n := 0
	for _, g := range gs {
		lo := max(g.prev+1, g.end-coincideTol)
		i, _ := slices.BinarySearch(t.firsts, lo)
		if i < len(t.firsts) && t.firsts[i] <= g.end+coincideTol {
			n++
		}
	}
	return float64(n) / float64(len(gs))
}

// prefillStalls flags inter-token gap spikes that end when another request's
// first token arrives: the iteration that ran that prefill held up the
// running decodes. Fix: chunked prefill, stall-free (Sarathi) scheduling, or
// a smaller prefill chunk.
func prefillStalls(in Input) (Finding, bool) {
	t := in.Requests
	if t == nil || t.gaps == 0 {
		return Finding{}, false
	}
	t.sortFirsts()
	nSpikes := t.nSpikes
	share := float64(nSpikes) / float64(t.gaps)
	if nSpikes < minSpikes || share < minSpikeShare {
		return Finding{}, false
	}
	co := t.coincideShare(t.spikes.items)
	base := t.coincideShare(t.normals.items)
	if co < minCoincide || co < coincideOverBase*base {
		return Finding{}, false
	}
	ev := map[string]any{
		"itl_spikes": nSpikes, "itl_gaps": t.gaps, "spike_pct": round2(100 * share),
		"spikes_at_prefill_pct": round2(100 * co), "ordinary_gaps_at_prefill_pct": round2(100 * base),
		"spike_mean_ms": round2(t.spikeMs / float64(nSpikes)),
	}
	if n := t.nNormals; n > 0 {
		ev["ordinary_gap_mean_ms"] = round2(t.normalMs / float64(n))
	}
	seen := fmt.Sprintf("%s %% of inter-token gaps are spikes (over %g× their request's median), and %s %% of those end exactly when another request's first token arrives (vs %s %% of ordinary gaps)",
		num(100*share), SpikeFactor, num(100*co), num(100*base))
	if budget, ok := chunkedPrefill(in.Meta); ok {
		// Chunking is already on: advising it would be wrong. What is left
		// is the cost of a step that carries a prefill chunk beside the
		// decodes, which only a smaller budget or disaggregation trims.
		ev["chunked_prefill"] = true
		step := ""
		if budget > 0 {
			ev["max_num_batched_tokens"] = budget
			step = fmt.Sprintf(" (up to %d tokens a step)", budget)
		}
		return Finding{ID: "prefill-stalls-decode", Severity: Info, Evidence: ev,
			Message: fmt.Sprintf("%s: the engine already chunks prefills%s, so a step that carries a prefill chunk runs longer for every decode in it. That is chunked prefill's usual cost; to smooth decoding further, lower the step budget (vLLM --max-num-batched-tokens) at some cost in TTFT, or disaggregate prefill from decode.",
				seen, step),
		}, true
	}
	return Finding{ID: "prefill-stalls-decode", Severity: Warning, Evidence: ev,
		// Whether this engine chunks is unknown here (vLLM V1 always
		// does), so the advice covers both cases.
		Message: seen + ": prefills stall running decodes. If the engine runs each prefill whole, enable chunked prefill; if it already chunks (vLLM V1 always does), lower its token budget per step (vLLM --max-num-batched-tokens, SGLang --chunked-prefill-size) at some cost in TTFT, or schedule stall-free (Sarathi-style).",
	}, true
}

// chunkedPrefill says the run's engine is known to chunk prefills (the
// simulator's description says so), with its token budget per step.
func chunkedPrefill(m *runlog.Meta) (budget int, ok bool) {
	if m == nil {
		return 0, false
	}
	if !m.Simulated.EnableChunkedPrefill {
		return 0, false
	}
	return m.Simulated.MaxNumBatchedTokens, true
}
