package workload

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConversationsFixed(t *testing.T) {
	d, err := NewConversations(ConversationsConfig{
		NumSessions: 2, Seed: 1, Turns: Fixed(3), ThinkTime: Fixed(2000), InputLen: Fixed(100), OutputLen: Fixed(50),
		SystemPromptLen: 512, ToolShare: 1, ToolCalls: Fixed(2), Tools: []string{"grep"}, ToolLatency: Fixed(300), ToolResultLen: Fixed(40),
	})
	if err != nil {
		t.Fatal(err)
	}
	calls := []ToolCall{{Name: "grep", Latency: 300 * time.Millisecond, ResultTokens: 40}, {Name: "grep", Latency: 300 * time.Millisecond, ResultTokens: 40}}
	turn := func(think time.Duration) Turn {
		return Turn{Role: "user", InputTokens: 100, OutputTokens: 50, ThinkTime: think, ToolCalls: calls}
	}
	want := Session{ID: "conv-1", SystemTokens: 512, Tools: []string{"grep"}, Turns: []Turn{turn(0), turn(2 * time.Second), turn(2 * time.Second)}}
	if diff := cmp.Diff(want, d.Session(1)); diff != "" {
		t.Errorf("Session(1) (-want +got):\n%s", diff)
	}
	if d.Name() != "conversations" || d.Len() != 2 {
		t.Errorf("Name(), Len() = %q, %d; want conversations, 2", d.Name(), d.Len())
	}
}

func TestConversationsDefaults(t *testing.T) {
	d, err := NewConversations(ConversationsConfig{NumSessions: 1})
	if err != nil {
		t.Fatal(err)
	}
	// nil distributions: one turn of 1024 tokens in, 128 out, no tools.
	want := Session{ID: "conv-0", Turns: []Turn{{Role: "user", InputTokens: 1024, OutputTokens: 128}}}
	if diff := cmp.Diff(want, d.Session(0)); diff != "" {
		t.Errorf("Session(0) (-want +got):\n%s", diff)
	}
}

func TestConversationsDeterministicAndIndependent(t *testing.T) {
	base := ConversationsConfig{
		NumSessions: 50, Seed: 9, Turns: Uniform{Min: 1, Max: 8}, ThinkTime: Uniform{Min: 0, Max: 10000},
		InputLen: Uniform{Min: 10, Max: 2000}, OutputLen: Uniform{Min: 1, Max: 500},
		ToolShare: 0.3, Tools: []string{"a", "b"}, ToolLatency: Uniform{Min: 1, Max: 900}, ToolCalls: Uniform{Min: 1, Max: 3},
	}
	d, err := NewConversations(base)
	if err != nil {
		t.Fatal(err)
	}
	// Backwards and forwards give the same sessions.
	first := make([]Session, d.Len())
	for i := d.Len() - 1; i >= 0; i-- {
		first[i] = d.Session(i)
	}
	turns, toolTurns := 0, 0
	for i := range d.Len() {
		s := d.Session(i)
		if diff := cmp.Diff(first[i], s); diff != "" {
			t.Fatalf("Session(%d) differs between calls (-first +second):\n%s", i, diff)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Session(%d) does not validate: %v", i, err)
		}
		for _, tt := range s.Turns {
			turns++
			if len(tt.ToolCalls) > 0 {
				toolTurns++
			}
		}
	}
	// 50 sessions of 4.5 turns on average; a 30 % tool share. The bounds
	// are 4 standard deviations of a binomial wide.
	if share := float64(toolTurns) / float64(turns); math.Abs(share-0.3) > 4*math.Sqrt(0.3*0.7/float64(turns)) {
		t.Errorf("tool share = %.3f over %d turns; want about 0.3", share, turns)
	}
	// Changing the output lengths leaves every other quantity's draws.
	other := base
	other.OutputLen = Fixed(7)
	d2, _ := NewConversations(other)
	for i := range d.Len() {
		a, b := d.Session(i), d2.Session(i)
		for k := range b.Turns {
			if b.Turns[k].OutputTokens != 7 {
				t.Fatalf("session %d turn %d: OutputTokens = %d; want 7", i, k, b.Turns[k].OutputTokens)
			}
			b.Turns[k].OutputTokens = a.Turns[k].OutputTokens
		}
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("session %d: another output distribution changed other fields (-before +after):\n%s", i, diff)
		}
	}
	// Another seed gives other sessions.
	other = base
	other.Seed = 10
	d3, _ := NewConversations(other)
	if cmp.Equal(d.Session(0), d3.Session(0)) {
		t.Error("seeds 9 and 10 give the same Session(0)")
	}
}

func TestNewConversationsErrors(t *testing.T) {
	tests := []struct {
		name  string
		cfg   ConversationsConfig
		field string
	}{
		{"no sessions", ConversationsConfig{}, "NumSessions"},
		{"negative system", ConversationsConfig{NumSessions: 1, SystemPromptLen: -1}, "SystemPromptLen"},
		{"share above 1", ConversationsConfig{NumSessions: 1, ToolShare: 1.5}, "ToolShare"},
		{"share NaN", ConversationsConfig{NumSessions: 1, ToolShare: math.NaN()}, "ToolShare"},
		{"empty tool", ConversationsConfig{NumSessions: 1, Tools: []string{""}}, "Tools"},
		{"tool twice", ConversationsConfig{NumSessions: 1, Tools: []string{"a", "a"}}, "Tools"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewConversations(tt.cfg)
			var oe *OptionError
			if !errors.As(err, &oe) || oe.Field != tt.field {
				t.Errorf("NewConversations(%+v) error = %v; want an *OptionError for %s", tt.cfg, err, tt.field)
			}
		})
	}
}

func BenchmarkConversationsSession(b *testing.B) {
	d, _ := NewConversations(ConversationsConfig{NumSessions: 1000, Turns: Uniform{Min: 1, Max: 10}, ThinkTime: Uniform{Min: 0, Max: 5000}, ToolShare: 0.2})
	for i := 0; b.Loop(); i++ {
		_ = d.Session(i % 1000)
	}
}
