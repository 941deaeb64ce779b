package wire

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/goodput/goodput/internal/redact"
	"github.com/goodput/goodput/internal/runlog"
)

// MeasureWhole fills rec from a whole (non-streamed) completion body that
// had arrived at at (ns): one chunk at that moment carrying every generated
// token — usage's count, else 1 — visible unless all of it was hidden, and
// the record marked WholeAnswer (E2E measured, TTFT and TPOT not). Usage is
// checked as a stream's is: a count that cannot be true (negative, beyond any
// model's, reasoning above completion, far above max_tokens) is not used,
// and the record says why. estPrompt is the prompt length to fall back on.
// The server's own per-request timing, when the body carries one (vLLM's
// "metrics", llama.cpp's "timings"), goes to rec.Server, as a stream's does.
// It returns the answer's visible text (a copy), for callers that keep it.
// The bench client (--no-stream, or a server ignoring "stream") and the
// proxy both measure whole answers with it. dec reads the protocol's
// answer. An embeddings answer (Chunk.Inputs > 0) carries no token: the
// record counts its inputs (Record.Embeddings) and its prompt tokens, and
// its latency is the whole answer's.
func MeasureWhole(dec EventDecoder, rec *runlog.Record, body []byte, at int64, estPrompt int) (content string) {
	rec.End = at
	rec.Chunks = rec.Chunks[:0]
	rec.WholeAnswer = true
	rec.TokenSource = runlog.TokensCounted
	defer func() {
		if rec.PromptTokens <= 0 {
			rec.PromptTokens = max(estPrompt, 0)
		}
	}()
	var ch Chunk
	if err := dec.DecodeResponse(body, &ch); err != nil {
		failRecord(rec, runlog.ErrMalformed, "response: "+err.Error())
		return ""
	}
	if len(ch.ErrMessage) > 0 {
		failRecord(rec, runlog.ErrStream, "error: "+string(ch.ErrMessage))
		return ""
	}
	rec.FinishReason = string(ch.FinishReason)
	if len(ch.ResponseID) > 0 {
		rec.ResponseID = string(ch.ResponseID)
	}
	if ch.Inputs > 0 {
		rec.Embeddings = ch.Inputs
		if u := ch.Usage; u.Present && u.PromptTokens > 0 && u.PromptTokens <= MaxUsageTokens {
			rec.PromptTokens, rec.TokenSource = u.PromptTokens, runlog.TokensUsage
		}
		return ""
	}
	if len(ch.ToolCalls) > 0 {
		var m StreamMeter
		for _, d := range ch.ToolCalls {
			m.mergeCall(d)
		}
		rec.ToolCalls = m.toolCalls()
	}
	var think ThinkSplitter
	vis, hid := think.Feed(ch.Content)
	hid += len(ch.Reasoning) + ch.ToolArgs
	n := 0
	if vis+hid > 0 {
		n = 1
	}
	if u := ch.Usage; u.Present {
		compl, prompt := checkCounts(u, rec.MaxTokens)
		rec.UsageRejected = strings.Trim(compl+"; "+prompt, "; ")
		if prompt == "" {
			rec.PromptTokens, rec.CachedTokens = u.PromptTokens, u.CachedTokens
		}
		if compl == "" && u.CompletionTokens > 0 {
			rec.TokenSource = runlog.TokensUsage
			rec.CompletionTokens, rec.ReasoningTokens = u.CompletionTokens, u.ReasoningTokens
			n = u.CompletionTokens
		}
	}
	if rec.TokenSource == runlog.TokensCounted {
		rec.CompletionTokens = n
	}
	if n > 0 {
		rec.Chunks = append(rec.Chunks, runlog.Chunk{T: at, Tokens: int32(min(n, MaxUsageTokens)), Visible: vis > 0})
	}
	setServer(rec, ch.Timing)
	return string(ch.Content)
}

// checkCounts says what in u cannot be true whatever was streamed: counts
// that are negative, beyond any model's, inconsistent with each other, or
// far above the max_tokens asked (0: none asked). A whole answer is checked
// with it alone; a stream also against what it carried
// (StreamMeter.checkUsage).
func checkCounts(u Usage, maxTokens int) (completion, prompt string) {
	switch {
	case u.CompletionTokens < 0:
		completion = fmt.Sprintf("completion_tokens %d is negative", u.CompletionTokens)
	case u.CompletionTokens > MaxUsageTokens:
		completion = fmt.Sprintf("completion_tokens %d is beyond any model's", u.CompletionTokens)
	case maxTokens > 0 && u.CompletionTokens > max(4*maxTokens, maxTokens+1024):
		completion = fmt.Sprintf("completion_tokens %d is far above the max_tokens %d asked", u.CompletionTokens, maxTokens)
	case u.ReasoningTokens < 0 || u.ReasoningTokens > u.CompletionTokens:
		completion = fmt.Sprintf("reasoning_tokens %d is outside 0..completion_tokens %d", u.ReasoningTokens, u.CompletionTokens)
	}
	switch {
	case u.PromptTokens < 0:
		prompt = fmt.Sprintf("prompt_tokens %d is negative", u.PromptTokens)
	case u.PromptTokens > MaxUsageTokens:
		prompt = fmt.Sprintf("prompt_tokens %d is beyond any model's", u.PromptTokens)
	case u.CachedTokens < 0 || u.CachedTokens > u.PromptTokens:
		prompt = fmt.Sprintf("cached_tokens %d is outside 0..prompt_tokens %d", u.CachedTokens, u.PromptTokens)
	}
	return completion, prompt
}

// failRecord sets rec's failure, keeping the first one.
func failRecord(rec *runlog.Record, class runlog.ErrorClass, msg string) {
	if rec.ErrorClass != "" {
		return
	}
	rec.ErrorClass = class
	rec.Error = OneLine(msg)
}

// NotEventStream is the error text of an answer to a streamed request that
// is neither an event stream nor JSON (a gateway's HTML page, plain text):
// its Content-Type and first bytes, quoted on one line (a character is not
// cut in two; more says bytes followed), credential-like text blanked. The
// bench client and the proxy record such answers with it.
func NotEventStream(ctype string, first []byte, more bool) string {
	if ctype == "" {
		ctype = "no Content-Type"
	}
	for len(first) > 0 && !utf8.Valid(first) {
		first = first[:len(first)-1]
	}
	text := strings.Join(strings.Fields(strings.ToValidUTF8(string(first), "\uFFFD")), " ")
	ell := ""
	if more {
		ell = "…"
	}
	return redact.Generic(fmt.Sprintf("not an event stream (%s): %q%s", OneLine(ctype), text, ell))
}
