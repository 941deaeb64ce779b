package report

import (
	"fmt"
	"io"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/stats"
)

func init() { RegisterSection("ttft_split", TTFTSplitTerminal, TTFTSplitJSON, exampleSplit) }

// exampleSplit is a TTFT split of one request, at o's percentiles.
func exampleSplit(o breakdown.Options) *breakdown.TTFTSplit {
	one := stats.SummarizeValues("x", o.Percentiles, []float64{1})
	return &breakdown.TTFTSplit{N: 1, QueueKnown: true, Client: one, Queue: one, Prefill: one, Rest: one, E2E: one, Decode: one, RestE2E: one}
}

// TTFTSplitTerminal writes the split as lines of the server block; nothing
// for a nil split or one without requests.
func TTFTSplitTerminal(w io.Writer, s *breakdown.TTFTSplit) error {
	if s == nil || s.N == 0 {
		return nil
	}
	t := &term{}
	t.header(" Split by the server's own timing ", '-')
	t.line("Requests with server timing:", fmt.Sprint(s.N))
	t.line("Client TTFT (ms) P50/P99:", p50p99(s.Client))
	if s.QueueKnown {
		t.line("Server queue (ms) P50/P99:", p50p99(s.Queue))
	}
	t.line("Server prefill (ms) P50/P99:", p50p99(s.Prefill))
	rest := "Network + HTTP + client (ms) P50/P99:"
	if !s.QueueKnown {
		rest = "Queue + network + client (ms) P50/P99:"
	}
	t.line(rest, p50p99(s.Rest))
	if s.E2E.N > 0 {
		t.line("Client E2E (ms) P50/P99:", p50p99(s.E2E))
		t.line("Server decode (ms) P50/P99:", p50p99(s.Decode))
		restE2E := "E2E outside the server (ms) P50/P99:"
		if !s.QueueKnown {
			restE2E = "E2E outside prefill+decode (ms) P50/P99:"
		}
		t.line(restE2E, p50p99(s.RestE2E))
	}
	t.b.WriteString(center("", '=') + "\n")
	_, err := w.Write(t.b.Bytes())
	return err
}

// TTFTSplitJSON is the split for the result JSON (ms distributions); nil
// without one.
func TTFTSplitJSON(s *breakdown.TTFTSplit) map[string]any {
	if s == nil || s.N == 0 {
		return nil
	}
	m := map[string]any{"requests": s.N, "client_ttft_ms": dist(s.Client), "server_prefill_ms": dist(s.Prefill), "rest_ms": dist(s.Rest)}
	if s.QueueKnown {
		m["server_queue_ms"] = dist(s.Queue)
	}
	if s.E2E.N > 0 {
		m["client_e2e_ms"], m["server_decode_ms"], m["rest_e2e_ms"] = dist(s.E2E), dist(s.Decode), dist(s.RestE2E)
	}
	return m
}
