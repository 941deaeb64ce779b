package simserve

import (
	"encoding/json"
	"strconv"

	"github.com/goodput/goodput/internal/runlog"
)

// The streamed chunks are built by appending to a reused buffer rather than
// with encoding/json: 2,000 streams each send a chunk per iteration, and the
// only variable text is filler words that need no escaping. Field order and
// nulls follow vLLM's OpenAI-compatible server.

// usage is the OpenAI usage object, with vLLM's details.
type usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	TotalTokens      int `json:"total_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	PromptDetails    struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

func makeUsage(prompt, completion, cached, reasoning int) usage {
	u := usage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	u.PromptDetails.CachedTokens = cached
	u.CompletionDetails.ReasoningTokens = reasoning
	return u
}

func appendUsage(dst []byte, u usage) []byte {
	dst = append(dst, `{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.PromptTokens), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.TotalTokens), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CompletionTokens), 10)
	dst = append(dst, `,"prompt_tokens_details":{"cached_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.PromptDetails.CachedTokens), 10)
	dst = append(dst, `},"completion_tokens_details":{"reasoning_tokens":`...)
	dst = strconv.AppendInt(dst, int64(u.CompletionDetails.ReasoningTokens), 10)
	return append(dst, "}}"...)
}

// chunkHead returns the constant start of every streamed chunk of one
// response: {"id":...,"object":...,"created":...,"model":...,
func chunkHead(chat bool, id, model string, created int64) []byte {
	obj := "text_completion"
	if chat {
		obj = "chat.completion.chunk"
	}
	b := []byte(`{"id":`)
	b = appendJSONString(b, id)
	b = append(b, `,"object":"`...)
	b = append(b, obj...)
	b = append(b, `","created":`...)
	b = strconv.AppendInt(b, created, 10)
	b = append(b, `,"model":`...)
	b = appendJSONString(b, model)
	return append(b, ',')
}

func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always marshals
	return append(dst, b...)
}

// chunkKind says what a streamed chunk carries.
type chunkKind uint8

const (
	chunkContent   chunkKind = iota // visible tokens
	chunkReasoning                  // hidden reasoning tokens
	chunkRole                       // chat's first, role-only chunk
	chunkToolCalls                  // tool-call entries: text is the inside of delta.tool_calls
)

// appendChunk appends one streamed chunk. text is the tokens' text (JSON
// safe), or for chunkToolCalls the entries of delta.tool_calls; finish is "" or the finish reason; u, when non-nil, is the
// continuous usage to attach.
func appendChunk(dst, head []byte, chat bool, kind chunkKind, text []byte, finish string, u *usage) []byte {
	dst = append(dst, head...)
	if chat {
		dst = append(dst, `"choices":[{"index":0,"delta":{`...)
		switch kind {
		case chunkRole:
			dst = append(dst, `"role":"assistant","content":""`...)
		case chunkToolCalls:
			dst = append(dst, `"tool_calls":[`...)
			dst = append(dst, text...)
			dst = append(dst, ']')
		case chunkReasoning:
			dst = append(dst, `"reasoning_content":"`...)
			dst = append(dst, text...)
			dst = append(dst, '"')
		default:
			dst = append(dst, `"content":"`...)
			dst = append(dst, text...)
			dst = append(dst, '"')
		}
		dst = append(dst, `},"logprobs":null,"finish_reason":`...)
		dst = appendFinish(dst, finish)
		dst = append(dst, "}]"...)
	} else {
		dst = append(dst, `"choices":[{"index":0,"text":"`...)
		dst = append(dst, text...)
		dst = append(dst, `","logprobs":null,"finish_reason":`...)
		dst = appendFinish(dst, finish)
		dst = append(dst, `,"stop_reason":null}]`...)
	}
	if u != nil {
		dst = append(dst, `,"usage":`...)
		dst = appendUsage(dst, *u)
	}
	return append(dst, '}')
}

func appendFinish(dst []byte, finish string) []byte {
	if finish == "" {
		return append(dst, "null"...)
	}
	dst = append(dst, '"')
	dst = append(dst, finish...)
	return append(dst, '"')
}

// appendUsageChunk appends the final usage-only chunk (choices empty), sent
// when stream_options.include_usage is set; m, when non-nil, is the
// request's timing, which vLLM attaches to this chunk.
func appendUsageChunk(dst, head []byte, u usage, m *perRequestMetrics) []byte {
	dst = append(dst, head...)
	dst = append(dst, `"choices":[],"usage":`...)
	dst = appendUsage(dst, u)
	if m != nil {
		dst = append(dst, `,"metrics":`...)
		dst = appendMetrics(dst, m)
	}
	return append(dst, '}')
}

// perRequestMetrics is vLLM's per-request "metrics" object, which vLLM
// sends with --enable-per-request-metrics (PerRequestMetrics, built by
// build_per_request_timing_metrics in vllm/entrypoints/generate/base):
// milliseconds, null where unknown. The simulator always sends it, from the
// engine's own timing of the request, so a client can set what it measured
// beside what the server spent. Names and meanings are vLLM's:
// time_to_first_token_ms runs from first scheduled (not from arrival) to the
// first token, the queue being queue_time_ms; generation_time_ms is the
// first to the last token; mean_itl_ms is that over the output tokens − 1
// (null for one token); tokens_per_second is the output tokens over first
// scheduled to last token.
type perRequestMetrics struct {
	TimeToFirstTokenMs *float64 `json:"time_to_first_token_ms"`
	GenerationTimeMs   *float64 `json:"generation_time_ms"`
	QueueTimeMs        *float64 `json:"queue_time_ms"`
	MeanITLMs          *float64 `json:"mean_itl_ms"`
	TokensPerSecond    *float64 `json:"tokens_per_second"`
	// KVTransferMs and DecodeEngine are goodput's own, sent only by a
	// prefill/decode split: the KV transfer's time and the replica (from
	// 1, as its /metrics engine label) that decoded the request.
	KVTransferMs *float64 `json:"kv_transfer_time_ms,omitempty"`
	DecodeEngine *int     `json:"decode_engine,omitempty"`
}

// makeMetrics builds the metrics object from the engine's timing of a
// request that generated n tokens; nil without a timing.
func makeMetrics(t *runlog.ServerTiming, n int) *perRequestMetrics {
	if t == nil {
		return nil
	}
	ms := func(ns int64) *float64 { v := float64(ns) / 1e6; return &v }
	m := &perRequestMetrics{
		TimeToFirstTokenMs: ms(t.PrefillNs),
		GenerationTimeMs:   ms(t.DecodeNs),
		QueueTimeMs:        ms(t.QueueNs),
	}
	if n > 1 {
		v := float64(t.DecodeNs) / 1e6 / float64(n-1)
		m.MeanITLMs = &v
	}
	if inference := t.PrefillNs + t.DecodeNs; inference > 0 {
		v := float64(n) / (float64(inference) / 1e9)
		m.TokensPerSecond = &v
	}
	if t.DecodeReplica > 0 {
		engine := t.DecodeReplica
		m.KVTransferMs, m.DecodeEngine = ms(t.KVTransferNs), &engine
	}
	return m
}

// appendMetrics appends m as JSON in vLLM's field order. Durations are
// written in full ('f', shortest exact), so ns survive the trip through ms.
func appendMetrics(dst []byte, m *perRequestMetrics) []byte {
	field := func(dst []byte, name string, v *float64, last bool) []byte {
		dst = append(dst, '"')
		dst = append(dst, name...)
		dst = append(dst, `":`...)
		if v == nil {
			dst = append(dst, "null"...)
		} else {
			dst = strconv.AppendFloat(dst, *v, 'f', -1, 64)
		}
		if !last {
			dst = append(dst, ',')
		}
		return dst
	}
	dst = append(dst, '{')
	dst = field(dst, "time_to_first_token_ms", m.TimeToFirstTokenMs, false)
	dst = field(dst, "generation_time_ms", m.GenerationTimeMs, false)
	dst = field(dst, "queue_time_ms", m.QueueTimeMs, false)
	dst = field(dst, "mean_itl_ms", m.MeanITLMs, false)
	dst = field(dst, "tokens_per_second", m.TokensPerSecond, m.DecodeEngine == nil)
	if m.DecodeEngine != nil {
		dst = field(dst, "kv_transfer_time_ms", m.KVTransferMs, false)
		dst = append(dst, `"decode_engine":`...)
		dst = strconv.AppendInt(dst, int64(*m.DecodeEngine), 10)
	}
	return append(dst, '}')
}

// completionResponse is a non-streamed /v1/completions answer.
type completionResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []completionChoice `json:"choices"`
	Usage   usage              `json:"usage"`
	Metrics *perRequestMetrics `json:"metrics,omitempty"`
}

type completionChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	Logprobs     *int    `json:"logprobs"`
	FinishReason string  `json:"finish_reason"`
	StopReason   *string `json:"stop_reason"`
}

// chatResponse is a non-streamed /v1/chat/completions answer.
type chatResponse struct {
	ID      string             `json:"id"`
	Object  string             `json:"object"`
	Created int64              `json:"created"`
	Model   string             `json:"model"`
	Choices []chatChoice       `json:"choices"`
	Usage   usage              `json:"usage"`
	Metrics *perRequestMetrics `json:"metrics,omitempty"`
}

type chatChoice struct {
	Index        int         `json:"index"`
	Message      chatMessage `json:"message"`
	Logprobs     *int        `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type chatMessage struct {
	Role             string         `json:"role"`
	Content          *string        `json:"content"` // null with tool calls
	ReasoningContent *string        `json:"reasoning_content"`
	ToolCalls        []wireToolCall `json:"tool_calls,omitempty"`
}

// errorBody is the OpenAI error object.
type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    int     `json:"code"`
	} `json:"error"`
}

// errorType names the error class for a status, as OpenAI's SDKs do.
func errorType(status int) string {
	switch status {
	case 400:
		return "BadRequestError"
	case 404:
		return "NotFoundError"
	case 405:
		return "MethodNotAllowedError"
	case 413:
		return "RequestTooLargeError"
	case 429:
		return "RateLimitError"
	case 503:
		return "ServiceUnavailableError"
	}
	return "InternalServerError"
}
