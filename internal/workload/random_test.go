package workload

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/google/go-cmp/cmp"
)

func TestRandomLengthRanges(t *testing.T) {
	// vLLM: input in [floor(100*0.75), ceil(100*1.25)] = [75, 125];
	// output in [floor(10*0.75), ceil(10*1.25)] = [7, 13]; plus a 20-token prefix.
	d, err := NewRandom(RandomConfig{InputLen: 100, OutputLen: 10, RangeRatio: 0.25, PrefixLen: 20, NumPrompts: 2000, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	seenIn, seenOut := map[int]bool{}, map[int]bool{}
	for i := range d.Len() {
		r := d.Shape(i)
		if r.PromptTokens < 95 || r.PromptTokens > 145 {
			t.Fatalf("Shape(%d).PromptTokens = %d; want 20+[75,125]", i, r.PromptTokens)
		}
		if r.OutputTokens < 7 || r.OutputTokens > 13 {
			t.Fatalf("Shape(%d).OutputTokens = %d; want [7,13]", i, r.OutputTokens)
		}
		seenIn[r.PromptTokens], seenOut[r.OutputTokens] = true, true
	}
	// 2000 draws over 51 values: every value appears (P(miss) ≈ 51·e^-39).
	if len(seenIn) != 51 || len(seenOut) != 7 {
		t.Errorf("distinct lengths: input %d, output %d; want 51 and 7 (all of each range)", len(seenIn), len(seenOut))
	}
}

func TestRandomExactAndShared(t *testing.T) {
	d, err := NewRandom(RandomConfig{InputLen: 300, OutputLen: 10, RangeRatio: 0.5, PrefixLen: 37, NumPrompts: 50, Seed: 9})
	if err != nil {
		t.Fatal(err)
	}
	var prefix string
	for i := range d.Len() {
		r := d.Request(i)
		if got := (tokenize.Approx{}).Count(r.Prompt); got != r.PromptTokens {
			t.Errorf("Count(Request(%d).Prompt) = %d; want PromptTokens %d", i, got, r.PromptTokens)
		}
		s := d.Shape(i)
		r.Prompt = ""
		if diff := cmp.Diff(s, r); diff != "" {
			t.Errorf("Shape(%d) differs from Request(%d) without text (-shape +request):\n%s", i, i, diff)
		}
		p := firstTokens(d.Request(i).Prompt, 37)
		if i == 0 {
			prefix = p
		} else if p != prefix {
			t.Errorf("Request(%d) first 37 tokens = %q; want the shared prefix %q", i, p, prefix)
		}
	}
	// The two-block (32-token) prefix is shared in BlockHashes; block 2
	// (tokens 32..47) straddles the prefix end, so it is not.
	a, b := d.Shape(0), d.Shape(1)
	if a.BlockHashes[1] != b.BlockHashes[1] || a.BlockHashes[2] == b.BlockHashes[2] {
		t.Errorf("BlockHashes[1:3] = %v and %v; want [1] equal, [2] different", a.BlockHashes[1:3], b.BlockHashes[1:3])
	}
}

// firstTokens returns the text of the first n Approx tokens of s, which
// for synthesized text are whitespace-separated words and periods.
func firstTokens(s string, n int) string {
	var out []string
	for _, w := range strings.Fields(s) {
		if n <= 0 {
			break
		}
		if strings.HasSuffix(w, ".") && n >= 2 {
			out = append(out, w)
			n -= 2
			continue
		}
		out = append(out, strings.TrimSuffix(w, "."))
		n--
	}
	return strings.Join(out, " ")
}

func TestRandomDeterministic(t *testing.T) {
	cfg := RandomConfig{InputLen: 64, OutputLen: 16, RangeRatio: 0.3, NumPrompts: 100, Seed: 5}
	a, _ := NewRandom(cfg)
	b, _ := NewRandom(cfg)
	// Build b backwards: order must not matter.
	got := make([]Request, 100)
	for i := 99; i >= 0; i-- {
		got[i] = b.Request(i)
	}
	for i := range 100 {
		if diff := cmp.Diff(a.Request(i), got[i]); diff != "" {
			t.Fatalf("Request(%d) differs between equal configs:\n%s", i, diff)
		}
	}
	cfg.Seed = 6
	c, _ := NewRandom(cfg)
	if c.Request(0).Prompt == a.Request(0).Prompt {
		t.Errorf("seeds 5 and 6 gave the same prompt 0; want different")
	}
}

func TestNewRandomErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  RandomConfig
		want string
	}{
		{"no prompts", RandomConfig{InputLen: 1, OutputLen: 1}, "number of prompts 0"},
		{"ratio 1", RandomConfig{InputLen: 1, OutputLen: 1, NumPrompts: 1, RangeRatio: 1}, "range ratio 1"},
		{"negative input", RandomConfig{InputLen: -1, OutputLen: 1, NumPrompts: 1}, "input length"},
		{"negative prefix", RandomConfig{InputLen: 1, OutputLen: 1, NumPrompts: 1, PrefixLen: -2}, "prefix length -2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRandom(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewRandom(%+v) error = %v; want it to contain %q", tt.cfg, err, tt.want)
			}
		})
	}
}

func BenchmarkRandomShape(b *testing.B) {
	d, _ := NewRandom(RandomConfig{InputLen: 1000, OutputLen: 100, RangeRatio: 0.5, PrefixLen: 100, NumPrompts: 1000, Seed: 1})
	i := 0
	for b.Loop() {
		d.Shape(i % 1000)
		i++
	}
}

func BenchmarkRandomRequest1000(b *testing.B) {
	d, _ := NewRandom(RandomConfig{InputLen: 1000, OutputLen: 100, NumPrompts: 1000, Seed: 1})
	i := 0
	for b.Loop() {
		d.Request(i % 1000)
		i++
	}
}
