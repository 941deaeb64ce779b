package report

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// concat joins records files as cat does.
func concat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

func TestReadRecordsFileRefuses(t *testing.T) {
	good := recordsFile(t, handMeta(), handRecords())
	other := *handMeta()
	other.Model = "qwen-7b"
	later := *handMeta()
	later.Started = later.Started.Add(time.Hour)
	tests := []struct {
		name string
		data []byte
		o    ReadOptions
		is   error    // errors.Is target, if any
		want []string // in the error
	}{
		{"empty file", nil, ReadOptions{}, ErrNoRecords, []string{"r.jsonl: no records: the file is empty"}},
		{"blank lines", []byte("\n  \n\n"), ReadOptions{}, ErrNoRecords, []string{"r.jsonl: no records"}},
		{"only a meta line", good[:bytes.IndexByte(good, '\n')+1], ReadOptions{}, ErrNoRecords, []string{"r.jsonl: no records: only meta lines"}},
		{"100 kB of NULs", make([]byte, 100_000), ReadOptions{}, nil, []string{"r.jsonl:1:"}},
		{"NULs skipped leave nothing", make([]byte, 100_000), ReadOptions{SkipBadLines: true}, ErrNoRecords, []string{"r.jsonl: no records"}},
		{"a complete bad last line", concat(good, []byte(`{"id":5}`)), ReadOptions{}, nil, []string{"r.jsonl:7:", "bad record"}},
		{"a bad middle line", concat(good[:bytes.IndexByte(good, '\n')+1], []byte(`{"id":"x","prompt_tokens":-3}`+"\n"), good), ReadOptions{}, nil,
			[]string{"r.jsonl:2:", "prompt_tokens -3 out of range"}},
		{"concatenated runs of two models", concat(good, recordsFile(t, &other, handRecords())), ReadOptions{}, ErrSeveralRuns,
			[]string{"r.jsonl holds 2 runs", "line 7 starts another run than line 1", "model (llama-3-8b vs qwen-7b)", "--merge"}},
		{"concatenated runs of one model", concat(good, recordsFile(t, &later, handRecords())), ReadOptions{}, ErrSeveralRuns,
			[]string{"start time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadRecordsFile(bytes.NewReader(tt.data), "r.jsonl", tt.o)
			if err == nil {
				t.Fatalf("ReadRecordsFile(%s) = nil error; want one", tt.name)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("ReadRecordsFile(%s) = %v; want it to wrap %v", tt.name, err, tt.is)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ReadRecordsFile(%s) error %q lacks %q", tt.name, err, w)
				}
			}
			// ReadInput (compare's reader) refuses it too, naming the file.
			if _, _, err := ReadInput(bytes.NewReader(tt.data), "r.jsonl", tt.o); err == nil || !strings.Contains(err.Error(), "r.jsonl") {
				t.Errorf("ReadInput(%s) = %v; want an error naming r.jsonl", tt.name, err)
			}
		})
	}
}

func TestReadRecordsFileSkipAndMerge(t *testing.T) {
	good := recordsFile(t, handMeta(), handRecords())
	bad := concat(good[:bytes.IndexByte(good, '\n')+1], []byte("{\"id\":\"x\",\"chunks\":[[1,-1,1]]}\n\x00\x00\x00\n"), good[bytes.IndexByte(good, '\n')+1:])
	fs, warns, err := ReadRecordsFile(bytes.NewReader(bad), "b.jsonl", ReadOptions{SkipBadLines: true})
	if err != nil || len(fs) != 1 || len(fs[0].Records) != len(handRecords()) {
		t.Fatalf("ReadRecordsFile(skip) = %d files, %v; want 1 with %d records", len(fs), err, len(handRecords()))
	}
	all := strings.Join(warns, "\n")
	for _, w := range []string{"b.jsonl:2: skipped a bad line: ", "token count out of range", "b.jsonl:3: skipped", "skipped 2 bad line(s)"} {
		if !strings.Contains(all, w) {
			t.Errorf("warnings %q lack %q", warns, w)
		}
	}

	later := *handMeta()
	later.Started = later.Started.Add(time.Hour)
	cat := concat(good, recordsFile(t, &later, handRecords()))
	fs, warns, err = ReadRecordsFile(bytes.NewReader(cat), "all.jsonl", ReadOptions{Merge: true})
	if err != nil || len(fs) != 2 {
		t.Fatalf("ReadRecordsFile(merge) = %d runs, %v; want 2", len(fs), err)
	}
	if fs[0].Name != "all.jsonl:1" || fs[1].Name != "all.jsonl:7" || !fs[1].Meta.Started.Equal(later.Started) {
		t.Errorf("runs = %q (%v), %q (%v); want all.jsonl:1, all.jsonl:7 with their own start", fs[0].Name, fs[0].Meta.Started, fs[1].Name, fs[1].Meta.Started)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "all.jsonl holds 2 runs (starting at lines 1, 7)") {
		t.Errorf("warnings = %q; want one saying the runs were merged", warns)
	}
}

// TestMergeRunsOnTheirOwnClocks: runs far apart in time are laid end to
// end, so a level's duration is the sum of the runs' durations, not the
// decades between them; runs that overlap (shards) share the wall clock.
func TestMergeRunsOnTheirOwnClocks(t *testing.T) {
	meta := handMeta()
	// handRecords' measured requests span 0 to 1.1 s (a warm-up lies at
	// -1 s, outside every duration).
	tests := []struct {
		name     string
		offset   time.Duration // b's start after a's
		duration float64       // of the merged level, s
		laid     string        // in the warning when b is laid end to end
	}{
		{"shards, overlapping", 500 * time.Millisecond, 1.6, ""},
		{"shards, b a little after a", 2 * time.Second, 3.1, ""},
		{"a minute after", time.Minute, 61.1, ""},
		{"an hour apart", time.Hour, 2.2, "started 59m58.9s after a.jsonl's records ended"},
		{"25 years apart", 25 * 365 * 24 * time.Hour, 2.2, "started 25.0 years after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := *meta
			b.Started = meta.Started.Add(tt.offset)
			for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
				files := map[string]RecordsFile{
					"a": {Name: "a.jsonl", Meta: meta, Records: handRecords()},
					"b": {Name: "b.jsonl", Meta: &b, Records: handRecords()},
				}
				m, recs, warns, err := Merge([]RecordsFile{files[order[0]], files[order[1]]}, false)
				if err != nil {
					t.Fatal(err)
				}
				if !m.Started.Equal(meta.Started) {
					t.Errorf("merged start = %v; want the earliest, %v", m.Started, meta.Started)
				}
				ls := SummarizeLevels(m, recs, stats.Options{})
				if len(ls) != 1 || ls[0].Summary.Completed != 6 {
					t.Fatalf("SummarizeLevels = %d levels; want 1 with 6 completed", len(ls))
				}
				want := tt.duration
				if got := ls[0].Summary.DurationS; math.Abs(got-want) > 1e-9 {
					t.Errorf("%v: merged duration = %v s; want %v", order, got, want)
				}
				if tt.laid == "" && len(warns) > 0 {
					t.Errorf("%v: warnings %q; want none", order, warns)
				}
				if tt.laid != "" && (len(warns) != 1 || !strings.Contains(warns[0], tt.laid) || !strings.Contains(warns[0], "laid end to end")) {
					t.Errorf("%v: warnings %q; want one with %q", order, warns, tt.laid)
				}
			}
		})
	}
}

func TestMergeWithoutStartTimes(t *testing.T) {
	noStart := *handMeta()
	noStart.Started = time.Time{}
	m, recs, warns, err := Merge([]RecordsFile{
		{Name: "a", Meta: handMeta(), Records: handRecords()},
		{Name: "b", Meta: &noStart, Records: handRecords()},
		{Name: "c", Records: handRecords()},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	s := SummarizeLevels(m, recs, stats.Options{})[0].Summary
	// Each laid after the last: a 0–1.1 s, b 1.1–2.2 s, c 2.2–3.3 s (c
	// has no meta, so a level of its own).
	if s.Completed != 6 || math.Abs(s.DurationS-2.2) > 1e-9 {
		t.Errorf("merged a+b: %d completed over %v s; want 6 over 2.2", s.Completed, s.DurationS)
	}
	var c *runlog.Record
	for i := range recs {
		if recs[i].Level == 1 && recs[i].ID == "r1" {
			c = &recs[i]
		}
	}
	if c == nil || c.Chunks[0].T != 2300*ms {
		t.Errorf("c's r1 = %+v; want it on level 1 with its first chunk at 2.3 s", c)
	}
	if n := strings.Count(strings.Join(warns, "\n"), "has no start time"); n != 2 {
		t.Errorf("warnings %q; want two about no start time", warns)
	}
}

func TestMergeBounds(t *testing.T) {
	// Two runs, each spanning the reader's whole range: laid end to end
	// they would pass it.
	wide := []runlog.Record{{ID: "w", Sent: -runlog.MaxTimeNs, End: runlog.MaxTimeNs, Status: 200}}
	b := *handMeta()
	b.Started = b.Started.Add(time.Hour)
	_, _, _, err := Merge([]RecordsFile{{Name: "a", Meta: handMeta(), Records: wide}, {Name: "b", Meta: &b, Records: wide}}, false)
	if err == nil || !strings.Contains(err.Error(), "b: on the merged clock") {
		t.Errorf("Merge(too wide) = %v; want an error naming b", err)
	}

	// Shard counts saturate instead of wrapping.
	big := *handMeta()
	big.Levels = []runlog.Level{{RequestRate: 2, Burstiness: 1, MaxConcurrency: 4, NumPrompts: math.MaxInt, NumWarmups: math.MaxInt}}
	m, _, _, err := Merge([]RecordsFile{{Name: "a", Meta: &big, Records: handRecords()}, {Name: "b", Meta: &big, Records: handRecords()}}, false)
	if err != nil || m.Levels[0].NumPrompts != math.MaxInt || m.Levels[0].NumWarmups != math.MaxInt {
		t.Errorf("Merge(huge counts) = %+v, %v; want counts held at MaxInt", m.Levels, err)
	}
	if got := satAdd(math.MinInt, -1); got != math.MinInt {
		t.Errorf("satAdd(MinInt, -1) = %d; want MinInt", got)
	}
}

func TestSummarizeLevelsSparse(t *testing.T) {
	recs := handRecords()
	recs[2].Level = runlog.MaxLevel
	ls := SummarizeLevels(handMeta(), recs, stats.Options{})
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
				ls := SummarizeLevels(nil, tt.recs, stats.Options{})
				done <- HTML(&bytes.Buffer{}, HTMLInput{Levels: ls, Records: Records(tt.recs)})
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("HTML = %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("HTML did not return within 20 s")
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("HTML took %v; want well under a second", d)
			}
			svg, _ := timelineSVG(collect(Records(tt.recs), stats.SLO{}, 1).spans, false)
			if n := strings.Count(string(svg), `text-anchor="middle">`) - 2; n > maxTicks {
				t.Errorf("timeline has %d tick labels; want at most %d", n, maxTicks)
			}
		})
	}
}
