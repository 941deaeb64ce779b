package runlog_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

const ms = int64(time.Millisecond)

// handRecords and handMeta are the hand-made run of runlogtest.
func handRecords() []runlog.Record { return runlogtest.Records() }

func handMeta() *runlog.Meta { return runlogtest.Meta() }

func recordsFile(t *testing.T, meta *runlog.Meta, recs []runlog.Record) []byte {
	return runlogtest.File(t, meta, recs)
}

// concat joins records files as cat does.
func concat(parts ...[]byte) []byte { return runlogtest.Concat(parts...) }

// levels summarises merged records per level index, as report does: one
// summary per level of m and per level index of the records.
func levels(m *runlog.Meta, recs []runlog.Record) []stats.Summary {
	n := len(m.Levels)
	for _, r := range recs {
		n = max(n, r.Level+1)
	}
	out := make([]stats.Summary, n)
	for i := range out {
		var mine []runlog.Record
		for _, r := range recs {
			if r.Level == i {
				mine = append(mine, r)
			}
		}
		out[i] = stats.Summarize(mine, stats.Options{})
	}
	return out
}

// noFlags checks a library text names no command-line flag: the CLI adds
// those.
func noFlags(t *testing.T, what, text string) {
	t.Helper()
	if strings.Contains(text, "--") {
		t.Errorf("%s %q names a flag; only the CLI may", what, text)
	}
}

func TestReadRecordsFileRefuses(t *testing.T) {
	good := recordsFile(t, handMeta(), handRecords())
	other := *handMeta()
	other.Model = "qwen-7b"
	later := *handMeta()
	later.Started = later.Started.Add(time.Hour)
	tests := []struct {
		name string
		data []byte
		o    runlog.ReadOptions
		is   error    // errors.Is target, if any
		want []string // in the error
	}{
		{"empty file", nil, runlog.ReadOptions{}, runlog.ErrNoRecords, []string{"r.jsonl: no records: the file is empty"}},
		{"blank lines", []byte("\n  \n\n"), runlog.ReadOptions{}, runlog.ErrNoRecords, []string{"r.jsonl: no records"}},
		{"only a meta line", good[:bytes.IndexByte(good, '\n')+1], runlog.ReadOptions{}, runlog.ErrNoRecords, []string{"r.jsonl: no records: only meta lines"}},
		{"100 kB of NULs", make([]byte, 100_000), runlog.ReadOptions{}, nil, []string{"r.jsonl:1:"}},
		{"NULs skipped leave nothing", make([]byte, 100_000), runlog.ReadOptions{SkipBadLines: true}, runlog.ErrNoRecords, []string{"r.jsonl: no records"}},
		{"a complete bad last line", concat(good, []byte(`{"id":5}`)), runlog.ReadOptions{}, nil, []string{"r.jsonl:7:", "bad record"}},
		{"a bad middle line", concat(good[:bytes.IndexByte(good, '\n')+1], []byte(`{"id":"x","prompt_tokens":-3}`+"\n"), good), runlog.ReadOptions{}, nil,
			[]string{"r.jsonl:2:", "prompt_tokens -3 out of range"}},
		// The CLI adds the flag that gets past it (--merge).
		{"concatenated runs of two models", concat(good, recordsFile(t, &other, handRecords())), runlog.ReadOptions{}, runlog.ErrSeveralRuns,
			[]string{"r.jsonl holds 2 runs", "line 7 starts another run than line 1", "model (llama-3-8b vs qwen-7b)", "as when files are concatenated"}},
		{"concatenated runs of one model", concat(good, recordsFile(t, &later, handRecords())), runlog.ReadOptions{}, runlog.ErrSeveralRuns,
			[]string{"start time"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := runlog.ReadRecordsFile(bytes.NewReader(tt.data), "r.jsonl", tt.o)
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
			if tt.is != nil {
				noFlags(t, "ReadRecordsFile error", err.Error())
			}
		})
	}
}

func TestReadRecordsFileSkipAndMerge(t *testing.T) {
	good := recordsFile(t, handMeta(), handRecords())
	bad := concat(good[:bytes.IndexByte(good, '\n')+1], []byte("{\"id\":\"x\",\"chunks\":[[1,-1,1]]}\n\x00\x00\x00\n"), good[bytes.IndexByte(good, '\n')+1:])
	fs, warns, err := runlog.ReadRecordsFile(bytes.NewReader(bad), "b.jsonl", runlog.ReadOptions{SkipBadLines: true})
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
	fs, warns, err = runlog.ReadRecordsFile(bytes.NewReader(cat), "all.jsonl", runlog.ReadOptions{Merge: true})
	if err != nil || len(fs) != 2 {
		t.Fatalf("ReadRecordsFile(merge) = %d runs, %v; want 2", len(fs), err)
	}
	if fs[0].Name != "all.jsonl:1" || fs[1].Name != "all.jsonl:7" || !fs[1].Meta.Started.Equal(later.Started) {
		t.Errorf("runs = %q (%v), %q (%v); want all.jsonl:1, all.jsonl:7 with their own start", fs[0].Name, fs[0].Meta.Started, fs[1].Name, fs[1].Meta.Started)
	}
	if len(warns) != 1 || !strings.Contains(warns[0], "all.jsonl holds 2 runs (starting at lines 1, 7)") {
		t.Errorf("warnings = %q; want one saying the runs were merged", warns)
	}
	for _, w := range warns {
		noFlags(t, "ReadRecordsFile warning", w)
	}
}

func TestMerge(t *testing.T) {
	meta := handMeta()
	rate4 := *meta
	rate4.Levels = []runlog.Level{{RequestRate: 4, Burstiness: 1, NumPrompts: 4}}
	rate4.Started = meta.Started.Add(10 * time.Second)
	shard := *meta
	shard.Started = meta.Started.Add(2 * time.Second)
	otherModel := *meta
	otherModel.Model = "qwen-7b"
	otherSim := *meta
	// As a file holding only the GPU reads back.
	if err := json.Unmarshal([]byte(`{"gpu":"a100"}`), &otherSim.Simulated); err != nil {
		t.Fatal(err)
	}

	f := func(name string, m *runlog.Meta) runlog.RecordsFile {
		return runlog.RecordsFile{Name: name, Meta: m, Records: handRecords()}
	}
	t.Run("levels of a sweep", func(t *testing.T) {
		m, recs, warns, err := runlog.Merge([]runlog.RecordsFile{f("a", meta), f("b", &rate4)}, false)
		if err != nil || len(warns) > 0 {
			t.Fatalf("Merge = %v, %q", err, warns)
		}
		if len(m.Levels) != 2 || m.Levels[1].RequestRate != 4 {
			t.Errorf("merged levels = %+v; want rate 2 then rate 4", m.Levels)
		}
		// b's r1 is at level 1 and 10 s later on a's clock.
		r := recs[len(handRecords())+1]
		if r.ID != "r1" || r.Level != 1 || r.Chunks[0].T != 10100*ms {
			t.Errorf("b's r1 = level %d, first chunk %d; want level 1 at 10.1 s", r.Level, r.Chunks[0].T)
		}
		if handRecords()[1].Chunks[0].T != 100*ms {
			t.Error("Merge modified its input's chunks")
		}
		ls := levels(m, recs)
		if len(ls) != 2 || ls[0].Completed != 3 || ls[1].Completed != 3 {
			t.Errorf("levels = %d; want 2 with 3 completed each", len(ls))
		}
	})
	t.Run("does not modify its input", func(t *testing.T) {
		in := handRecords()
		in[1].Server = &runlog.ServerTiming{ArrivalNs: 5 * ms, QueueNs: 7}
		_, recs, _, err := runlog.Merge([]runlog.RecordsFile{f("a", meta), {Name: "b", Meta: &rate4, Records: in}}, false)
		if err != nil {
			t.Fatal(err)
		}
		if in[1].Chunks[0].T != 100*ms || in[1].Server.ArrivalNs != 5*ms || in[1].Sent != 0 {
			t.Errorf("b's r1 after Merge = %+v (server %+v); want it unchanged", in[1], in[1].Server)
		}
		if got := recs[len(handRecords())+1].Server; got == nil || got == in[1].Server || got.ArrivalNs != 10005*ms || got.QueueNs != 7 {
			t.Errorf("merged r1's server = %+v; want its own copy at 10.005 s", got)
		}
	})
	t.Run("shards", func(t *testing.T) {
		m, recs, _, err := runlog.Merge([]runlog.RecordsFile{f("a", meta), f("b", &shard)}, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(m.Levels) != 1 || m.Levels[0].NumPrompts != 8 || m.Levels[0].NumWarmups != 2 {
			t.Errorf("merged levels = %+v; want one level of 8 prompts, 2 warm-ups", m.Levels)
		}
		s := stats.Summarize(recs, stats.Options{})
		// a: 0–1.1 s; b: 2–3.1 s on a's clock → 3.1 s, 6 completed.
		if s.Completed != 6 || s.DurationS != 3.1 {
			t.Errorf("merged shards: %d completed over %v s; want 6 over 3.1", s.Completed, s.DurationS)
		}
	})
	for _, tc := range []struct {
		name, field string
		m           *runlog.Meta
	}{{"model", "model (llama-3-8b vs qwen-7b)", &otherModel}, {"simulated", "simulated.gpu (none vs a100)", &otherSim}} {
		t.Run("refuses different "+tc.name, func(t *testing.T) {
			_, _, _, err := runlog.Merge([]runlog.RecordsFile{f("a.jsonl", meta), f("b.jsonl", tc.m)}, false)
			if !errors.Is(err, runlog.ErrIncompatible) {
				t.Fatalf("Merge = %v; want ErrIncompatible", err)
			}
			// The CLI adds the flag that gets past it (--force).
			for _, w := range []string{"a.jsonl", "b.jsonl", tc.field} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Merge error %q lacks %q", err, w)
				}
			}
			noFlags(t, "Merge error", err.Error())
			_, recs, warns, err := runlog.Merge([]runlog.RecordsFile{f("a.jsonl", meta), f("b.jsonl", tc.m)}, true)
			if err != nil || len(recs) != 10 || len(warns) != 1 {
				t.Fatalf("Merge(force) = %v, %d records, warnings %q; want nil, 10, one warning", err, len(recs), warns)
			}
			if !strings.HasSuffix(warns[0], tc.field+": merged anyway, as forced") {
				t.Errorf("Merge(force) warning %q; want it to end %q", warns[0], tc.field+": merged anyway, as forced")
			}
			noFlags(t, "Merge warning", warns[0])
		})
	}
	t.Run("one file keeps its levels", func(t *testing.T) {
		mm := *meta
		mm.Levels = append(mm.Levels, runlog.Level{RequestRate: 8})
		m, recs, _, err := runlog.Merge([]runlog.RecordsFile{f("a", &mm)}, false)
		if err != nil || len(m.Levels) != 2 || len(recs) != 5 {
			t.Errorf("Merge(one file) = %v, %d levels, %d records; want 2 levels, 5 records", err, len(m.Levels), len(recs))
		}
	})
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
				files := map[string]runlog.RecordsFile{
					"a": {Name: "a.jsonl", Meta: meta, Records: handRecords()},
					"b": {Name: "b.jsonl", Meta: &b, Records: handRecords()},
				}
				m, recs, warns, err := runlog.Merge([]runlog.RecordsFile{files[order[0]], files[order[1]]}, false)
				if err != nil {
					t.Fatal(err)
				}
				if !m.Started.Equal(meta.Started) {
					t.Errorf("merged start = %v; want the earliest, %v", m.Started, meta.Started)
				}
				ls := levels(m, recs)
				if len(ls) != 1 || ls[0].Completed != 6 {
					t.Fatalf("levels = %d; want 1 with 6 completed", len(ls))
				}
				want := tt.duration
				if got := ls[0].DurationS; math.Abs(got-want) > 1e-9 {
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
	m, recs, warns, err := runlog.Merge([]runlog.RecordsFile{
		{Name: "a", Meta: handMeta(), Records: handRecords()},
		{Name: "b", Meta: &noStart, Records: handRecords()},
		{Name: "c", Records: handRecords()},
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	s := levels(m, recs)[0]
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
	_, _, _, err := runlog.Merge([]runlog.RecordsFile{{Name: "a", Meta: handMeta(), Records: wide}, {Name: "b", Meta: &b, Records: wide}}, false)
	if err == nil || !strings.Contains(err.Error(), "b: on the merged clock") {
		t.Errorf("Merge(too wide) = %v; want an error naming b", err)
	}

	// Shard counts saturate instead of wrapping.
	big := *handMeta()
	big.Levels = []runlog.Level{{RequestRate: 2, Burstiness: 1, MaxConcurrency: 4, NumPrompts: math.MaxInt, NumWarmups: math.MaxInt}}
	m, _, _, err := runlog.Merge([]runlog.RecordsFile{{Name: "a", Meta: &big, Records: handRecords()}, {Name: "b", Meta: &big, Records: handRecords()}}, false)
	if err != nil || m.Levels[0].NumPrompts != math.MaxInt || m.Levels[0].NumWarmups != math.MaxInt {
		t.Errorf("Merge(huge counts) = %+v, %v; want counts held at MaxInt", m.Levels, err)
	}
}
