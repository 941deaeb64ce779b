package wire

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// split is one Feed's result.
type split struct{ Visible, Hidden int }

func TestThinkSplitter(t *testing.T) {
	tests := []struct {
		name        string
		startHidden bool
		chunks      []string
		want        []split // one per chunk
	}{
		{
			name:   "no think",
			chunks: []string{"Hello", " world"},
			want:   []split{{5, 0}, {6, 0}},
		},
		{
			// "<think>"=7 + "a b"=3 hidden; "</think>"=8 + "\n\n"=2 hidden; "Hi"=2 visible
			name:   "whole tags",
			chunks: []string{"<think>", "a b", "</think>", "\n\n", "Hi"},
			want:   []split{{0, 7}, {0, 3}, {0, 8}, {0, 2}, {2, 0}},
		},
		{
			// "<thi" 4 hidden (maybe a tag), "nk>" 3 hidden; "x</th" 5
			// hidden; "ink> ok": "ink>" 4 + " " 1 hidden, "ok" 2 visible
			name:   "tags split across chunks",
			chunks: []string{"<thi", "nk>", "x</th", "ink> ok"},
			want:   []split{{0, 4}, {0, 3}, {0, 5}, {2, 5}},
		},
		{
			// "\n " 2 hidden at once, then "<think>" 7 hidden
			name:   "leading whitespace then think",
			chunks: []string{"\n ", "<think>r</think>A"},
			want:   []split{{0, 2}, {1, 7 + 1 + 8}},
		},
		{
			name:   "leading whitespace is hidden even without think",
			chunks: []string{"\n\n", "Hello"},
			want:   []split{{0, 2}, {5, 0}},
		},
		{
			// "<th" 3 hidden for now; "e" breaks it: "<the" 4 + "y" 1
			// visible, and the 3 move out of hidden
			name:   "not a tag after all",
			chunks: []string{"<th", "ey"},
			want:   []split{{0, 3}, {5, -3}},
		},
		{
			name:   "think later in the answer is visible",
			chunks: []string{"A", " <think>b</think>"},
			want:   []split{{1, 0}, {17, 0}},
		},
		{
			name:   "second think after the first section is visible",
			chunks: []string{"<think>a</think>", "<think>b</think>"},
			want:   []split{{0, 16}, {16, 0}},
		},
		{
			name:   "unclosed section stays hidden",
			chunks: []string{"<think>", "still thinking"},
			want:   []split{{0, 7}, {0, 14}},
		},
		{
			// "<</think>" inside: the second '<' restarts the close match
			name:   "close tag after a stray <",
			chunks: []string{"<think>a<</think>b"},
			want:   []split{{1, 7 + 1 + 1 + 8}},
		},
		{
			name:   "response that is only a tag prefix stays hidden",
			chunks: []string{"<thin"},
			want:   []split{{0, 5}},
		},
		{
			// DeepSeek-R1 style: the template opened the section
			name:        "start hidden",
			startHidden: true,
			chunks:      []string{"reason", "</think>", "\nA"},
			want:        []split{{0, 6}, {0, 8}, {1, 1}},
		},
		{
			name:   "empty chunks",
			chunks: []string{"", "<think>", "", "x"},
			want:   []split{{0, 0}, {0, 7}, {0, 0}, {0, 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ThinkSplitter{StartHidden: tt.startHidden}
			var got []split
			for _, c := range tt.chunks {
				v, h := s.Feed([]byte(c))
				got = append(got, split{v, h})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Feed(%q) mismatch (-want +got):\n%s", tt.chunks, diff)
			}
		})
	}
}

// thinkRef classifies a whole response at once, straight from the rules in
// the ThinkSplitter doc comment.
func thinkRef(s string, startHidden bool) (visible, hidden int) {
	rest := s
	hidden = 0
	if !startHidden {
		body := strings.TrimLeft(rest, " \t\r\n")
		hidden += len(rest) - len(body)
		rest = body
		if strings.HasPrefix(openTag, rest) && len(rest) < len(openTag) {
			return 0, hidden + len(rest) // ended inside a possible tag
		}
		if !strings.HasPrefix(rest, openTag) {
			return len(rest), hidden
		}
	}
	i := strings.Index(rest, closeTag)
	if i < 0 {
		return 0, hidden + len(rest)
	}
	hidden += i + len(closeTag)
	rest = rest[i+len(closeTag):]
	answer := strings.TrimLeft(rest, " \t\r\n")
	hidden += len(rest) - len(answer)
	return len(answer), hidden
}

// checkThink feeds s in the given pieces and compares with thinkRef; it
// also checks that every Feed accounts for exactly the bytes it was given.
func checkThink(t *testing.T, s string, cuts []int, startHidden bool) {
	t.Helper()
	sp := ThinkSplitter{StartHidden: startHidden}
	var vis, hid, prev int
	for _, c := range append(cuts, len(s)) {
		v, h := sp.Feed([]byte(s[prev:c]))
		if v < 0 || v+h != c-prev || hid+h < 0 {
			t.Fatalf("Feed(%q) after %q = %d, %d; want visible ≥ 0, sum %d, hidden total ≥ 0", s[prev:c], s[:prev], v, h, c-prev)
		}
		vis, hid, prev = vis+v, hid+h, c
	}
	wantV, wantH := thinkRef(s, startHidden)
	if vis != wantV || hid != wantH {
		t.Fatalf("ThinkSplitter(%q, cuts %v, startHidden %v) = %d visible, %d hidden; want %d, %d",
			s, cuts, startHidden, vis, hid, wantV, wantH)
	}
}

func TestThinkSplitterRandom(t *testing.T) {
	pieces := []string{"<think>", "</think>", "<", "</", "<th", "ink>", "think", ">", " ", "\n", "a", "é"}
	rng := rand.New(rand.NewPCG(5, 8))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(8) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		var cuts []int
		for i := 1; i < len(s); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		checkThink(t, s, cuts, rng.IntN(4) == 0)
	}
}

func FuzzThinkSplitter(f *testing.F) {
	f.Add("<think>abc</think>\n\nanswer", uint64(1), false)
	f.Add("  <thi", uint64(2), false)
	f.Add("r</think>a", uint64(3), true)
	f.Fuzz(func(t *testing.T, s string, seed uint64, startHidden bool) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var cuts []int
		for i := 1; i < len(s); i++ {
			if rng.IntN(3) == 0 {
				cuts = append(cuts, i)
			}
		}
		checkThink(t, s, cuts, startHidden)
	})
}
