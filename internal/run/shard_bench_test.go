package run

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// BenchmarkShards4x500 runs 2,000 streams at once against one simulated
// server (loopback, in this process) as one process and as 4 shards of 500
// each, merged, and reports both runs' TTFT and E2E P50/P99: the shards'
// merge must count every request and agree with the one process within
// noise. The server shares the machine with every client, so the figures
// include its CPU.
//
//	go test -run '^$' -bench Shards4x500 -benchtime 1x ./internal/run
func BenchmarkShards4x500(b *testing.B) {
	lv := runlog.Level{NumPrompts: perfgoal.Size(2000, 40), MaxConcurrency: perfgoal.Size(2000, 40), Burstiness: 1}
	for b.Loop() {
		// A server of its own for each run: one warmed by the other run's
		// prompts would serve them from its prefix cache.
		url, model := startSim(b)
		dir := b.TempDir()
		res, err := Run(context.Background(), shardRun(b, url, model, filepath.Join(dir, "whole"), lv, nil, time.Time{}))
		if err != nil {
			b.Fatal(err)
		}
		one := res.Levels[0].Summary
		url, model = startSim(b)
		paths := runShards(b, url, model, filepath.Join(dir, "shards"), lv, 4)
		meta, recs, warns := readShards(b, paths)
		if len(warns) > 0 {
			b.Errorf("merge warnings: %q", warns)
		}
		merged, err := AnalyzeRecords(meta, recs, AnalyzeOptions{})
		if err != nil {
			b.Fatal(err)
		}
		m := merged.Levels[0].Summary
		if m.Requests != one.Requests || m.Completed != one.Completed || m.OutputTokens != one.OutputTokens {
			b.Errorf("merged %d requests, %d completed, %d output tokens; one process %d, %d, %d",
				m.Requests, m.Completed, m.OutputTokens, one.Requests, one.Completed, one.OutputTokens)
		}
		for _, s := range []struct {
			name string
			sum  *stats.Summary
		}{{"one", &one}, {"merged", &m}} {
			for _, metric := range []string{stats.MetricTTFT, stats.MetricE2E} {
				for _, p := range []float64{50, 99} {
					v, _ := s.sum.MetricP(metric, p)
					b.ReportMetric(v, fmt.Sprintf("%s_%s_p%g_ms", s.name, metric, p))
				}
			}
		}
		b.ReportMetric(float64(m.Failed), "merged_failed")
	}
}

// BenchmarkStartSkew starts 4 shards with one start (--start-at) against
// one loopback server, every shard's first request due at the start itself
// (unpaced), and reports the spread of their first sends on the merged
// clock (max − min) and how long after the start the last shard's first
// request left (median and worst over the iterations): what a
// shared start costs in alignment before any clock offset between
// machines. Here the shards share one clock, so the figures are the
// processes' own wake-up error.
//
//	go test -run '^$' -bench StartSkew -benchtime 5x ./internal/run
func BenchmarkStartSkew(b *testing.B) {
	url, model := startSim(b)
	lv := runlog.Level{NumPrompts: 16, MaxConcurrency: 4, Burstiness: 1}
	var spreads, lates []float64
	for b.Loop() {
		paths := runShards(b, url, model, b.TempDir(), lv, 4)
		meta, recs, _ := readShards(b, paths)
		first := make([]int64, len(meta.Shards))
		for i, s := range meta.Shards {
			first[i] = math.MaxInt64
			for _, r := range recs[s.From:s.To] {
				first[i] = min(first[i], r.Sent)
			}
		}
		// The start itself, on the merged clock (zero: the earliest
		// shard's run start).
		start := int64(meta.Shards[0].StartAt.Sub(meta.Started))
		spreads = append(spreads, float64(slices.Max(first)-slices.Min(first))/1e6)
		lates = append(lates, float64(slices.Max(first)-start)/1e6)
	}
	slices.Sort(spreads)
	slices.Sort(lates)
	b.ReportMetric(spreads[len(spreads)/2], "spread_p50_ms")
	b.ReportMetric(spreads[len(spreads)-1], "spread_max_ms")
	b.ReportMetric(lates[len(lates)/2], "last_first_send_p50_ms")
	b.ReportMetric(lates[len(lates)-1], "last_first_send_max_ms")
}
