package jobgraph

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// fuzzLoader checks a loader on any input: no panic; an error is one
// line naming the file and a line; jobs that load check, and the
// computations run on them.
func fuzzLoader(f *testing.F, l Loader, sample string, seeds ...string) {
	b, err := os.ReadFile(sample)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(b))
	for _, s := range seeds {
		f.Add(s)
	}
	oneLine := regexp.MustCompile(`^fuzz\.in:[1-9][0-9]*: [^\n]+$`)
	f.Fuzz(func(t *testing.T, in string) {
		jobs, err := l("fuzz.in", strings.NewReader(in))
		if err != nil {
			if !oneLine.MatchString(err.Error()) {
				t.Fatalf("error %q is not one line naming fuzz.in:LINE", err)
			}
			return
		}
		for i := range jobs {
			j := &jobs[i]
			if err := j.Check(); err != nil {
				t.Fatalf("loaded job does not check: %v", err)
			}
			if _, err := j.Plan(func(int) time.Duration { return time.Millisecond }); err != nil {
				t.Fatal(err)
			}
			if _, err := j.Prompts(); err != nil {
				t.Fatal(err)
			}
			if _, _, err := j.CacheHits(); err != nil {
				t.Fatal(err)
			}
		}
	})
}

func FuzzLoadWeka(f *testing.F) {
	fuzzLoader(f, LoadWeka, "testdata/weka.json",
		`{"requests":[{"type":"subagent","requests":[{"type":"s","in":1,"out":1,"t":1}]},{"type":"n","in":2,"out":0,"t":0}]}`,
		`{"requests":[{"type":"n","in":1,"out":1,"think_time":-1}]}`, "{", "")
}

func FuzzLoadTraceLab(f *testing.F) {
	fuzzLoader(f, LoadTraceLab, "testdata/tracelab.jsonl",
		`{"session_id":"s","round_index":3,"prefix_tokens":64,"newly_append_tokens":1}`, "\n\n{", "")
}

func FuzzLoadOTel(f *testing.F) {
	fuzzLoader(f, LoadOTel, "testdata/otel.json",
		`{"spans":[{"span_id":"a","name":"chat","start_time":1,"end_time":1},{"span_id":"b","name":"chat","start_time":1,"end_time":2,"attributes":{"gen_ai.input.messages":[{"role":"assistant","content":""}]}}]}`,
		`{"spans":[{"span_id":"a","parent_span_id":"a","name":"chat","start_time":0,"end_time":0}]}`, "{}",
		`{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"t","spanId":"a","name":"chat","startTimeUnixNano":"1","endTimeUnixNano":2,"attributes":[{"key":"gen_ai.usage.input_tokens","value":{"intValue":"7"}}]}]}]}]}`)
}

func FuzzLoadOTLP(f *testing.F) {
	fuzzLoader(f, LoadOTel, "testdata/otlp.json",
		`{"resourceSpans":[{"instrumentationLibrarySpans":[{"spans":[{"spanId":"a","parentSpanId":null,"name":"chat x","startTimeUnixNano":"0"}]}]}]}`, "{\"resourceSpans\":[", "")
}
