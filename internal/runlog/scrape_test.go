package runlog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Scrape lines go between the records and come back with the run, the
// sample as written; a bad one is a bad line like a bad record.
func TestScrapeRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	if err := w.WriteMeta(&Meta{Tool: "goodput", Command: "bench", Started: time.Unix(1700000000, 0).UTC()}); err != nil {
		t.Fatal(err)
	}
	sample := json.RawMessage(`{"kind":"vllm","values":{"running":3}}`)
	for _, err := range []error{
		w.WriteScrape(&Scrape{Target: "server", At: 0, LatencyNs: 2e6, Sample: sample}),
		w.Write(&Record{ID: "a", Sent: 1, End: 2, Status: 200}),
		w.WriteScrape(&Scrape{Target: "server", At: 1e9, Skipped: 1, Error: "timeout"}),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	files, warns, err := ReadRecordsFile(bytes.NewReader(buf.Bytes()), "r.jsonl", ReadOptions{})
	if err != nil || len(warns) > 0 {
		t.Fatalf("read: %v %v", err, warns)
	}
	f := files[0]
	if len(f.Records) != 1 || len(f.Scrapes) != 2 {
		t.Fatalf("%d records, %d scrapes; want 1 and 2", len(f.Records), len(f.Scrapes))
	}
	if s := f.Scrapes[0]; s.Target != "server" || s.LatencyNs != 2e6 || string(s.Sample) != string(sample) {
		t.Errorf("scrape 0 = %+v", s)
	}
	if s := f.Scrapes[1]; s.At != 1e9 || s.Skipped != 1 || s.Error != "timeout" || s.Sample != nil {
		t.Errorf("scrape 1 = %+v", s)
	}
	for _, bad := range []string{`{"scrape":{}}`, `{"scrape":null}`, `{"scrape":{"target":"s","at_ns":-1e300}}`, `{"scrape":{"target":"s","latency_ns":-5}}`} {
		in := buf.String() + bad + "\n" + `{"id":"b","sent_ns":1,"end_ns":2,"status":200}` + "\n"
		_, _, err := ReadRecordsFile(strings.NewReader(in), "r.jsonl", ReadOptions{})
		if err == nil || !strings.Contains(err.Error(), "r.jsonl:5: bad scrape line") {
			t.Errorf("%s: error %v; want r.jsonl:5: bad scrape line", bad, err)
		}
	}
}

// Scrapes merge onto the records' clock: the second file, started 10 s
// after the first, has its records and its scrapes shifted by 10 s alike,
// and its server named apart.
func TestMergeScrapes(t *testing.T) {
	t0 := time.Unix(1700000000, 0).UTC()
	mk := func(start time.Time, id string) RecordsFile {
		return RecordsFile{Name: id, Meta: &Meta{Tool: "goodput", Command: "bench", Started: start, Levels: []Level{{MaxConcurrency: 1}}},
			Records: []Record{{ID: id, Sent: 1e9, End: 2e9, Status: 200}},
			Scrapes: []Scrape{{Target: "server", At: 1e9}}}
	}
	files := []RecordsFile{mk(t0, "a"), mk(t0.Add(10*time.Second), "b")}
	_, recs, _, err := Merge(files, false)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := MergeScrapes(files)
	if err != nil {
		t.Fatal(err)
	}
	if len(sc) != 2 || sc[0].Target != "server" || sc[1].Target != "server#2" {
		t.Fatalf("merged scrapes %+v", sc)
	}
	if shift := recs[1].Sent - files[1].Records[0].Sent; sc[1].At-files[1].Scrapes[0].At != shift || shift != 10e9 {
		t.Errorf("scrape shifted by %d, records by %d; want both 10 s", sc[1].At-files[1].Scrapes[0].At, shift)
	}
	if one, _ := MergeScrapes(files[:1]); len(one) != 1 || one[0].At != 1e9 {
		t.Errorf("one file's scrapes %+v; want as they are", one)
	}
}
