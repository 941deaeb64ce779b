package runlog_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
)

// whole is the load the shard files below split: 9 requests at 3 req/s,
// a cap of 5.
var whole = runlog.Level{RequestRate: 3, Burstiness: 1, MaxConcurrency: 5, NumPrompts: 9}

// shardFile is shard i of n of whole, as its records file reads back: its
// share of the 9 requests (global index k to shard k mod n), its meta line
// and, when ended, its end line; cpu and delayed are what it measured.
func shardFile(t *testing.T, i, n int, ended bool, cpu float64, delayed int) runlog.RecordsFile {
	t.Helper()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	m := &runlog.Meta{Tool: "goodput", Command: "bench", Started: start.Add(time.Duration(i) * time.Millisecond), Target: "http://t",
		Backend: "openai", Endpoint: "/v1/completions", Model: "m", Seed: 1, Levels: []runlog.Level{whole},
		Shard: &runlog.Shard{Index: i, Count: n, Run: "abc", StartAt: start.Add(time.Second), Requests: runlog.ShareOf(9, i, n),
			Clock: &runlog.ClockOffset{OffsetNs: int64(i) * ms, ErrorNs: 20 * ms, Source: "http-date", Samples: 20}}}
	var recs []runlog.Record
	for k := i; k < 9; k += n {
		at := int64(time.Second) + int64(k)*333*ms - int64(i)*ms // the global schedule on this shard's clock
		recs = append(recs, runlog.Record{ID: fmt.Sprintf("goodput-abc-%d", k), Intended: at, Sent: at + ms,
			Chunks: []runlog.Chunk{{T: at + 20*ms, Tokens: 1, Visible: true}, {T: at + 30*ms, Tokens: 1, Visible: true}},
			End:    at + 31*ms, PromptTokens: 10, CompletionTokens: 2, Status: 200})
	}
	var b bytes.Buffer
	w := runlog.NewWriter(&b)
	if err := w.WriteMeta(m); err != nil {
		t.Fatal(err)
	}
	for k := range recs {
		if err := w.Write(&recs[k]); err != nil {
			t.Fatal(err)
		}
	}
	if ended {
		part := whole
		part.NumPrompts, part.MaxConcurrency, part.RequestRate = runlog.ShareOf(9, i, n), runlog.ShareOf(5, i, n), 3/float64(n)
		part.ClientCPU, part.DelayedArrivals = cpu, delayed
		part.Shard = &runlog.LevelShard{Whole: whole, Sent: len(recs)}
		end := *m
		end.Levels = []runlog.Level{part}
		if err := w.WriteEnd(&end); err != nil {
			t.Fatal(err)
		}
	}
	name := fmt.Sprintf("shard-%d.jsonl", i)
	fs, _, err := runlog.ReadRecordsFile(&b, name, runlog.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return fs[0]
}

// The shards' files merge into the whole run: the whole level (its rate,
// cap and count, not the shares'), delayed arrivals added, the busiest
// shard's CPU, one clock on which the global schedule lines up, and a
// summary per shard.
func TestMergeShards(t *testing.T) {
	files := []runlog.RecordsFile{shardFile(t, 1, 3, true, 0.2, 1), shardFile(t, 0, 3, true, 0.9, 2), shardFile(t, 2, 3, true, 0.1, 0)}
	m, recs, warns, err := runlog.Merge(files, false)
	if err != nil || len(warns) > 0 {
		t.Fatalf("Merge = %v, warnings %q; want neither", err, warns)
	}
	want := whole
	want.ClientCPU, want.DelayedArrivals = 0.9, 3
	if d := cmp.Diff([]runlog.Level{want}, m.Levels); d != "" {
		t.Errorf("merged levels (-want +got):\n%s", d)
	}
	if m.Shard != nil || len(m.Shards) != 3 {
		t.Fatalf("merged meta: shard %+v, %d shard summaries; want none, 3", m.Shard, len(m.Shards))
	}
	if len(recs) != 9 {
		t.Fatalf("%d records; want 9", len(recs))
	}
	// Global index k was intended at 1 s + k × 333 ms after the earliest
	// shard's start, whichever shard sent it.
	for _, r := range recs {
		var k int
		fmt.Sscanf(r.ID, "goodput-abc-%d", &k)
		if want := int64(time.Second) + int64(k)*333*ms; r.Intended != want {
			t.Errorf("%s intended at %d on the merged clock; want %d", r.ID, r.Intended, want)
		}
	}
	for i, s := range m.Shards {
		if s.Index != i || !s.Ended || s.Missing || s.Expected != 3 || s.Sent != 3 || s.Records != 3 || s.Short != 0 || s.Clock == nil {
			t.Errorf("shard %d summary %+v; want ended, 3 of 3", i, s)
		}
		for _, r := range recs[s.From:s.To] {
			var k int
			fmt.Sscanf(r.ID, "goodput-abc-%d", &k)
			if k%3 != i {
				t.Errorf("shard %d's records [%d:%d] hold %s", i, s.From, s.To, r.ID)
			}
		}
	}
}

// The merge names every shard that is missing, cut short or lost records,
// and says by how much.
func TestMergeShardsShort(t *testing.T) {
	died := shardFile(t, 1, 3, false, 0, 0)
	died.Records = died.Records[:1] // killed after one of its three
	m, recs, warns, err := runlog.Merge([]runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), died}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Errorf("%d records; want 3 + 1", len(recs))
	}
	joined := strings.Join(warns, "\n")
	for _, want := range []string{
		"shard-1.jsonl (shard 1 of 3) has no end line", "2 of the 3 requests its share held are not (66.7 % short)",
		"shard 2 of 3 is missing",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("warnings %q: nothing says %q", warns, want)
		}
		noFlags(t, "Merge warning", joined)
	}
	got := m.Shards[1]
	if got.Ended || got.Records != 1 || got.Short != 2 || got.Sent != -1 {
		t.Errorf("shard 1 summary %+v; want not ended, 1 record, 2 short, sent unknown", got)
	}
	if !m.Shards[2].Missing {
		t.Errorf("shard 2 summary %+v; want missing", m.Shards[2])
	}
	// A shard that lost a record it sent (a torn last line) is named too.
	lost := shardFile(t, 2, 3, true, 0, 0)
	lost.Records = lost.Records[:2]
	_, _, warns, _ = runlog.Merge([]runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), shardFile(t, 1, 3, true, 0, 0), lost}, false)
	if len(warns) != 1 || !strings.Contains(warns[0], "sent 3 requests but holds 2 records: 1 lost") {
		t.Errorf("warnings %q; want one naming shard 2's lost record", warns)
	}
}

// Files that are not shards of one run are refused unless forced.
func TestMergeShardsRefused(t *testing.T) {
	other := shardFile(t, 1, 2, true, 0, 0)
	otherRun := shardFile(t, 1, 3, true, 0, 0)
	otherRun.Meta.Shard.Run = "xyz"
	plain := shardFile(t, 1, 3, true, 0, 0)
	plain.Meta.Shard = nil
	for _, tc := range []struct {
		name  string
		files []runlog.RecordsFile
		want  string
	}{
		{"counts differ", []runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), other}, "one of 3 shards"},
		{"runs differ", []runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), otherRun}, "different runs (run abc vs xyz)"},
		{"a shard twice", []runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), shardFile(t, 0, 3, true, 0, 0)}, "both shard 0 of 3"},
		{"not a shard", []runlog.RecordsFile{shardFile(t, 0, 3, true, 0, 0), plain}, "is not a shard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := runlog.Merge(tc.files, false)
			if !errors.Is(err, runlog.ErrIncompatible) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Merge = %v; want ErrIncompatible saying %q", err, tc.want)
			}
			if _, _, warns, err := runlog.Merge(tc.files, true); err != nil || !slices.ContainsFunc(warns, func(w string) bool { return strings.Contains(w, tc.want) }) {
				t.Errorf("Merge(force) = %v, %q; want a warning saying %q", err, warns, tc.want)
			}
		})
	}
}

// A shard's file with no record (it died before any finished) is read, so
// the merge can say the shard is short by its whole share.
func TestReadEmptyShard(t *testing.T) {
	f := shardFile(t, 1, 2, false, 0, 0)
	var b bytes.Buffer
	if err := runlog.NewWriter(&b).WriteMeta(f.Meta); err != nil {
		t.Fatal(err)
	}
	fs, warns, err := runlog.ReadRecordsFile(&b, "empty.jsonl", runlog.ReadOptions{})
	if err != nil || len(fs) != 1 || len(fs[0].Records) != 0 || len(warns) != 1 {
		t.Fatalf("ReadRecordsFile = %d files, %q, %v; want the shard's empty file with a warning", len(fs), warns, err)
	}
	m, _, warns, err := runlog.Merge([]runlog.RecordsFile{shardFile(t, 0, 2, true, 0, 0), fs[0]}, false)
	if err != nil || m.Shards[1].Short != 4 || !strings.Contains(strings.Join(warns, "\n"), "4 of the 4 requests") {
		t.Errorf("Merge = %v, shard 1 %+v, %q; want shard 1 short by its 4", err, m.Shards[1], warns)
	}
	// A file that is no shard's and has no record is still an error.
	var e bytes.Buffer
	plain := *f.Meta
	plain.Shard = nil
	_ = runlog.NewWriter(&e).WriteMeta(&plain)
	if _, _, err := runlog.ReadRecordsFile(&e, "e.jsonl", runlog.ReadOptions{}); !errors.Is(err, runlog.ErrNoRecords) {
		t.Errorf("ReadRecordsFile(no records, no shard) = %v; want ErrNoRecords", err)
	}
}

// ShareOf deals n items round-robin: the shares add up to n and differ by
// at most one, the first shards taking the extra ones.
func TestShareOf(t *testing.T) {
	for n := range 30 {
		for count := 1; count < 9; count++ {
			sum, prev := 0, n
			for i := range count {
				s := runlog.ShareOf(n, i, count)
				if s > prev || prev-s > 1 && i > 0 {
					t.Errorf("ShareOf(%d, %d, %d) = %d after %d; want non-increasing shares within one", n, i, count, s, prev)
				}
				sum, prev = sum+s, s
			}
			if sum != n {
				t.Errorf("ShareOf(%d, ·, %d) adds up to %d; want %d", n, count, sum, n)
			}
		}
	}
	if got := runlog.ShareOf(5, 3, 3); got != 0 {
		t.Errorf("ShareOf(5, 3, 3) = %d; want 0 for an index outside the count", got)
	}
}
