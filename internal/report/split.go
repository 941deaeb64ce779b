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
}

// TTFTSplitTerminal writes the split as lines of the server block; nothing
// for a nil split or one without requests.
func TTFTSplitTerminal(w io.Writer, s *TTFTSplit) error {
	if s == nil || s.N == 0 {
		return nil
	}
	t := &term{}
	t.header(" TTFT, split by the server's timing ", '-')
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
	return m
}
