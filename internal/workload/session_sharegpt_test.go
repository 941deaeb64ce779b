package workload

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLoadShareGPTSessions(t *testing.T) {
	d, err := LoadShareGPTSessions("testdata/sessions/sharegpt.json", ShareGPTSessionsConfig{NoShuffle: true})
	if err != nil {
		t.Fatal(err)
	}
	// Approx counts one token per short word. "multi": the system message
	// is the system prompt; "six" and "seven eight" merge into one turn
	// (3 tokens), as do the replies "nine" and "ten" (2); the last human
	// message has no reply (0 = unknown). "greeting": the leading reply is
	// dropped. The repeated id "multi" of item 7 becomes "multi#7".
	want := []Session{
		{ID: "multi", System: "be brief", SystemTokens: 2, Turns: []Turn{
			{Role: "user", Content: "one two three", InputTokens: 3, OutputTokens: 2, RecordedReply: "four five"},
			{Role: "user", Content: "six\n\nseven eight", InputTokens: 3, OutputTokens: 2, RecordedReply: "nine\n\nten"},
			{Role: "user", Content: "eleven twelve", InputTokens: 4}, // 6 letters count 2
		}},
		{ID: "greeting", Turns: []Turn{{Role: "user", Content: "hi there", InputTokens: 2, OutputTokens: 1, RecordedReply: "hey"}}},
		{ID: "openai", Turns: []Turn{{Role: "user", Content: "a b", InputTokens: 2, OutputTokens: 1, RecordedReply: "c"}}},
		{ID: "multi#7", Turns: []Turn{{Role: "user", Content: "again", InputTokens: 1}}},
	}
	var got []Session
	for i := range d.Len() {
		got = append(got, d.Session(i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sessions (-want +got):\n%s", diff)
	}
	wantSkipped := map[string]int{
		`unknown role "narrator"`:               1,
		"a system message after the first turn": 1,
		"no human message":                      1,
		"a turn with no content and no input tokens: give content or input_tokens": 1,
	}
	if diff := cmp.Diff(wantSkipped, d.Skipped()); diff != "" {
		t.Errorf("Skipped() (-want +got):\n%s", diff)
	}
	if lines := []int{d.Line(0), d.Line(1), d.Line(2), d.Line(3)}; !cmp.Equal(lines, []int{2, 11, 15, 20}) {
		t.Errorf("Line(0..3) = %v; want [2 11 15 20]", lines)
	}
}

func TestShareGPTSessionsShuffleAndCap(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 20 {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, `{"id": "c%d", "conversations": [{"from": "human", "value": "q"}, {"from": "gpt", "value": "a"}]}`, i)
	}
	b.WriteString("]")
	ids := func(cfg ShareGPTSessionsConfig) []string {
		d, err := ReadShareGPTSessions(strings.NewReader(b.String()), "sg.json", cfg)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := range d.Len() {
			out = append(out, d.Session(i).ID)
		}
		return out
	}
	a, again, other := ids(ShareGPTSessionsConfig{Seed: 1, NumSessions: 5}), ids(ShareGPTSessionsConfig{Seed: 1, NumSessions: 5}), ids(ShareGPTSessionsConfig{Seed: 2, NumSessions: 5})
	if len(a) != 5 || !cmp.Equal(a, again) || cmp.Equal(a, other) {
		t.Errorf("seed 1, seed 1, seed 2 = %v, %v, %v; want 5 ids, the same for one seed, different for another", a, again, other)
	}
	if all := ids(ShareGPTSessionsConfig{NumSessions: 50}); len(all) != 20 {
		t.Errorf("NumSessions 50 of 20 gave %d sessions; want 20 (no oversampling)", len(all))
	}
	if first := ids(ShareGPTSessionsConfig{NoShuffle: true, NumSessions: 2}); !cmp.Equal(first, []string{"c0", "c1"}) {
		t.Errorf("NoShuffle, 2 sessions = %v; want [c0 c1]", first)
	}
}

func TestReadShareGPTSessionsErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "sg.json: empty file; want a JSON array of ShareGPT conversations"},
		{"blank", " \n ", "sg.json: empty file"},
		{"not JSON", "hello", "sg.json:1: invalid JSON"},
		{"object", `{"conversations": []}`, "sg.json:1: want a JSON array of ShareGPT conversations, got an object"},
		{"empty array", "[]", "sg.json: no usable conversations (0 skipped: none)"},
		{"nothing usable", `[{"conversations": []}]`, "sg.json: no usable conversations (1 skipped: 1 no human message)"},
		{"syntax on line 3", "[\n{\"conversations\": []},\n{\"conversations\": [}\n]", "sg.json:3: invalid JSON"},
		{"bad type on line 3", "[\n{\"conversations\": []},\n{\"conversations\": [{\"from\": \"human\", \"value\": 5}]}]", `sg.json:3: conversation 1: field "conversations.value": want a string, got JSON number`},
		{"unterminated", `[{"conversations": [{"from": "human", "value": "x"}]}`, "sg.json:1: invalid JSON"},
		{"trailing", `[{"conversations": [{"from": "human", "value": "x"}]}] x`, "sg.json:1: data after the JSON array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadShareGPTSessions(strings.NewReader(tt.in), "sg.json", ShareGPTSessionsConfig{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadShareGPTSessions(%q) error = %v; want it to contain %q", tt.in, err, tt.want)
			}
		})
	}
}

func FuzzSessionShareGPT(f *testing.F) {
	f.Add(`[{"id": "a", "conversations": [{"from": "system", "value": "s"}, {"from": "human", "value": "one two"}, {"from": "gpt", "value": "three"}, {"from": "human", "value": "four"}]}]`)
	f.Add(`[{"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": ""}]}, {"id": 7, "conversations": [{"from": "gpt", "value": "x"}]}]`)
	f.Add(`[{"conversations": [{"from": "human", "value": ""}]}]`)
	f.Fuzz(func(t *testing.T, in string) {
		d, err := ReadShareGPTSessions(strings.NewReader(in), "f.json", ShareGPTSessionsConfig{Seed: 3})
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		seen := map[string]bool{}
		for i := range d.Len() {
			s := d.Session(i)
			if err := s.Validate(); err != nil {
				t.Fatalf("accepted session %d does not validate: %v", i, err)
			}
			if seen[s.ID] {
				t.Fatalf("session id %q repeated", s.ID)
			}
			seen[s.ID] = true
		}
	})
}
