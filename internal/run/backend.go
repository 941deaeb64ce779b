package run

import (
	"context"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// Backend is what a run needs of a target served over the wire: settle the
// model, then prepare each request ahead of its send time (so building a
// body never delays a send) as a call that streams it into a Record.
// wire.Client is one (over every protocol of the table); a transport other
// than HTTP+SSE is one more implementation and nothing else.
type Backend interface {
	// Resolve settles the model against the server, giving a starting
	// server up to wait to answer; notes are for the user.
	Resolve(ctx context.Context, wait time.Duration) (model string, notes []string, err error)
	// Prepare builds request id from the workload's request.
	Prepare(id string, r workload.Request) (func(ctx context.Context, rec *runlog.Record), error)
	// Close releases connections.
	Close()
}

// Counting is what calibration needs of a backend that can count tokens
// the way its server does (optional: without it, prompts are sized by the
// local tokenizer alone).
type Counting interface {
	// ContextLength is the server's context in tokens (0 unknown) and where
	// it was read.
	ContextLength(ctx context.Context) (tokens int, from string)
	// CountPrompt is the server's count of text as a prompt; CountForm
	// names how it was asked ("" before a count worked).
	CountPrompt(ctx context.Context, text string) (int, error)
	CountForm() string
	// ProbePrompt sends text as a one-token request and returns the
	// prompt tokens its usage reports.
	ProbePrompt(ctx context.Context, id, text string) (int, error)
	// Slots is the requests the server generates at once, as it said
	// while ContextLength read its settings (llama.cpp's /props
	// total_slots); 0 unknown. It bounds calibration's parallel counts.
	Slots() int
}

// idleCloser is a backend that can close its idle kept-alive connections
// and still be used: a run closes those its own side traffic (model
// checks, calibration) opened, so that none holds a server thread (one
// per connection in llama-server) while the run measures.
type idleCloser interface {
	CloseIdle()
}

// warmer is a backend that can open kept-alive connections ahead of a
// measured window, so that no measured request pays a handshake; it
// returns how many it opened.
type warmer interface {
	Warm(ctx context.Context, n int) (int, error)
}
