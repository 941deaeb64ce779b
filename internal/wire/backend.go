package wire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// This file is what a run asks of the client as its backend: resolving the
// model, preparing a workload request's body ahead of its send, and the
// server's own token counts for calibration.

// Prepare builds request id's body from the workload's request, ahead of
// its send time so that building never delays a send, and returns the call
// that streams it into a record.
func (c *Client) Prepare(id string, wr workload.Request) (func(context.Context, *runlog.Record), error) {
	req := &Request{ID: id, Prompt: wr.Prompt, MaxTokens: wr.OutputTokens, PromptTokens: wr.PromptTokens,
		Tools: wr.Tools, ExpectedToolCalls: wr.ExpectedToolCalls, PreviousResponseID: wr.PreviousResponseID,
		Session: wr.Session}
	for _, m := range wr.Messages {
		msg := Message{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
		for _, tc := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, ToolCall{ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
		}
		req.Messages = append(req.Messages, msg)
	}
	body, err := c.Body(req)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, rec *runlog.Record) { c.Stream(ctx, req, body, rec) }, nil
}

// ResolveError is a model Resolve could not settle: Field is "Model" (the
// model is not served, or none was given and none could be listed) or
// "Wait" (the server did not answer within the wait given).
type ResolveError struct {
	Field string
	// Model is the model asked for ("" when none was given).
	Model string
	Err   error
}

func (e *ResolveError) Error() string {
	switch {
	case e.Field == "Wait":
		return e.Err.Error()
	case e.Model == "":
		return "no model given and " + e.Err.Error()
	}
	return fmt.Sprintf("%q: %v", e.Model, e.Err)
}

func (e *ResolveError) Unwrap() error { return e.Err }

// Resolve settles the model of the run: with none configured it takes the
// first id the server lists; a configured one the list lacks (or a list
// that cannot be had) is asked about with one short request, and only an
// answer that the model does not exist is an error (llama.cpp and TGI
// answer any name; goodput's simulator also answers its aliases, which it
// does not list). A server still starting gets up to wait to list its
// models. With Config.AutoUsage it turns continuous usage on for the
// servers known to accept it (vLLM and goodput's simulator, by their model
// list's owned_by; others may reject unknown stream_options). It returns
// the model and notes for the user (about the model, each starting with
// its quoted id).
func (c *Client) Resolve(ctx context.Context, wait time.Duration) (string, []string, error) {
	name := c.cfg.Model
	models, err := c.waitModels(ctx, wait)
	if err != nil {
		switch {
		case name == "":
			return "", nil, &ResolveError{Field: "Model", Err: fmt.Errorf("the model list failed: %w", err)}
		case wait > 0:
			return "", nil, err
		}
		// The list is only a convenience when the model is known; whether
		// the server has it, a request can tell — unless that request
		// cannot connect either: then the server is down, and a run would
		// only fail every request.
		var rec runlog.Record
		if err := c.checkModel(ctx, name, nil, &rec); err != nil {
			return "", nil, err
		}
		if rec.ErrorClass == runlog.ErrConnect || rec.ErrorClass == runlog.ErrConnectReset {
			return "", nil, fmt.Errorf("the server does not answer: %w", err)
		}
		return name, nil, nil
	}
	var notes []string
	if name == "" {
		if len(models) == 0 {
			return "", nil, &ResolveError{Field: "Model", Err: errors.New("GET /v1/models listed none")}
		}
		name = models[0].ID
		c.SetModel(name)
	} else if !slices.ContainsFunc(models, func(m Model) bool { return m.ID == name }) {
		if err := c.checkModel(ctx, name, models, nil); err != nil {
			return "", nil, err
		}
		notes = append(notes, fmt.Sprintf("%q is not in the server's model list (%s), but the server answers it", name, modelIDs(models)))
	}
	if c.cfg.AutoUsage {
		for _, m := range models {
			if m.ID == name && (m.OwnedBy == "vllm" || m.OwnedBy == "goodput-sim") {
				c.SetContinuousUsage(true)
			}
		}
	}
	return name, notes, nil
}

// waitModels lists the server's models, asking again every
// Config.ReadyPoll for up to wait while the server is not answering yet (it
// may still be loading).
func (c *Client) waitModels(ctx context.Context, wait time.Duration) ([]Model, error) {
	poll := c.cfg.ReadyPoll
	if poll <= 0 {
		poll = time.Second
	}
	deadline := time.Now().Add(wait)
	for {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		models, err := c.Models(dctx)
		cancel()
		if err == nil || wait <= 0 || time.Now().After(deadline) || ctx.Err() != nil {
			if err != nil && wait > 0 && ctx.Err() == nil {
				err = &ResolveError{Field: "Wait", Err: fmt.Errorf("not ready after %v: %w", wait, err)}
			}
			return models, err
		}
		t := time.NewTimer(poll)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
}

// checkModel sends one short request for a model the server did not list
// (models is nil when the list could not be had) and returns a
// ResolveError when the server answers that it does not exist. Any other
// outcome lets the run go on: the run itself shows what the server does.
// The request's record is left in out when out is not nil.
func (c *Client) checkModel(ctx context.Context, name string, models []Model, out *runlog.Record) error {
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	rec := c.Try(pctx, "goodput-probe-model")
	if out != nil {
		*out = rec
	}
	if ctx.Err() != nil {
		return fmt.Errorf("interrupted while checking the model: %w", context.Cause(ctx))
	}
	if !ModelMissing(&rec) {
		return nil
	}
	if models == nil {
		return &ResolveError{Field: "Model", Model: name, Err: fmt.Errorf("the server does not serve it (%s); GET /v1/models failed, so the ids it serves are unknown", rec.Error)}
	}
	return &ResolveError{Field: "Model", Model: name, Err: fmt.Errorf("the server does not serve it (%s); it serves: %s", rec.Error, modelIDs(models))}
}

// modelIDs lists a model list's ids for a message.
func modelIDs(models []Model) string {
	if len(models) == 0 {
		return "none"
	}
	ids := make([]string, len(models))
	for i, m := range models {
		ids[i] = m.ID
	}
	return strings.Join(ids, ", ")
}

// counter is the client's own Counter, made on first use so that the
// /tokenize form found is remembered for the run.
func (c *Client) counter() *Counter {
	c.countOnce.Do(func() { c.count = NewCounter(c) })
	return c.count
}

// CountPrompt is the server's count of text as a prompt, from its
// /tokenize in whichever body form it reads (see Counter.Count).
func (c *Client) CountPrompt(ctx context.Context, text string) (int, error) {
	return c.counter().Count(ctx, text)
}

// CountForm names the /tokenize body form that counted ("" before one has).
func (c *Client) CountForm() string { return c.counter().Form() }

// countState is embedded in Client for CountPrompt.
type countState struct {
	countOnce sync.Once
	count     *Counter
}
