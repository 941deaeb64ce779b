package report

import (
	"fmt"
	"io"

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

// TTFTSplitTerminal writes the split as lines of the server block; nothing
// for a nil split or one without requests.
func TTFTSplitTerminal(w io.Writer, s *TTFTSplit) error {
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
func TTFTSplitJSON(s *TTFTSplit) map[string]any {
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
