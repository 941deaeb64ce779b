package simvalidate

import (
	"errors"
	"strings"
	"testing"
)

// oneLineInputError fails t unless err is nil or an *InputError of one
// line.
func oneLineInputError(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	var ie *InputError
	if !errors.As(err, &ie) {
		t.Fatalf("error %T %v; want an *InputError", err, err)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %q spans lines; want one", err)
	}
}

// FuzzReadPoints feeds arbitrary CSVs to the points parser: no panic,
// every error one line naming the file, every row's line within the file.
func FuzzReadPoints(f *testing.F) {
	f.Add([]byte("name,isl,osl,concurrency,mean_ttft_ms\np,512,64,4,100\n"))
	f.Add([]byte("isl,osl,rate,p99_tpot_ms,gpu,tp\n1,2,3,4,h100-sxm,2\n# comment\n"))
	f.Add([]byte("\"a\nb\",x\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, rows, lines, err := ReadPoints("fuzz.csv", b)
		oneLineInputError(t, err)
		if err == nil && len(rows) != len(lines) {
			t.Fatalf("%d rows, %d lines", len(rows), len(lines))
		}
		if err == nil {
			n := strings.Count(string(b), "\n") + 1
			for _, l := range lines {
				if l < 2 || l > n {
					t.Fatalf("row line %d outside 2…%d", l, n)
				}
			}
		}
	})
}

// FuzzReadTruth feeds arbitrary LLMServingSim run files and means files
// to their readers: no panic, every error one line.
func FuzzReadTruth(f *testing.F) {
	f.Add([]byte(`{"request_id":0,"arrival_time":0.1,"input_toks":5,"output_toks":3,"queued_ts":1,"first_token_ts":1.5,"last_token_ts":2}` + "\n"))
	f.Add([]byte("framework\tthroughput_tok_s\tmean_ttft_ms\tmean_tpot_ms\nvLLM\t1\tX\t2\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := readServingSim("fuzz.jsonl", b)
		oneLineInputError(t, err)
		s := &Spec{Workload: "/nonexistent/requests.jsonl"}
		_, err = s.readMeans("fuzz.tsv", "fuzz.tsv", b)
		oneLineInputError(t, err)
	})
}
