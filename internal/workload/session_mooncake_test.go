package workload

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/shareddata"
	"github.com/google/go-cmp/cmp"
)

func sessionDataFile(t testing.TB, rel string) string {
	t.Helper()
	return shareddata.Path(t, rel)
}

// replayedPrompt is the prompt length in tokens that turn k of s gets when
// every earlier reply has its recorded length: system prompt, earlier
// messages and replies, this message.
func replayedPrompt(s Session, k int) int {
	n := s.SystemTokens + s.Turns[k].InputTokens
	for _, t := range s.Turns[:k] {
		n += t.InputTokens + t.OutputTokens
	}
	return n
}

func TestLoadMooncakeSessions(t *testing.T) {
	d, st, err := LoadMooncakeSessions("testdata/sessions/mooncake.jsonl", MooncakeSessionsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// Worked by hand (blocks of 512 tokens; "full" = input/512 blocks):
	//  1 A starts. full [0 1].
	//  2 B starts: block 0 was sent before, so 512 system tokens; B makes
	//    [0] common.
	//  3 extends 1's full [0 1]: A's turn 2, new input 1500-1100-50 = 350,
	//    3 s after 1.
	//  4 extends 3's full [0 1]: A's turn 3, 2100-1500-40 = 560.
	//  5 extends 3's [0 1] again, but 3 already has a next turn (4): a
	//    fork, session C with the 2 shared blocks as system prompt; C
	//    makes [0 1] common.
	//  6 extends [0 1] only, now common: session D (SharedOnly).
	//  7 its only shared block [0] is common: session E.
	//  8 extends 4's full [0 1 7 8]: A's turn 4, 2200-2100-5 = 95, 6 s.
	//  9 extends 8: 2203-2200-7 = -4, clamped to 1 (5 tokens short).
	// 10 has no hash_ids: session F of one turn.
	mk := func(line, arrivalMS, system int, turns ...Turn) Session {
		for k := range turns {
			turns[k].Role = "user"
		}
		return Session{ID: "line-" + strconv.Itoa(line), SystemTokens: system, Turns: turns,
			Arrival: time.Duration(arrivalMS) * time.Millisecond, HasArrival: true, ThinkFromSend: true}
	}
	want := []Session{
		mk(1, 0, 0,
			Turn{InputTokens: 1100, OutputTokens: 50},
			Turn{InputTokens: 350, OutputTokens: 40, ThinkTime: 3 * time.Second},
			Turn{InputTokens: 560, OutputTokens: 5, ThinkTime: 3 * time.Second},
			Turn{InputTokens: 95, OutputTokens: 7, ThinkTime: 6 * time.Second},
			Turn{InputTokens: 1, OutputTokens: 2, ThinkTime: 3 * time.Second}),
		mk(2, 0, 512, Turn{InputTokens: 288, OutputTokens: 30}),
		mk(5, 6000, 1024, Turn{InputTokens: 576, OutputTokens: 9}),
		mk(6, 9000, 1024, Turn{InputTokens: 976, OutputTokens: 1}),
		mk(7, 9000, 512, Turn{InputTokens: 388, OutputTokens: 3}),
		mk(10, 15000, 0, Turn{InputTokens: 50, OutputTokens: 5}),
	}
	var got []Session
	for i := range d.Len() {
		got = append(got, d.Session(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	wantStats := MooncakeStats{Requests: 10, Starts: 6, Continuations: 4, Forks: 1, Clamped: 1, ClampedTokens: 5, SharedOnly: 1, NoHashes: 1}
	if diff := cmp.Diff(wantStats, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	// Replayed prompts have the trace's lengths, but for the clamped turn.
	for k, in := range []int{1100, 1500, 2100, 2200, 2203 + 5} {
		if n := replayedPrompt(got[0], k); n != in {
			t.Errorf("replayed prompt of A's turn %d = %d tokens; want %d", k, n, in)
		}
	}
	capped, st2, err := LoadMooncakeSessions("testdata/sessions/mooncake.jsonl", MooncakeSessionsConfig{NumSessions: 2})
	if err != nil || capped.Len() != 2 || capped.Session(1).ID != "line-2" || st2 != st {
		t.Errorf("NumSessions 2: %d sessions, stats %+v, %v; want lines 1 and 2, the same stats", capped.Len(), st2, err)
	}
}

func TestReadMooncakeSessionsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "m.jsonl:1: want Mooncake JSON Lines"},
		{"csv", "timestamp,input_length\n0,5\n", "m.jsonl:1: want Mooncake JSON Lines"},
		{"no hashes", `{"timestamp": 0, "input_length": 5, "output_length": 1}`, "m.jsonl: no request has hash_ids"},
		{"bad line 2", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1]}` + "\n" + `{"timestamp": 1, "input_length": -5, "output_length": 1}`, "m.jsonl:2: \"input_length\""},
		{"back in time", `{"timestamp": 10, "input_length": 5, "output_length": 1, "hash_ids": [1]}` + "\n\n" + `{"timestamp": 5, "input_length": 5, "output_length": 1, "hash_ids": [2]}`, "m.jsonl:3: timestamp goes back in time"},
		{"bad hash", `{"timestamp": 0, "input_length": 5, "output_length": 1, "hash_ids": [1.5]}`, "m.jsonl:1: hash_ids: 1.5 is not an integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ReadMooncakeSessions(strings.NewReader(tt.in), "m.jsonl", MooncakeSessionsConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadMooncakeSessions(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func TestMooncakeConversationSessions(t *testing.T) {
	p := sessionDataFile(t, "mooncake-fast25/conversation_trace.jsonl")
	d, st, err := LoadMooncakeSessions(p, MooncakeSessionsConfig{})
	if err != nil {
		t.Fatal(err)
	}
	// The figures docs/sessions.md reports.
	want := MooncakeStats{Requests: 12031, Starts: 8252, Continuations: 3779, Forks: 43, Clamped: 330, ClampedTokens: 9638, SharedOnly: 69}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	var turns []float64
	multi, maxTurns := 0, 0
	for i := range d.Len() {
		s := d.Session(i)
		if err := s.Validate(); err != nil {
			t.Fatal(err)
		}
		turns = append(turns, float64(len(s.Turns)))
		if len(s.Turns) > 1 {
			multi++
		}
		maxTurns = max(maxTurns, len(s.Turns))
	}
	sum := summarize(turns)
	if d.Len() != 8252 || multi != 1984 || sum.P50 != 1 || sum.P90 != 2 || maxTurns != 43 {
		t.Errorf("%d sessions, %d multi-turn, turns P50 %v P90 %v max %d; want 8252, 1984, 1, 2, 43", d.Len(), multi, sum.P50, sum.P90, maxTurns)
	}
}

func BenchmarkMooncakeSessions(b *testing.B) {
	p := sessionDataFile(b, "mooncake-fast25/conversation_trace.jsonl")
	data, err := os.ReadFile(p)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := ReadMooncakeSessions(strings.NewReader(string(data)), p, MooncakeSessionsConfig{}); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzSessionMooncake(f *testing.F) {
	data, err := os.ReadFile("testdata/sessions/mooncake.jsonl")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add(`{"timestamp": 0, "input_length": 0, "output_length": 0, "hash_ids": [1, 1, 1]}`)
	f.Fuzz(func(t *testing.T, in string) {
		d, st, err := ReadMooncakeSessions(strings.NewReader(in), "f.jsonl", MooncakeSessionsConfig{})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.jsonl") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if st.Starts+st.Continuations != st.Requests || d.Len() != st.Starts {
			t.Fatalf("stats %+v with %d sessions; want Starts+Continuations = Requests, Starts = sessions", st, d.Len())
		}
		for i := range d.Len() {
			if err := d.Session(i).Validate(); err != nil {
				t.Fatalf("session %d does not validate: %v", i, err)
			}
		}
	})
}
