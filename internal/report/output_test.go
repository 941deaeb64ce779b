package report

import (
	"bytes"
	"encoding/csv"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runlog/runlogtest"
	"github.com/goodput/goodput/internal/stats"
)

func handLevels(t *testing.T) []breakdown.LevelSummary {
	t.Helper()
	return []breakdown.LevelSummary{{Index: 0, Level: handMeta().Levels[0], Summary: *handSummary(t)}}
}

// TestPerRequestGolden also checks hand values: r2 (sent 60, intended 50,
// first token 260 hidden, first visible 280, last 300, 4 tokens) has TTFT
// 200, TTP 220, TPOT (300−260)/3 = 13.333, E2E 240, response 250 ms.
func TestPerRequestGolden(t *testing.T) {
	var c, j bytes.Buffer
	if err := WritePerRequestCSV(&c, Records(handRecords())); err != nil {
		t.Fatal(err)
	}
	if err := WritePerRequestJSONL(&j, Records(handRecords())); err != nil {
		t.Fatal(err)
	}
	golden(t, "requests.golden.csv", c.Bytes())
	golden(t, "requests.golden.jsonl", j.Bytes())
	for _, want := range []string{
		"r2,0,2000,4,5,200.000,220.000,13.333,240.000,250.000,200,,,,\n",
		"r3,0,10000,1,0,1000.000,1000.000,,1000.000,1000.000,200,,,,\n", // one token: no TPOT
		"r4,0,500,0,0,,,,,,500,http_5xx,,,\n",                           // not in a session: no session cells
	} {
		if !strings.Contains(c.String(), want) {
			t.Errorf("per-request CSV lacks %q:\n%s", want, c.String())
		}
	}
	// A turn of a session carries its session, turn and tool round.
	var sc bytes.Buffer
	turn := runlog.Record{ID: "t", SessionID: "chat-1", Turn: 2, ToolRound: 1, Sent: 0, End: 1e6, Status: 200}
	if err := WritePerRequestJSONL(&sc, Records([]runlog.Record{turn})); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(sc.String(), `"session_id":"chat-1","turn":2,"tool_round":1}`+"\n") {
		t.Errorf("per-request JSONL of a turn: %s", sc.String())
	}
	if !strings.HasSuffix(j.String(), `"session_id":null,"turn":null,"tool_round":null}`+"\n") {
		t.Errorf("per-request JSONL outside a session: %s", j.String())
	}
	if strings.Contains(c.String(), "\nw,") {
		t.Error("per-request CSV contains the warm-up")
	}
	if !strings.Contains(j.String(), `{"request_id":"r4","level":0,"input_tokens":500,"output_tokens":0,"cached_tokens":0,"ttft_ms":null,`) {
		t.Errorf("per-request JSONL r4 line wrong:\n%s", j.String())
	}
}

func TestSummaryCSVGolden(t *testing.T) {
	levels := handLevels(t)
	for _, tc := range []struct {
		name  string
		write func(*bytes.Buffer) error
	}{
		{"summary.golden.csv", func(b *bytes.Buffer) error { return WriteSummaryCSV(b, levels) }},
		{"metrics.golden.csv", func(b *bytes.Buffer) error { return WriteMetricsCSV(b, levels) }},
		{"buckets.golden.csv", func(b *bytes.Buffer) error { return WriteBucketsCSV(b, levels) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tc.write(&b); err != nil {
				t.Fatal(err)
			}
			golden(t, tc.name, b.Bytes())
		})
	}
	// Hand values: 1.1 s; 3/1.1 req/s; goodput 1/1.1; attainment 1/4.
	var b bytes.Buffer
	_ = WriteSummaryCSV(&b, levels)
	if want := "0,,2,1,4,4,3,1,1,1.1,2.727272727272727,"; !strings.Contains(b.String(), want) {
		t.Errorf("summary CSV lacks %q:\n%s", want, b.String())
	}
	if want := ",0.9090909090909091,0.25,ttft:500 tpot:12 ttp:250,"; !strings.Contains(b.String(), want) {
		t.Errorf("summary CSV lacks %q:\n%s", want, b.String())
	}
}

func TestWriteCSVDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	paths, err := WriteCSVDir(dir, handLevels(t), handRecords())
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != 4 {
		t.Fatalf("WriteCSVDir wrote %d files; want 4", len(paths))
	}
	got, err := os.ReadFile(filepath.Join(dir, RequestsCSVName))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(got), "\n"); n != 5 {
		t.Errorf("requests.csv has %d lines; want header + 4 requests", n)
	}
}

func recordsFile(t *testing.T, meta *runlog.Meta, recs []runlog.Record) []byte {
	return runlogtest.File(t, meta, recs)
}

func TestReadInput(t *testing.T) {
	res, err := ResultJSON(handSummary(t), handMeta(), nil)
	if err != nil {
		t.Fatal(err)
	}
	recs := recordsFile(t, handMeta(), handRecords())
	tests := []struct {
		name    string
		data    []byte
		records int
		result  bool
		wantErr string
	}{
		{"records", recs, 5, false, ""},
		{"records with a torn last line", append(append([]byte{}, recs...), `{"id":"x","lev`...), 5, false, ""},
		{"records without meta", recs[bytes.IndexByte(recs, '\n')+1:], 5, false, ""},
		{"result", res, 0, true, ""},
		{"garbage", []byte("hello"), 0, false, "neither a records file nor a result file"},
		{"bad record line", []byte("{\"id\":\"a\"}\n{\"id\":\"b\",\"level\":\"x\"}\n{\"id\":\"c\"}\n"), 0, false, "f:2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, _, err := ReadInput(bytes.NewReader(tt.data), "f", runlog.ReadOptions{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ReadInput(%s) = %v; want an error with %q", tt.name, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (in.Result != nil) != tt.result || (in.Records != nil && len(in.Records[0].Records) != tt.records) {
				t.Errorf("ReadInput(%s) = result %v, records %v; want result %v, %d records", tt.name, in.Result != nil, in.Records, tt.result, tt.records)
			}
		})
	}
}

// FuzzReadInput feeds arbitrary bytes to the records/result reader: it must
// return an error or a value, never panic.
func FuzzReadInput(f *testing.F) {
	f.Add([]byte(`{"meta":{"tool":"goodput","levels":[{}]}}` + "\n" + `{"id":"a","chunks":[[1,1,1]],"sent_ns":0}` + "\n"))
	f.Add([]byte(`{"duration": 1.5, "completed": 3, "mean_ttft_ms": 10, "p99_ttft_ms": 20}`))
	f.Add([]byte("\n\n{\"id\":\"x\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, _, err := ReadInput(bytes.NewReader(data), "fuzz", runlog.ReadOptions{SkipBadLines: true, Merge: true})
		if err != nil {
			return
		}
		if in.Records != nil {
			// ReadInput accepted it, so it is valid input: one file merges
			// (force, no second clock to reconcile) without error, and its
			// per-request CSV is written and reads back whole.
			m, recs, _, err := runlog.Merge(in.Records, true)
			if err != nil {
				t.Fatalf("Merge of input ReadInput accepted: %v", err)
			}
			breakdown.SummarizeLevels(m, recs, stats.Options{})
			var buf bytes.Buffer
			if err := WritePerRequestCSV(&buf, Records(recs)); err != nil {
				t.Fatalf("WritePerRequestCSV: %v", err)
			}
			rows, err := csv.NewReader(&buf).ReadAll()
			if err != nil {
				t.Fatalf("the per-request CSV does not read back: %v\n%s", err, buf.String())
			}
			var ids []string
			for i := range recs {
				if !recs[i].Warmup {
					ids = append(ids, recs[i].ID)
				}
			}
			if len(rows) != len(ids)+1 || !slices.Equal(rows[0], PerRequestColumns) {
				t.Fatalf("CSV of %d records read back as %d rows, header %q; want %d rows, header %q", len(ids), len(rows), rows[0], len(ids)+1, PerRequestColumns)
			}
			col := slices.Index(PerRequestColumns, "request_id")
			for i, id := range ids {
				if rows[i+1][col] != id {
					t.Errorf("row %d request_id %q; want %q", i+1, rows[i+1][col], id)
				}
			}
		}
		if in.Result != nil {
			_ = Figures(in.Result)
		}
	})
}

// compareFixture compares two synthetic runs deterministically.
func compareFixture(t *testing.T) (*compare.Comparison, []runlog.Record, []runlog.Record) {
	t.Helper()
	_, a := synthRun(300, []float64{4}, false, 30)
	_, b := synthRun(300, []float64{6}, false, 30)
	for i := range b {
		b[i].Level = 0
	}
	slo, _ := stats.ParseSLO("ttft:300 tpot:25")
	c, err := compare.Compare(compare.Run{Name: "a.jsonl", Records: a}, compare.Run{Name: "b.jsonl", Records: b}, compare.Options{SLO: slo, Resamples: 500})
	if err != nil {
		t.Fatal(err)
	}
	return c, a, b
}

func TestCompareTerminalGolden(t *testing.T) {
	c, _, _ := compareFixture(t)
	var b bytes.Buffer
	if err := CompareTerminal(&b, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare.golden", b.Bytes())
	for i, l := range strings.Split(b.String(), "\n") {
		if strings.TrimRight(l, " ") != l {
			t.Errorf("line %d %q has trailing blanks", i+1, l)
		}
	}
}

func TestCompareHTML(t *testing.T) {
	c, a, b := compareFixture(t)
	so := stats.Options{}
	var buf bytes.Buffer
	err := CompareHTML(&buf, CompareHTMLInput{Comparison: c,
		A: CompareSide{Records: a, Levels: breakdown.SummarizeLevels(nil, a, so)}, B: CompareSide{Records: b, Levels: breakdown.SummarizeLevels(nil, b, so)}})
	if err != nil {
		t.Fatal(err)
	}
	page := buf.Bytes()
	if bad := externalRefs(t, page); len(bad) > 0 {
		t.Errorf("CompareHTML references outside the file: %q", bad)
	}
	// Attainment 93.67 % → 75.67 %: −18.0 percentage points, not −19 %.
	attRow := "<td>SLO attainment</td><td>93.67 %</td><td>75.67 %</td><td>−18.0 pp</td><td>[−24.0, −12.0] pp</td>"
	for _, w := range []string{"What users feel", "CDF of TTFT: A vs B", "CDF of E2EL: A vs B", "Side by side", "goodput under ttft:300 tpot:25", c.UserView[0][:40], attRow} {
		if !bytes.Contains(page, []byte(w)) {
			t.Errorf("CompareHTML lacks %q", w)
		}
	}
	if diff := cmp.Diff(true, bytes.Count(page, []byte("<svg")) == 4); diff != "" {
		t.Errorf("CompareHTML draws %d charts; want 4", bytes.Count(page, []byte("<svg")))
	}
}
