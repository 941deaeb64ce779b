package jobgraph

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/setting"
)

// row is a node as the sample tests read it.
type row struct {
	ID, After, Ctx, From string
	Gap                  time.Duration
	In, New, Out, Depth  int
	Agent                string
	Line                 int
}

func rows(j Job) []row {
	var out []row
	for _, n := range j.Nodes {
		out = append(out, row{ID: n.ID, After: strings.Join(n.After, ","), Ctx: n.Context.String(), From: n.From,
			Gap: n.Gap, In: n.In, New: n.New, Out: n.Out, Depth: n.Depth, Agent: n.Agent, Line: n.Source.Line})
	}
	return out
}

func load(t *testing.T, l Loader, file string) []Job {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := l(file, f)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

const ms = time.Millisecond

// TestWekaSample checks testdata/weka.json by hand. The main agent's
// request 0 (t 0, api 2s) launches sub-agent explore-1 (two requests,
// t 3 and 5, done at 5 + 2.5 = 7.5) and explore-2 (one request, t 3.5,
// done at 4.5); request 3 at t 8 is the first main request after both
// finished, so it joins both, its gap 8 - 7.5 = 0.5s.
//
// Prompts carried: 1/1 forks 1/0 (48 + 16) and adds 16; 3 forks 0
// (64 + 16) plus the sub-agents' answers (8 + 8) = 96 and adds 16; 4
// forks 3 (112 + 24) and adds 24.
func TestWekaSample(t *testing.T) {
	jobs := load(t, LoadWeka, "testdata/weka.json")
	if len(jobs) != 1 {
		t.Fatalf("LoadWeka = %d jobs; want 1", len(jobs))
	}
	j := jobs[0]
	if j.ID != "job-a" || j.BlockSize != 16 || j.Edges() != 7 {
		t.Errorf("job %q block size %d edges %d; want job-a 16 7", j.ID, j.BlockSize, j.Edges())
	}
	want := []row{
		{ID: "0", Ctx: "spawn", In: 64, New: 64, Out: 16, Line: 9},
		{ID: "1/0", After: "0", Ctx: "spawn", Gap: time.Second, In: 48, New: 48, Out: 16, Depth: 1, Agent: "explore-1", Line: 16},
		{ID: "1/1", After: "1/0", Ctx: "fork", From: "1/0", Gap: 500 * ms, In: 80, New: 16, Out: 8, Depth: 1, Agent: "explore-1", Line: 19},
		{ID: "2/0", After: "0", Ctx: "spawn", Gap: 1500 * ms, In: 32, New: 32, Out: 8, Depth: 1, Agent: "explore-2", Line: 27},
		{ID: "3", After: "0,1/1,2/0", Ctx: "fork", From: "0", Gap: 500 * ms, In: 112, New: 16, Out: 24, Line: 31},
		{ID: "4", After: "3", Ctx: "fork", From: "3", Gap: 3 * time.Second, In: 160, New: 24, Out: 8, Line: 34},
	}
	if diff := cmp.Diff(want, rows(j)); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	prompts, err := j.Prompts()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{64, 48, 80, 32, 112, 160}, prompts); diff != "" {
		t.Errorf("Prompts() = the recorded in (-want +got):\n%s", diff)
	}
	// Durations = the recorded api_time: the schedule reproduces the
	// recorded t of every request, and the job ends at 14 + 1 = 15s on
	// the path through the longer sub-agent.
	api := map[string]time.Duration{"0": 2000, "1/0": 1500, "1/1": 2500, "2/0": 1000, "3": 3000, "4": 1000}
	s, err := j.Plan(func(i int) time.Duration { return api[j.Nodes[i].ID] * ms })
	if err != nil {
		t.Fatal(err)
	}
	var starts []float64
	for _, d := range s.Start {
		starts = append(starts, d.Seconds())
	}
	if diff := cmp.Diff([]float64{0, 3, 5, 3.5, 8, 14}, starts); diff != "" {
		t.Errorf("Plan starts (-want +got):\n%s", diff)
	}
	if s.End != 15*time.Second || fmt.Sprint(s.Critical) != "[0 1 2 4 5]" {
		t.Errorf("Plan End %v Critical %v; want 15s [0 1 2 4 5]", s.End, s.Critical)
	}
}

// TestWekaCacheHits works the sample's implied cache hits by hand (block
// size 16, requests in listed order):
//
//	req  hash_ids                 hit blocks  tokens  hit tokens
//	0    1 2 3 4                  0           64      0
//	1/0  1 2 9                    2           48      32
//	1/1  1 2 9 10 11              3           80      48
//	2/0  1 2                      2           32      32
//	3    1..7                     4           112     64
//	4    1..7 12 13 14            7           160     112
//
// Overall 18 of 31 blocks, 288 of 496 tokens: 58.1%.
func TestWekaCacheHits(t *testing.T) {
	j := load(t, LoadWeka, "testdata/weka.json")[0]
	per, all, err := j.CacheHits()
	if err != nil {
		t.Fatal(err)
	}
	var hit []int
	for _, c := range per {
		hit = append(hit, c.HitTokens)
	}
	if diff := cmp.Diff([]int{0, 32, 48, 32, 64, 112}, hit); diff != "" {
		t.Errorf("hit tokens per request (-want +got):\n%s", diff)
	}
	if want := (CacheHit{Blocks: 31, HitBlocks: 18, Tokens: 496, HitTokens: 288}); all != want {
		t.Errorf("overall = %+v; want %+v", all, want)
	}
}

// TestTraceLabSample checks testdata/tracelab.jsonl by hand: two
// sessions, rounds out of order in the file, a blank line. claude:s1's
// round 1 waits 1200 + 300 ms of round 0's tools, round 2 2500.5 ms.
func TestTraceLabSample(t *testing.T) {
	jobs := load(t, LoadTraceLab, "testdata/tracelab.jsonl")
	if len(jobs) != 2 || jobs[0].ID != "claude:s1" || jobs[1].ID != "codex:s2" {
		t.Fatalf("LoadTraceLab = %d jobs; want claude:s1, codex:s2", len(jobs))
	}
	want := []row{
		{ID: "0", Ctx: "spawn", In: 1000, New: 1000, Out: 100, Line: 1},
		{ID: "1", After: "0", Ctx: "fork", From: "0", Gap: 1500 * ms, In: 1300, New: 200, Out: 60, Line: 4},
		{ID: "2", After: "1", Ctx: "fork", From: "1", Gap: 2500500 * time.Microsecond, In: 1600, New: 240, Out: 80, Line: 3},
	}
	if diff := cmp.Diff(want, rows(jobs[0])); diff != "" {
		t.Errorf("claude:s1 (-want +got):\n%s", diff)
	}
	want2 := []row{
		{ID: "0", Ctx: "spawn", In: 500, New: 500, Out: 50, Line: 2},
		{ID: "1", After: "0", Ctx: "fork", From: "0", In: 700, New: 150, Out: 40, Line: 6},
	}
	if diff := cmp.Diff(want2, rows(jobs[1])); diff != "" {
		t.Errorf("codex:s2 (-want +got):\n%s", diff)
	}
	// Prompts: 1000; 1000 + 100 + 200 = 1300; 1300 + 60 + 240 = 1600.
	if p, _ := jobs[0].Prompts(); fmt.Sprint(p) != "[1000 1300 1600]" {
		t.Errorf("claude:s1 Prompts() = %v; want [1000 1300 1600]", p)
	}
	// Implied hits, 64-token blocks: round 1 keeps 1100/64 = 17 blocks
	// of the 16 round 0 has, so 16 (1024 tokens); round 2 keeps
	// 1360/64 = 21 of round 1's 21 (1344 tokens). The recorded prefix
	// is 0 + 1100 + 1360 = 2460 tokens.
	per, all, _ := jobs[0].CacheHits()
	if per[1].HitTokens != 1024 || per[2].HitTokens != 1344 || all.HitTokens != 2368 || all.Tokens != 3900 {
		t.Errorf("claude:s1 CacheHits = %+v, %+v; want 1024, 1344, 2368 of 3900", per, all)
	}
	cached := 0
	for _, n := range jobs[0].Nodes {
		cached += n.Cached
	}
	if cached != 2460 {
		t.Errorf("recorded prefix tokens = %d; want 2460", cached)
	}
	if _, all, _ := jobs[1].CacheHits(); all.HitTokens != 512 || all.Tokens != 1200 {
		t.Errorf("codex:s2 CacheHits = %+v; want 512 of 1200", all)
	}
}

// TestOTelSample checks testdata/otel.json by hand: planner c1; in
// parallel the researcher sub-agent's c2 (nothing repeated: it waits for
// the closest earlier call, c1, and starts fresh) and c3 (forks c1);
// c4 forks c2; c5 repeats c1's, c3's and c4's answers: it waits for c3
// and c4 (c1 is behind c3) and forks c3, the longest history.
func TestOTelSample(t *testing.T) {
	jobs := load(t, LoadOTel, "testdata/otel.json")
	if len(jobs) != 1 || jobs[0].ID != "trip-1" || jobs[0].Edges() != 5 {
		t.Fatalf("LoadOTel = %d jobs; want 1, trip-1, 5 edges", len(jobs))
	}
	want := []row{
		{ID: "c1", Ctx: "spawn", In: 10, New: 10, Out: 20, Line: 21},
		{ID: "c2", After: "c1", Ctx: "spawn", Gap: time.Second, In: 8, New: 8, Out: 12, Depth: 1, Agent: "researcher", Line: 57},
		{ID: "c3", After: "c1", Ctx: "fork", From: "c1", Gap: time.Second, In: 40, New: 10, Out: 15, Line: 77},
		{ID: "c4", After: "c2", Ctx: "fork", From: "c2", Gap: 2 * time.Second, In: 30, New: 10, Out: 10, Depth: 1, Agent: "researcher", Line: 112},
		{ID: "c5", After: "c3,c4", Ctx: "fork", From: "c3", Gap: time.Second, In: 70, New: 5, Out: 25, Line: 132},
	}
	if diff := cmp.Diff(want, rows(jobs[0])); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
	// With the recorded span durations the job ends at 12s, its time set
	// by the researcher's path c1 → c2 → c4 → c5 (c4 ends at 9, c3 at 6).
	j := jobs[0]
	dur := map[string]time.Duration{"c1": 2, "c2": 2, "c3": 3, "c4": 2, "c5": 2}
	s, _ := j.Plan(func(i int) time.Duration { return dur[j.Nodes[i].ID] * time.Second })
	if s.End != 12*time.Second || fmt.Sprint(s.Critical) != "[0 1 3 4]" {
		t.Errorf("Plan End %v Critical %v; want 12s [0 1 3 4]", s.End, s.Critical)
	}
}

// TestOTLPSample: testdata/otlp.json is the OTel sample in OTLP/JSON
// (resourceSpans → two scopeSpans, camel-case keys, hex ids, decimal
// nanoseconds, attributes as key/value lists): the same graph as the
// flat form — nodes, edges, contexts, gaps, tokens — under its hex ids.
func TestOTLPSample(t *testing.T) {
	flat := load(t, LoadOTel, "testdata/otel.json")
	otlp := load(t, LoadOTel, "testdata/otlp.json")
	if len(otlp) != 1 || otlp[0].ID != "74726970310000000000000000000001" || otlp[0].Edges() != 5 {
		t.Fatalf("LoadOTel(otlp) = %d jobs; want 1 of trace 7472…01 with 5 edges", len(otlp))
	}
	hex := func(id string) string { return fmt.Sprintf("%016x", []byte(id)) }
	want := rows(flat[0])
	for i := range want {
		want[i].ID = hex(want[i].ID)
		if want[i].After != "" {
			var as []string
			for _, a := range strings.Split(want[i].After, ",") {
				as = append(as, hex(a))
			}
			want[i].After = strings.Join(as, ",")
		}
		if want[i].From != "" {
			want[i].From = hex(want[i].From)
		}
	}
	got := rows(otlp[0])
	for i := range got {
		got[i].Line = want[i].Line // the files lay out differently
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OTLP nodes differ from the flat form's (-want +got):\n%s", diff)
	}
}

// oneLine matches the errors every loader must give: one line, naming
// the file and a line.
var oneLine = regexp.MustCompile(`^bad\.[a-z]+:[1-9][0-9]*: [^\n]+$`)

func TestBadInput(t *testing.T) {
	weka := func(reqs string) string {
		return "{\"id\": \"j\",\n\"requests\": [\n" + reqs + "\n]}\n"
	}
	req := func(extra string) string { return `{"type": "n", "in": 10, "out": 2` + extra + `}` }
	tests := []struct {
		name, file string
		load       Loader
		in, want   string
	}{
		// Weka
		{"weka broken line", "bad.json", LoadWeka, weka(req(`, "t": 0`) + ",\n" + `{"type": "n", "in": 1 "out": 2}`),
			`bad.json:4: malformed JSON: invalid character '"' at offset 91 after object member`},
		{"weka negative gap", "bad.json", LoadWeka, weka(req(`, "t": 0`) + ",\n" + req(`, "think_time": -2`)),
			`bad.json:4: job "j": request "1": negative gap -2s`},
		{"weka negative tokens", "bad.json", LoadWeka, weka(`{"type": "n", "in": -5, "out": 2}`),
			`bad.json:3: job "j": request "0": negative token count (in -5, new 0, out 2, cached 0)`},
		{"weka unknown type", "bad.json", LoadWeka, weka(`{"type": "x"}`),
			`bad.json:3: type: unknown type "x": want "n", "s" or "subagent"`},
		{"weka missing in", "bad.json", LoadWeka, weka(`{"type": "n", "out": 1}`),
			`bad.json:3: request without "in" and "out" token counts`},
		{"weka not a trace", "bad.json", LoadWeka, "{\"id\": 1}",
			`bad.json:1: id: not a string`},
		{"weka no requests", "bad.json", LoadWeka, "{}",
			`bad.json:1: requests: missing: not a Weka trace`},
		{"weka hash id", "bad.json", LoadWeka, weka(`{"type": "n", "in": 1, "out": 1,` + "\n" + `"hash_ids": [1, "a"]}`),
			`bad.json:4: hash_ids: a hash id that is not an integer`},
		{"weka empty", "bad.json", LoadWeka, "", `bad.json:1: not a Weka trace: want a JSON object`},
		// TraceLab
		{"tracelab broken line", "bad.jsonl", LoadTraceLab,
			`{"session_id": "s", "round_index": 0, "input_tokens_total": 5}` + "\n" + `{"session_id": "s", "round_index": 1, "input_tokens_total": 5`,
			`bad.jsonl:2: malformed JSON: unexpected end of JSON after object member`},
		{"tracelab negative gap", "bad.jsonl", LoadTraceLab,
			`{"session_id": "s", "round_index": 0, "input_tokens_total": 5, "tools": [{"tool_wall_latency_ms": -1}]}`,
			`bad.jsonl:1: tools[0].tool_wall_latency_ms: negative latency -1`},
		{"tracelab duplicate round", "bad.jsonl", LoadTraceLab,
			`{"session_id": "s", "round_index": 0, "input_tokens_total": 5}` + "\n\n" + `{"session_id": "s", "round_index": 0, "input_tokens_total": 6}`,
			`bad.jsonl:3: session "s": round_index: round 0 again, first at line 1`},
		{"tracelab split mismatch", "bad.jsonl", LoadTraceLab,
			`{"session_id": "s", "round_index": 0, "input_tokens_total": 5, "prefix_tokens": 1, "newly_append_tokens": 1}`,
			`bad.jsonl:1: input_tokens_total: 5 is not prefix_tokens 1 + newly_append_tokens 1`},
		{"tracelab no session", "bad.jsonl", LoadTraceLab, `{"round_index": 0}`,
			`bad.jsonl:1: session_id: missing`},
		{"tracelab not an object", "bad.jsonl", LoadTraceLab, "\n[1]",
			`bad.jsonl:2: malformed JSON: payload is not a JSON object`},
		// OTel
		{"otel broken line", "bad.json", LoadOTel, "{\"spans\": [\n{\"span_id\": \"a\",,}\n]}",
			`bad.json:2: malformed JSON: invalid character ',' at offset 28 looking for object key`},
		{"otel negative gap", "bad.json", LoadOTel,
			"{\"spans\": [\n{\"span_id\": \"a\", \"name\": \"chat m\", \"start_time\": \"2026-01-01T00:00:02Z\", \"end_time\": \"2026-01-01T00:00:01Z\"}\n]}",
			`bad.json:2: end_time: 1s before start_time`},
		{"otel duplicate span", "bad.json", LoadOTel,
			"{\"spans\": [\n" + `{"span_id": "a", "name": "chat m", "start_time": 1, "end_time": 2}` + ",\n" + `{"span_id": "a", "name": "chat m", "start_time": 3, "end_time": 4}` + "\n]}",
			`bad.json:3: job "bad": request "a": duplicate id, first at bad.json:2`},
		{"otel bad messages", "bad.json", LoadOTel,
			"{\"spans\": [\n{\"span_id\": \"a\", \"attributes\": {\"gen_ai.input.messages\": \"[{\"}}\n]}",
			`bad.json:2: gen_ai.input.messages: not a JSON list of messages: unexpected end of JSON input`},
		{"otel bad time", "bad.json", LoadOTel,
			"{\"spans\": [\n{\"span_id\": \"a\", \"start_time\": \"noon\"}]}",
			`bad.json:2: start_time: "noon" is not an ISO-8601 time`},
		{"otel no spans", "bad.json", LoadOTel, "{\"spanz\": []}", `bad.json:1: spans: missing (nor resourceSpans): not an OpenTelemetry trace file`},
		{"otlp bad time", "bad.json", LoadOTel, "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [\n{\"spanId\": \"a\", \"startTimeUnixNano\": \"soon\"}]}]}]}",
			`bad.json:2: startTimeUnixNano: "soon" is not a count of nanoseconds since 1970`},
		{"otlp not an array", "bad.json", LoadOTel, "{\"resourceSpans\": {}}", `bad.json:1: resourceSpans: not an array`},
		{"otlp token count", "bad.json", LoadOTel, "{\"resourceSpans\": [{\"scopeSpans\": [{\"spans\": [{\"spanId\": \"a\", \"attributes\": [\n{\"key\": \"gen_ai.usage.input_tokens\", \"value\": {\"boolValue\": true}}]}]}]}]}",
			`bad.json:2: gen_ai.usage.input_tokens: want an intValue`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jobs, err := tt.load(tt.file, strings.NewReader(tt.in))
			if err == nil {
				t.Fatalf("load = %d jobs, nil error; want %q", len(jobs), tt.want)
			}
			if err.Error() != tt.want {
				t.Errorf("load error = %q; want %q", err, tt.want)
			}
			if !oneLine.MatchString(err.Error()) {
				t.Errorf("load error %q is not one line naming file:line", err)
			}
			var fe *setting.FileError
			if !errors.As(err, &fe) {
				t.Errorf("load error is %T; want *setting.FileError", err)
			}
		})
	}
}

// TestWekaNestedSubAgent: a sub-agent launched before its parent
// sub-agent's first request waits for the grandparent's request, and the
// parent sub-agent's first request (a fresh context) joins it. (The
// Weka builder only points backwards, so cycles and unknown dependencies
// are the graph's own cases, in TestCheck.)
func TestWekaNestedSubAgent(t *testing.T) {
	in := `{"id": "n", "requests": [
{"t": 0, "type": "n", "in": 10, "out": 1, "api_time": 1},
{"t": 1, "type": "subagent", "agent_id": "outer", "requests": [
  {"t": 1, "type": "subagent", "agent_id": "inner", "requests": [
    {"t": 1, "type": "n", "in": 4, "out": 1, "api_time": 1}]},
  {"t": 2.5, "type": "n", "in": 6, "out": 1, "api_time": 1}]},
{"t": 4, "type": "n", "in": 20, "out": 1}]}`
	jobs, err := LoadWeka("n.json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []row{
		{ID: "0", Ctx: "spawn", In: 10, New: 10, Out: 1, Line: 2},
		{ID: "1/0/0", After: "0", Ctx: "spawn", In: 4, New: 4, Out: 1, Depth: 2, Agent: "inner", Line: 5},
		{ID: "1/1", After: "0,1/0/0", Ctx: "spawn", Gap: 500 * ms, In: 6, New: 6, Out: 1, Depth: 1, Agent: "outer", Line: 6},
		{ID: "2", After: "0,1/1", Ctx: "fork", From: "0", Gap: 500 * ms, In: 20, New: 8, Out: 1, Line: 7},
	}
	if diff := cmp.Diff(want, rows(jobs[0])); diff != "" {
		t.Errorf("nodes (-want +got):\n%s", diff)
	}
}

// TestOTelNumericNanos: a flat file's times as numbers of nanoseconds
// since 1970 (about 1.8e18, past a float64's integers) keep every
// digit: b starts 500 ms after a ends, and waits that gap.
func TestOTelNumericNanos(t *testing.T) {
	in := `{"spans":[{"trace_id":"t","span_id":"a","name":"chat m","start_time":1772355600000000001,"end_time":1772355601500000001,"attributes":{"gen_ai.usage.input_tokens":10}},
{"trace_id":"t","span_id":"b","name":"chat m","start_time":1772355602000000001,"end_time":1772355603000000001,"attributes":{"gen_ai.usage.input_tokens":30}}]}`
	jobs, err := LoadOTel("n.json", strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || len(jobs[0].Nodes) != 2 || jobs[0].Nodes[1].Gap != 500*time.Millisecond {
		t.Fatalf("LoadOTel = %+v; want b 500ms after a", jobs)
	}
	if _, err := LoadOTel("n.json", strings.NewReader(`{"spans":[{"span_id":"a","start_time":1.5}]}`)); err == nil || !strings.Contains(err.Error(), "n.json:1: start_time: 1.5 is not an ISO-8601 time or a count of nanoseconds since 1970") {
		t.Errorf("a fractional time: %v", err)
	}
}
