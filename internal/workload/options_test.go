package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/tokenize"
)

func TestFromOptionsDeterministic(t *testing.T) {
	// Same flags + seed → byte-identical request sequences, for every kind.
	dir := t.TempDir()
	trace := filepath.Join(dir, "t.jsonl")
	os.WriteFile(trace, []byte(`{"timestamp": 0, "input_length": 600, "output_length": 5, "hash_ids": [0, 1]}
{"timestamp": 2000, "input_length": 700, "output_length": 6, "hash_ids": [0, 2]}`), 0o600)
	tests := []struct {
		name string
		o    Options
	}{
		{"random", Options{NumPrompts: 20, Seed: 3, RandomInputLen: 100, RandomRangeRatio: 0.5, RandomPrefixLen: 10}},
		{"random dists", Options{NumPrompts: 20, Seed: 3, InputLenDist: "lognormal:p50=100,p99=900", OutputLenDist: "normal:50,10"}},
		{"prefix-repetition", Options{DatasetName: "prefix-repetition", NumPrompts: 20, Seed: 3, PrefixRepetitionPrefixLen: 30, PrefixRepetitionSuffixLen: 5}},
		{"trace shared bust", Options{DatasetName: "trace", DatasetPath: trace, Seed: 3, TraceSpeedup: 2, SharedPrefixLen: 40, NumPrefixes: 2, CacheBust: true}},
		{"random tiktoken", Options{NumPrompts: 5, Seed: 3, RandomInputLen: 300, Tokenizer: "tiktoken:cl100k_base"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := FromOptions(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := FromOptions(tt.o)
			tok, _ := tokenize.Load(tt.o.Tokenizer)
			for i := range a.Len() {
				ra, rb := a.Request(i), b.Request(i)
				if !reflect.DeepEqual(ra, rb) {
					t.Fatalf("Request(%d) differs between two builds from the same options", i)
				}
				if got := tok.Count(ra.Prompt); got != ra.PromptTokens {
					t.Errorf("Count(Request(%d).Prompt) = %d; want PromptTokens %d", i, got, ra.PromptTokens)
				}
			}
			o := tt.o
			o.Seed++
			c, _ := FromOptions(o)
			if c.Request(0).Prompt == a.Request(0).Prompt {
				t.Errorf("seeds %d and %d gave the same first prompt; want different", tt.o.Seed, o.Seed)
			}
		})
	}
}

func TestFromOptionsTrace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "az.csv")
	os.WriteFile(p, []byte("TIMESTAMP,ContextTokens,GeneratedTokens\r\n2023-11-16 18:00:00.0,5,1\r\n2023-11-16 18:00:30.0,6,1\r\n2023-11-16 18:01:30.0,7,1"), 0o600)
	// Window 10 s..100 s keeps the 30 s and 90 s rows, shifted by 10 s and
	// sped up 10×: arrivals at 2 s and 8 s.
	d, err := FromOptions(Options{DatasetName: "trace", DatasetPath: p, TraceSpeedup: 10, TraceWindow: "10:100"})
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 || d.Shape(0).Arrival != 2*time.Second || d.Shape(1).Arrival != 8*time.Second {
		t.Errorf("Len %d, arrivals %v, %v; want 2 at 2s and 8s", d.Len(), d.Shape(0).Arrival, d.Shape(1).Arrival)
	}
}

func TestFromOptionsErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"prompt\": \"a\"}\n{oops\n"), 0o600)
	tests := []struct {
		name string
		o    Options
		want string
	}{
		{"unknown dataset", Options{DatasetName: "burst"}, "--dataset-name \"burst\""},
		{"no path", Options{DatasetName: "custom"}, "--dataset-path: required"},
		{"bad file line", Options{DatasetName: "custom", DatasetPath: bad}, "bad.jsonl:2:"},
		{"missing file", Options{DatasetName: "lengths", DatasetPath: filepath.Join(dir, "none.csv")}, "none.csv"},
		{"bad dist", Options{InputLenDist: "gauss:3"}, "--input-len-dist"},
		{"bad output dist", Options{OutputLenDist: "uniform:9,1"}, "--output-len-dist"},
		{"bad ratio", Options{RandomRangeRatio: 1.5}, "--random-range-ratio 1.5"},
		{"bad window", Options{DatasetName: "trace", DatasetPath: bad, TraceWindow: "5:1"}, "--trace-window \"5:1\""},
		{"bad speedup", Options{DatasetName: "trace", DatasetPath: bad, TraceSpeedup: -2}, "--trace-speedup -2"},
		{"bad tokenizer", Options{Tokenizer: filepath.Join(dir, "nope")}, "--tokenizer: "},
		{"bad prefixes", Options{SharedPrefixLen: 5, NumPrefixes: -1}, "--num-prefixes"},
		{"negative prompts", Options{NumPrompts: -1}, "--num-prompts -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromOptions(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromOptions(%+v) error = %v; want it to contain %q", tt.o, err, tt.want)
			}
		})
	}
}

// BenchmarkRandom100kExactTiktoken builds 100,000 random-dataset prompts of
// 100..1900 (mean 1000) exact o200k tokens.
func BenchmarkRandom100kExactTiktoken(b *testing.B) {
	d, err := FromOptions(Options{NumPrompts: 100000, RandomInputLen: 1000, RandomRangeRatio: 0.9, Tokenizer: "tiktoken:o200k_base"})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for i := range d.Len() {
			d.Request(i)
		}
	}
}

func TestFromOptionsCalibration(t *testing.T) {
	// The server counts 1.25 of its tokens per written token plus 5: asking
	// for 1005 must write (1005−5)/1.25 = 800 Approx tokens, and the
	// request still says 1005 (what the server should count).
	cal := tokenize.Calibration{Overhead: 5, PerToken: 1.25}
	ds, err := FromOptions(Options{NumPrompts: 3, Seed: 1, RandomInputLen: 1005, RandomOutputLen: 8, Calibration: cal})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r := ds.Request(i)
		if r.PromptTokens != 1005 {
			t.Errorf("Request(%d).PromptTokens = %d; want 1005", i, r.PromptTokens)
		}
		if got := (tokenize.Approx{}).Count(r.Prompt); got != 800 {
			t.Errorf("Request(%d) wrote %d tokens; want 800", i, got)
		}
	}
}
