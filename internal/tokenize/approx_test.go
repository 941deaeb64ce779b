package tokenize

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestApproxCount(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"spaces only", " \t\r\n ", 0},
		{"one short word", "the", 1},
		{"five letters is one", "token", 1},
		{"six letters is two", "tokens", 2},
		// "approximation" is 13 letters: 5+5+3 → 3 pieces.
		{"long word", "approximation", 3},
		// "Hello" 1, "," 1, "world" 1, "!" 1.
		{"punctuation", "Hello, world!", 4},
		// "12345" → "123","45"; "7" → 1.
		{"digits in threes", "12345 7", 3},
		// "abc" 1, "123" 1: letters and digits are separate runs.
		{"letters then digits", "abc123", 2},
		// Two Han characters, one each.
		{"cjk", "中文", 2},
		// "café" is 4 letters (runes) → 1.
		{"accented letters", "café", 1},
		// "🙂" is a symbol → 1.
		{"emoji", "🙂", 1},
		{"non-breaking space is free", "a\u00a0b", 2},
		{"invalid utf8 byte is one token", "\xff", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Approx{}).Count(tt.in); got != tt.want {
				t.Errorf("Count(%q) = %d; want %d", tt.in, got, tt.want)
			}
			if got := len((Approx{}).Encode(tt.in)); got != tt.want {
				t.Errorf("len(Encode(%q)) = %d; want %d", tt.in, got, tt.want)
			}
		})
	}
}

func TestApproxWordsAreOneToken(t *testing.T) {
	if len(words) < 200 {
		t.Fatalf("len(words) = %d; want at least 200 for varied prompts", len(words))
	}
	for i, w := range words {
		if got := (Approx{}).Count(w); got != 1 {
			t.Errorf("Count(%q) = %d; want 1", w, got)
		}
		if got := (Approx{}).Encode(w); len(got) != 1 || got[0] != i {
			t.Errorf("Encode(%q) = %v; want [%d]", w, got, i)
		}
	}
}

func TestApproxSynthesizeExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 3, 7, 17, 100, 1000, 4097} {
		s := (Approx{}).Synthesize(n, rng)
		if got := (Approx{}).Count(s); got != n {
			t.Errorf("Count(Synthesize(%d)) = %d; want %d", n, got, n)
		}
		if strings.TrimSpace(s) != s {
			t.Errorf("Synthesize(%d) has leading or trailing space: %q", n, s)
		}
	}
}

func TestApproxAdditive(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	a := (Approx{}).Synthesize(13, rng)
	b := (Approx{}).Synthesize(29, rng)
	if got := (Approx{}).Count(a + " " + b); got != 42 {
		t.Errorf("Count(a+\" \"+b) = %d; want 13+29 = 42", got)
	}
}

func TestApproxSynthesizeDeterministic(t *testing.T) {
	a := (Approx{}).Synthesize(500, rand.New(rand.NewPCG(7, 7)))
	b := (Approx{}).Synthesize(500, rand.New(rand.NewPCG(7, 7)))
	if a != b {
		t.Errorf("Synthesize(500) with equal seeds differs")
	}
}

func TestApproxDecodeCount(t *testing.T) {
	ids := []int{0, 5, len(words) + 3, approxIDSpace - 1, -4}
	s := (Approx{}).Decode(ids)
	if got := (Approx{}).Count(s); got != len(ids) {
		t.Errorf("Count(Decode(%v)) = %d; want %d", ids, got, len(ids))
	}
	enc := (Approx{}).Encode("the of and")
	if got := (Approx{}).Decode(enc); got != "the of and" {
		t.Errorf("Decode(Encode(%q)) = %q; want it back", "the of and", got)
	}
}

func FuzzApproxCount(f *testing.F) {
	f.Add("Hello, world! 12345 中文 café")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		n := (Approx{}).Count(s)
		if n < 0 || n > len(s) {
			t.Fatalf("Count(%q) = %d; want 0..%d", s, n, len(s))
		}
		if got := len((Approx{}).Encode(s)); got != n {
			t.Fatalf("len(Encode(%q)) = %d; want Count = %d", s, got, n)
		}
		if got := (Approx{}).Count(s + " " + s); got != 2*n {
			t.Fatalf("Count(s+\" \"+s) = %d; want 2*%d", got, n)
		}
	})
}

func BenchmarkApproxSynthesize1000(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	for b.Loop() {
		(Approx{}).Synthesize(1000, rng)
	}
}

func BenchmarkApproxCount1000(b *testing.B) {
	s := (Approx{}).Synthesize(1000, rand.New(rand.NewPCG(1, 1)))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		(Approx{}).Count(s)
	}
}

func TestCalibration(t *testing.T) {
	cases := []struct {
		name       string
		c          Calibration
		n, written int
		span, ws   int
	}{
		// (1005 − 5) / 1.25 = 800; a 100-token span: 100 / 1.25 = 80.
		{"overhead and ratio", Calibration{Overhead: 5, PerToken: 1.25}, 1005, 800, 100, 80},
		// Identity.
		{"zero", Calibration{}, 1000, 1000, 100, 100},
		// A chat template of 12 tokens and an exact tokenizer: 1000 − 12.
		{"overhead only", Calibration{Overhead: 12, PerToken: 1}, 1000, 988, 100, 100},
		// Never below one token for a non-empty prompt: (3 − 12) → 1.
		{"tiny", Calibration{Overhead: 12, PerToken: 1}, 3, 1, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.c.Written(c.n); got != c.written {
				t.Errorf("Written(%d) = %d; want %d", c.n, got, c.written)
			}
			if got := c.c.WrittenSpan(c.span); got != c.ws {
				t.Errorf("WrittenSpan(%d) = %d; want %d", c.span, got, c.ws)
			}
		})
	}
}
