package fit

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/goodput/goodput/internal/runlog"
)

// Kind says which step an Observation times.
type Kind string

// Observation kinds.
const (
	// Prefill is the queue-free prefill of one prompt: its steps, from
	// first scheduled to the first token.
	Prefill Kind = "prefill"
	// Decode is one decode-only step of a batch.
	Decode Kind = "decode"
)

// Observation is one timed step shape taken from records: a group of
// requests of one kind, batch and prompt length, with the median time.
type Observation struct {
	// Kind is Prefill or Decode.
	Kind Kind
	// Prompt is the mean prompt length of the group, tokens.
	Prompt float64
	// Cached is the mean prompt tokens served from the prefix cache
	// (prefill only), tokens.
	Cached float64
	// Batch is the sequences in each decode step (1 for a prefill).
	Batch int
	// Context is the mean KV context per decoding sequence, tokens
	// (decode only).
	Context float64
	// Seconds is the observed time: the median prefill time or the median
	// gap between tokens (one decode step), seconds.
	Seconds float64
	// Requests is how many records the group summarises.
	Requests int
	// ServerTimed says the times came from the server's own report
	// (ServerTiming), not the client's clock.
	ServerTimed bool
}

// ObserveOptions are the assumptions Observe makes where records are
// silent.
type ObserveOptions struct {
	// NetworkNs is the share of a client-measured TTFT that is network
	// and HTTP rather than engine time, ns; subtracted where the server did
	// not report its own prefill time. 0 assumes a local server.
	NetworkNs int64
}

// span is one record's intervals on the run's clock, ns.
type span struct {
	sent, first, last int64
	prompt, cached    int
	completion        int
	server            *runlog.ServerTiming
	itls              []float64  // seconds per token between chunks
	gaps              [][2]int64 // each gap's start and end, ns
}

// Observe turns records into observations. A prefill is observed only
// where the request ran alone (no other request in flight between its
// send and its first token), so its time is the engine's queue-free
// prefill; a decode step is the median gap between a request's tokens
// (robust to the few steps that also carried another request's prefill),
// with the batch the average number of requests decoding beside it.
// Records of different files must not be mixed in one call: their clocks
// differ. It returns an error when no record succeeded with a token.
func Observe(recs []runlog.Record, o ObserveOptions) ([]Observation, error) {
	var sp []span
	for i := range recs {
		r := &recs[i]
		if !r.OK() || r.Warmup || r.WholeAnswer || r.Embeddings > 0 {
			continue
		}
		first, last := -1, -1
		for j, c := range r.Chunks {
			if c.Tokens > 0 {
				if first < 0 {
					first = j
				}
				last = j
			}
		}
		if first < 0 || r.PromptTokens <= 0 {
			continue
		}
		s := span{sent: r.Sent, first: r.Chunks[first].T, last: r.Chunks[last].T, prompt: r.PromptTokens,
			cached: r.CachedTokens, completion: r.CompletionTokens, server: r.Server}
		if r.Server != nil {
			// The send stays the client's: the server's arrival is on
			// its own clock, and 0 where it does not report one
			// (llama.cpp, the simulator's records), which would make
			// every request overlap every other.
			s.cached = max(s.cached, r.Server.CachedTokens)
		}
		prev := r.Chunks[first].T
		for _, c := range r.Chunks[first+1:] {
			if c.Tokens <= 0 {
				continue
			}
			s.itls = append(s.itls, float64(c.T-prev)/1e9/float64(c.Tokens))
			s.gaps = append(s.gaps, [2]int64{prev, c.T})
			prev = c.T
		}
		sp = append(sp, s)
	}
	if len(sp) == 0 {
		return nil, fmt.Errorf("no successful streamed request with a token among %d records", len(recs))
	}
	sort.Slice(sp, func(i, j int) bool { return sp[i].sent < sp[j].sent })
	firsts := make([]int64, len(sp))
	lasts := make([]int64, len(sp))
	sents := make([]int64, len(sp))
	for i := range sp {
		firsts[i], lasts[i], sents[i] = sp[i].first, sp[i].last, sp[i].sent
	}
	slices.Sort(firsts)
	slices.Sort(lasts)
	type key struct {
		kind   Kind
		batch  int
		prompt int
	}
	type group struct {
		prompt, cached, ctx float64
		times               []float64
		n                   int
		server              bool
	}
	groups := map[key]*group{}
	var order []key
	add := func(k key, prompt, cached, ctx float64, times []float64, server bool) {
		g := groups[k]
		if g == nil {
			g = &group{server: true}
			groups[k] = g
			order = append(order, k)
		}
		g.prompt += prompt
		g.cached += cached
		g.ctx += ctx
		g.times = append(g.times, times...)
		g.n++
		g.server = g.server && server
	}
	for i := range sp {
		s := &sp[i]
		// Prefill: alone from send to first token.
		if alone(sp, i) {
			var t float64
			server := s.server != nil
			if server {
				t = float64(s.server.PrefillNs) / 1e9
			} else {
				t = float64(s.first-s.sent-o.NetworkNs) / 1e9
			}
			if t > 0 {
				add(key{Prefill, 1, bucket(s.prompt - s.cached)}, float64(s.prompt), float64(s.cached), 0, []float64{t}, server)
			}
		}
		// Decode: each gap between tokens is one step of the batch then
		// decoding; group the gaps by that batch.
		if len(s.itls) < 3 || s.last <= s.first {
			continue
		}
		byBatch := map[int][]float64{}
		ctxs := map[int]float64{}
		var bs []int
		for j, g := range s.gaps {
			// A step that may have carried another request's prefill is
			// no decode step: any prefill window [sent, first token]
			// overlapping the gap rules it out.
			if prefilling(sents, firsts, g[0], g[1]) {
				continue
			}
			b := active(firsts, lasts, (g[0]+g[1])/2)
			if byBatch[b] == nil {
				bs = append(bs, b)
			}
			byBatch[b] = append(byBatch[b], s.itls[j])
			ctxs[b] += float64(s.prompt + j + 1)
		}
		for _, b := range bs {
			ts := byBatch[b]
			if len(ts) < 3 {
				continue // too few steps at this batch for a median
			}
			add(key{Decode, b, bucket(s.prompt)}, float64(s.prompt), 0, ctxs[b]/float64(len(ts)), []float64{median(ts)}, s.server != nil)
		}
	}
	obs := make([]Observation, 0, len(order))
	for _, k := range order {
		g := groups[k]
		n := float64(g.n)
		obs = append(obs, Observation{Kind: k.kind, Prompt: g.prompt / n, Cached: g.cached / n, Batch: k.batch,
			Context: g.ctx / n, Seconds: median(g.times), Requests: g.n, ServerTimed: g.server})
	}
	slices.SortFunc(obs, func(a, b Observation) int {
		switch {
		case a.Kind != b.Kind:
			if a.Kind == Prefill {
				return -1
			}
			return 1
		case a.Batch != b.Batch:
			return a.Batch - b.Batch
		}
		return int(math.Copysign(1, a.Prompt-b.Prompt))
	})
	return obs, nil
}

// alone reports whether no other request was in flight (sent, not yet
// finished decoding) while sp[i] waited for its first token.
func alone(sp []span, i int) bool {
	s := &sp[i]
	for j := range sp {
		if j == i {
			continue
		}
		o := &sp[j]
		if o.sent >= s.first {
			break // sorted by send time: the rest start later
		}
		if o.last > s.sent {
			return false
		}
	}
	return true
}

// active counts the requests decoding at t: first token at or before t,
// last token after it (firsts and lasts sorted).
func active(firsts, lasts []int64, t int64) int {
	started, _ := slices.BinarySearch(firsts, t+1)
	ended, _ := slices.BinarySearch(lasts, t+1)
	return max(1, started-ended)
}

// prefilling reports whether some request's prefill window [sent, first
// token] overlaps (start, end): windows sent before end, less those whose
// first token came by start (sents and firsts sorted; each window's sent
// precedes its first token, so the second set is inside the first).
func prefilling(sents, firsts []int64, start, end int64) bool {
	before, _ := slices.BinarySearch(sents, end)
	done, _ := slices.BinarySearch(firsts, start+1)
	return before-done > 0
}

// bucket rounds a prompt length to two significant figures, so requests of
// nearly one length share an observation.
func bucket(n int) int {
	if n < 100 {
		return n
	}
	p := int(math.Pow(10, math.Floor(math.Log10(float64(n)))-1))
	return (n + p/2) / p * p
}

// median returns the median of xs (which it sorts), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
