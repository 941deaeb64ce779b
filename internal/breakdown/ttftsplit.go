package breakdown

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// TTFTSplit is a level's client-observed TTFT split by the server's own
// per-request timing (vLLM's per-request metrics, llama.cpp's timings, the
// simulator's truth): the server's queue and prefill, and the rest —
// network, HTTP and the client. All in ms over the N requests that carried
// the timing.
type TTFTSplit struct {
	N int
	// QueueKnown says the server reported its queue (llama.cpp does not:
	// Queue is then empty and Rest includes it).
	QueueKnown                   bool
	Client, Queue, Prefill, Rest stats.MetricSummary
	// E2E is the client's end-to-end latency of the same requests, Decode
	// the server's decode time, RestE2E E2E minus the server's queue,
	// prefill and decode: what the network and the client added to the
	// whole answer (and the queue, when !QueueKnown).
	E2E, Decode, RestE2E stats.MetricSummary
}

// Rank is the split's place among a level's breakdowns.
func (*TTFTSplit) Rank() int { return RankTTFTSplit }

func init() {
	Register(func(o Options) Accumulator { return NewTTFTSplitter(o.Percentiles) })
}

// TTFTSplitter collects a level's TTFTs against the server's own timing,
// in bounded memory (stats.Values).
type TTFTSplitter struct {
	client, queue, prefill, rest stats.Values
	e2e, decode, restE2E         stats.Values
	queueUnknown                 bool
	percentiles                  []float64
}

// NewTTFTSplitter starts a split summarised at percentiles ps.
func NewTTFTSplitter(ps []float64) *TTFTSplitter {
	return &TTFTSplitter{percentiles: ps}
}

// Add counts r if it was measured, succeeded and carries the server's
// prefill time.
func (s *TTFTSplitter) Add(r *runlog.Record) {
	if r.Warmup || !r.OK() {
		return
	}
	d, ok := r.TTFT()
	if !ok || r.Server == nil || r.Server.PrefillNs <= 0 {
		return
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	server := r.Server.PrefillNs
	if r.Server.QueueUnknown {
		s.queueUnknown = true
	} else {
		server += r.Server.QueueNs
		s.queue.Add(ms(r.Server.QueueNs))
	}
	s.client.Add(ms(int64(d)))
	s.prefill.Add(ms(r.Server.PrefillNs))
	s.rest.Add(ms(int64(d) - server))
	// A server that reports no queue (llama.cpp) still times its decode:
	// the E2E lines then count the queue outside the server, as the TTFT
	// line does.
	if e, ok := r.E2E(); ok && r.Server.DecodeNs > 0 {
		s.e2e.Add(ms(int64(e)))
		s.decode.Add(ms(r.Server.DecodeNs))
		s.restE2E.Add(ms(int64(e) - server - r.Server.DecodeNs))
	}
}

// Summary is the split (nil without timed requests).
func (s *TTFTSplitter) Summary() *TTFTSplit {
	if s.client.Len() == 0 {
		return nil
	}
	ps := s.percentiles
	out := &TTFTSplit{N: s.client.Len(), QueueKnown: !s.queueUnknown,
		Client:  s.client.Summarize(stats.MetricTTFT, ps),
		Prefill: s.prefill.Summarize("server_prefill", ps),
		Rest:    s.rest.Summarize("rest", ps)}
	if out.QueueKnown {
		out.Queue = s.queue.Summarize("server_queue", ps)
	}
	if s.e2e.Len() > 0 {
		out.E2E = s.e2e.Summarize(stats.MetricE2E, ps)
		out.Decode = s.decode.Summarize("server_decode", ps)
		out.RestE2E = s.restE2E.Summarize("rest_e2e", ps)
	}
	return out
}

// Breakdown is Summary as a Breakdown (nil without timed requests).
func (s *TTFTSplitter) Breakdown() Breakdown {
	if out := s.Summary(); out != nil {
		return out
	}
	return nil
}
