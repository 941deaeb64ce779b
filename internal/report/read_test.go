package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

// concat joins records files as cat does.
func concat(parts ...[]byte) []byte { return runlogtest.Concat(parts...) }

// TestReadInputRefuses: ReadInput (compare's reader) refuses what
// runlog.ReadRecordsFile refuses, naming the file.
func TestReadInputRefuses(t *testing.T) {
	good := recordsFile(t, handMeta(), handRecords())
	other := *handMeta()
	other.Model = "qwen-7b"
	later := *handMeta()
	later.Started = later.Started.Add(time.Hour)
	tests := []struct {
		name string
		data []byte
		o    runlog.ReadOptions
		is   error // errors.Is target, if any
	}{
		{"empty file", nil, runlog.ReadOptions{}, runlog.ErrNoRecords},
		{"blank lines", []byte("\n  \n\n"), runlog.ReadOptions{}, runlog.ErrNoRecords},
		{"only a meta line", good[:bytes.IndexByte(good, '\n')+1], runlog.ReadOptions{}, runlog.ErrNoRecords},
		{"100 kB of NULs", make([]byte, 100_000), runlog.ReadOptions{}, nil},
		{"NULs skipped leave nothing", make([]byte, 100_000), runlog.ReadOptions{SkipBadLines: true}, nil},
		{"a complete bad last line", concat(good, []byte(`{"id":5}`)), runlog.ReadOptions{}, nil},
		{"a bad middle line", concat(good[:bytes.IndexByte(good, '\n')+1], []byte(`{"id":"x","prompt_tokens":-3}`+"\n"), good), runlog.ReadOptions{}, nil},
		{"concatenated runs of two models", concat(good, recordsFile(t, &other, handRecords())), runlog.ReadOptions{}, runlog.ErrSeveralRuns},
		{"concatenated runs of one model", concat(good, recordsFile(t, &later, handRecords())), runlog.ReadOptions{}, runlog.ErrSeveralRuns},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadInput(bytes.NewReader(tt.data), "r.jsonl", tt.o)
			if err == nil || !strings.Contains(err.Error(), "r.jsonl") {
				t.Errorf("ReadInput(%s) = %v; want an error naming r.jsonl", tt.name, err)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("ReadInput(%s) = %v; want it to wrap %v", tt.name, err, tt.is)
			}
		})
	}
}

func TestSummarizeLevelsSparse(t *testing.T) {
	recs := handRecords()
	recs[2].Level = runlog.MaxLevel
	ls := breakdown.SummarizeLevels(handMeta(), recs, stats.Options{})
	var idx []int
	for _, l := range ls {
		idx = append(idx, l.Index)
	}
	if fmt.Sprint(idx) != fmt.Sprint([]int{0, runlog.MaxLevel}) {
		t.Errorf("SummarizeLevels(levels 0 and %d) = levels %v; want just those two", runlog.MaxLevel, idx)
	}
	if ls[1].Summary.Completed != 1 || ls[1].Summary.Level != runlog.MaxLevel {
		t.Errorf("level %d: %+v", runlog.MaxLevel, ls[1].Summary)
	}
}

func TestAxisTicks(t *testing.T) {
	tests := []struct {
		name   string
		lo, hi float64
		min    int // at least this many ticks
	}{
		{"seconds", 0, 10, 5},
		{"one value", 3, 3, 1},
		{"huge", -9.2e9, 9.2e9, 3},
		{"tiny span at a large value", 1e18, 1e18 + 1, 0}, // the step is below float64's precision there
		{"NaN", math.NaN(), 1, 0},
		{"Inf", 0, math.Inf(1), 0},
		{"reversed", 5, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := axisTicks(tt.lo, tt.hi, 8)
			if len(got) < tt.min || len(got) > maxTicks {
				t.Errorf("axisTicks(%g, %g) = %d ticks; want %d to %d", tt.lo, tt.hi, len(got), tt.min, maxTicks)
			}
		})
	}
}

// TestHTMLExtremeSpans renders records whose time span does not fit an
// int64 (as no file can give since the reader checks, but a caller can):
// every axis is computed in float64 and the page comes back at once, where
// the timeline's tick loop used to run until memory ran out.
func TestHTMLExtremeSpans(t *testing.T) {
	tests := []struct {
		name string
		recs []runlog.Record
	}{
		{"span past 2^63", []runlog.Record{
			{ID: "a", Sent: math.MinInt64 + 1, End: math.MinInt64 + 10, Status: 200},
			{ID: "b", Sent: math.MaxInt64 - 10, End: math.MaxInt64, Status: 200,
				Chunks: []runlog.Chunk{{T: math.MaxInt64 - 5, Tokens: 1, Visible: true}, {T: math.MaxInt64 - 1, Tokens: 2, Visible: true}}},
		}},
		{"one ns at 2^60", []runlog.Record{
			{ID: "a", Sent: 1 << 60, End: 1<<60 + 1, Status: 200, Chunks: []runlog.Chunk{{T: 1<<60 + 1, Tokens: 1, Visible: true}}},
		}},
		{"server timing at the extremes", []runlog.Record{
			{ID: "a", Sent: 0, End: math.MaxInt64, Status: 200, Chunks: []runlog.Chunk{{T: 5, Tokens: 1}, {T: math.MaxInt64, Tokens: 1, Visible: true}},
				Server: &runlog.ServerTiming{QueueNs: math.MinInt64, PrefillNs: math.MinInt64, DecodeNs: math.MaxInt64}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan error, 1)
			start := time.Now()
			go func() {
				ls := breakdown.SummarizeLevels(nil, tt.recs, stats.Options{})
				done <- HTML(&bytes.Buffer{}, HTMLInput{Levels: ls, Records: Records(tt.recs)})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("HTML = %v", err)
				}
			case <-time.After(time.Minute):
				// A sanity limit: a tick guard that failed would run for
				// far longer; how fast HTML is, is BenchmarkHTML100k's.
				t.Fatalf("HTML did not return within a minute (%v)", time.Since(start))
			}
			svg, _ := timelineSVG(collect(Records(tt.recs), stats.SLO{}, 1).spans, false)
			if n := strings.Count(string(svg), `text-anchor="middle">`) - 2; n > maxTicks {
				t.Errorf("timeline has %d tick labels; want at most %d", n, maxTicks)
			}
		})
	}
}
