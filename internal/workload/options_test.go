package workload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/setting"
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
		name  string
		o     Options
		field string // the OptionError's Field; "" for an error in a file
		want  string
	}{
		{"unknown dataset", Options{DatasetName: "burst"}, "DatasetName", "dataset name \"burst\": want random"},
		{"no path", Options{DatasetName: "custom"}, "DatasetPath", "dataset path: required for the custom dataset"},
		{"bad file line", Options{DatasetName: "custom", DatasetPath: bad}, "", "bad.jsonl:2:"},
		{"missing file", Options{DatasetName: "lengths", DatasetPath: filepath.Join(dir, "none.csv")}, "", "none.csv"},
		{"bad dist", Options{InputLenDist: "gauss:3"}, "InputLenDist", "input length distribution: "},
		{"bad output dist", Options{OutputLenDist: "uniform:9,1"}, "OutputLenDist", "output length distribution: "},
		{"negative input len", Options{RandomInputLen: -1}, "RandomInputLen", "random input length -1: must not be negative"},
		{"negative output len", Options{RandomOutputLen: -2}, "RandomOutputLen", "random output length -2: must not be negative"},
		{"bad ratio", Options{RandomRangeRatio: 1.5}, "RandomRangeRatio", "random range ratio 1.5: must be in [0, 1)"},
		{"negative prefix len", Options{RandomPrefixLen: -3}, "RandomPrefixLen", "random prefix length -3"},
		{"bad window", Options{DatasetName: "trace", DatasetPath: bad, TraceWindow: "5:1"}, "TraceWindow", "trace window \"5:1\": want START:END"},
		{"bad speedup", Options{DatasetName: "trace", DatasetPath: bad, TraceSpeedup: -2}, "TraceSpeedup", "trace speedup -2: want a positive number"},
		{"bad tokenizer", Options{Tokenizer: filepath.Join(dir, "nope")}, "Tokenizer", "tokenizer: "},
		{"negative shared prefix", Options{SharedPrefixLen: -1}, "SharedPrefixLen", "shared prefix length -1"},
		{"bad prefixes", Options{SharedPrefixLen: 5, NumPrefixes: -1}, "NumPrefixes", "number of prefixes: "},
		{"negative prompts", Options{NumPrompts: -1}, "NumPrompts", "number of prompts -1: must not be negative"},
		{"negative repetition suffix", Options{DatasetName: "prefix-repetition", PrefixRepetitionSuffixLen: -4}, "PrefixRepetitionSuffixLen", "prefix-repetition suffix length -4"},
		{"negative repetition prefixes", Options{DatasetName: "prefix-repetition", PrefixRepetitionNumPrefixes: -1}, "PrefixRepetitionNumPrefixes", "prefix-repetition number of prefixes -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := FromOptions(tt.o)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("FromOptions(%+v) error = %v; want it to contain %q", tt.o, err, tt.want)
			}
			if msg := fmt.Sprint(err); strings.Contains(msg, "--") {
				t.Errorf("FromOptions(%+v) error = %q; want no flag names in it", tt.o, err)
			}
			var oe *OptionError
			switch {
			case tt.field == "" && errors.As(err, &oe):
				t.Errorf("FromOptions(%+v) error = %#v; want an error in the file, not an OptionError", tt.o, oe)
			case tt.field != "" && (!errors.As(err, &oe) || oe.Field != tt.field):
				t.Errorf("FromOptions(%+v) error = %v; want an OptionError on %s", tt.o, err, tt.field)
			}
		})
	}
}

func TestOptionError(t *testing.T) {
	sentinel := errors.New("boom")
	tests := []struct {
		name string
		err  *OptionError
		want string
	}{
		{"int", &OptionError{Field: "RandomInputLen", Value: -1, Err: errors.New("must not be negative")}, "random input length -1: must not be negative"},
		{"float", &OptionError{Field: "TraceSpeedup", Value: -0.5, Err: errors.New("want a positive number")}, "trace speedup -0.5: want a positive number"},
		{"string", &OptionError{Field: "TraceWindow", Value: "5:1", Err: errors.New("want START:END")}, "trace window \"5:1\": want START:END"},
		{"no value", &OptionError{Field: "Tokenizer", Err: sentinel}, "tokenizer: boom"},
		{"unknown field", &OptionError{Field: "Other", Err: sentinel}, "Other: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("Error() = %q; want %q", got, tt.want)
			}
			wrapped := fmt.Errorf("context: %w", tt.err)
			var oe *OptionError
			if !errors.As(wrapped, &oe) || oe != tt.err {
				t.Errorf("errors.As(%v) = %v; want the OptionError", wrapped, oe)
			}
			var se *setting.Error
			if !errors.As(wrapped, &se) || se.Field != tt.err.Field || se.Value != tt.err.ValueText() {
				t.Errorf("errors.As(%v) = %v; want a setting.Error on %s", wrapped, se, tt.err.Field)
			}
			if !errors.Is(wrapped, tt.err.Err) {
				t.Errorf("errors.Is(%v, %v) = false; want true through Unwrap", wrapped, tt.err.Err)
			}
		})
	}
	// Every field named in optionNames is a field of Options.
	typ := reflect.TypeFor[Options]()
	for f := range optionNames {
		if _, ok := typ.FieldByName(f); !ok {
			t.Errorf("optionNames[%q]: Options has no such field", f)
		}
	}
	// A tokenizer that cannot be opened keeps the file error inside.
	_, err := FromOptions(Options{Tokenizer: filepath.Join(t.TempDir(), "none", "tokenizer.json")})
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Field != "Tokenizer" || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("FromOptions(missing tokenizer) = %v; want an OptionError on Tokenizer wrapping fs.ErrNotExist", err)
	}
}

// BenchmarkRandom100kExactTiktoken builds 100,000 random-dataset prompts of
// 100..1900 (mean 1000) exact o200k tokens.
func BenchmarkRandom100kExactTiktoken(b *testing.B) {
	d, err := FromOptions(Options{NumPrompts: perfgoal.Size(100000, 100), RandomInputLen: 1000, RandomRangeRatio: 0.9, Tokenizer: "tiktoken:o200k_base"})
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
