package report

import (
	"cmp"
	"encoding/json"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

// Detailed is vLLM's --save-detailed: the per-request lists of load level
// level (warm-ups left out), in send order, times in seconds as vLLM
// writes them: input_lens, output_lens (0 for a failed request), ttfts,
// itls (each request's gaps between token-carrying chunks), latencies
// (E2E, 0 for a failed request), start_times (the send, from the run's
// start where vLLM's are perf_counter readings), queue_times (send −
// intended send: the client's own wait), generated_texts (what the records
// kept, "" where nothing) and errors (the message, "" for success); plus
// rtfx, vLLM's audio real-time factor (seconds of input audio per second
// of run), written 0.0 for text. A whole answer (--no-stream) has ttft 0
// and no itls: its record measures neither. recs is not modified.
func Detailed(recs []runlog.Record, level int) map[string]any {
	var kept []*runlog.Record
	for i := range recs {
		if r := &recs[i]; !r.Warmup && r.Level == level {
			kept = append(kept, r)
		}
	}
	slices.SortStableFunc(kept, func(a, b *runlog.Record) int { return cmp.Compare(a.Sent, b.Sent) })
	n := len(kept)
	in, out := make([]int, n), make([]int, n)
	ttfts, lat, starts, queues := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	texts, errs := make([]string, n), make([]string, n)
	itls := make([][]float64, n)
	var gaps []time.Duration
	for i, r := range kept {
		in[i], errs[i], texts[i] = r.PromptTokens, r.Error, r.GeneratedText
		starts[i] = time.Duration(r.Sent).Seconds()
		queues[i] = r.SendLag().Seconds()
		if r.OK() {
			out[i] = r.OutputTokens()
			if d, ok := r.E2E(); ok {
				lat[i] = d.Seconds()
			}
		}
		if d, ok := r.TTFT(); ok {
			ttfts[i] = d.Seconds()
		}
		gaps = r.ITLs(gaps[:0])
		itls[i] = make([]float64, len(gaps))
		for j, g := range gaps {
			itls[i][j] = g.Seconds()
		}
	}
	return map[string]any{
		"input_lens": in, "output_lens": out, "ttfts": ttfts, "itls": itls, "latencies": lat,
		"start_times": starts, "queue_times": queues, "generated_texts": texts, "errors": errs,
		// A float, as vLLM writes it (0.0, not 0).
		"rtfx": json.RawMessage("0.0"),
	}
}
