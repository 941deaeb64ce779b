package runlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
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
			CachedTokens: 64, TokenSource: TokensUsage, Status: 200, Redirects: 2, FinishReason: "length",
			Chunks: []Chunk{{T: 1, Tokens: 1}, {T: 2, Tokens: 2, Visible: true}},
			Server: &ServerTiming{ArrivalNs: 1, QueueNs: 2, PrefillNs: 3, DecodeNs: 4, Preemptions: 1, CachedTokens: 64},
		},
		{
			ID: "llamacpp-1", Sent: 1, End: 9, PromptTokens: 10, CompletionTokens: 2, TokenSource: TokensUsage, Status: 200,
			Chunks: []Chunk{{T: 5, Tokens: 1, Visible: true}, {T: 9, Tokens: 1, Visible: true}},
			Server: &ServerTiming{PrefillNs: 3e6, DecodeNs: 4e6, CachedTokens: 8, QueueUnknown: true},
		},
		{
			ID: "text-1", Sent: 3, End: 9, PromptTokens: 5, CompletionTokens: 4, TokenSource: TokensUsage, Status: 200, WholeAnswer: true,
			Chunks:        []Chunk{{T: 4, Tokens: 1, Visible: true}, {T: 9, Tokens: 3, Visible: true}},
			GeneratedText: "Hello \"world\"\n\ttabbed <b>&amp;</b> 日本語 \u2028 end",
		},
		{
			ID: "turn-3", Sent: 10, End: 20, PromptTokens: 900, CompletionTokens: 2, CachedTokens: 640, TokenSource: TokensUsage, Status: 200,
			Chunks:    []Chunk{{T: 15, Tokens: 1}, {T: 20, Tokens: 1, Visible: true}},
			SessionID: "conv \"7\"", Turn: 3, ToolRound: 1, History: HistoryServer, HistoryDropped: 1,
		},
		{
			ID: "turn-4", Sent: 30, End: 40, PromptTokens: 950, CompletionTokens: 20, ReasoningTokens: 20, TokenSource: TokensUsage,
			Status: 200, FinishReason: "tool_calls", Chunks: []Chunk{{T: 35, Tokens: 20}},
			ToolCalls:     []ToolCall{{ID: "call_1", Name: "search", Arguments: `{"q":"kv \"cache\""}`}, {ID: "call_2", Name: "read"}},
			ToolLatencyNs: 250e6, SessionID: "c8", Turn: 1,
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

func TestRedirectsAndWholeAnswerOmittedWhenZero(t *testing.T) {
	// Only records that followed a redirect or got a whole JSON answer to
	// a stream carry these keys.
	for _, r := range sampleRecords() {
		line := string(AppendRecord(nil, &r))
		if has := strings.Contains(line, `"redirects":`); has != (r.Redirects != 0) {
			t.Errorf("AppendRecord(%s) has redirects = %v; want %v: %s", r.ID, has, r.Redirects != 0, line)
		}
		if has := strings.Contains(line, `"whole_answer":true`); has != r.WholeAnswer {
			t.Errorf("AppendRecord(%s) has whole_answer = %v; want %v: %s", r.ID, has, r.WholeAnswer, line)
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
	f.Add([]byte(`{"scrape":{"target":"server","at_ns":5,"sample":{"values":{"running":1}}}}` + "\n" + `{"scrape":{"target":""}}`))
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
	perfgoal.AtMost(b, "ns per record", perfgoal.PerOp(b), 10_700)
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

// badLinesFile is a records file with three bad lines in the middle (an
// out-of-range chunk, NUL bytes, a record whose id is a number) between
// good records.
const badLinesFile = `{"meta":{"tool":"goodput","model":"m","levels":[{}]}}
{"id":"a","sent_ns":0,"chunks":[[5,1,1]],"end_ns":5,"status":200}
{"id":"b","sent_ns":0,"chunks":[[5,4294967296,1]],"end_ns":5,"status":200}
` + "\x00\x00\x00\x00" + `
{"id":5}
{"id":"c","sent_ns":1,"chunks":[[6,1,1]],"end_ns":6,"status":200}
`

func TestSkipBadLines(t *testing.T) {
	_, _, _, err := ReadAll(strings.NewReader(badLinesFile), "x.jsonl")
	var bad *BadLineError
	if !errors.As(err, &bad) || bad.Line != 3 || !strings.Contains(err.Error(), "x.jsonl:3: ") || !strings.Contains(err.Error(), "token count out of range") {
		t.Fatalf("strict ReadAll error = %v; want a *BadLineError naming x.jsonl:3 and the token count", err)
	}

	runs, warns, err := ReadRuns(strings.NewReader(badLinesFile), "x.jsonl", ReadOptions{SkipBadLines: true})
	if err != nil {
		t.Fatalf("ReadRuns(skip) error = %v", err)
	}
	if len(runs) != 1 || len(runs[0].Records) != 2 || runs[0].Records[1].ID != "c" {
		t.Fatalf("ReadRuns(skip) = %+v; want one run with records a and c", runs)
	}
	for _, want := range []string{"x.jsonl:3: skipped a bad line", "x.jsonl:4: skipped a bad line", "x.jsonl:5: skipped a bad line", "skipped 3 bad line(s) in all"} {
		if !strings.Contains(strings.Join(warns, "\n"), want) {
			t.Errorf("warnings %q lack %q", warns, want)
		}
	}

	// Past maxLineWarnings lines are counted, not named.
	var many strings.Builder
	many.WriteString(`{"id":"ok","status":200}` + "\n")
	for range 50 {
		many.WriteString("garbage\n")
	}
	many.WriteString(`{"id":"ok2","status":200}` + "\n")
	r := NewReaderOptions(strings.NewReader(many.String()), "m.jsonl", ReadOptions{SkipBadLines: true})
	n := 0
	for {
		var rec Record
		if err := r.Next(&rec); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if n != 2 || r.Skipped() != 50 || len(r.Warnings()) != maxLineWarnings+1 {
		t.Errorf("50 bad lines: %d records, %d skipped, %d warnings; want 2, 50, %d", n, r.Skipped(), len(r.Warnings()), maxLineWarnings+1)
	}
}

func TestLastLine(t *testing.T) {
	good := `{"meta":{"tool":"goodput"}}` + "\n" + `{"id":"a","status":200}` + "\n"
	tests := []struct {
		name, last string
		torn       bool // skipped with a warning; else an error naming line 3
	}{
		{"torn record", `{"id":"x","lev`, true},
		{"torn in a string", `{"id":"x","error":"bo`, true},
		{"torn meta", `{"meta":{"tool":"goo`, true},
		{"complete but wrong", `{"id":5}`, false},
		{"out of range", `{"id":"x","prompt_tokens":-1}`, false},
		{"NUL bytes", strings.Repeat("\x00", 100_000), false},
		{"NUL after a prefix", `{"id":"x"` + "\x00\x00", false},
		{"garbage", `hello`, false},
		{"syntax error", `{"id":"x",,`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, nl := range []string{"", "\n", "\n\n  \n"} {
				_, recs, warns, err := ReadAll(strings.NewReader(good+tt.last+nl), "f.jsonl")
				if tt.torn {
					if err != nil || len(recs) != 1 || len(warns) != 1 || !strings.Contains(warns[0], "f.jsonl:3: skipped a torn last line") {
						t.Errorf("ReadAll(last %q + %q) = %d records, %q, %v; want 1 record and a torn-line warning", tt.last, nl, len(recs), warns, err)
					}
					continue
				}
				if err == nil || !strings.Contains(err.Error(), "f.jsonl:3:") {
					t.Errorf("ReadAll(last %q + %q) error = %v; want one naming f.jsonl:3", tt.last, nl, err)
				}
			}
		})
	}
}

func TestValidateOnRead(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"negative prompt tokens", `"prompt_tokens":-1`, "prompt_tokens -1 out of range"},
		{"int64-max completion tokens", `"completion_tokens":9223372036854775807`, "completion_tokens 9223372036854775807 out of range"},
		{"cached tokens", `"cached_tokens":2147483648`, "cached_tokens 2147483648 out of range"},
		{"max_tokens", `"max_tokens":-5`, "max_tokens -5"},
		{"requested prompt tokens", `"requested_prompt_tokens":1e3`, "bad record"}, // a float is not an int
		{"sent_ns int64 max", `"sent_ns":9223372036854775807`, "sent_ns 9223372036854775807 out of range"},
		{"end_ns far negative", `"end_ns":-9223372036854775808`, "end_ns"},
		{"intended past the bound", `"intended_ns":1152921504606846977`, "intended_ns"},
		{"connect_ns", `"connect_ns":4611686018427387904`, "connect_ns"},
		{"chunk time", `"chunks":[[9000000000000000000,1,1]]`, "chunk 0's time"},
		{"negative chunk tokens", `"chunks":[[1,-1,1]]`, "token count out of range"},
		{"chunk token sum", `"chunks":[[1,2147483647,1],[2,1,1]]`, "the chunks carry 2147483648 tokens"},
		{"negative level", `"level":-1`, "level -1 out of range"},
		{"huge level", `"level":1000000000`, "level 1000000000 out of range"},
		{"server queue", `"server":{"queue_ns":9223372036854775807}`, "server.queue_ns"},
		{"server preemptions", `"server":{"preemptions":-2}`, "server.preemptions"},
		{"turn without a session", `"turn":2`, "without a session_id"},
		{"session turn 0", `"session_id":"s","tool_round":1`, `session "s": turn 0; turns count from 1`},
		{"negative turn", `"session_id":"s","turn":-1`, "turn -1 out of range"},
		{"chunk before the send", `"sent_ns":1000000000000,"chunks":[[0,1,1]],"end_ns":1000000000001`, "chunk 0's time 0 is before sent_ns 1000000000000"},
		{"end before the send", `"sent_ns":1000000000000,"end_ns":1`, "end_ns 1 is before sent_ns 1000000000000"},
		{"unknown history", `"session_id":"s","turn":1,"history":"dreamt"`, `history "dreamt": want server, recorded or chained`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"id":"r",` + tt.line + `,"status":200}` + "\n" + `{"id":"next","status":200}` + "\n"
			_, _, _, err := ReadAll(strings.NewReader(in), "v.jsonl")
			var bad *BadLineError
			if !errors.As(err, &bad) || bad.Line != 1 || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadAll(%s) error = %v; want a *BadLineError on line 1 with %q", tt.line, err, tt.want)
			}
		})
	}
	// The bounds themselves are accepted.
	edge := fmt.Sprintf(`{"id":"e","level":%d,"intended_ns":%d,"sent_ns":%d,"end_ns":%d,"prompt_tokens":%d,"chunks":[[%d,%d,1]],"server":{"queue_ns":%d}}`,
		MaxLevel, -MaxTimeNs, 0, MaxTimeNs, MaxTokens, MaxTimeNs, MaxTokens, MaxTimeNs)
	if _, recs, _, err := ReadAll(strings.NewReader(edge), "e.jsonl"); err != nil || len(recs) != 1 {
		t.Errorf("ReadAll(values at the bounds) = %d records, %v; want 1, nil", len(recs), err)
	}
}

// TestValidateMetaOnRead: a meta or end line whose level states an
// impossible load (a 309-digit rate, a negative burstiness or cap) is a
// bad line naming file and line, as a bad record is.
func TestValidateMetaOnRead(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"huge rate", `{"meta":{"levels":[{"request_rate":1e308,"burstiness":1,"max_concurrency":0,"num_prompts":10}]}}`, "bad meta line: level 1: request_rate 1e+308 out of range"},
		{"negative burstiness", `{"meta":{"levels":[{"request_rate":4,"burstiness":-1,"max_concurrency":0,"num_prompts":10}]}}`, "burstiness -1 out of range"},
		{"negative cap", `{"meta":{"levels":[{"request_rate":4,"burstiness":1,"max_concurrency":-5,"num_prompts":10}]}}`, "max_concurrency -5 out of range"},
		{"second level", `{"meta":{"levels":[{"request_rate":4,"burstiness":1},{"request_rate":-2,"burstiness":1}]}}`, "level 2: request_rate -2"},
		{"end line", `{"end":{"levels":[{"request_rate":4,"burstiness":1,"num_prompts":-3}]}}`, "bad end line: level 1: num_prompts -3"},
		{"ramp", `{"meta":{"levels":[{"request_rate":0,"burstiness":1,"ramp":{"strategy":"linear","start_rps":1,"end_rps":1e300}}]}}`, "ramp from 1 to 1e+300"},
		{"fleet kv peak", `{"end":{"levels":[{"request_rate":4,"burstiness":1,"fleet":{"kv_peak":[0.5,1.5],"routed":[1,2]}}]}}`, "bad end line: level 1: fleet kv_peak 1.5 out of range [0, 1]"},
		{"fleet routed", `{"end":{"levels":[{"request_rate":4,"burstiness":1,"fleet":{"kv_peak":[0.5],"routed":[-1]}}]}}`, "fleet routed -1: counts are never negative"},
		{"autoscale bounds", `{"end":{"levels":[{"request_rate":4,"burstiness":1,"fleet":{"kv_peak":[],"routed":[],"autoscale":{"min":3,"max":2}}}]}}`, "autoscale min 3, max 2"},
		{"autoscale point", `{"end":{"levels":[{"request_rate":4,"burstiness":1,"fleet":{"kv_peak":[],"routed":[],"autoscale":{"min":1,"max":2,"timeline":[{"at_ns":-5,"active":1}]}}}]}}`, "autoscale timeline point at -5 ns"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := `{"meta":{"levels":[{"request_rate":4,"burstiness":1}]}}` + "\n" + `{"id":"r","status":200}` + "\n"
			if strings.HasPrefix(tt.line, `{"meta"`) {
				in = tt.line + "\n" + `{"id":"r","status":200}` + "\n"
			} else {
				in += tt.line + "\n"
			}
			_, _, _, err := ReadAll(strings.NewReader(in), "m.jsonl")
			var bad *BadLineError
			if !errors.As(err, &bad) || !strings.Contains(err.Error(), "m.jsonl:") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadAll(%s) error = %v; want a *BadLineError with %q", tt.line, err, tt.want)
			}
		})
	}
}

func TestRuns(t *testing.T) {
	meta := func(model string, started string) string {
		return fmt.Sprintf(`{"meta":{"tool":"goodput","command":"bench","model":%q,"started":%q,"levels":[{"request_rate":1}]}}`, model, started)
	}
	rec := func(id string) string { return fmt.Sprintf(`{"id":%q,"status":200}`, id) }
	const t0, t1 = "2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z"
	tests := []struct {
		name    string
		lines   []string
		runs    []int // records per run
		lineNos []int
		diff    string // RunDiff of the first two runs' metas
	}{
		{"one run", []string{meta("a", t0), rec("1"), rec("2")}, []int{2}, []int{1}, ""},
		{"concatenated, other model", []string{meta("a", t0), rec("1"), meta("b", t0), rec("2"), rec("3")}, []int{1, 2}, []int{1, 3}, "model (a vs b)"},
		{"concatenated, same model later", []string{meta("a", t0), rec("1"), meta("a", t1), rec("2")}, []int{1, 1}, []int{1, 3}, "start time"},
		{"an older producer's updated meta line", []string{meta("a", t0), rec("1"), rec("2"), meta("a", t0)}, []int{2}, []int{1}, ""},
		{"records before any meta", []string{rec("1"), meta("a", t0), rec("2")}, []int{1, 1}, []int{1, 2}, ""},
		{"an empty run", []string{meta("a", t0), meta("b", t1), rec("1")}, []int{0, 1}, []int{1, 2}, "start time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs, _, err := ReadRuns(strings.NewReader(strings.Join(tt.lines, "\n")), "c.jsonl", ReadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got, lines []int
			for _, r := range runs {
				got = append(got, len(r.Records))
				lines = append(lines, r.Line)
				if len(r.Records) != r.RunInfo.Records {
					t.Errorf("run at line %d: RunInfo.Records = %d; want %d", r.Line, r.RunInfo.Records, len(r.Records))
				}
			}
			if !slices.Equal(got, tt.runs) || !slices.Equal(lines, tt.lineNos) {
				t.Errorf("ReadRuns = records %v at lines %v; want %v at %v", got, lines, tt.runs, tt.lineNos)
			}
			if len(runs) > 1 && runs[0].Meta != nil && runs[1].Meta != nil {
				if d := RunDiff(runs[0].Meta, runs[1].Meta); !strings.HasPrefix(d, tt.diff) || d == "" {
					t.Errorf("RunDiff = %q; want it to start with %q", d, tt.diff)
				}
			}
			// ReadAll still reads them as one, under the last meta line.
			m, recs, _, err := ReadAll(strings.NewReader(strings.Join(tt.lines, "\n")), "c.jsonl")
			if err != nil || len(recs) != sum(tt.runs) || m == nil || m.Model != runs[len(runs)-1].Meta.Model {
				t.Errorf("ReadAll = %d records, meta %+v, %v", len(recs), m, err)
			}
		})
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// FuzzReaderSkip reads arbitrary bytes with SkipBadLines: only a read
// failure stops it, and every record it accepts is within the bounds.
func FuzzReaderSkip(f *testing.F) {
	f.Add([]byte(badLinesFile))
	f.Add([]byte(`{"meta":{"tool":"goodput","model":"a"}}` + "\n" + `{"id":"1"}` + "\n" + `{"meta":{"tool":"goodput","model":"b"}}` + "\n" + `{"id":"2","chunks":[[1,1,1]]}`))
	f.Add([]byte("\x00\x00\n{\"id\":\"x\",\"sent_ns\":-1152921504606846976}\n{\"id\":\"y\",\"lev"))
	f.Fuzz(func(t *testing.T, data []byte) {
		runs, warns, err := ReadRuns(bytes.NewReader(data), "fuzz", ReadOptions{SkipBadLines: true})
		if err != nil {
			if errors.As(err, new(*BadLineError)) {
				t.Fatalf("ReadRuns(skip) = %v; want bad lines skipped", err)
			}
			return
		}
		if len(warns) > maxLineWarnings+2 {
			t.Errorf("%d warnings; want at most %d", len(warns), maxLineWarnings+2)
		}
		for _, run := range runs {
			for i := range run.Records {
				if err := validRecord(&run.Records[i]); err != nil {
					t.Fatalf("accepted a record out of bounds: %v", err)
				}
			}
		}
	})
}

// TestAppendRecordNoAllocs holds BenchmarkAppendRecord's figure (0
// allocations to encode a record of 500 chunks into a reused buffer) as a
// test: records go to disk one a request, on the request path.
func TestAppendRecordNoAllocs(t *testing.T) {
	r := &Record{ID: "alloc-000001", Sent: 1e9, End: 2e9, PromptTokens: 1000, CompletionTokens: 500, Status: 200,
		ErrorClass: ErrStream, Error: "upstream said \"no\"\n"}
	for i := range 500 {
		r.Chunks = append(r.Chunks, Chunk{T: int64(1e9 + i*10e6), Tokens: 1, Visible: i%3 != 0})
	}
	buf := AppendRecord(nil, r) // the buffer grows once
	if allocs := testing.AllocsPerRun(100, func() { buf = AppendRecord(buf[:0], r) }); allocs != 0 {
		t.Errorf("%v allocations per AppendRecord into a reused buffer; want 0", allocs)
	}
}

// hugeLine streams a records file whose second line is a record n bytes
// long, made up as it is read (the test holds none of it).
type hugeLine struct {
	head, tail string
	n, off     int64
}

func (h *hugeLine) Read(p []byte) (int, error) {
	total := int64(len(h.head)) + h.n + int64(len(h.tail))
	if h.off >= total {
		return 0, io.EOF
	}
	k := 0
	for k < len(p) && h.off < total {
		switch o := h.off; {
		case o < int64(len(h.head)):
			p[k] = h.head[o]
		case o >= total-int64(len(h.tail)):
			p[k] = h.tail[o-(total-int64(len(h.tail)))]
		default:
			p[k] = 'a'
		}
		k++
		h.off++
	}
	return k, nil
}

// TestLineTooLong reads past a 64 MiB line with a 1 MiB bound: the line
// is a bad line naming file and line (skipped with SkipBadLines, the next
// record read), and reading it allocates a few MiB, not its size.
func TestLineTooLong(t *testing.T) {
	for _, skip := range []bool{false, true} {
		src := &hugeLine{
			head: `{"meta":{"tool":"goodput"}}` + "\n" + `{"id":"big","error":"`,
			n:    64 << 20,
			tail: `","status":500}` + "\n" + `{"id":"next","status":200}` + "\n",
		}
		r := NewReaderOptions(src, "big.jsonl", ReadOptions{SkipBadLines: skip})
		r.maxLine = 1 << 20
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		var rec Record
		err := r.Next(&rec)
		runtime.ReadMemStats(&after)
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
			t.Errorf("skip %v: reading past a 64 MiB line allocated %d MiB; want ≤ 8", skip, alloc>>20)
		}
		if !skip {
			var bad *BadLineError
			if !errors.As(err, &bad) || bad.Line != 2 || !strings.Contains(err.Error(), "big.jsonl:2: line over 1048576 bytes") {
				t.Errorf("Next = %v; want big.jsonl:2: line over 1048576 bytes", err)
			}
			continue
		}
		if err != nil || rec.ID != "next" || len(r.Warnings()) != 1 || !strings.Contains(r.Warnings()[0], "big.jsonl:2: skipped a bad line: line over") {
			t.Errorf("with SkipBadLines: Next = %q, %v, warnings %q; want the next record, a warning naming line 2", rec.ID, err, r.Warnings())
		}
	}
}

// TestOwnLinesSkipped reads a log that merges goodput's stderr with its
// records (kubectl logs of a shard pod): the lines marked as goodput's
// own are skipped and counted once, not bad lines, while any other stray
// line is still bad.
func TestOwnLinesSkipped(t *testing.T) {
	in := `{"meta":{"tool":"goodput"}}` + "\n" + OwnLinePrefix + "============ Serving Benchmark Result ============\n" +
		`{"id":"a","status":200}` + "\n" + OwnLinePrefix + "note: something\n" + `{"id":"b","status":200}` + "\n"
	_, recs, warnings, err := ReadAll(strings.NewReader(in), "pod.log")
	var ids []string
	for _, rec := range recs {
		ids = append(ids, rec.ID)
	}
	if err != nil || strings.Join(ids, ",") != "a,b" || len(warnings) != 1 || !strings.Contains(warnings[0], "pod.log: skipped 2 line(s) of goodput's own") {
		t.Errorf("records %v, warnings %q, error %v; want a,b, one warning counting 2 own lines, no error", ids, warnings, err)
	}
	bad := NewReaderOptions(strings.NewReader(`{"meta":{"tool":"goodput"}}`+"\nsomething else\n"+`{"id":"a","status":200}`+"\n"), "x.jsonl", ReadOptions{})
	var rec Record
	if err := bad.Next(&rec); err == nil {
		t.Error("a stray line not marked as goodput's own was read; want a bad line")
	}
}
