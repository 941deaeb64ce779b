package simrun

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

func sessionSet(t testing.TB, ss ...workload.Session) *workload.Sessions {
	t.Helper()
	set, err := workload.NewSessions("test", ss)
	if err != nil {
		t.Fatalf("NewSessions: %v", err)
	}
	return set
}

// turns builds turns of the given input and output lengths, with no think
// time.
func turns(lens ...[2]int) []workload.Turn {
	ts := make([]workload.Turn, len(lens))
	for i, l := range lens {
		ts[i] = workload.Turn{InputTokens: l[0], OutputTokens: l[1]}
	}
	return ts
}

func collectSessions(t *testing.T, eng *sim.Engine, load SessionLoad) ([]*runlog.Record, SessionResult) {
	t.Helper()
	var recs []*runlog.Record
	res, err := RunSessions(context.Background(), eng, load, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("RunSessions: %v", err)
	}
	if res.Sent+res.Retried != len(recs) || res.Completed+res.Failed != res.Sent {
		t.Fatalf("result %+v with %d records; want every sent request recorded", res.Result, len(recs))
	}
	return recs, res
}

func ttft(t *testing.T, r *runlog.Record) time.Duration {
	t.Helper()
	d, ok := r.TTFT()
	if !ok {
		t.Fatalf("record %s has no TTFT", r.ID)
	}
	return d
}

func TestSessionsDeterministic(t *testing.T) {
	var ss []workload.Session
	for i := range 12 {
		s := workload.Session{ID: "c" + strconv.Itoa(i), SystemTokens: 100 * (i % 3), Tools: []string{"search", "calc"}}
		for k := range 4 {
			s.Turns = append(s.Turns, workload.Turn{InputTokens: 50 + 10*k, OutputTokens: 20 * (k % 2), ThinkTime: time.Duration(k) * 300 * time.Millisecond})
		}
		if i%4 == 0 {
			s.Turns[1].ToolCalls = []workload.ToolCall{{Name: "calc", Latency: time.Second, ResultTokens: 40}, {Name: "search", Parallel: true}}
		}
		ss = append(ss, s)
	}
	load := SessionLoad{Sessions: sessionSet(t, ss...), NumSessions: 30, Rate: 4, Burstiness: 0.5, MaxConcurrent: 6,
		NaturalStop: true, Seed: 3, Index: 2,
		ToolLatency: func(s, k, c int) time.Duration { return time.Duration(s+k+c) * 10 * time.Millisecond }}
	share := func(c *sim.Config) { c.ToolCallShare = 0.4 }
	a, ra := collectSessions(t, newEngine(t, share), load)
	b, rb := collectSessions(t, newEngine(t, share), load)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(ra, rb); diff != "" {
		t.Errorf("two results differ (-first +second):\n%s", diff)
	}
	if ra.Sessions != 30 || ra.SessionsCompleted != 30 {
		t.Errorf("sessions %d started, %d completed; want 30, 30", ra.Sessions, ra.SessionsCompleted)
	}
	for _, r := range a {
		if r.Level != 2 || r.History != runlog.HistoryServer || r.SessionID == "" || r.Turn == 0 {
			t.Fatalf("record %+v lacks its session fields", r)
		}
	}
}

// TestSessionPrefixCache works the cache hits of a conversation by hand,
// with the engine's 16-token blocks. A request's hashes run over its prompt
// and its answer, and the engine caches generated blocks as vLLM does, so
// a turn finds the earlier turn's prompt and answer: their full blocks,
// less the one the answer's last token would fill (its KV is never
// computed), ⌊(prompt + answer − 1)/16⌋.
func TestSessionPrefixCache(t *testing.T) {
	sess := workload.Session{ID: "a", Turns: turns([2]int{100, 50}, [2]int{30, 10}, [2]int{20, 5})}
	tests := []struct {
		name      string
		caching   bool
		reasoning float64 // the engine's default reasoning tokens
		prompts   []int
		cached    []int
	}{
		// prompts: 100; 100+50+30 = 180; 180+10+20 = 210.
		// cached: 0; ⌊(150−1)/16⌋·16 = 144 (turn 1's prompt and answer);
		// ⌊(190−1)/16⌋·16 = 176 (turn 2's).
		{"caching", true, 0, []int{100, 180, 210}, []int{0, 144, 176}},
		{"no caching", false, 0, []int{100, 180, 210}, []int{0, 0, 0}},
		// 8 tokens of each answer are reasoning, not resent: prompts 100;
		// 100+42+30 = 172; 172+2+20 = 194. The reasoning follows each
		// prompt in the cache where the next prompt has the answer, so a
		// turn finds only the earlier prompt's full blocks:
		// ⌊100/16⌋·16 = 96, ⌊172/16⌋·16 = 160.
		{"reasoning", true, 8, []int{100, 172, 194}, []int{0, 96, 160}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			eng := newEngine(t, func(c *sim.Config) { c.EnablePrefixCaching, c.ReasoningTokens = tt.caching, tt.reasoning })
			recs, _ := collectSessions(t, eng, SessionLoad{Sessions: sessionSet(t, sess)})
			var prompts, cached []int
			for _, r := range recs {
				prompts, cached = append(prompts, r.PromptTokens), append(cached, r.CachedTokens)
			}
			if !cmp.Equal(prompts, tt.prompts) || !cmp.Equal(cached, tt.cached) {
				t.Errorf("prompt tokens %v, cached %v; want %v, %v", prompts, cached, tt.prompts, tt.cached)
			}
		})
	}
}

// TestSessionSystemPromptShared checks the system prompt's identity across
// sessions: synthesized prompts are prefix-stable, so they share their
// common length; given texts share only when equal.
func TestSessionSystemPromptShared(t *testing.T) {
	tests := []struct {
		name   string
		a, b   workload.Session
		cached int // session b's first turn, run after a
	}{
		// 512 tokens are 32 whole blocks.
		{"same synthesized", workload.Session{SystemTokens: 512}, workload.Session{SystemTokens: 512}, 512},
		// The common 300 tokens hold 18 whole blocks, 288 tokens.
		{"synthesized lengths differ", workload.Session{SystemTokens: 512}, workload.Session{SystemTokens: 300}, 288},
		{"same text", workload.Session{System: "be brief", SystemTokens: 512}, workload.Session{System: "be brief", SystemTokens: 512}, 512},
		{"other text", workload.Session{System: "be brief", SystemTokens: 512}, workload.Session{System: "be long", SystemTokens: 512}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := tt.a, tt.b
			a.ID, b.ID = "a", "b"
			a.Turns, b.Turns = turns([2]int{100, 10}), turns([2]int{100, 10})
			// One at a time, so that b starts when a has ended.
			recs, _ := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, a, b), MaxConcurrent: 1})
			if got := recs[1].CachedTokens; got != tt.cached {
				t.Errorf("session b's cached tokens = %d; want %d", got, tt.cached)
			}
		})
	}
}

// TestSessionsSharedSystemConversation is 20 ten-turn conversations behind
// one 512-token system prompt: turns of 64 tokens in, 32 out. Turn k's
// prompt is 512 + (k−1)·96 + 64 = 576 + 96(k−1) tokens, a whole number of
// blocks, and it finds at least turn k−1's prompt and answer cached, 576 +
// 96(k−2) + 32 = 608 + 96(k−2) tokens, a whole number of blocks too, less
// the last block (the answer's last token is never computed): 592 +
// 96(k−2), a share from 592/672 = 88% at turn 2 to 1360/1440 = 94% at turn
// 10, and 512/576 for the first turn of every session after the first. So
// TTFT stays flat while, without the cache, it rises with the history.
func TestSessionsSharedSystemConversation(t *testing.T) {
	var ss []workload.Session
	for i := range 20 {
		s := workload.Session{ID: "c" + strconv.Itoa(i), SystemTokens: 512}
		for range 10 {
			s.Turns = append(s.Turns, workload.Turn{InputTokens: 64, OutputTokens: 32, ThinkTime: 2 * time.Second})
		}
		ss = append(ss, s)
	}
	set := sessionSet(t, ss...)
	meanTTFT := func(t *testing.T, caching bool) []time.Duration {
		eng := newEngine(t, func(c *sim.Config) { c.EnablePrefixCaching = caching })
		recs, res := collectSessions(t, eng, SessionLoad{Sessions: set, Rate: 1, Seed: 1})
		if res.SessionsCompleted != 20 || len(recs) != 200 {
			t.Fatalf("%d sessions completed, %d records; want 20, 200", res.SessionsCompleted, len(recs))
		}
		sum := make([]time.Duration, 11)
		for _, r := range recs {
			k := r.Turn
			if want := 576 + 96*(k-1); r.PromptTokens != want {
				t.Errorf("%s: prompt tokens %d; want %d", r.ID, r.PromptTokens, want)
			}
			want := 0
			switch {
			case !caching:
			case k > 1:
				want = 592 + 96*(k-2)
			case r.SessionID != "c0":
				want = 512
			}
			if r.CachedTokens < want || !caching && r.CachedTokens != 0 {
				t.Errorf("%s: cached tokens %d; want ≥ %d (caching %v)", r.ID, r.CachedTokens, want, caching)
			}
			sum[k] += ttft(t, r)
		}
		for k := range sum {
			sum[k] /= 20
		}
		return sum
	}
	with, without := meanTTFT(t, true), meanTTFT(t, false)
	t.Logf("mean TTFT by turn, cached: %v", with[1:])
	t.Logf("mean TTFT by turn, uncached: %v", without[1:])
	// Flat: the other sessions' batches make it wander, but within a
	// quarter over turns 2–10; rising: turn 10's history is 2.1× turn 2's.
	if lo, hi := slices.Min(with[2:]), slices.Max(with[2:]); float64(hi) > 1.25*float64(lo) {
		t.Errorf("with the cache, TTFT over turns 2–10 ranges %v–%v; want flat (within 1.25×)", lo, hi)
	}
	if r := float64(without[10]) / float64(without[2]); r < 3 {
		t.Errorf("without the cache, turn 10's TTFT is %.2f× turn 2's; want rising (≥ 3×)", r)
	}
}

func TestSessionThinkTimes(t *testing.T) {
	tests := []struct {
		name      string
		fromSend  bool
		think     []time.Duration
		wantSends func(recs []*runlog.Record) []int64
	}{
		{"from end", false, []time.Duration{3 * time.Second, 2 * time.Second, 500 * time.Millisecond},
			func(recs []*runlog.Record) []int64 {
				return []int64{int64(3 * time.Second), recs[0].End + int64(2*time.Second), recs[1].End + int64(500*time.Millisecond)}
			}},
		// Counted from the previous send: 10 s after it, and once the
		// reply is longer than the gap, right at its end.
		{"from send", true, []time.Duration{0, 10 * time.Second, time.Nanosecond},
			func(recs []*runlog.Record) []int64 {
				return []int64{0, recs[0].Sent + int64(10*time.Second), recs[1].End}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := workload.Session{ID: "a", ThinkFromSend: tt.fromSend, Turns: turns([2]int{100, 20}, [2]int{50, 20}, [2]int{50, 20})}
			for i, d := range tt.think {
				s.Turns[i].ThinkTime = d
			}
			recs, _ := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, s)})
			want := tt.wantSends(recs)
			for i, r := range recs {
				if r.Sent != want[i] || r.Intended != r.Sent {
					t.Errorf("%s: intended %d, sent %d; want both %d", r.ID, r.Intended, r.Sent, want[i])
				}
			}
		})
	}
}

// TestSessionToolRounds is one turn with two parallel calls and then one
// more: three requests. With 24-token calls the prompts are 100; 100 + 48
// (two calls) + 10 + 20 (their results) = 178; 178 + 24 + 5 = 207; and the
// next turn's 207 + 40 + 30 = 277.
func TestSessionToolRounds(t *testing.T) {
	s := workload.Session{ID: "agent", Tools: []string{"read", "grep", "edit"}, Turns: []workload.Turn{
		{InputTokens: 100, OutputTokens: 40, ToolCalls: []workload.ToolCall{
			{Name: "read", Latency: 100 * time.Millisecond, ResultTokens: 10},
			{Name: "grep", Latency: 300 * time.Millisecond, ResultTokens: 20, Parallel: true},
			{Name: "edit", Latency: 50 * time.Millisecond, ResultTokens: 5},
		}},
		{InputTokens: 30, OutputTokens: 10, ThinkTime: time.Second},
	}}
	recs, res := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, s)})
	if len(recs) != 4 || res.SessionsCompleted != 1 {
		t.Fatalf("%d records, %d sessions completed; want 4, 1", len(recs), res.SessionsCompleted)
	}
	type view struct {
		ID                 string
		Turn, ToolRound    int
		Prompt, Completion int
		Reasoning          int
		Finish             string
		Calls              []runlog.ToolCall
		ToolLatency        time.Duration
	}
	var got []view
	for _, r := range recs {
		got = append(got, view{r.ID, r.Turn, r.ToolRound, r.PromptTokens, r.CompletionTokens, r.ReasoningTokens,
			r.FinishReason, r.ToolCalls, time.Duration(r.ToolLatencyNs)})
	}
	want := []view{
		{"s0-t1", 1, 0, 100, 48, 48, "tool_calls", []runlog.ToolCall{{ID: "call-s0-t1-0", Name: "read"}, {ID: "call-s0-t1-1", Name: "grep"}}, 300 * time.Millisecond},
		{"s0-t1-r1", 1, 1, 178, 24, 24, "tool_calls", []runlog.ToolCall{{ID: "call-s0-t1-r1-0", Name: "edit"}}, 50 * time.Millisecond},
		{"s0-t1-r2", 1, 2, 207, 40, 0, "length", nil, 0},
		{"s0-t2", 2, 0, 277, 10, 0, "length", nil, 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	// Sent at the previous end plus the round's tool wait (the longest of
	// its calls), or the user's think time.
	for i, wait := range []time.Duration{300 * time.Millisecond, 50 * time.Millisecond, time.Second} {
		if got, want := recs[i+1].Sent, recs[i].End+int64(wait); got != want || recs[i+1].Intended != want {
			t.Errorf("%s: sent %d, intended %d; want %d (%s's end + %v)", recs[i+1].ID, got, recs[i+1].Intended, want, recs[i].ID, wait)
		}
	}
	for _, c := range recs[0].Chunks {
		if c.Visible {
			t.Errorf("tool-call answer has a visible chunk %+v; want hidden tokens only", c)
		}
	}
	// Each request resends the one before's prompt and output (calls or
	// answer, hashed with it) and finds their full blocks, the answer's
	// last token uncomputed: ⌊(100+48−1)/16⌋·16 = 144,
	// ⌊(178+24−1)/16⌋·16 = 192, ⌊(207+40−1)/16⌋·16 = 240.
	for i, want := range []int{0, 144, 192, 240} {
		if recs[i].CachedTokens != want {
			t.Errorf("%s: cached tokens %d; want %d", recs[i].ID, recs[i].CachedTokens, want)
		}
	}
}

func TestSessionMaxToolRounds(t *testing.T) {
	calls := []workload.ToolCall{{Name: "a"}, {Name: "b"}, {Name: "c"}}
	s := workload.Session{ID: "a", Turns: []workload.Turn{{InputTokens: 50, OutputTokens: 10, ToolCalls: calls}}}
	for _, tt := range []struct {
		max  int
		want []string
	}{
		{0, []string{"tool_calls", "tool_calls", "tool_calls", "length"}},
		{2, []string{"tool_calls", "tool_calls", "length"}},
		{-1, []string{"length"}},
	} {
		t.Run(fmt.Sprint(tt.max), func(t *testing.T) {
			recs, _ := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, s), MaxToolRounds: tt.max})
			var got []string
			for _, r := range recs {
				got = append(got, r.FinishReason)
			}
			if !cmp.Equal(got, tt.want) {
				t.Errorf("MaxToolRounds %d: finish reasons %v; want %v", tt.max, got, tt.want)
			}
		})
	}
}

// TestSessionToolCallShare checks the calls decided for turns that say
// nothing of tools: by a draw per (seed, session, turn), only in sessions
// that declare tools, with the load's latency and default result length.
func TestSessionToolCallShare(t *testing.T) {
	var ss []workload.Session
	for i := range 10 {
		ss = append(ss, workload.Session{ID: "s" + strconv.Itoa(i), Tools: []string{"search", "calc"},
			Turns: turns([2]int{40, 8}, [2]int{40, 8}, [2]int{40, 8}, [2]int{40, 8}, [2]int{40, 8})})
	}
	ss = append(ss, workload.Session{ID: "no-tools", Turns: turns([2]int{40, 8}, [2]int{40, 8})})
	set := sessionSet(t, ss...)
	run := func(share float64) []*runlog.Record {
		eng := newEngine(t, func(c *sim.Config) { c.ToolCallShare = share })
		recs, _ := collectSessions(t, eng, SessionLoad{Sessions: set, Seed: 9,
			ToolLatency: func(int, int, int) time.Duration { return 250 * time.Millisecond }})
		return recs
	}
	calls := func(recs []*runlog.Record) (n int) {
		for _, r := range recs {
			if r.FinishReason == "tool_calls" {
				n++
			}
		}
		return n
	}
	if n := calls(run(0)); n != 0 {
		t.Errorf("share 0: %d tool-call answers; want 0", n)
	}
	all := run(1)
	if n := calls(all); n != 50 {
		t.Errorf("share 1: %d tool-call answers; want 50 (every turn of the sessions with tools)", n)
	}
	recs := byID(all)
	call, next := recs["s0-t1"], recs["s0-t1-r1"]
	if call == nil || next == nil {
		t.Fatalf("share 1: no tool round for s0's first turn")
	}
	if len(call.ToolCalls) != 1 || (call.ToolCalls[0].Name != "search" && call.ToolCalls[0].Name != "calc") ||
		call.CompletionTokens != sim.DefaultToolCallTokens || call.ToolLatencyNs != int64(250*time.Millisecond) {
		t.Errorf("decided call %+v; want one declared tool, %d tokens, 250ms", call, sim.DefaultToolCallTokens)
	}
	if next.Sent != call.End+int64(250*time.Millisecond) || next.PromptTokens != 40+sim.DefaultToolCallTokens+DefaultToolResultTokens {
		t.Errorf("next request sent %d with %d prompt tokens; want %d and %d", next.Sent, next.PromptTokens,
			call.End+int64(250*time.Millisecond), 40+sim.DefaultToolCallTokens+DefaultToolResultTokens)
	}
	half := run(0.5)
	if diff := cmp.Diff(half, run(0.5)); diff != "" {
		t.Errorf("share 0.5 differs between runs:\n%s", diff)
	}
	if n := calls(half); n < 15 || n > 35 {
		t.Errorf("share 0.5: %d of 50 turns call a tool; want about half", n)
	}
}

// TestSessionMaxContext has turns of 100 tokens in and 50 out under a
// 400-token cap: turn 3 would be 250 + 50 + 100 = 400 + 50 > 400, so turn 1
// goes; turn 4 likewise drops turn 2.
func TestSessionMaxContext(t *testing.T) {
	s := workload.Session{ID: "a", SystemTokens: 20, Turns: turns([2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50})}
	recs, _ := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, s), MaxContext: 420})
	var prompts, dropped []int
	for _, r := range recs {
		prompts, dropped = append(prompts, r.PromptTokens), append(dropped, r.HistoryDropped)
	}
	if want := []int{120, 270, 270, 270}; !cmp.Equal(prompts, want) {
		t.Errorf("prompt tokens %v; want %v", prompts, want)
	}
	if want := []int{0, 0, 1, 2}; !cmp.Equal(dropped, want) {
		t.Errorf("history dropped %v; want %v", dropped, want)
	}
	// After a drop the history after the system prompt is new to the cache:
	// only its one whole block (16 of 20 tokens) hits.
	if got := recs[2].CachedTokens; got != 16 {
		t.Errorf("turn 3's cached tokens = %d; want 16", got)
	}
}

func TestSessionFailureEndsSession(t *testing.T) {
	long := turns([2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50})
	tests := []struct {
		name   string
		cfg    func(*sim.Config)
		a, b   []workload.Turn
		status int
		want   []string // the requests recorded, sorted
	}{
		// Session a's turn 3 needs 250 + 50 + 100 + 50 = 450 > 300 tokens:
		// refused by Add (400), and its turn 4 is never sent. Session b
		// fits.
		{"over max model len", func(c *sim.Config) { c.MaxModelLen = 300 }, long, turns([2]int{60, 10}, [2]int{60, 10}), 400,
			[]string{"s0-t1", "s0-t2", "s0-t3", "s1-t1", "s1-t2"}},
		// Both first turns arrive at once and the queue holds one: b's is
		// refused (429), and its turn 2 is never sent.
		{"waiting queue full", func(c *sim.Config) { c.MaxWaiting = 1 }, long, turns([2]int{60, 10}, [2]int{60, 10}), 429,
			[]string{"s0-t1", "s0-t2", "s0-t3", "s0-t4", "s1-t1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := sessionSet(t, workload.Session{ID: "a", Turns: tt.a}, workload.Session{ID: "b", Turns: tt.b})
			recs, res := collectSessions(t, newEngine(t, tt.cfg), SessionLoad{Sessions: set})
			var ids []string
			failed := 0
			for _, r := range recs {
				ids = append(ids, r.ID)
				if !r.OK() {
					failed++
					if r.Status != tt.status {
						t.Errorf("%s: status %d; want %d", r.ID, r.Status, tt.status)
					}
				}
			}
			if diff := cmp.Diff(tt.want, sortedIDs(ids)); diff != "" {
				t.Errorf("records (-want +got):\n%s", diff)
			}
			if failed != 1 || res.Failed != 1 || res.SessionsFailed != 1 || res.SessionsCompleted != 1 {
				t.Errorf("%d failed records, result %+v; want one failed request and session", failed, res)
			}
		})
	}
}

func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func TestSessionsMaxConcurrent(t *testing.T) {
	s := func(id string) workload.Session {
		return workload.Session{ID: id, Turns: turns([2]int{100, 20}, [2]int{50, 20})}
	}
	set := sessionSet(t, s("a"), s("b"), s("c"))
	t.Run("unpaced", func(t *testing.T) {
		recs, res := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: set, MaxConcurrent: 1})
		m := byID(recs)
		// One at a time: each session starts as the one before ends, and
		// with no schedule it is due then.
		for _, p := range [][2]string{{"s0-t2", "s1-t1"}, {"s1-t2", "s2-t1"}} {
			prev, next := m[p[0]], m[p[1]]
			if next.Sent != prev.End || next.Intended != next.Sent {
				t.Errorf("%s: intended %d, sent %d; want both %s's end %d", next.ID, next.Intended, next.Sent, prev.ID, prev.End)
			}
		}
		if res.DelayedArrivals != 0 {
			t.Errorf("delayed arrivals %d; want 0 without a schedule", res.DelayedArrivals)
		}
	})
	t.Run("paced", func(t *testing.T) {
		recs, res := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: set, MaxConcurrent: 1, Rate: 1000})
		m := byID(recs)
		late := m["s2-t1"]
		if late.Sent != m["s1-t2"].End || late.Intended >= late.Sent || res.DelayedArrivals != 2 {
			t.Errorf("s2-t1 intended %d, sent %d; delayed arrivals %d; want the arrival kept, sent at s1's end %d, 2 delayed",
				late.Intended, late.Sent, res.DelayedArrivals, m["s1-t2"].End)
		}
	})
}

func TestSessionArrivalsAndCycling(t *testing.T) {
	a := workload.Session{ID: "a", HasArrival: true, Arrival: 2 * time.Second, Turns: turns([2]int{50, 5})}
	b := workload.Session{ID: "b", HasArrival: true, Arrival: 3 * time.Second, Turns: turns([2]int{50, 5})}
	recs, res := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, a, b), NumSessions: 3})
	type view struct {
		ID, Session string
		Sent        int64
	}
	var got []view
	for _, r := range recs {
		got = append(got, view{r.ID, r.SessionID, r.Sent})
	}
	want := []view{{"s0-t1", "a", int64(2 * time.Second)}, {"s1-t1", "b", int64(3 * time.Second)}, {"s2-t1", "a#2", int64(3 * time.Second)}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if res.Sessions != 3 {
		t.Errorf("sessions %d; want 3", res.Sessions)
	}
}

func TestSessionNaturalLength(t *testing.T) {
	s := workload.Session{ID: "a", Turns: []workload.Turn{{InputTokens: 50}, {InputTokens: 50, OutputTokens: 1 << 20}}}
	recs, _ := collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, s), NaturalStop: true})
	for _, r := range recs {
		if r.FinishReason != "stop" || r.CompletionTokens <= 0 || r.CompletionTokens >= 1<<20 {
			t.Errorf("%s: finish %q after %d tokens; want a natural stop", r.ID, r.FinishReason, r.CompletionTokens)
		}
	}
}

func TestSessionsCancel(t *testing.T) {
	var ss []workload.Session
	for i := range 20 {
		ss = append(ss, workload.Session{ID: strconv.Itoa(i), Turns: turns([2]int{200, 500}, [2]int{100, 500})})
	}
	// Cancelled from the start: the run notices within its first few
	// hundred iterations, when every session's first turn is generating.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var recs []*runlog.Record
	res, err := RunSessions(ctx, newEngine(t, nil), SessionLoad{Sessions: sessionSet(t, ss...)}, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunSessions error %v; want context.Canceled", err)
	}
	cancelled := 0
	for _, r := range recs {
		if r.ErrorClass == runlog.ErrCancelled {
			cancelled++
		}
	}
	if cancelled != 20 || res.Sent != len(recs) || res.Failed != cancelled || res.SessionsFailed != 20 {
		t.Errorf("records %d (cancelled %d), result %+v; want the 20 first turns cancelled, each recorded", len(recs), cancelled, res)
	}
}

func TestSessionEmitError(t *testing.T) {
	boom := errors.New("disk full")
	set := sessionSet(t, workload.Session{ID: "a", Turns: turns([2]int{10, 2}, [2]int{10, 2})})
	_, err := RunSessions(context.Background(), newEngine(t, nil), SessionLoad{Sessions: set}, func(*runlog.Record) error { return boom })
	if !errors.Is(err, boom) {
		t.Errorf("RunSessions error %v; want the emit error", err)
	}
}

func TestSessionBadLoad(t *testing.T) {
	set := sessionSet(t, workload.Session{ID: "a", Turns: turns([2]int{10, 2})})
	for name, load := range map[string]SessionLoad{
		"no set":               {},
		"negative sessions":    {Sessions: set, NumSessions: -1},
		"negative concurrency": {Sessions: set, MaxConcurrent: -1},
		"negative context":     {Sessions: set, MaxContext: -1},
		"negative rate":        {Sessions: set, Rate: -1},
		"infinite rate":        {Sessions: set, Rate: math.Inf(1)},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := RunSessions(context.Background(), newEngine(t, nil), load, func(*runlog.Record) error { return nil }); err == nil {
				t.Errorf("RunSessions(%+v) succeeded; want an error", load)
			}
		})
	}
}

// BenchmarkSessions is 2,000 ten-turn conversations behind a 512-token
// system prompt, arriving at 20 sessions/s, with a tool round in a fifth of
// the turns: the block hashing and the per-request bookkeeping of
// RunSessions on top of the engine.
func BenchmarkSessions(b *testing.B) {
	var ss []workload.Session
	for i := range 100 {
		s := workload.Session{ID: "c" + strconv.Itoa(i), SystemTokens: 512, Tools: []string{"search"}}
		for k := range 10 {
			s.Turns = append(s.Turns, workload.Turn{InputTokens: 50 + 10*(k%4), OutputTokens: 100 + 20*(i%5), ThinkTime: 3 * time.Second})
		}
		ss = append(ss, s)
	}
	set := sessionSet(b, ss...)
	for b.Loop() {
		cfg := sim.DefaultConfig()
		cfg.ToolCallShare = 0.2
		eng, err := sim.New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		res, err := RunSessions(context.Background(), eng, SessionLoad{Sessions: set, NumSessions: perfgoal.Size(2000, 20), Rate: 20, Seed: 1},
			func(*runlog.Record) error { return nil })
		if err != nil {
			b.Fatal(err)
		}
		if res.SessionsCompleted != perfgoal.Size(2000, 20) {
			b.Fatalf("completed %d of 2000 sessions (failed %d)", res.SessionsCompleted, res.SessionsFailed)
		}
		b.ReportMetric(float64(res.Completed), "requests")
		b.ReportMetric(res.Duration().Seconds(), "virtual-s")
		b.ReportMetric(float64(res.Engine.PrefixHitTokens)/float64(res.Engine.PrefixQueryTokens), "hit-share")
	}
}

// TestSessionRetries: as in TestSessionFailureEndsSession, b's first turn
// is refused (429, a waiting queue of one); with a retry it is sent again
// DefaultRetryAfter (1 s) later as "s1-t1-a2", the same request, and the
// session goes on from its answer instead of failing. With a client
// timeout of 1 ms no request can finish (a 60-token prefill takes
// longer): each first turn is tried three times (two retries at once, a
// timeout advertising no wait) and both sessions fail.
func TestSessionRetries(t *testing.T) {
	long := turns([2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50}, [2]int{100, 50})
	set := sessionSet(t, workload.Session{ID: "a", Turns: long}, workload.Session{ID: "b", Turns: turns([2]int{60, 10}, [2]int{60, 10})})
	p := loadgen.RetryPolicy{Max: 1}
	recs, res := collectSessions(t, newEngine(t, func(c *sim.Config) { c.MaxWaiting = 1 }), SessionLoad{Sessions: set, Retry: &p})
	got := byID(recs)
	first, retry, next := got["s1-t1"], got["s1-t1-a2"], got["s1-t2"]
	if first == nil || retry == nil || next == nil {
		t.Fatalf("records %v; want s1-t1, its retry s1-t1-a2 and s1-t2", ids(recs))
	}
	if !first.Retried || first.Status != 429 || retry.Attempt != 2 || retry.RetryOf != "s1-t1" || !retry.OK() || retry.Turn != 1 ||
		retry.RequestedPromptTokens != first.RequestedPromptTokens {
		t.Errorf("first attempt retried %v status %d; retry attempt %d of %q ok %v turn %d prompt %d; want a retried 429, then the OK attempt 2 of the same turn-1 request (%d tokens)",
			first.Retried, first.Status, retry.Attempt, retry.RetryOf, retry.OK(), retry.Turn, retry.RequestedPromptTokens, first.RequestedPromptTokens)
	}
	if wait := retry.Sent - first.End; wait != int64(DefaultRetryAfter) {
		t.Errorf("the retry went %v after the refusal; want the advertised 1s", time.Duration(wait))
	}
	// Turn 2 carries turn 1's answer: 60 + 10 + 60 tokens, sent as the retry ended.
	if next.RequestedPromptTokens != 130 || next.Intended != retry.End {
		t.Errorf("s1-t2: prompt %d intended %d; want 130 tokens due at the retry's end %d", next.RequestedPromptTokens, next.Intended, retry.End)
	}
	if res.Retried != 1 || res.Failed != 0 || res.SessionsCompleted != 2 || res.SessionsFailed != 0 {
		t.Errorf("result %+v; want one retry, no failure, both sessions completed", res)
	}

	p = loadgen.RetryPolicy{Max: 2}
	recs, res = collectSessions(t, newEngine(t, nil), SessionLoad{Sessions: set, Retry: &p, Timeout: time.Millisecond})
	want := []string{"s0-t1", "s0-t1-a2", "s0-t1-a3", "s1-t1", "s1-t1-a2", "s1-t1-a3"}
	if diff := cmp.Diff(want, sortedIDs(ids(recs))); diff != "" {
		t.Errorf("records with a 1 ms timeout (-want +got):\n%s", diff)
	}
	for _, r := range recs {
		if r.ErrorClass != runlog.ErrTimeout || r.End-r.Sent != int64(time.Millisecond) {
			t.Errorf("%s: class %q after %v; want a timeout after 1ms", r.ID, r.ErrorClass, time.Duration(r.End-r.Sent))
		}
	}
	if res.Sent != 2 || res.Retried != 4 || res.Failed != 2 || res.SessionsFailed != 2 {
		t.Errorf("result %+v; want 2 sent, 4 retried, 2 failed requests and sessions", res)
	}
}
