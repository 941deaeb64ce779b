package runlog

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = int64(time.Millisecond)

// chatRecord is a scripted chat stream: sent at 100 ms (intended 90 ms),
// a role-only chunk at 150 ms (no token), two hidden reasoning chunks at 200
// and 230 ms, then visible content at 300 ms (2 tokens), 320 ms and 360 ms.
func chatRecord() *Record {
	return &Record{
		ID: "r1", Intended: 90 * ms, Sent: 100 * ms,
		Chunks: []Chunk{
			{T: 150 * ms, Tokens: 0, Visible: true},
			{T: 200 * ms, Tokens: 1},
			{T: 230 * ms, Tokens: 1},
			{T: 300 * ms, Tokens: 2, Visible: true},
			{T: 320 * ms, Tokens: 1, Visible: true},
			{T: 360 * ms, Tokens: 1, Visible: true},
		},
		End:              370 * ms,
		CompletionTokens: 6,
	}
}

func TestMetrics(t *testing.T) {
	r := chatRecord()
	cases := []struct {
		name string
		f    func() (time.Duration, bool)
		want time.Duration
		ok   bool
	}{
		// First token-carrying chunk is at 200 ms (the role-only one at 150 does not count): 200-100.
		{"ttft", r.TTFT, 100 * time.Millisecond, true},
		// First visible token at 300 ms: 300-100.
		{"ttp", r.TTP, 200 * time.Millisecond, true},
		// Last token chunk 360 ms (not End at 370): 360-100.
		{"e2e", r.E2E, 260 * time.Millisecond, true},
		// From the intended send, 90 ms: 360-90.
		{"response", r.ResponseTime, 270 * time.Millisecond, true},
		// (360-200)/(6-1) = 32 ms.
		{"tpot", r.TPOT, 32 * time.Millisecond, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.f()
			if got != c.want || ok != c.ok {
				t.Errorf("%s() = %v, %v; want %v, %v", c.name, got, ok, c.want, c.ok)
			}
		})
	}
	// Gaps between token chunks: 230-200, 300-230, 320-300, 360-320.
	itl := r.ITLs(nil)
	want := []time.Duration{30, 70, 20, 40}
	if len(itl) != len(want) {
		t.Fatalf("ITLs() = %v; want %v ms", itl, want)
	}
	for i := range want {
		if itl[i] != want[i]*time.Millisecond {
			t.Errorf("ITLs()[%d] = %v; want %v ms", i, itl[i], want[i])
		}
	}
	// Per token: 30, then 70/2 twice, 20, 40.
	tok := r.TokenITLs(nil)
	wantTok := []time.Duration{30, 35, 35, 20, 40}
	if len(tok) != len(wantTok) {
		t.Fatalf("TokenITLs() = %v; want %v ms", tok, wantTok)
	}
	for i := range wantTok {
		if tok[i] != wantTok[i]*time.Millisecond {
			t.Errorf("TokenITLs()[%d] = %v; want %v ms", i, tok[i], wantTok[i])
		}
	}
	if got := r.SendLag(); got != 10*time.Millisecond {
		t.Errorf("SendLag() = %v; want 10ms", got)
	}
}

func TestMetricsEdgeCases(t *testing.T) {
	t.Run("no tokens", func(t *testing.T) {
		r := &Record{Sent: 1, Chunks: []Chunk{{T: 5, Tokens: 0}}}
		if _, ok := r.TTFT(); ok {
			t.Error("TTFT() ok for a stream with no token")
		}
		if _, ok := r.E2E(); ok {
			t.Error("E2E() ok for a stream with no token")
		}
		if _, ok := r.TPOT(); ok {
			t.Error("TPOT() ok for a stream with no token")
		}
	})
	t.Run("one token", func(t *testing.T) {
		r := &Record{Sent: 0, Chunks: []Chunk{{T: 5, Tokens: 1, Visible: true}}}
		if _, ok := r.TPOT(); ok {
			t.Error("TPOT() ok for a one-token request")
		}
		if d, _ := r.TTFT(); d != 5 {
			t.Errorf("TTFT() = %v; want 5ns", d)
		}
	})
	t.Run("counted tokens", func(t *testing.T) {
		// Without usage, output tokens are the chunk sum: 1+3 = 4, TPOT = (40-10)/3 = 10.
		r := &Record{Chunks: []Chunk{{T: 10, Tokens: 1}, {T: 40, Tokens: 3}}}
		if n := r.OutputTokens(); n != 4 {
			t.Errorf("OutputTokens() = %d; want 4", n)
		}
		if d, _ := r.TPOT(); d != 10 {
			t.Errorf("TPOT() = %v; want 10ns", d)
		}
	})
	t.Run("hidden only", func(t *testing.T) {
		r := &Record{Chunks: []Chunk{{T: 10, Tokens: 1}}}
		if _, ok := r.TTP(); ok {
			t.Error("TTP() ok with no visible token")
		}
	})
}

func TestStatusClass(t *testing.T) {
	for code, want := range map[int]ErrorClass{
		429: ErrHTTP429, 400: ErrHTTP4xx, 404: ErrHTTP4xx, 499: ErrHTTP4xx,
		500: ErrHTTP5xx, 503: ErrHTTP5xx, 302: ErrStream, 204: ErrStream,
	} {
		if got := StatusClass(code); got != want {
			t.Errorf("StatusClass(%d) = %q; want %q", code, got, want)
		}
	}
}

func TestWholeAnswerHasNoStreamingMetrics(t *testing.T) {
	// One body at 80 ms carrying 7 tokens: E2E and response time are
	// measured, TTFT, TTP, TPOT and ITL are not.
	r := Record{ID: "w", Intended: 0, Sent: 10, End: 80, CompletionTokens: 7, Status: 200, WholeAnswer: true,
		Chunks: []Chunk{{T: 80, Tokens: 7, Visible: true}}}
	if d, ok := r.E2E(); !ok || d != 70 {
		t.Errorf("E2E = %v, %v; want 70ns, true", d, ok)
	}
	if d, ok := r.ResponseTime(); !ok || d != 80 {
		t.Errorf("ResponseTime = %v, %v; want 80ns, true", d, ok)
	}
	for name, f := range map[string]func() (time.Duration, bool){"TTFT": r.TTFT, "TTP": r.TTP, "TPOT": r.TPOT} {
		if d, ok := f(); ok {
			t.Errorf("%s = %v, true; want absent for a whole answer", name, d)
		}
	}
	if n := len(r.ITLs(nil)) + len(r.TokenITLs(nil)); n != 0 {
		t.Errorf("%d ITL gaps; want none", n)
	}
}

// timedRecord is a simulated request (times in ms): intended 90, sent 100
// after a 3 ms connect, a role chunk at 150, a hidden token at 200, two
// visible at 360, end 400; the engine saw it arrive at 101 and queued it
// 20, prefilled 30, decoded 160.
func timedRecord() *Record {
	return &Record{
		ID: "s", Level: 2, Intended: 90 * ms, Sent: 100 * ms, ConnectNs: 3 * ms, End: 400 * ms,
		Chunks:       []Chunk{{T: 150 * ms, Tokens: 0, Visible: true}, {T: 200 * ms, Tokens: 1}, {T: 360 * ms, Tokens: 2, Visible: true}},
		PromptTokens: 12, CompletionTokens: 3, Status: 200, GeneratedText: "hi",
		Server: &ServerTiming{ArrivalNs: 101 * ms, QueueNs: 20 * ms, PrefillNs: 30 * ms, DecodeNs: 160 * ms, Preemptions: 1, CachedTokens: 4},
	}
}

func TestShift(t *testing.T) {
	for _, d := range []int64{1000 * ms, -100 * ms} {
		r := timedRecord()
		r.Shift(d)
		want := timedRecord()
		want.Intended, want.Sent, want.End = 90*ms+d, 100*ms+d, 400*ms+d
		want.Chunks[0].T, want.Chunks[1].T, want.Chunks[2].T = 150*ms+d, 200*ms+d, 360*ms+d
		want.Server.ArrivalNs = 101*ms + d // queue, prefill, decode and connect are durations: kept
		if diff := cmp.Diff(want, r); diff != "" {
			t.Errorf("Shift(%d) (-want +got):\n%s", d, diff)
		}
		if ttft, _ := r.TTFT(); ttft != 100*time.Millisecond {
			t.Errorf("Shift(%d): TTFT = %v; want 100ms, as before", d, ttft)
		}
	}
	r := &Record{ID: "failed", Sent: 5, End: 9} // no chunks, no server
	r.Shift(10)
	if r.Sent != 15 || r.End != 19 || r.Intended != 10 || r.Chunks != nil || r.Server != nil {
		t.Errorf("Shift(10) of a bare record = %+v; want sent 15, end 19, intended 10", r)
	}
}

func TestCopyTo(t *testing.T) {
	t.Run("deep", func(t *testing.T) {
		src := timedRecord()
		var dst Record
		src.CopyTo(&dst)
		if diff := cmp.Diff(timedRecord(), &dst); diff != "" {
			t.Fatalf("CopyTo (-want +got):\n%s", diff)
		}
		if &dst.Chunks[0] == &src.Chunks[0] || dst.Server == src.Server {
			t.Fatal("CopyTo shares chunks or server timing with its source")
		}
		// Shifting the copy leaves the source as it was, server included.
		dst.Shift(1000 * ms)
		if diff := cmp.Diff(timedRecord(), src); diff != "" {
			t.Errorf("source after shifting its copy (-want +got):\n%s", diff)
		}
		if dst.Server.ArrivalNs != 1101*ms || dst.Chunks[2].T != 1360*ms {
			t.Errorf("shifted copy: arrival %d, last chunk %d; want 1101 ms, 1360 ms", dst.Server.ArrivalNs, dst.Chunks[2].T)
		}
	})
	t.Run("reuses dst's storage", func(t *testing.T) {
		storage := make([]Chunk, 1, 8)
		server := &ServerTiming{QueueNs: 99}
		dst := Record{ID: "old", Chunks: storage, Server: server, Error: "old"}
		timedRecord().CopyTo(&dst)
		if diff := cmp.Diff(timedRecord(), &dst); diff != "" {
			t.Errorf("CopyTo (-want +got):\n%s", diff)
		}
		if &dst.Chunks[0] != &storage[0] || dst.Server != server {
			t.Error("CopyTo did not reuse dst's chunk and server storage")
		}
		// A source without chunks or server leaves dst without them.
		(&Record{ID: "bare", Status: 503}).CopyTo(&dst)
		if dst.Chunks != nil || dst.Server != nil || dst.ID != "bare" || dst.Error != "" || dst.Status != 503 {
			t.Errorf("CopyTo(bare) = %+v; want a bare record", dst)
		}
	})
	t.Run("into a shallow copy", func(t *testing.T) {
		src := timedRecord()
		dst := *src // shares src's chunks and server
		src.CopyTo(&dst)
		dst.Shift(1000 * ms)
		if diff := cmp.Diff(timedRecord(), src); diff != "" {
			t.Errorf("source after shifting a shallow copy refreshed by CopyTo (-want +got):\n%s", diff)
		}
	})
	t.Run("into itself", func(t *testing.T) {
		r := timedRecord()
		r.CopyTo(r)
		if diff := cmp.Diff(timedRecord(), r); diff != "" {
			t.Errorf("CopyTo(itself) (-want +got):\n%s", diff)
		}
	})
}
