package workload

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// ConversationsConfig configures the synthetic conversations generator.
// Field names are those of the workload options they will be set from, so
// that an *OptionError from NewConversations names the option.
type ConversationsConfig struct {
	// NumSessions is the number of distinct sessions (Len); at least 1.
	NumSessions int
	// Seed makes the sessions reproducible.
	Seed int64
	// Turns is the number of turns per session (values below 1 count as
	// 1); nil means fixed:1.
	Turns Dist
	// ThinkTime is the user's think time before every turn but the first,
	// in milliseconds; nil means fixed:0.
	ThinkTime Dist
	// InputLen is each turn's new user message, in tokens (at least 1); nil
	// means fixed:1024.
	InputLen Dist
	// OutputLen is each turn's reply, in tokens (at least 1); nil means
	// fixed:128.
	OutputLen Dist
	// SystemPromptLen is the length in tokens of a system prompt shared by
	// every session (the same text: it exercises prefix caches); 0 = none.
	SystemPromptLen int
	// ToolShare is the probability in [0, 1] that a turn makes tool calls.
	ToolShare float64
	// ToolCalls is the number of tool calls in a turn that makes them (at
	// least 1); nil means fixed:1.
	ToolCalls Dist
	// Tools are the tool names, declared by every session and drawn
	// uniformly for each call; nil means ["tool"].
	Tools []string
	// ToolLatency is each tool call's latency in milliseconds; nil means
	// fixed:0.
	ToolLatency Dist
	// ToolResultLen is each tool result's length in tokens; nil means
	// fixed:0.
	ToolResultLen Dist
}

// Streams of the per-session generators, one per quantity, so that changing
// one distribution leaves the others' draws as they were. They start far
// from workload.go's per-request streams.
const (
	streamSessTurns uint64 = iota + 64
	streamSessThink
	streamSessInput
	streamSessOutput
	streamSessTool
	streamSessToolLatency
	streamSessToolResult
	streamSessToolCalls
)

// Conversations is a synthetic SessionSet: session i's turns, lengths, think
// times and tool calls are drawn from the configured distributions by
// generators seeded with (Seed, i) and the quantity alone, so any session
// can be built without those before it. It is safe for concurrent use.
type Conversations struct {
	cfg ConversationsConfig
	// the distributions with defaults filled in
	turns, think, in, out, calls, latency, result Dist
	tools                                         []string
}

var _ SessionSet = (*Conversations)(nil)

// NewConversations validates c and returns the generator. A bad value is an
// *OptionError naming the ConversationsConfig field.
func NewConversations(c ConversationsConfig) (*Conversations, error) {
	switch {
	case c.NumSessions <= 0:
		return nil, optionErr("NumSessions", c.NumSessions, "must be positive")
	case c.SystemPromptLen < 0:
		return nil, optionErr("SystemPromptLen", c.SystemPromptLen, "must not be negative")
	case c.SystemPromptLen > maxLen:
		return nil, optionErr("SystemPromptLen", c.SystemPromptLen, "too large for a token count")
	case !(c.ToolShare >= 0 && c.ToolShare <= 1):
		return nil, optionErr("ToolShare", c.ToolShare, "must be in [0, 1]")
	}
	for k, name := range c.Tools {
		if name == "" {
			return nil, optionErr("Tools", c.Tools, "tool %d has an empty name", k)
		}
		for _, prev := range c.Tools[:k] {
			if prev == name {
				return nil, optionErr("Tools", c.Tools, "tool %q named twice", name)
			}
		}
	}
	d := &Conversations{
		cfg:   c,
		turns: orDist(c.Turns, 1), think: orDist(c.ThinkTime, 0),
		in: orDist(c.InputLen, defaultRandomInputLen), out: orDist(c.OutputLen, defaultRandomOutputLen),
		calls: orDist(c.ToolCalls, 1), latency: orDist(c.ToolLatency, 0), result: orDist(c.ToolResultLen, 0),
		tools: append([]string(nil), c.Tools...),
	}
	if len(d.tools) == 0 {
		d.tools = []string{"tool"}
	}
	return d, nil
}

func orDist(d Dist, n int) Dist {
	if d == nil {
		return Fixed(n)
	}
	return d
}

// Name returns "conversations".
func (d *Conversations) Name() string { return "conversations" }

// Len returns the number of sessions.
func (d *Conversations) Len() int { return d.cfg.NumSessions }

// maxTurns bounds a session's turns, whatever a distribution's tail draws.
const maxTurns = 1 << 16

// Session returns session i ("conv-i"). The first turn has no think time;
// every turn draws its input and output length, think time and tool calls
// from its quantity's own stream, in turn order.
func (d *Conversations) Session(i int) Session {
	seed := d.cfg.Seed
	rTurns := rngFor(seed, streamSessTurns, i)
	rThink := rngFor(seed, streamSessThink, i)
	rIn := rngFor(seed, streamSessInput, i)
	rOut := rngFor(seed, streamSessOutput, i)
	rTool := rngFor(seed, streamSessTool, i)
	rLat := rngFor(seed, streamSessToolLatency, i)
	rRes := rngFor(seed, streamSessToolResult, i)
	rCalls := rngFor(seed, streamSessToolCalls, i)
	n := min(max(d.turns.Sample(rTurns), 1), maxTurns)
	s := Session{
		ID:           "conv-" + strconv.Itoa(i),
		SystemTokens: d.cfg.SystemPromptLen,
		Turns:        make([]Turn, n),
	}
	if d.cfg.ToolShare > 0 {
		s.Tools = append([]string(nil), d.tools...)
	}
	for k := range s.Turns {
		t := Turn{
			Role:         RoleUser,
			InputTokens:  max(d.in.Sample(rIn), 1),
			OutputTokens: max(d.out.Sample(rOut), 1),
		}
		if k > 0 {
			t.ThinkTime = sessionMillis(d.think.Sample(rThink))
		}
		// One draw per turn decides on tool calls; their number and names
		// come from a stream of their own, so that which turns call tools
		// does not depend on how many calls earlier turns made.
		if u := rTool.Float64(); u < d.cfg.ToolShare {
			calls := min(max(d.calls.Sample(rCalls), 1), maxTurns)
			t.ToolCalls = make([]ToolCall, calls)
			for j := range t.ToolCalls {
				t.ToolCalls[j] = ToolCall{
					Name:         d.tools[rCalls.IntN(len(d.tools))],
					Latency:      sessionMillis(d.latency.Sample(rLat)),
					ResultTokens: max(d.result.Sample(rRes), 0),
				}
			}
		}
		s.Turns[k] = t
	}
	return s
}

// sessionMillis turns a sampled number of milliseconds into a Duration (a
// negative draw is 0).
func sessionMillis(ms int) time.Duration {
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// String describes the generator's distributions, for a report's
// conditions.
func (d *Conversations) String() string {
	s := fmt.Sprintf("conversations: %d sessions, turns %v, think %v ms, input %v, output %v",
		d.cfg.NumSessions, d.turns, d.think, d.in, d.out)
	if d.cfg.SystemPromptLen > 0 {
		s += fmt.Sprintf(", system prompt %d tokens", d.cfg.SystemPromptLen)
	}
	if d.cfg.ToolShare > 0 {
		s += fmt.Sprintf(", tool calls in %s%% of turns (%v per turn, latency %v ms, result %v)",
			strconv.FormatFloat(math.Round(d.cfg.ToolShare*1000)/10, 'f', -1, 64), d.calls, d.latency, d.result)
	}
	return s
}
