package publish

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

const ms = int64(1e6)

// story is six one-token pieces, one every 10 ms from 100 ms: two
// sentences ("The cat sat." at 120 ms, "It ran!" at 140 ms) and a word.
func story() []Piece {
	words := []string{" The", " cat", " sat.", " It", " ran!", " Done"}
	out := make([]Piece, len(words))
	for i, w := range words {
		out[i] = Piece{T: (100 + 10*int64(i)) * ms, Tokens: 1, Text: w}
	}
	return out
}

// rel is a release at t ms of n tokens.
type rel struct {
	t int64
	n int
}

func shape(ps []Piece) []rel {
	out := make([]rel, len(ps))
	for i, p := range ps {
		out[i] = rel{p.T / ms, p.Tokens}
	}
	return out
}

func TestReleaseByHand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		policy, moderation string
		want               []rel
	}{
		// Unbuffered: as emitted.
		{"none", "", []rel{{100, 1}, {110, 1}, {120, 1}, {130, 1}, {140, 1}, {150, 1}}},
		// Each sentence at its full stop; the tail with the last token.
		{"sentence", "", []rel{{120, 3}, {140, 2}, {150, 1}}},
		// 80 ms a release, one at a time: 120+80; max(140, 200)+80;
		// max(150, 280)+80. TTP moves from 100 ms to 200 ms.
		{"sentence", "fixed:80", []rel{{200, 3}, {280, 2}, {360, 1}}},
		{"whole", "", []rel{{150, 6}}},
		{"whole", "fixed:80", []rel{{230, 6}}},
		// Blocks of 4 tokens, the rest at the end.
		{"tokens:4", "", []rel{{130, 4}, {150, 2}}},
		// " The cat sat." is 13 characters ≥ 10; " It ran! Done" too.
		{"chars:10", "", []rel{{120, 3}, {150, 3}}},
		// A moderation call per chunk, serial: it falls behind an
		// engine emitting every 10 ms.
		{"none", "fixed:80", []rel{{180, 1}, {260, 1}, {340, 1}, {420, 1}, {500, 1}, {580, 1}}},
	} {
		p, err := Parse(tc.policy, tc.moderation)
		if err != nil {
			t.Fatal(err)
		}
		got := p.Release(story(), rng)
		if !reflect.DeepEqual(shape(got), tc.want) {
			t.Errorf("%s %s: releases %v, want %v", tc.policy, tc.moderation, shape(got), tc.want)
		}
	}
}

// Without text sentences are SentenceTokens long in turn: 20, 14, then
// the last 11 tokens at the end.
func TestSentenceWithoutText(t *testing.T) {
	var ps []Piece
	for i := range 45 {
		ps = append(ps, Piece{T: int64(i) * 10 * ms, Tokens: 1})
	}
	p, _ := Parse("sentence", "")
	want := []rel{{190, 20}, {330, 14}, {440, 11}}
	if got := shape(p.Release(ps, nil)); !reflect.DeepEqual(got, want) {
		t.Errorf("releases %v, want %v", got, want)
	}
}

// ApplyRecord keeps the hidden reasoning where it was and moves the
// visible output, TTP and the end; the server's timing is untouched.
func TestApplyRecord(t *testing.T) {
	rec := &runlog.Record{Sent: 0, End: 150 * ms, Server: &runlog.ServerTiming{}}
	rec.Chunks = append(rec.Chunks, runlog.Chunk{T: 50 * ms, Tokens: 5})
	for i := range 6 {
		rec.Chunks = append(rec.Chunks, runlog.Chunk{T: (100 + 10*int64(i)) * ms, Tokens: 1, Visible: true})
	}
	p, _ := Parse("whole", "fixed:80")
	p.ApplyRecord(rec, rand.New(rand.NewPCG(1, 2)))
	want := []runlog.Chunk{{T: 50 * ms, Tokens: 5}, {T: 230 * ms, Tokens: 6, Visible: true}}
	if !reflect.DeepEqual(rec.Chunks, want) {
		t.Fatalf("chunks %v, want %v", rec.Chunks, want)
	}
	if rec.End != 230*ms {
		t.Errorf("end %d ms, want 230", rec.End/ms)
	}
	if d, _ := rec.TTFT(); d != 50e6 {
		t.Errorf("TTFT %v, want 50ms (the hidden reasoning's first token)", d)
	}
}

func TestParseErrors(t *testing.T) {
	for _, bad := range [][2]string{{"paragraph", ""}, {"chars", ""}, {"tokens:0", ""}, {"sentence:3", ""}, {"none", "often"}} {
		if _, err := Parse(bad[0], bad[1]); err == nil {
			t.Errorf("Parse(%q, %q): no error", bad[0], bad[1])
		}
	}
	p, err := Parse("chars:200", "uniform:50,100")
	if err != nil || p.String() != "chars:200" || p.Moderation.String() != "uniform:50,100" {
		t.Errorf("Parse: %v %v", p, err)
	}
}
