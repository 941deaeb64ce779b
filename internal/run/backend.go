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
// openai.Client is one; a new wire protocol is one more implementation and
// nothing else.
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
}
