package report

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// reportSeeds are records files for the report fuzz targets: ordinary
// runs, a sweep, concatenated runs, values at the reader's bounds.
func reportSeeds(f *testing.F) {
	f.Helper()
	file := func(m *runlog.Meta, recs []runlog.Record) []byte {
		b, err := runlog.AppendMeta(nil, m)
		if err != nil {
			f.Fatal(err)
		}
		for i := range recs {
			b = runlog.AppendRecord(b, &recs[i])
		}
		return b
	}
	f.Add(file(handMeta(), handRecords()))
	m, recs := synthRun(40, []float64{2, 8}, true, 12)
	f.Add(file(m, recs))
	later := *handMeta()
	later.Started = later.Started.Add(30 * 365 * 24 * time.Hour)
	later.Model = "other"
	f.Add(concat(file(handMeta(), handRecords()), file(&later, handRecords())))
	f.Add([]byte(fmt.Sprintf(`{"meta":{"tool":"goodput","levels":[{"request_rate":1}]}}
{"id":"lo","level":0,"intended_ns":%d,"sent_ns":%d,"chunks":[[%d,1,1],[%d,%d,0]],"end_ns":%d,"prompt_tokens":%d,"completion_tokens":%d,"status":200,"server":{"queue_ns":%d,"prefill_ns":%d}}
{"id":"hi","level":%d,"sent_ns":%d,"chunks":[[%d,1,1]],"end_ns":%d,"status":200}
{"id":"f","sent_ns":5,"end_ns":1,"status":503,"error_class":"http_5xx","error":"x"}
`, -runlog.MaxTimeNs, -runlog.MaxTimeNs, -runlog.MaxTimeNs, runlog.MaxTimeNs, runlog.MaxTokens-1, runlog.MaxTimeNs, runlog.MaxTokens, runlog.MaxTokens,
		runlog.MaxTimeNs, -runlog.MaxTimeNs, runlog.MaxLevel, runlog.MaxTimeNs, runlog.MaxTimeNs, runlog.MaxTimeNs)))
	f.Add([]byte(`{"id":"a","sent_ns":0,"chunks":[[1,1,1],[1,1,1],[1,1,1]],"end_ns":1}` + "\n" + `{"id":"b","sent_ns":1000000000000000000,"chunks":[[1000000000000000001,1,1]],"end_ns":1000000000000000001}`))
	f.Add([]byte("{\"id\":\"x\",\"lev"))
}

// fuzzRead reads data as report does with every leniency on; ok is false
// when it holds nothing to report on.
func fuzzRead(data []byte) (*runlog.Meta, []runlog.Record, bool) {
	files, _, err := runlog.ReadRecordsFile(bytes.NewReader(data), "fuzz.jsonl", runlog.ReadOptions{SkipBadLines: true, Merge: true})
	if err != nil {
		return nil, nil, false
	}
	meta, recs, _, err := runlog.Merge(files, true)
	if err != nil {
		return nil, nil, false
	}
	return meta, recs, true
}

// fuzzOptions are summary options that exercise every part of a report:
// an SLO, buckets, the default metrics and percentiles.
func fuzzOptions(t *testing.T) stats.Options {
	slo, err := stats.ParseSLO("ttft:500 tpot:12 ttp:250 e2el:3000")
	if err != nil {
		t.Fatal(err)
	}
	return stats.Options{SLO: slo, Buckets: []int{1024, 8192}, Percentiles: []float64{50, 90, 99, 99.9}}
}

// reportDeadline is how long one fuzzed report may take: a sanity limit.
// Milliseconds are normal; a guard that failed would run for many minutes
// or until memory ran out; a loaded machine under -race is in between.
const reportDeadline = time.Minute

// FuzzHTMLReport renders the HTML report of any records the reader
// accepts: it must return, quickly, and never panic.
func FuzzHTMLReport(f *testing.F) {
	reportSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, recs, ok := fuzzRead(data)
		if !ok {
			return
		}
		start := time.Now()
		levels := breakdown.SummarizeLevels(meta, recs, fuzzOptions(t))
		var b bytes.Buffer
		if err := HTML(&b, HTMLInput{Meta: meta, Levels: levels, Records: Records(recs), SLA: "sla"}); err != nil {
			t.Fatalf("HTML = %v", err)
		}
		if d := time.Since(start); d > reportDeadline {
			t.Fatalf("HTML of %d records took %v", len(recs), d)
		}
	})
}

// FuzzTerminalReport renders the terminal report, the result JSON and the
// per-request rows of any records the reader accepts, per level as report
// does: it must return, quickly, and never panic.
func FuzzTerminalReport(f *testing.F) {
	reportSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		meta, recs, ok := fuzzRead(data)
		if !ok {
			return
		}
		start := time.Now()
		var b bytes.Buffer
		for _, l := range breakdown.SummarizeLevels(meta, recs, fuzzOptions(t)) {
			_ = LevelName(l, 2)
			if err := Terminal(&b, &l.Summary, meta, TermOptions{TTY: true}); err != nil {
				t.Fatalf("Terminal = %v", err)
			}
			if _, err := ResultJSON(&l.Summary, meta, nil); err != nil {
				t.Fatalf("ResultJSON = %v", err)
			}
		}
		if err := WritePerRequestCSV(&b, Records(recs)); err != nil {
			t.Fatalf("WritePerRequestCSV = %v", err)
		}
		if err := WritePerRequestJSONL(&b, Records(recs)); err != nil {
			t.Fatalf("WritePerRequestJSONL = %v", err)
		}
		if d := time.Since(start); d > reportDeadline {
			t.Fatalf("terminal report of %d records took %v", len(recs), d)
		}
	})
}
