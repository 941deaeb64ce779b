package wire

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
)

// doneMarker is the data of the event that ends an OpenAI stream.
var doneMarker = []byte("[DONE]")

// StreamMeter turns the events of one streamed completion into a
// runlog.Record: token-carrying chunks with their arrival times, visible vs
// hidden tokens (reasoning fields, <think> text, tool-call arguments),
// per-chunk token counts from continuous usage, the final usage, and the
// error class of a stream that goes wrong. The bench client and the proxy
// both measure with it, so their records mean the same thing.
//
// Feed it with Event for every dispatched SSE event, then end with EOF or
// Abort, then Close. A StreamMeter is reusable (Reset) and not safe for
// concurrent use.
type StreamMeter struct {
	rec *runlog.Record

	dec   EventDecoder // set by SetDecoder before the first Event
	ch    Chunk
	think ThinkSplitter

	stopped    bool // [DONE], an error event or a bad chunk ended the stream's meaning
	done       bool // [DONE] seen
	usage      Usage
	sawUsage   bool
	contUsage  bool // usage came on the first token chunk: per-chunk exact counts
	prevCompl  int
	counted    int
	finish     []byte
	firstToken bool
	events     int    // data events seen, for error messages
	distrust   string // why continuous usage stopped being believed ("" while it is)
	timing     Timing // the last per-request timing the server reported
	// calls are the tool calls streamed so far, merged by index; their
	// buffers are kept across Reset.
	calls []callBuf
}

// callBuf is one tool call being streamed.
type callBuf struct {
	index          int
	id, name, args []byte
}

// maxChunkTokens is the most tokens one chunk is believed to carry by
// continuous usage: far above any real server's (speculative decoding and
// merged deltas carry a handful), far below what would overflow a count.
const maxChunkTokens = 1 << 16

// MaxUsageTokens bounds a believable usage count (a prompt or a completion):
// no model has a context near it, and sums of many stay far from overflow.
const MaxUsageTokens = 1 << 30

// Reset readies m to measure into rec (its chunks are cleared).
func (m *StreamMeter) Reset(rec *runlog.Record) {
	finish := m.finish[:0]
	dec := m.dec
	calls := m.calls[:0]
	*m = StreamMeter{rec: rec, dec: dec, finish: finish, firstToken: true, calls: calls, timing: noTiming}
	rec.Chunks = rec.Chunks[:0]
	if dec != nil {
		dec.Reset()
	}
}

// SetDecoder makes m read d's protocol's events; it must come before the
// first Event, and it holds across Reset.
func (m *StreamMeter) SetDecoder(d EventDecoder) { m.dec = d }

// Event handles one dispatched event whose data arrived at at (ns);
// truncated marks an event cut off by the end of the stream. It reports
// whether the event is a usage-only chunk ("choices":[] with a usage
// object), which a proxy that asked for usage on the client's behalf strips.
func (m *StreamMeter) Event(data []byte, at int64, truncated bool) (usageOnly bool) {
	if m.stopped || len(data) == 0 {
		return false
	}
	m.events++
	rec := m.rec
	if bytes.Equal(data, doneMarker) {
		m.done, m.stopped = true, true
		rec.End = at
		return false
	}
	ch := &m.ch
	if err := m.dec.Decode(data, ch); err != nil {
		m.stopped = true
		rec.End = at
		if truncated {
			// The stream was cut mid-event: a broken stream, not a server
			// sending bad JSON.
			m.fail(runlog.ErrStream, fmt.Sprintf("stream cut inside chunk %d", len(rec.Chunks)+1))
		} else {
			m.fail(runlog.ErrMalformed, fmt.Sprintf("chunk %d: %v", len(rec.Chunks)+1, err))
		}
		return false
	}
	if len(ch.ErrMessage) > 0 {
		m.stopped = true
		rec.End = at
		m.fail(runlog.ErrStream, "error event: "+string(ch.ErrMessage))
		return false
	}
	if len(ch.FinishReason) > 0 {
		m.finish = append(m.finish[:0], ch.FinishReason...)
	}
	for _, d := range ch.ToolCalls {
		m.mergeCall(d)
	}
	vis, hid := 0, len(ch.Reasoning)+ch.ToolArgs
	if len(ch.Content) > 0 {
		v, h := m.think.Feed(ch.Content)
		vis += v
		hid += h
	}
	if ch.Usage.Present {
		m.usage = ch.Usage
		m.sawUsage = true
	}
	if ch.Timing.Reported() {
		// The last report counts: llama.cpp with timings_per_token sends
		// its running timings in every chunk.
		m.timing = ch.Timing
	}
	if len(ch.ResponseID) > 0 {
		rec.ResponseID = string(ch.ResponseID)
	}
	if ch.End {
		// The protocol's own end event: what it carried (usage, a last
		// delta) counts, then the stream is over as at [DONE].
		defer func() { m.done, m.stopped, rec.End = true, true, at }()
	}
	if vis+hid == 0 {
		if ch.Usage.Present {
			m.usageOnly(ch.Usage.CompletionTokens)
		}
		return ch.Usage.Present && !ch.HasChoices
	}
	if m.firstToken {
		// Usage on the first token chunk means per-chunk usage
		// (continuous_usage_stats); usage only at the end (llama.cpp puts
		// it in the last choices chunk) does not.
		m.contUsage = ch.Usage.Present
		m.firstToken = false
	}
	n := 1
	if m.contUsage && ch.Usage.Present {
		n = ch.Usage.CompletionTokens - m.prevCompl
		switch {
		case n > maxChunkTokens:
			m.distrustUsage(fmt.Sprintf("completion_tokens jumped by %d in one chunk", n))
			n = 1
		case ch.Usage.CompletionTokens < m.prevCompl:
			m.distrustUsage(fmt.Sprintf("cumulative completion_tokens fell from %d to %d", m.prevCompl, ch.Usage.CompletionTokens))
			n = 1
		default:
			m.prevCompl = ch.Usage.CompletionTokens
			n = max(n, 1)
		}
	}
	m.counted += n
	rec.Chunks = append(rec.Chunks, runlog.Chunk{T: at, Tokens: int32(n), Visible: vis > 0})
	return false
}

// usageOnly takes the completion count of a usage report that came without
// tokens (Anthropic's message_delta, a final usage chunk). The count is
// cumulative: one that falls below an earlier one (50, then 2) makes the
// stream's usage unbelievable. A zero is no count (a server's placeholder).
func (m *StreamMeter) usageOnly(compl int) {
	switch {
	case compl <= 0:
	case compl < m.prevCompl:
		m.distrustUsage(fmt.Sprintf("cumulative completion_tokens fell from %d to %d", m.prevCompl, compl))
	default:
		m.prevCompl = compl
	}
}

// mergeCall adds one tool_calls fragment to the call of its index: the id
// and name arrive once (a server that repeats them in every fragment is not
// doubled), the arguments in pieces.
func (m *StreamMeter) mergeCall(d ToolCallDelta) {
	k := slices.IndexFunc(m.calls, func(c callBuf) bool { return c.index == d.Index })
	if k < 0 {
		if len(m.calls) >= maxCalls {
			return
		}
		if len(m.calls) < cap(m.calls) {
			m.calls = m.calls[:len(m.calls)+1]
			c := &m.calls[len(m.calls)-1]
			c.index, c.id, c.name, c.args = d.Index, c.id[:0], c.name[:0], c.args[:0]
		} else {
			m.calls = append(m.calls, callBuf{index: d.Index})
		}
		k = len(m.calls) - 1
	}
	c := &m.calls[k]
	if len(c.id) == 0 {
		c.id = append(c.id, d.ID...)
	}
	if !bytes.Equal(c.name, d.Name) {
		c.name = append(c.name, d.Name...)
	}
	if len(c.args) < maxCallArgs {
		c.args = append(c.args, d.Arguments...)
	}
}

// maxCalls and maxCallArgs bound what one answer's tool calls may hold in
// memory; a server past them is streaming garbage, which the byte caps of
// the stream stop anyway.
const (
	maxCalls    = 1024
	maxCallArgs = 1 << 20
)

// toolCalls returns the streamed tool calls, in index order; nil when none.
// A call the server sent without an id gets "call_<index>", so a result
// can still name it.
func (m *StreamMeter) toolCalls() []runlog.ToolCall {
	if len(m.calls) == 0 {
		return nil
	}
	slices.SortStableFunc(m.calls, func(a, b callBuf) int { return a.index - b.index })
	out := make([]runlog.ToolCall, len(m.calls))
	for i, c := range m.calls {
		out[i] = runlog.ToolCall{ID: string(c.id), Name: string(c.name), Arguments: string(c.args)}
		if out[i].ID == "" {
			out[i].ID = "call_" + strconv.Itoa(c.index)
		}
	}
	return out
}

// Done reports whether the stream ended with [DONE] and no failure.
func (m *StreamMeter) Done() bool { return m.done && m.rec.ErrorClass == "" }

// Stopped reports whether the stream has ended its meaning ([DONE], an
// error event or a bad chunk); later events are ignored.
func (m *StreamMeter) Stopped() bool { return m.stopped }

// EOF ends the stream at its clean end, read at at (ns).
func (m *StreamMeter) EOF(at int64) {
	if !m.stopped {
		m.rec.End = at
		if !m.done && len(m.finish) == 0 {
			m.fail(runlog.ErrStream, "stream ended without [DONE] (or its protocol's end event) or a finish reason")
		}
	}
	m.stopped = true
}

// Abort ends the stream early at at (ns) with class and msg, unless it had
// already ended.
func (m *StreamMeter) Abort(at int64, class runlog.ErrorClass, msg string) {
	if !m.stopped {
		m.rec.End = at
		m.fail(class, msg)
	}
	m.stopped = true
}

// fail sets the record's failure, keeping the first one.
func (m *StreamMeter) fail(class runlog.ErrorClass, msg string) {
	if m.rec.ErrorClass != "" {
		return
	}
	m.rec.ErrorClass = class
	m.rec.Error = OneLine(msg)
}

// distrustUsage stops reading per-chunk counts from continuous usage (each
// chunk counts one token from here on) and notes why.
func (m *StreamMeter) distrustUsage(why string) {
	m.contUsage = false
	if m.distrust == "" {
		m.distrust = why
	}
}

// checkUsage says what is wrong with the final usage, given what the stream
// carried; "" when it is believable. A server's numbers are not trusted
// blindly: one absurd value (negative, beyond any context, decreasing, or
// far above the chunks and the cap asked) would poison a run's totals.
func (m *StreamMeter) checkUsage() (completion, prompt string) {
	u := &m.usage
	completion, prompt = checkCounts(*u, m.rec.MaxTokens)
	switch {
	case m.distrust != "":
		completion = m.distrust // the first thing that went wrong says most
	case completion != "":
	case u.CompletionTokens > 0 && u.CompletionTokens < m.prevCompl:
		completion = fmt.Sprintf("final completion_tokens %d is below the %d streamed before", u.CompletionTokens, m.prevCompl)
	case u.CompletionTokens > 0 && u.CompletionTokens < len(m.rec.Chunks) && m.chunkPerToken():
		completion = fmt.Sprintf("completion_tokens %d is below the %d token-carrying chunks streamed", u.CompletionTokens, len(m.rec.Chunks))
	case len(m.rec.Chunks) > 0 && u.CompletionTokens > maxChunkTokens*len(m.rec.Chunks):
		completion = fmt.Sprintf("completion_tokens %d is far above the %d chunks streamed", u.CompletionTokens, len(m.rec.Chunks))
	}
	return completion, prompt
}

// chunkPerToken reports whether every token-carrying chunk of the protocol
// carries at least one whole token (see PerTokenChunks).
func (m *StreamMeter) chunkPerToken() bool {
	p, ok := m.dec.(PerTokenChunks)
	return ok && p.PerTokenChunks()
}

// Close fills the token counts once the stream is over. estPrompt is the
// caller's own idea of the prompt length (tokens), used when the server
// reported none or an unbelievable one. Usage that does not fit what the
// stream carried is not used: the counts are counted, and the record says
// why (UsageRejected).
func (m *StreamMeter) Close(estPrompt int) {
	rec := m.rec
	rec.FinishReason = string(m.finish)
	rec.ToolCalls = m.toolCalls()
	var badCompl, badPrompt string
	if m.sawUsage {
		badCompl, badPrompt = m.checkUsage()
	} else if m.distrust != "" {
		badCompl = m.distrust
	}
	rec.UsageRejected = strings.Join(slices.DeleteFunc([]string{badCompl, badPrompt}, func(s string) bool { return s == "" }), "; ")
	if badPrompt != "" {
		m.usage.PromptTokens, m.usage.CachedTokens = 0, 0
	}
	if m.sawUsage && m.usage.CompletionTokens > 0 && badCompl == "" {
		rec.TokenSource = runlog.TokensUsage
		rec.PromptTokens = m.usage.PromptTokens
		rec.CompletionTokens = m.usage.CompletionTokens
		rec.ReasoningTokens = m.usage.ReasoningTokens
		rec.CachedTokens = m.usage.CachedTokens
	} else {
		rec.TokenSource = runlog.TokensCounted
		rec.CompletionTokens = m.counted
		if m.sawUsage {
			rec.PromptTokens = m.usage.PromptTokens
			rec.CachedTokens = m.usage.CachedTokens
		}
	}
	if rec.CachedTokens == 0 && m.sawUsage && badPrompt == "" {
		rec.CachedTokens = timedCache(m.usage.PromptTokens, m.timing)
	}
	if rec.PromptTokens == 0 {
		rec.PromptTokens = estPrompt
	}
	setServer(rec, m.timing)
}

// timedCache is the cached prompt tokens a server's timing says, for one
// whose usage says none (llama.cpp's has no prompt_tokens_details): its
// cache_n, else prompt tokens − prompt_n (the tokens it did not process
// were its cache's); 0 when it says nothing believable.
func timedCache(prompt int, t Timing) int {
	switch {
	case t.CachedTokens > 0 && t.CachedTokens <= prompt:
		return t.CachedTokens
	case t.CachedTokens < 0 && t.PromptN > 0 && t.PromptN < prompt:
		return prompt - t.PromptN
	}
	return 0
}

// setServer sets rec.Server from the timing the server reported, when it
// reported any (rec.Server is left alone otherwise). Fields it did not give
// are 0: vLLM gives no cache count in its timing, so the usage's
// cached_tokens (rec.CachedTokens, once believed) stands in; llama.cpp gives
// no queue time. Servers report durations only, never a time on a clock
// goodput could map to its own, so ArrivalNs stays 0.
func setServer(rec *runlog.Record, t Timing) {
	if !t.Reported() {
		return
	}
	st := &runlog.ServerTiming{
		QueueNs:      max(t.QueueNs, 0),
		PrefillNs:    max(t.PrefillNs, 0),
		DecodeNs:     max(t.DecodeNs, 0),
		CachedTokens: t.CachedTokens,
		QueueUnknown: t.QueueNs < 0,
	}
	if st.CachedTokens < 0 {
		st.CachedTokens = rec.CachedTokens
	}
	if t.KVTransferNs >= 0 && t.DecodeEngine >= 1 {
		st.KVTransferNs, st.DecodeReplica = t.KVTransferNs, t.DecodeEngine
	}
	rec.Server = st // a fresh one: rec's old one may be shared with a copy
}
