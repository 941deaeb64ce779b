package run

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/workload"
)

// BenchmarkSessions10k runs 10,000 concurrent sessions (4 turns each, the
// user thinking 1–5 s between turns, sessions arriving over 5 s, so that
// nearly all are in progress at once) against an
// in-process server that answers at once, in one process. What the user
// of a session feels of the client itself is the TTFT it adds to every
// turn (the server adds none) and how late a turn goes out after its
// think time: both are reported, with the errors, which must be none.
func BenchmarkSessions10k(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok then\"}}]}\n\n"+
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" done\"},\"finish_reason\":\"stop\"}]}\n\n"+
			"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
	}))
	b.Cleanup(srv.Close)
	sessions := perfgoal.Size(10000, 20)
	think, err := workload.ParseDist("uniform:1000,5000")
	if err != nil {
		b.Fatal(err)
	}
	set, err := workload.NewConversations(workload.ConversationsConfig{NumSessions: sessions, Seed: 1, Turns: workload.Fixed(4),
		ThinkTime: think, InputLen: workload.Fixed(32), OutputLen: workload.Fixed(8)})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cfg := sessionConfig(b, srv.URL, set)
		cfg.Sessions.MaxConcurrent, cfg.Sessions.Rate = 0, 2000
		res, err := Run(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		type span struct{ from, to int64 }
		spans := map[string]span{}
		var ttft, lag []float64
		failed := 0
		for i := range res.Records {
			r := &res.Records[i]
			if !r.OK() {
				failed++
				continue
			}
			if d, ok := r.TTFT(); ok {
				ttft = append(ttft, float64(d)/float64(time.Millisecond))
			}
			lag = append(lag, float64(r.Sent-r.Intended)/float64(time.Millisecond))
			sp, seen := spans[r.SessionID]
			if !seen || r.Intended < sp.from {
				sp.from = r.Intended
			}
			sp.to = max(sp.to, r.End)
			spans[r.SessionID] = sp
		}
		if failed > 0 || len(res.Records) != 4*sessions {
			b.Fatalf("%d records, %d failed; want %d, none failed", len(res.Records), failed, 4*sessions)
		}
		slices.Sort(ttft)
		slices.Sort(lag)
		q := func(xs []float64, p float64) float64 { return xs[min(int(p*float64(len(xs))), len(xs)-1)] }
		b.ReportMetric(q(ttft, 0.5), "ttft-p50-ms")
		b.ReportMetric(q(ttft, 0.99), "ttft-p99-ms")
		b.ReportMetric(q(lag, 0.99), "send-lag-p99-ms")
		b.ReportMetric(float64(len(res.Records)), "requests")
		// The most sessions in progress at once: +1 at a start, -1 at an end.
		var edges [][2]int64
		for _, sp := range spans {
			edges = append(edges, [2]int64{sp.from, 1}, [2]int64{sp.to, -1})
		}
		slices.SortFunc(edges, func(a, b [2]int64) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		open, peak := 0, 0
		for _, e := range edges {
			open += int(e[1])
			peak = max(peak, open)
		}
		b.ReportMetric(float64(peak), "peak-sessions")
	}
}
