package workload

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/shareddata"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/google/go-cmp/cmp"
)

// dataFile is rel inside the shared data folder (../shared/data beside
// the repository, or $GOODPUT_DATA); see shareddata.
func dataFile(t testing.TB, rel string) string {
	t.Helper()
	return shareddata.Path(t, rel)
}

func TestReadTraceAzureCSV(t *testing.T) {
	// CRLF, no final newline, 7 fractional digits: arrivals 0, 0.052 s and
	// 1.5 s later; with speed-up 2, at 0, 26 ms, 750 ms.
	in := "TIMESTAMP,ContextTokens,GeneratedTokens\r\n" +
		"2023-11-16 18:17:03.9799600,4808,10\r\n" +
		"2023-11-16 18:17:04.0319600,3180,8\r\n" +
		"2023-11-16 18:17:05.4799600,110,27"
	d, err := ReadTrace(strings.NewReader(in), "az.csv", TraceOptions{Speedup: 2})
	if err != nil {
		t.Fatal(err)
	}
	want := []Request{
		{Index: 0, PromptTokens: 4808, OutputTokens: 10, OutputRecorded: true, Arrival: 0, HasArrival: true},
		{Index: 1, PromptTokens: 3180, OutputTokens: 8, OutputRecorded: true, Arrival: 26 * time.Millisecond, HasArrival: true},
		{Index: 2, PromptTokens: 110, OutputTokens: 27, OutputRecorded: true, Arrival: 750 * time.Millisecond, HasArrival: true},
	}
	var got []Request
	for i := range d.Len() {
		got = append(got, d.Shape(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shapes (-want +got):\n%s", diff)
	}
	r := d.Request(2)
	if n := (tokenize.Approx{}).Count(r.Prompt); n != 110 {
		t.Errorf("Count(Request(2).Prompt) = %d; want 110", n)
	}
}

func TestReadTraceWindow(t *testing.T) {
	// Arrivals at 0,1,2,3,4 s; window [1 s, 3 s) keeps 1 s and 2 s,
	// shifted to 0 and 1 s, then sped up 4× to 0 and 250 ms.
	in := "timestamp,input_tokens,output_tokens\n0,1,1\n1,2,2\n2,3,3\n3,4,4\n4,5,5\n"
	d, err := ReadTrace(strings.NewReader(in), "w.csv", TraceOptions{Speedup: 4, WindowStart: time.Second, WindowEnd: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 {
		t.Fatalf("Len() = %d; want 2", d.Len())
	}
	if a, b := d.Shape(0), d.Shape(1); a.PromptTokens != 2 || a.Arrival != 0 || b.PromptTokens != 3 || b.Arrival != 250*time.Millisecond {
		t.Errorf("Shape(0), Shape(1) = %+v, %+v; want 2 tokens at 0 and 3 tokens at 250ms", a, b)
	}
}

func TestReadTraceJSONLFormats(t *testing.T) {
	tests := []struct {
		name, in string
		want     []Request
	}{
		{
			name: "mooncake",
			in: `{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}` + "\n" +
				`{"timestamp": 1500, "input_length": 700, "output_length": 6, "hash_ids": [0, 2]}`,
			want: []Request{
				{Index: 0, PromptTokens: 600, OutputTokens: 5, OutputRecorded: true, HasArrival: true, BlockHashes: []uint64{0, 1}, HashBlockTokens: 512},
				{Index: 1, PromptTokens: 700, OutputTokens: 6, OutputRecorded: true, Arrival: 1500 * time.Millisecond, HasArrival: true, BlockHashes: []uint64{0, 2}, HashBlockTokens: 512},
			},
		},
		{
			name: "vllm timed trace",
			in:   `{"timestamp": 100, "queries": [{"prompt_length": 9, "response_length": 4}, {"prompt_length": 8, "response_length": 3}]}` + "\n" + `{"timestamp": 350, "queries": [{"prompt_length": 7, "response_length": 2}]}`,
			want: []Request{
				{Index: 0, PromptTokens: 9, OutputTokens: 4, OutputRecorded: true, HasArrival: true},
				{Index: 1, PromptTokens: 8, OutputTokens: 3, OutputRecorded: true, HasArrival: true},
				{Index: 2, PromptTokens: 7, OutputTokens: 2, OutputRecorded: true, Arrival: 250 * time.Millisecond, HasArrival: true},
			},
		},
		{
			name: "llmservingsim requests",
			in: `{"request_id": "bench-0", "input_toks": 2358, "output_toks": 531, "arrival_time": 1777142838.338653, "queued_ts": 1}` + "\n" +
				`{"request_id": "bench-1", "input_toks": 1034, "output_toks": 769, "arrival_time": 1777142838.6237123}`,
			// 0.6237123 − 0.338653 = 0.2850593 s, within float64 rounding of epoch seconds.
			want: []Request{
				{Index: 0, PromptTokens: 2358, OutputTokens: 531, OutputRecorded: true, HasArrival: true},
				{Index: 1, PromptTokens: 1034, OutputTokens: 769, OutputRecorded: true, Arrival: 285059300 * time.Nanosecond, HasArrival: true},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := ReadTrace(strings.NewReader(tt.in), "t.jsonl", TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			var got []Request
			for i := range d.Len() {
				got = append(got, d.Shape(i))
			}
			// Epoch seconds in float64 carry ~0.2 µs of rounding.
			approx := cmp.Comparer(func(a, b time.Duration) bool { return (a - b).Abs() < time.Microsecond })
			if diff := cmp.Diff(tt.want, got, approx); diff != "" {
				t.Errorf("shapes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadTraceErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
		o              TraceOptions
	}{
		{"empty", "", "t: no data rows", TraceOptions{}},
		{"header only", "TIMESTAMP,ContextTokens,GeneratedTokens\r\n", "t: no data rows", TraceOptions{}},
		{"wrong columns", "TIMESTAMP,Foo,Bar\n1,2,3", "t:1: header TIMESTAMP,Foo,Bar lacks", TraceOptions{}},
		{"short row", "timestamp,input_tokens,output_tokens\n1,2,3\n2,3\n", "t:3: 2 fields; want 3", TraceOptions{}},
		{"non-numeric tokens", "timestamp,input_tokens,output_tokens\n1,2,3\n2,x,3\n", "t:3: prompt tokens: \"x\" is not a token count", TraceOptions{}},
		{"bad time", "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,1,1", "t:2: timestamp \"yesterday\"", TraceOptions{}},
		{"unsorted csv", "timestamp,input_tokens,output_tokens\n5,1,1\n4,1,1\n", "t:3: timestamp goes back in time", TraceOptions{}},
		{"unsorted jsonl", `{"timestamp": 10, "input_length": 1, "output_length": 1}` + "\n\n" + `{"timestamp": 5, "input_length": 1, "output_length": 1}`, "t:3: timestamp goes back", TraceOptions{}},
		{"jsonl missing time", `{"input_length": 1, "output_length": 1}`, "t:1: no \"timestamp\"", TraceOptions{}},
		{"jsonl missing length", `{"timestamp": 1, "output_length": 1}`, "t:1: no \"input_length\"", TraceOptions{}},
		{"jsonl fractional length", `{"timestamp": 1, "input_length": 1.5, "output_length": 1}`, "t:1: \"input_length\": \"1.5\" is not", TraceOptions{}},
		{"jsonl bad hash", `{"timestamp": 1, "input_length": 1, "output_length": 1, "hash_ids": [1.5]}`, "t:1: hash_ids: 1.5", TraceOptions{}},
		{"jsonl syntax", `{"timestamp": 1,`, "t:1: invalid JSON", TraceOptions{}},
		{"empty window", "timestamp,input_tokens,output_tokens\n0,1,1\n", "t: no requests in trace window", TraceOptions{WindowStart: time.Second}},
		{"bad window", "timestamp,input_tokens,output_tokens\n0,1,1\n", "trace window 2s:1s", TraceOptions{WindowStart: 2 * time.Second, WindowEnd: time.Second}},
		{"bad speedup", "timestamp,input_tokens,output_tokens\n0,1,1\n", "trace speed-up -1", TraceOptions{Speedup: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadTrace(strings.NewReader(tt.in), "t", tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadTrace(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestMooncakeSharedPrefixText(t *testing.T) {
	in := `{"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [7, 8, 9]}` + "\n" +
		`{"timestamp": 0, "input_length": 1300, "output_length": 5, "hash_ids": [7, 8, 10]}` + "\n" +
		`{"timestamp": 0, "input_length": 900, "output_length": 5, "hash_ids": [7, 11]}`
	d, err := ReadTrace(strings.NewReader(in), "m.jsonl", TraceOptions{Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	a, b, c := d.Request(0).Prompt, d.Request(1).Prompt, d.Request(2).Prompt
	for i, p := range []string{a, b, c} {
		if got, want := (tokenize.Approx{}).Count(p), d.Shape(i).PromptTokens; got != want {
			t.Errorf("Count(Request(%d).Prompt) = %d; want %d", i, got, want)
		}
	}
	// Blocks 7 and 8 (1024 tokens) are shared by a and b; only block 7 by c.
	if firstTokens(a, 1024) != firstTokens(b, 1024) {
		t.Errorf("requests 0 and 1 differ in their first 1024 tokens; want the text of blocks 7, 8 shared")
	}
	if firstTokens(a, 512) != firstTokens(c, 512) || firstTokens(a, 1024) == firstTokens(c, 1024) {
		t.Errorf("requests 0 and 2: want the first 512 tokens equal and the first 1024 different")
	}
	if firstTokens(a, 1100) == firstTokens(b, 1100) {
		t.Errorf("requests 0 and 1 share tokens 1024..1100; want blocks 9 and 10 different")
	}
}

func TestMooncakePrefixReuse(t *testing.T) {
	// The README of shared/data worked this out once: an unbounded cache
	// could serve 37.4 % of conversation_trace.jsonl's input tokens and
	// 65.1 % of synthetic_trace.jsonl's.
	tests := []struct {
		file string
		want float64
	}{
		{"mooncake-fast25/conversation_trace.jsonl", 0.374},
		{"mooncake-fast25/synthetic_trace.jsonl", 0.651},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := LoadTrace(dataFile(t, tt.file), TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := PrefixReuse(d, 0); math.Abs(got-tt.want) > 0.0005 {
				t.Errorf("PrefixReuse(%s) = %.4f; want %.3f", tt.file, got, tt.want)
			}
		})
	}
}

func TestSharedTraces(t *testing.T) {
	// Row counts and mean lengths from shared/data/README.md.
	tests := []struct {
		file            string
		n               int
		meanIn, meanOut float64
		spanAtLeastSecs float64
	}{
		{"azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv", 19366, 1154.7, 211.1, 3500},
		{"azure-llm-inference-2023/AzureLLMInferenceTrace_code.csv", 8819, 2047.8, 27.9, 3430},
		{"mooncake-fast25/conversation_trace.jsonl", 12031, 12035.1, 342.6, 3530},
		{"llmservingsim-vllm-validation/RTXPRO6000_Llama-3.1-8B/requests.jsonl", 300, 857.5, 652.5, 20},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			d, err := LoadTrace(dataFile(t, tt.file), TraceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			st := Describe(d, 0)
			if st.N != tt.n || math.Abs(st.Input.Mean-tt.meanIn) > 0.05 || math.Abs(st.Output.Mean-tt.meanOut) > 0.05 {
				t.Errorf("Describe = N %d, mean in %.1f, out %.1f; want %d, %.1f, %.1f", st.N, st.Input.Mean, st.Output.Mean, tt.n, tt.meanIn, tt.meanOut)
			}
			if last := d.Shape(d.Len() - 1).Arrival.Seconds(); last < tt.spanAtLeastSecs {
				t.Errorf("last arrival = %.1f s; want at least %.0f s", last, tt.spanAtLeastSecs)
			}
		})
	}
}

func TestAzureFirstMinuteSpeedup(t *testing.T) {
	// --trace-speedup 60 replays the trace's first hour in a minute: the
	// first minute of replay holds every request of the trace's first 3600 s.
	d, err := LoadTrace(dataFile(t, "azure-llm-inference-2023/AzureLLMInferenceTrace_conv.csv"), TraceOptions{Speedup: 60, WindowEnd: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 19366 {
		t.Errorf("Len() = %d; want all 19366 rows (the trace spans 3502 s)", d.Len())
	}
	if last := d.Shape(d.Len() - 1).Arrival; last > time.Minute || last < 58*time.Second {
		t.Errorf("last arrival = %v; want 3502 s / 60 = 58.4 s", last)
	}
}

func FuzzReadTrace(f *testing.F) {
	f.Add("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:17:03.9799600,4808,10\r\n2023-11-16 18:17:04.0319600,3180,8")
	f.Add(`{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}`)
	f.Add(`{"timestamp": 100, "queries": [{"prompt_length": 9, "response_length": 4}]}`)
	f.Add(`{"input_toks": 2358, "output_toks": 531, "arrival_time": 1777142838.338653}`)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadTrace(strings.NewReader(in), "t", TraceOptions{Speedup: 3})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "t") {
				t.Fatalf("ReadTrace error %q does not name the file", err)
			}
			return
		}
		var prev time.Duration
		for i := range d.Len() {
			s := d.Shape(i)
			if !s.HasArrival || s.Arrival < prev {
				t.Fatalf("Shape(%d) = %+v after %v; want sorted arrivals", i, s, prev)
			}
			prev = s.Arrival
			if s.PromptTokens < 0 || s.OutputTokens < 0 {
				t.Fatalf("Shape(%d) = %+v; want non-negative lengths", i, s)
			}
		}
	})
}
