package runlog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func sampleRecords() []Record {
	return []Record{
		*chatRecord(),
		{
			ID: "err-1", Level: 2, Warmup: true, Intended: 5, Sent: 7, ConnectNs: 3, End: 9,
			Status: 500, ErrorClass: ErrHTTP5xx, Error: "boom \"quoted\"\nnext\x01 \xff bad utf8 \u2028",
			TokenSource: TokensCounted, UsageRejected: "completion_tokens 1e12 far above the 3 streamed", RequestedPromptTokens: 10, MaxTokens: 20,
			Chunks: []Chunk{},
		},
		{
			ID: "sim-1", Sent: 1, End: 2, PromptTokens: 100, CompletionTokens: 3, ReasoningTokens: 1,
			CachedTokens: 64, TokenSource: TokensUsage, Status: 200, FinishReason: "length",
			Chunks: []Chunk{{T: 1, Tokens: 1}, {T: 2, Tokens: 2, Visible: true}},
			Server: &ServerTiming{ArrivalNs: 1, QueueNs: 2, PrefillNs: 3, DecodeNs: 4, Preemptions: 1, CachedTokens: 64},
		},
		{
			ID: "text-1", Sent: 3, End: 9, PromptTokens: 5, CompletionTokens: 4, TokenSource: TokensUsage, Status: 200,
			Chunks:        []Chunk{{T: 4, Tokens: 1, Visible: true}, {T: 9, Tokens: 3, Visible: true}},
			GeneratedText: "Hello \"world\"\n\ttabbed <b>&amp;</b> 日本語 \u2028 end",
		},
	}
}

func TestGeneratedTextOmittedWhenEmpty(t *testing.T) {
	// Records without text (every record unless --save-detailed asked for
	// it) carry no generated_text key, so files stay as small as before.
	for _, r := range sampleRecords() {
		line := string(AppendRecord(nil, &r))
		if has := strings.Contains(line, `"generated_text"`); has != (r.GeneratedText != "") {
			t.Errorf("AppendRecord(%s) has generated_text = %v; want %v: %s", r.ID, has, r.GeneratedText != "", line)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	meta := &Meta{Tool: "goodput", Command: "bench", Started: time.Unix(1700000000, 0).UTC(), Model: "m",
		Levels: []Level{{RequestRate: 4, Burstiness: 1, MaxConcurrency: 8, NumPrompts: 3}}}
	if err := w.WriteMeta(meta); err != nil {
		t.Fatal(err)
	}
	recs := sampleRecords()
	for i := range recs {
		if err := w.Write(&recs[i]); err != nil {
			t.Fatal(err)
		}
		// Every line must also be valid JSON for other tools.
	}
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("line %d is not valid JSON: %s", i+1, line)
		}
	}
	if w.Count() != len(recs) {
		t.Errorf("Count() = %d; want %d", w.Count(), len(recs))
	}
	gotMeta, got, warns, err := ReadAll(&buf, "r.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings = %v; want none", warns)
	}
	// The writer replaces invalid UTF-8; the rest must survive byte for byte.
	recs[1].Error = "boom \"quoted\"\nnext\x01 \ufffd bad utf8 \u2028"
	recs[1].Chunks = []Chunk{}
	if diff := cmp.Diff(recs, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(meta, gotMeta); diff != "" {
		t.Errorf("meta round trip (-want +got):\n%s", diff)
	}
}

func TestTornLastLine(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	recs := sampleRecords()
	for i := range recs {
		_ = w.Write(&recs[i])
	}
	full := buf.Bytes()
	// Cut the file in the middle of the last record, as a kill -9 might.
	torn := full[:len(full)-20]
	_, got, warns, err := ReadAll(bytes.NewReader(torn), "run.jsonl")
	if err != nil {
		t.Fatalf("ReadAll(torn) error = %v; want nil", err)
	}
	if len(got) != len(recs)-1 {
		t.Errorf("ReadAll(torn) read %d records; want %d", len(got), len(recs)-1)
	}
	if want := fmt.Sprintf("run.jsonl:%d", len(recs)); len(warns) != 1 || !strings.Contains(warns[0], want) {
		t.Errorf("warnings = %q; want one naming %s", warns, want)
	}
}

func TestBadMiddleLine(t *testing.T) {
	in := `{"id":"a","chunks":[],"sent_ns":0}` + "\n" + `{"id":` + "\n" + `{"id":"b","chunks":[]}` + "\n"
	_, _, _, err := ReadAll(strings.NewReader(in), "x.jsonl")
	if err == nil || !strings.Contains(err.Error(), "x.jsonl:2") {
		t.Errorf("ReadAll(bad line 2) error = %v; want one naming x.jsonl:2", err)
	}
}

func TestReaderEOF(t *testing.T) {
	r := NewReader(strings.NewReader(""), "empty")
	var rec Record
	if err := r.Next(&rec); err != io.EOF {
		t.Errorf("Next(empty) = %v; want io.EOF", err)
	}
}

func FuzzReader(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	_ = w.WriteMeta(&Meta{Tool: "goodput"})
	for _, r := range sampleRecords() {
		_ = w.Write(&r)
	}
	f.Add(buf.Bytes())
	f.Add([]byte(`{"id":"x","chunks":[[1,2,3]]}`))
	f.Add([]byte(`{"meta":null}`))
	f.Add([]byte(`{"meta":{"tool":"goodput"}}` + "\n" + `{"end":{"levels":[{"request_rate":2}]}}` + "\n" + `{"end":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, recs, _, err := ReadAll(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		// Whatever parsed must re-encode to something that parses the same.
		var out bytes.Buffer
		w := NewWriter(&out)
		for i := range recs {
			if err := w.Write(&recs[i]); err != nil {
				t.Fatal(err)
			}
		}
		_, again, _, err := ReadAll(&out, "again")
		if err != nil {
			t.Fatalf("re-read of re-encoded records: %v", err)
		}
		if len(again) != len(recs) {
			t.Fatalf("re-read %d records; want %d", len(again), len(recs))
		}
	})
}

func BenchmarkAppendRecord(b *testing.B) {
	r := &Record{ID: "bench-000001", Sent: 1e9, End: 2e9, PromptTokens: 1000, CompletionTokens: 500, Status: 200}
	for i := range 500 {
		r.Chunks = append(r.Chunks, Chunk{T: int64(1e9 + i*10e6), Tokens: 1, Visible: true})
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendRecord(buf[:0], r)
	}
	b.SetBytes(int64(len(buf)))
}

func TestEndLineReplacesPlannedLevels(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	meta := &Meta{Tool: "goodput", Model: "m", Levels: []Level{{RequestRate: 4, NumPrompts: 10}}}
	if err := w.WriteMeta(meta); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(&Record{ID: "a", Status: 200}); err != nil {
		t.Fatal(err)
	}
	ran := *meta
	ran.Levels = []Level{{RequestRate: 4, NumPrompts: 10, DelayedArrivals: 3, ClientCPU: 0.25}}
	if err := w.WriteEnd(&ran); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(buf.String(), `{"meta"`); n != 1 {
		t.Errorf("the file has %d meta lines; want 1:\n%s", n, buf.String())
	}
	got, recs, warns, err := ReadAll(&buf, "r.jsonl")
	if err != nil || len(recs) != 1 || len(warns) != 0 {
		t.Fatalf("ReadAll = %d records, %v, %v; want 1, no warnings, nil", len(recs), warns, err)
	}
	if got.Model != "m" || len(got.Levels) != 1 || got.Levels[0].DelayedArrivals != 3 || got.Levels[0].ClientCPU != 0.25 {
		t.Errorf("meta after the end line = %+v; want model m with the levels as they ran", got)
	}

	// An end line with no meta before it is ignored with a warning.
	_, _, warns, err = ReadAll(strings.NewReader(`{"end":{"levels":[]}}`+"\n"+`{"id":"a","status":200}`+"\n"), "x.jsonl")
	if err != nil || len(warns) != 1 {
		t.Errorf("end line first: warnings %v, err %v; want one warning", warns, err)
	}
}
