package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/jsonscan"
	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/wire"
)

// flatChunk is a Chunk with strings, for readable diffs.
type flatChunk struct {
	Content, Reasoning, FinishReason, ErrMessage string
	ToolArgs                                     int
	ToolCalls                                    []flatCall
	Role, HasChoices                             bool
	Usage                                        wire.Usage
	// Timing is nil when the chunk reported none (noTiming), so cases
	// without a timing object need not spell it out.
	Timing *wire.Timing
}

type flatCall struct {
	Index          int
	ID, Name, Args string
}

func flatten(c *wire.Chunk) flatChunk {
	f := flatChunk{
		Content: string(c.Content), Reasoning: string(c.Reasoning),
		FinishReason: string(c.FinishReason), ErrMessage: string(c.ErrMessage),
		ToolArgs: c.ToolArgs, Role: c.Role, HasChoices: c.HasChoices, Usage: c.Usage,
	}
	if c.Timing != noTiming {
		t := c.Timing
		f.Timing = &t
	}
	for _, d := range c.ToolCalls {
		f.ToolCalls = append(f.ToolCalls, flatCall{d.Index, string(d.ID), string(d.Name), string(d.Arguments)})
	}
	return f
}

func TestDecode(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want flatChunk
	}{
		{
			name: "vLLM role-only first chunk",
			in:   `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
			want: flatChunk{Role: true, HasChoices: true},
		},
		{
			name: "content",
			in:   `{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`,
			want: flatChunk{Content: "Hi", HasChoices: true},
		},
		{
			name: "usage chunk with empty choices",
			in:   `{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}}`,
			want: flatChunk{Usage: wire.Usage{Present: true, PromptTokens: 10, CompletionTokens: 5, CachedTokens: 4, ReasoningTokens: 2}},
		},
		{
			name: "null usage and details",
			in:   `{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}`,
			want: flatChunk{Content: "a", HasChoices: true},
		},
		{
			name: "usage with null details",
			in:   `{"usage":{"prompt_tokens":7,"completion_tokens":null,"prompt_tokens_details":null}}`,
			want: flatChunk{Usage: wire.Usage{Present: true, PromptTokens: 7}},
		},
		{
			name: "llama.cpp final chunk: usage and timings beside choices",
			in:   `{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"created":1,"usage":{"completion_tokens":24,"prompt_tokens":42,"total_tokens":66},"timings":{"prompt_n":26,"prompt_ms":31.5,"predicted_per_second":60.58}}`,
			want: flatChunk{FinishReason: "stop", HasChoices: true, Usage: wire.Usage{Present: true, PromptTokens: 42, CompletionTokens: 24},
				Timing: &wire.Timing{Present: true, QueueNs: -1, PrefillNs: 31_500_000, DecodeNs: -1, CachedTokens: -1, PromptN: 26, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			// As llama.cpp's tools/server writes it (result_timings::to_json).
			name: "llama.cpp timings, every field",
			in:   `{"choices":[],"timings":{"cache_n":16,"prompt_n":26,"prompt_ms":31.5,"prompt_per_token_ms":1.2115,"prompt_per_second":825.4,"predicted_n":24,"predicted_ms":412.7,"predicted_per_token_ms":16.508,"predicted_per_second":60.58,"draft_n":4,"draft_n_accepted":3}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: -1, PrefillNs: 31_500_000, DecodeNs: 412_700_000, CachedTokens: 16, PromptN: 26, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			// vLLM's usage chunk with --enable-per-request-metrics
			// (PerRequestMetrics): time_to_first_token_ms starts at
			// scheduling, so it is the prefill, not the TTFT.
			name: "vLLM per-request metrics in the usage chunk",
			in:   `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":42,"total_tokens":170,"completion_tokens":128,"prompt_tokens_details":{"cached_tokens":16}},"metrics":{"time_to_first_token_ms":85.2,"generation_time_ms":1240.5,"queue_time_ms":12.3,"mean_itl_ms":9.1,"tokens_per_second":103.2}}`,
			want: flatChunk{Usage: wire.Usage{Present: true, PromptTokens: 42, CompletionTokens: 128, CachedTokens: 16},
				Timing: &wire.Timing{Present: true, QueueNs: 12_300_000, PrefillNs: 85_200_000, DecodeNs: 1_240_500_000, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "vLLM metrics with nulls (timestamps unavailable)",
			in:   `{"choices":[],"metrics":{"time_to_first_token_ms":null,"generation_time_ms":0.0,"queue_time_ms":1e-05,"mean_itl_ms":null,"tokens_per_second":null}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: 10, PrefillNs: -1, DecodeNs: 0, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "metrics null (n > 1) is no timing",
			in:   `{"choices":[],"metrics":null,"timings":[]}`,
			want: flatChunk{},
		},
		{
			name: "empty metrics object: present, nothing given",
			in:   `{"metrics":{}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: -1, PrefillNs: -1, DecodeNs: -1, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "impossible durations are not given",
			in:   `{"metrics":{"queue_time_ms":-3,"time_to_first_token_ms":"85","generation_time_ms":1e400,"":4},"timings":{"prompt_ms":1e300,"predicted_ms":-0,"cache_n":-1,"":7}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: -1, PrefillNs: -1, DecodeNs: 0, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "both shapes: vLLM's durations first, llama.cpp's fill in",
			in:   `{"timings":{"prompt_ms":1,"predicted_ms":2,"cache_n":3},"metrics":{"time_to_first_token_ms":5,"queue_time_ms":0}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: 0, PrefillNs: 5_000_000, DecodeNs: 2_000_000, CachedTokens: 3, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "repeated timing key: the last counts",
			in:   `{"metrics":{"queue_time_ms":4,"queue_time_ms":null},"metrics":{"generation_time_ms":0.000001}}`,
			want: flatChunk{Timing: &wire.Timing{Present: true, QueueNs: -1, PrefillNs: -1, DecodeNs: 1, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}},
		},
		{
			name: "SGLang nulls everywhere",
			in:   `{"choices":[{"index":0,"delta":{"role":null,"content":"x","reasoning_content":null,"tool_calls":null},"logprobs":null,"finish_reason":null,"matched_stop":null}],"usage":null}`,
			want: flatChunk{Content: "x", HasChoices: true},
		},
		{
			name: "reasoning_content",
			in:   `{"choices":[{"index":0,"delta":{"reasoning_content":"hmm"}}]}`,
			want: flatChunk{Reasoning: "hmm", HasChoices: true},
		},
		{
			name: "reasoning",
			in:   `{"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}`,
			want: flatChunk{Reasoning: "hmm", HasChoices: true},
		},
		{
			name: "both reasoning fields count once",
			in:   `{"choices":[{"index":0,"delta":{"reasoning":"hmm","reasoning_content":"hmm"}}]}`,
			want: flatChunk{Reasoning: "hmm", HasChoices: true},
		},
		{
			name: "empty reasoning_content falls back to reasoning",
			in:   `{"choices":[{"index":0,"delta":{"reasoning_content":"","reasoning":"r"}}]}`,
			want: flatChunk{Reasoning: "r", HasChoices: true},
		},
		{
			// name "get" (3) + arguments `{"a` (3) + arguments `b"}` (3) = 9
			name: "tool call deltas",
			in:   `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":"{\"a"}},{"index":1,"function":{"arguments":"b\"}"}}]}}]}`,
			want: flatChunk{ToolArgs: 9, HasChoices: true, ToolCalls: []flatCall{
				{Index: 0, ID: "c1", Name: "get", Args: `{"a`}, {Index: 1, Args: `b"}`}}},
		},
		{
			// "f" (1) + "{}" (2) = 3
			name: "legacy function_call",
			in:   `{"choices":[{"index":0,"delta":{"function_call":{"name":"f","arguments":"{}"}}}]}`,
			want: flatChunk{ToolArgs: 3, HasChoices: true},
		},
		{
			name: "completions text",
			in:   `{"id":"cmpl-1","object":"text_completion","choices":[{"index":0,"text":" the","logprobs":null,"finish_reason":null}]}`,
			want: flatChunk{Content: " the", HasChoices: true},
		},
		{
			name: "finish reason",
			in:   `{"choices":[{"index":0,"delta":{"content":""},"finish_reason":"length","stop_reason":null}]}`,
			want: flatChunk{FinishReason: "length", HasChoices: true},
		},
		{
			name: "key order reversed",
			in:   `{"usage":{"completion_tokens":2,"prompt_tokens":1},"choices":[{"finish_reason":null,"delta":{"content":"z","role":"assistant"},"index":0}]}`,
			want: flatChunk{Content: "z", Role: true, HasChoices: true, Usage: wire.Usage{Present: true, PromptTokens: 1, CompletionTokens: 2}},
		},
		{
			name: "only choice index 0 counts",
			in:   `{"choices":[{"index":1,"delta":{"content":"one"}},{"delta":{"content":"zero"},"index":0},{"index":0,"delta":{"content":"again"}}]}`,
			want: flatChunk{Content: "zero", HasChoices: true},
		},
		{
			name: "choice without index",
			in:   `{"choices":[{"text":"t"}]}`,
			want: flatChunk{Content: "t", HasChoices: true},
		},
		{
			name: "only other choices",
			in:   `{"choices":[{"index":2,"delta":{"content":"x"}}]}`,
			want: flatChunk{HasChoices: true},
		},
		{
			name: "unknown nested fields everywhere",
			in:   `{"x":{"choices":[{"delta":{"content":"no"}}]},"choices":[{"logprobs":{"content":[{"token":"a","logprob":-0.1,"top_logprobs":[]}]},"index":0,"delta":{"content":"yes","extra":[1,{"content":"no"},[true,false,null]]}}],"y":[{"usage":{}}]}`,
			want: flatChunk{Content: "yes", HasChoices: true},
		},
		{
			name: "escapes",
			in:   `{"choices":[{"index":0,"delta":{"content":"a\nb\t\"q\"\\\/\u00e9\u4e2d\ud83d\ude00\b\f\r"}}]}`,
			want: flatChunk{Content: "a\nb\t\"q\"\\/é中😀\b\f\r", HasChoices: true},
		},
		{
			name: "lone surrogates become U+FFFD",
			in:   `{"choices":[{"index":0,"delta":{"content":"\ud800x\udc00\ud800\u0041"}}]}`,
			want: flatChunk{Content: "\uFFFDx\uFFFD\uFFFDA", HasChoices: true},
		},
		{
			name: "raw UTF-8 kept, invalid bytes replaced",
			in:   "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"é\xff中\"}}]}",
			want: flatChunk{Content: "é\uFFFD中", HasChoices: true},
		},
		{
			name: "escaped key",
			in:   `{"ch\u006fices":[{"index":0,"delta":{"\u0063ontent":"k"}}]}`,
			want: flatChunk{Content: "k", HasChoices: true},
		},
		{
			name: "duplicate key: last wins",
			in:   `{"choices":[{"index":0,"delta":{"content":"a","content":"b"}}],"choices":[{"index":0,"delta":{"content":"c"}}]}`,
			want: flatChunk{Content: "c", HasChoices: true},
		},
		{
			name: "whitespace",
			in:   " \t\r\n{ \"choices\" : [ { \"index\" : 0 , \"delta\" : { \"content\" : \"w\" } } ] }\n ",
			want: flatChunk{Content: "w", HasChoices: true},
		},
		{
			name: "wrong types ignored",
			in:   `{"choices":[{"index":0,"delta":{"content":5,"role":true,"tool_calls":{}},"finish_reason":1}],"usage":{"prompt_tokens":"9","completion_tokens":3.0}}`,
			want: flatChunk{HasChoices: true, Usage: wire.Usage{Present: true}},
		},
		{
			name: "OpenAI error object",
			in:   `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			want: flatChunk{ErrMessage: "Rate limit reached"},
		},
		{
			name: "vLLM error object",
			in:   `{"object":"error","message":"Context too long","type":"BadRequestError","param":null,"code":400}`,
			want: flatChunk{ErrMessage: "Context too long"},
		},
		{
			name: "error string",
			in:   `{"error":"overloaded"}`,
			want: flatChunk{ErrMessage: "overloaded"},
		},
		{
			name: "error without message",
			in:   `{"error":{"code":500}}`,
			want: flatChunk{ErrMessage: "unknown error"},
		},
		{
			name: "null error is no error",
			in:   `{"error":null,"choices":[{"index":0,"delta":{"content":"ok"}}]}`,
			want: flatChunk{Content: "ok", HasChoices: true},
		},
		{
			name: "big integers",
			in:   `{"usage":{"prompt_tokens":9223372036854775807,"completion_tokens":9223372036854775808}}`,
			want: flatChunk{Usage: wire.Usage{Present: true, PromptTokens: 9223372036854775807}},
		},
		{
			name: "empty object",
			in:   `{}`,
			want: flatChunk{},
		},
	}
	var d ChunkDecoder
	var c wire.Chunk
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := d.Decode([]byte(tt.in), &c); err != nil {
				t.Fatalf("Decode(%s) error %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, flatten(&c)); diff != "" {
				t.Errorf("Decode(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
			// The reference semantics over encoding/json must agree too.
			ref, err := refDecode([]byte(tt.in))
			if err != nil {
				t.Fatalf("refDecode(%s) error %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, ref); diff != "" {
				t.Errorf("refDecode(%s) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestDecodeMalformed(t *testing.T) {
	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"whitespace", " \n"},
		{"DONE sentinel", "[DONE]"},
		{"array", `[{"choices":[]}]`},
		{"string", `"x"`},
		{"truncated", `{"choices":[{"index":0,"delta":{"content":"Hi`},
		{"truncated after key", `{"choices"`},
		{"trailing data", `{"a":1} {"b":2}`},
		{"trailing comma", `{"a":1,}`},
		{"single quotes", `{'a':1}`},
		{"unquoted key", `{a:1}`},
		{"missing colon", `{"a" 1}`},
		{"bad literal", `{"a":nul}`},
		{"bad escape", `{"choices":[{"delta":{"content":"\x"}}]}`},
		{"short unicode escape", `{"a":"\u12"}`},
		{"control character in string", "{\"a\":\"x\ny\"}"},
		{"leading zero", `{"a":01}`},
		{"bare minus", `{"a":-}`},
		{"bad fraction", `{"a":1.}`},
		{"bad exponent", `{"a":1e}`},
		{"plus sign", `{"a":+1}`},
		{"NaN", `{"a":NaN}`},
		{"unclosed array", `{"choices":[{"index":0}}`},
		{"mismatched bracket", `{"a":[1}`},
		{"too deep", `{"a":` + strings.Repeat("[", jsonscan.MaxDepth) + strings.Repeat("]", jsonscan.MaxDepth) + `}`},
	}
	var d ChunkDecoder
	var c wire.Chunk
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := d.Decode([]byte(tt.in), &c)
			if !errors.Is(err, wire.ErrMalformed) {
				t.Errorf("Decode(%.60q) error = %v; want ErrMalformed", tt.in, err)
			}
		})
	}
}

// TestDecodeDepthLimit pins the nesting limit to encoding/json's.
func TestDecodeDepthLimit(t *testing.T) {
	for _, depth := range []int{jsonscan.MaxDepth - 1, jsonscan.MaxDepth, jsonscan.MaxDepth + 1} {
		// depth counts the top-level object: 1 + (depth-1) arrays.
		in := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		var d ChunkDecoder
		var c wire.Chunk
		gotOK := d.Decode([]byte(in), &c) == nil
		if wantOK := json.Valid([]byte(in)); gotOK != wantOK {
			t.Errorf("Decode(depth %d) ok = %v; want %v as json.Valid", depth, gotOK, wantOK)
		}
	}
}

// refDecode is the specification of Decode written over encoding/json: the
// same field rules, with a generic decoder doing the JSON.
func refDecode(data []byte) (flatChunk, error) {
	var c flatChunk
	if !json.Valid(data) {
		return c, errors.New("invalid JSON")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return c, err
	}
	top, ok := v.(map[string]any)
	if !ok {
		return c, errors.New("not an object")
	}
	str := func(v any) string { s, _ := v.(string); return s }
	integer := func(v any) (int64, bool) {
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		i, err := strconv.ParseInt(string(n), 10, 64)
		if err != nil {
			return 0, false
		}
		return i, true
	}
	count := func(v any) int { i, _ := integer(v); return int(i) }
	fnLen := func(v any) int {
		m, _ := v.(map[string]any)
		return len(str(m["name"])) + len(str(m["arguments"]))
	}

	if arr, ok := top["choices"].([]any); ok {
		c.HasChoices = len(arr) > 0
		for _, el := range arr {
			ch, ok := el.(map[string]any)
			if !ok {
				continue
			}
			if idx, isInt := integer(ch["index"]); isInt && idx != 0 {
				continue
			}
			delta, _ := ch["delta"].(map[string]any)
			c.Content = str(delta["content"])
			if c.Content == "" {
				c.Content = str(ch["text"])
			}
			c.Reasoning = str(delta["reasoning_content"])
			if c.Reasoning == "" {
				c.Reasoning = str(delta["reasoning"])
			}
			_, c.Role = delta["role"].(string)
			if calls, ok := delta["tool_calls"].([]any); ok {
				for pos, call := range calls {
					m, isObj := call.(map[string]any)
					c.ToolArgs += fnLen(m["function"])
					if !isObj {
						continue
					}
					fc := flatCall{Index: pos, ID: str(m["id"])}
					if i, ok := integer(m["index"]); ok && i >= 0 && i <= maxCallIndex {
						fc.Index = int(i)
					}
					fn, _ := m["function"].(map[string]any)
					fc.Name, fc.Args = str(fn["name"]), str(fn["arguments"])
					c.ToolCalls = append(c.ToolCalls, fc)
				}
			}
			c.ToolArgs += fnLen(delta["function_call"])
			c.FinishReason = str(ch["finish_reason"])
			break
		}
	}
	if u, ok := top["usage"].(map[string]any); ok {
		c.Usage.Present = true
		c.Usage.PromptTokens = count(u["prompt_tokens"])
		c.Usage.CompletionTokens = count(u["completion_tokens"])
		ptd, _ := u["prompt_tokens_details"].(map[string]any)
		c.Usage.CachedTokens = count(ptd["cached_tokens"])
		ctd, _ := u["completion_tokens_details"].(map[string]any)
		c.Usage.ReasoningTokens = count(ctd["reasoning_tokens"])
	}
	// The timing objects: each field a JSON number of ms (converted as
	// msToNs does), cache_n an integer; vLLM's durations win.
	timing := func(v any, queue, prefill, decode, cached string) wire.Timing {
		m, ok := v.(map[string]any)
		if !ok {
			return noTiming
		}
		t := wire.Timing{Present: true, QueueNs: -1, PrefillNs: -1, DecodeNs: -1, CachedTokens: -1, KVTransferNs: -1, DecodeEngine: -1}
		ms := func(name string) int64 {
			n, ok := m[name].(json.Number)
			if name == "" || !ok {
				return -1
			}
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || f < 0 || f > 365*24*3600*1e3 {
				return -1
			}
			return int64(math.Round(f * 1e6))
		}
		t.QueueNs, t.PrefillNs, t.DecodeNs = ms(queue), ms(prefill), ms(decode)
		if i, ok := integer(m[cached]); cached != "" && ok && i >= 0 && i <= wire.MaxUsageTokens {
			t.CachedTokens = int(i)
		}
		if i, ok := integer(m["prompt_n"]); cached != "" && ok && i > 0 && i <= wire.MaxUsageTokens {
			t.PromptN = int(i) // llama.cpp's, beside its cache_n
		}
		// The simulated split's keys, read in either object.
		t.KVTransferNs = ms("kv_transfer_time_ms")
		if i, ok := integer(m["decode_engine"]); ok && i >= 0 && i <= runlog.MaxReplica {
			t.DecodeEngine = int(i)
		}
		return t
	}
	vt := timing(top["metrics"], "queue_time_ms", "time_to_first_token_ms", "generation_time_ms", "")
	lt := timing(top["timings"], "", "prompt_ms", "predicted_ms", "cache_n")
	if vt.Present || lt.Present {
		t := vt
		t.Present = true
		if t.PrefillNs < 0 {
			t.PrefillNs = lt.PrefillNs
		}
		if t.DecodeNs < 0 {
			t.DecodeNs = lt.DecodeNs
		}
		t.CachedTokens, t.PromptN = lt.CachedTokens, lt.PromptN
		c.Timing = &t
	}
	isErr, msg := false, ""
	switch e := top["error"].(type) {
	case string:
		isErr, msg = true, e
	case map[string]any:
		isErr, msg = true, str(e["message"])
	}
	objErr := str(top["object"]) == "error"
	if objErr && msg == "" {
		msg = str(top["message"])
	}
	if isErr || objErr {
		c.ErrMessage = msg
		if msg == "" {
			c.ErrMessage = "unknown error"
		}
	}
	return c, nil
}

// checkAgainstRef decodes in both ways and reports any disagreement.
func checkAgainstRef(t *testing.T, d *ChunkDecoder, in []byte) {
	t.Helper()
	var c wire.Chunk
	err := d.Decode(in, &c)
	want, refErr := refDecode(in)
	if (err != nil) != (refErr != nil) {
		t.Fatalf("Decode(%q) error = %v; encoding/json reference error = %v", in, err, refErr)
	}
	if err != nil {
		if !errors.Is(err, wire.ErrMalformed) {
			t.Fatalf("Decode(%q) error = %v; want it to wrap ErrMalformed", in, err)
		}
		return
	}
	if diff := cmp.Diff(want, flatten(&c)); diff != "" {
		t.Fatalf("Decode(%q) disagrees with encoding/json (-ref +got):\n%s", in, diff)
	}
}

func TestDecodeDifferential(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var d ChunkDecoder
	for range 5000 {
		in := genChunk(rng)
		checkAgainstRef(t, &d, in)
		// The same chunk with one byte changed, dropped or the tail cut:
		// both sides must agree on validity and content.
		for range 3 {
			checkAgainstRef(t, &d, mutate(rng, in))
		}
	}
}

// genChunk writes a random chunk in the shapes servers send, with random
// key order, whitespace, escapes, nulls, wrong types and unknown fields.
func genChunk(rng *rand.Rand) []byte {
	g := &gen{rng: rng}
	var top []member
	if rng.IntN(8) > 0 {
		var choices []any
		for range rng.IntN(3) + boolInt(rng.IntN(5) > 0) {
			choices = append(choices, g.choice())
		}
		top = append(top, member{"choices", choices})
	}
	if rng.IntN(3) == 0 {
		top = append(top, member{"usage", g.usage()})
	}
	if rng.IntN(10) == 0 {
		top = append(top, member{"error", g.pick(obj{{"message", g.text()}, {"type", "x"}, {"code", 500}}, g.text(), nil, obj{}, 3)})
	}
	if rng.IntN(10) == 0 {
		top = append(top, member{"object", g.pick("error", "chat.completion.chunk")}, member{"message", g.text()})
	}
	top = append(top,
		member{"id", "chatcmpl-" + strconv.Itoa(rng.IntN(1e6))},
		member{"created", 1767225600}, member{"model", "m"},
	)
	if rng.IntN(3) == 0 {
		top = append(top, member{"metrics", g.pick(g.keep(
			member{"time_to_first_token_ms", g.msOrOther()},
			member{"generation_time_ms", g.msOrOther()},
			member{"queue_time_ms", g.msOrOther()},
			member{"mean_itl_ms", g.msOrOther()},
			member{"tokens_per_second", g.msOrOther()},
		), nil, 5)})
	}
	if rng.IntN(3) == 0 {
		top = append(top, member{"timings", g.pick(g.keep(
			member{"cache_n", g.intOrOther()},
			member{"prompt_n", g.intOrOther()},
			member{"prompt_ms", g.msOrOther()},
			member{"predicted_n", g.intOrOther()},
			member{"predicted_ms", g.msOrOther()},
			member{"predicted_per_second", g.msOrOther()},
		), nil, []any{})})
	}
	if rng.IntN(4) == 0 {
		top = append(top, member{g.text(), g.random(3)})
	}
	g.write(g.shuffle(top))
	return g.b.Bytes()
}

type member struct {
	k string
	v any
}
type obj []member

type gen struct {
	rng *rand.Rand
	b   bytes.Buffer
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (g *gen) pick(vs ...any) any { return vs[g.rng.IntN(len(vs))] }

func (g *gen) shuffle(o obj) obj {
	g.rng.Shuffle(len(o), func(i, j int) { o[i], o[j] = o[j], o[i] })
	if len(o) > 0 && g.rng.IntN(10) == 0 { // a duplicate key
		o = append(o, member{o[g.rng.IntN(len(o))].k, g.random(2)})
	}
	return o
}

// keep returns the members that survive a random drop.
func (g *gen) keep(ms ...member) obj {
	var o obj
	for _, m := range ms {
		if g.rng.IntN(4) > 0 {
			o = append(o, m)
		}
	}
	return g.shuffle(o)
}

var textPieces = []string{
	"", "Hi", " the", "é", "中文", "😀", "\"", "\\", "/", "\n", "\t", "\x01", "\x7f",
	"<think>", "</think>", "{\"a\":", "\u2028", "\xff", "\xed\xa0\x80", "content",
}

func (g *gen) text() string {
	var s strings.Builder
	for range g.rng.IntN(4) {
		s.WriteString(textPieces[g.rng.IntN(len(textPieces))])
	}
	return s.String()
}

func (g *gen) strOrOther() any { return g.pick(g.text(), g.text(), g.text(), nil, 7, obj{}, true) }

func (g *gen) intOrOther() any {
	return g.pick(g.rng.IntN(100000), g.rng.IntN(10), nil, 2.5, "3", json.Number("1e2"), json.Number("-0"), json.Number("99999999999999999999"))
}

// msOrOther returns a duration in ms as servers write them, or a value
// that is none.
func (g *gen) msOrOther() any {
	return g.pick(31.5, float64(g.rng.IntN(100000))/8, g.rng.IntN(5000), 0, nil, -1, "12.5", true,
		json.Number("1e-05"), json.Number("-0"), json.Number("1.2345678901234567e3"), json.Number("1e400"),
		json.Number("99999999999999999999"), json.Number("3.1536e13"), json.Number("-0.0"))
}

func (g *gen) choice() any {
	fn := func() any {
		return g.pick(g.keep(member{"name", g.strOrOther()}, member{"arguments", g.strOrOther()}), nil)
	}
	delta := g.keep(
		member{"role", g.pick("assistant", nil)},
		member{"content", g.strOrOther()},
		member{"reasoning_content", g.strOrOther()},
		member{"reasoning", g.strOrOther()},
		member{"tool_calls", g.pick([]any{g.keep(member{"index", g.pick(0, 2, -1, 1.5, "1", 1<<20)}, member{"id", g.strOrOther()}, member{"function", fn()}), g.keep(member{"function", fn()}), 7}, nil, []any{})},
		member{"function_call", fn()},
	)
	return g.pick(g.keep(
		member{"index", g.pick(0, 0, 0, 1, nil, 0.0)},
		member{"delta", g.pick(delta, delta, nil)},
		member{"text", g.strOrOther()},
		member{"logprobs", g.random(3)},
		member{"finish_reason", g.pick(nil, "stop", "length", 3)},
		member{"stop_reason", nil},
	), 5)
}

func (g *gen) usage() any {
	u := g.keep(
		member{"prompt_tokens", g.intOrOther()},
		member{"completion_tokens", g.intOrOther()},
		member{"total_tokens", g.intOrOther()},
		member{"prompt_tokens_details", g.pick(g.keep(member{"cached_tokens", g.intOrOther()}), nil)},
		member{"completion_tokens_details", g.pick(g.keep(member{"reasoning_tokens", g.intOrOther()}), nil)},
	)
	return g.pick(u, u, nil)
}

// random returns an arbitrary value nested up to depth levels.
func (g *gen) random(depth int) any {
	n := 6
	if depth > 0 {
		n = 8
	}
	switch g.rng.IntN(n) {
	case 0:
		return nil
	case 1:
		return g.rng.IntN(2) == 0
	case 2:
		return json.Number(g.pick("0", "-1", "3.25", "1e-7", "-0.5E+3", "12345678901234567890").(string))
	case 3, 4, 5:
		return g.text()
	case 6:
		var a []any
		for range g.rng.IntN(3) {
			a = append(a, g.random(depth-1))
		}
		return a
	default:
		var o obj
		for range g.rng.IntN(3) {
			o = append(o, member{g.pick("content", "choices", "usage", "x", g.text()).(string), g.random(depth - 1)})
		}
		return o
	}
}

func (g *gen) ws() {
	if g.rng.IntN(8) == 0 {
		g.b.WriteString(g.pick(" ", "\n", "\t", "\r\n  ").(string))
	}
}

func (g *gen) write(v any) {
	g.ws()
	switch v := v.(type) {
	case nil:
		g.b.WriteString("null")
	case bool:
		g.b.WriteString(strconv.FormatBool(v))
	case int:
		g.b.WriteString(strconv.Itoa(v))
	case float64:
		g.b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
		if v == float64(int64(v)) {
			g.b.WriteString(".0")
		}
	case json.Number:
		g.b.WriteString(string(v))
	case string:
		g.str(v)
	case []any:
		g.b.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.write(e)
		}
		g.ws()
		g.b.WriteByte(']')
	case obj:
		g.b.WriteByte('{')
		for i, m := range v {
			if i > 0 {
				g.b.WriteByte(',')
			}
			g.ws()
			g.str(m.k)
			g.ws()
			g.b.WriteByte(':')
			g.write(m.v)
		}
		g.ws()
		g.b.WriteByte('}')
	default:
		panic(fmt.Sprintf("gen: unexpected %T", v))
	}
	g.ws()
}

// str writes s as a JSON string, escaping at random where JSON allows a
// choice; invalid UTF-8 goes out raw, as a sloppy server would send it.
func (g *gen) str(s string) {
	g.b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		raw := s[i : i+size]
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			g.b.WriteString(raw)
		case r == '"' || r == '\\':
			g.b.WriteString(g.pick(`\`+raw, fmt.Sprintf(`\u%04x`, r)).(string))
		case r < 0x20:
			short := map[rune]string{'\n': `\n`, '\t': `\t`, '\r': `\r`, '\b': `\b`, '\f': `\f`}[r]
			if short == "" || g.rng.IntN(2) == 0 {
				short = fmt.Sprintf(`\u%04X`, r)
			}
			g.b.WriteString(short)
		case g.rng.IntN(6) == 0 && r > 0xFFFF:
			r1, r2 := utf16Pair(r)
			fmt.Fprintf(&g.b, `\u%04x\u%04x`, r1, r2)
		case g.rng.IntN(6) == 0 && r <= 0xFFFF:
			fmt.Fprintf(&g.b, `\u%04x`, r)
		case r == '/' && g.rng.IntN(2) == 0:
			g.b.WriteString(`\/`)
		default:
			g.b.WriteString(raw)
		}
	}
	if g.rng.IntN(30) == 0 { // a lone surrogate escape
		g.b.WriteString(g.pick(`\ud83d`, `\uDE00`, `\ud83d\u0041`).(string))
	}
	g.b.WriteByte('"')
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}

// mutate changes, inserts or deletes one byte, or truncates.
func mutate(rng *rand.Rand, in []byte) []byte {
	out := bytes.Clone(in)
	if len(out) == 0 {
		return out
	}
	i := rng.IntN(len(out))
	switch rng.IntN(4) {
	case 0:
		out[i] = `{}[]",:\ 0-.eE"unlltrfa`[rng.IntN(23)]
	case 1:
		out = append(out[:i], out[i+1:]...)
	case 2:
		out = append(out[:i], append([]byte{`{}[]",:\`[rng.IntN(8)]}, out[i:]...)...)
	default:
		out = out[:i]
	}
	return out
}

func TestDecodeNoAllocs(t *testing.T) {
	inputs := []string{
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" token"},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"esc\u00e9\n\"q\""}}],"usage":{"prompt_tokens":1,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":0}}}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"f","arguments":"{\"a\":1}"}}]}}]}`,
		`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2},"metrics":{"time_to_first_token_ms":85.21234567890123,"generation_time_ms":1240.5,"queue_time_ms":1.2345678901234e-05,"mean_itl_ms":null,"tokens_per_second":103.2}}`,
		`{"choices":[{"finish_reason":"stop","index":0,"delta":{}}],"timings":{"cache_n":16,"prompt_n":26,"prompt_ms":31.5,"predicted_n":24,"predicted_ms":412.7,"predicted_per_second":60.58}}`,
	}
	for i, in := range inputs {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			var d ChunkDecoder
			var c wire.Chunk
			data := []byte(in)
			if err := d.Decode(data, &c); err != nil { // warm up the arena
				t.Fatal(err)
			}
			allocs := testing.AllocsPerRun(1000, func() {
				if err := d.Decode(data, &c); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("allocations per Decode(%s) = %v; want 0", in, allocs)
			}
		})
	}
}

// streamTotals is what a client gathers from one recorded-shape stream.
type streamTotals struct {
	Events          int // data events before [DONE]
	RoleChunks      int
	ContentChunks   int
	ReasoningChunks int
	Content         string
	ReasoningBytes  int
	Visible, Hidden int // content bytes after wire.ThinkSplitter
	Finish          string
	Usage           wire.Usage
	UsageEvents     int
	Err             string
	Done            bool
}

func readStream(t testing.TB, path string) streamTotals {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := sse.NewReader(f, func() int64 { return 0 }, 0)
	var (
		d     ChunkDecoder
		c     wire.Chunk
		tot   streamTotals
		think wire.ThinkSplitter
	)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if string(ev.Data) == "[DONE]" {
			tot.Done = true
			break
		}
		tot.Events++
		if err := d.Decode(ev.Data, &c); err != nil {
			t.Fatalf("%s: event %d: %v", path, tot.Events, err)
		}
		if c.Role {
			tot.RoleChunks++
		}
		if len(c.Content) > 0 {
			tot.ContentChunks++
			tot.Content += string(c.Content)
			v, h := think.Feed(c.Content)
			tot.Visible += v
			tot.Hidden += h
		}
		if len(c.Reasoning) > 0 {
			tot.ReasoningChunks++
			tot.ReasoningBytes += len(c.Reasoning)
		}
		if len(c.FinishReason) > 0 {
			tot.Finish = string(c.FinishReason)
		}
		if c.Usage.Present {
			tot.Usage = c.Usage
			tot.UsageEvents++
		}
		if len(c.ErrMessage) > 0 {
			tot.Err = string(c.ErrMessage)
		}
	}
	return tot
}

const (
	streamAnswer = "The quick answer is that a queue forms whenever requests arrive faster than the engine can drain them, so latency grows before throughput does."
	// streamReasoning is the reasoning text of the reasoning streams.
	streamReasoning = "The user asks about queues. Arrival rate above service rate means the backlog grows; say so plainly."
)

// TestStreams checks each recorded-shape stream against totals worked out by
// hand from the stream README: the answer has 24 space-separated pieces
// (143 bytes), the reasoning 17 (100 bytes), the prompt 42 tokens.
func TestStreams(t *testing.T) {
	answer := wire.Usage{Present: true, PromptTokens: 42, CompletionTokens: 24}
	tests := []struct {
		file string
		want streamTotals
	}{
		{"vllm-chat.sse", streamTotals{
			// role chunk + 24 content + finish chunk + usage chunk = 27
			Events: 27, RoleChunks: 1, ContentChunks: 24, Content: streamAnswer,
			Visible: 143, Finish: "stop", UsageEvents: 1, Done: true,
			Usage: wire.Usage{Present: true, PromptTokens: 42, CompletionTokens: 24, CachedTokens: 16},
		}},
		{"sglang-chat.sse", streamTotals{
			Events: 27, RoleChunks: 1, ContentChunks: 24, Content: streamAnswer,
			Visible: 143, Finish: "stop", UsageEvents: 1, Usage: answer, Done: true,
		}},
		{"llamacpp-chat.sse", streamTotals{
			// role chunk + 24 content + final chunk with usage = 26
			Events: 26, RoleChunks: 1, ContentChunks: 24, Content: streamAnswer,
			Visible: 143, Finish: "stop", UsageEvents: 1, Usage: answer, Done: true,
		}},
		{"vllm-reasoning.sse", streamTotals{
			// role + 17 reasoning + 24 content + finish + usage = 44
			Events: 44, RoleChunks: 1, ContentChunks: 24, ReasoningChunks: 17,
			Content: streamAnswer, ReasoningBytes: 100, Visible: 143, Finish: "length", UsageEvents: 1, Done: true,
			Usage: wire.Usage{Present: true, PromptTokens: 42, CompletionTokens: 41, ReasoningTokens: 17},
		}},
		{"vllm-completions.sse", streamTotals{
			// 24 text + finish + usage = 26 (the keep-alive is no event)
			Events: 26, ContentChunks: 24, Content: streamAnswer,
			Visible: 143, Finish: "length", UsageEvents: 1, Usage: answer, Done: true,
		}},
		{"think-inline.sse", streamTotals{
			// role + "<think>" + "\n" + 17 + "\n" + "</think>" + "\n\n" + 24 + finish
			// = 1+1+1+17+1+1+1+24+1 = 48 events, 46 of them with content;
			// hidden = 7 + 1 + 100 + 1 + 8 + 2 = 119, visible = 143
			Events: 48, RoleChunks: 1, ContentChunks: 46,
			Content: "<think>\n" + streamReasoning + "\n</think>\n\n" + streamAnswer,
			Visible: 143, Hidden: 119, Finish: "stop", Done: true,
		}},
		{"vllm-error.sse", streamTotals{
			// role + 3 content + error = 5; "The quick answer" is 16 bytes
			Events: 5, RoleChunks: 1, ContentChunks: 3, Content: "The quick answer", Visible: 16,
			Err: "The engine died unexpectedly; see the server log.",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got := readStream(t, filepath.Join("testdata", "streams", tt.file))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("totals of %s mismatch (-want +got):\n%s", tt.file, diff)
			}
		})
	}
}

func FuzzChunkDecoder(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 5))
	for range 20 {
		f.Add(genChunk(rng))
	}
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"\ud83d\ude00"}}]}`))
	f.Add([]byte(`{"error":{"message":"x"}}`))
	f.Add([]byte(`[DONE]`))
	f.Add([]byte("{\"\xf9\xdc\xcf\xff\"")) // a short key with invalid UTF-8 once panicked
	var d ChunkDecoder
	f.Fuzz(func(t *testing.T, in []byte) {
		checkAgainstRef(t, &d, in)
	})
}

// streamFiles are the benchmarked shapes (the README describes each).
var streamFiles = []string{"vllm-chat", "sglang-chat", "llamacpp-chat", "vllm-reasoning"}

// BenchmarkReadDecode measures the client's per-event hot path: read one SSE
// event and decode its chunk. One op is one event; streams repeat with the
// Reader and decoder reused, as a pooled client would.
func BenchmarkReadDecode(b *testing.B) {
	for _, name := range streamFiles {
		data, err := os.ReadFile(filepath.Join("testdata", "streams", name+".sse"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			src := bytes.NewReader(data)
			r := sse.NewReader(src, func() int64 { return 0 }, 0)
			var (
				d       ChunkDecoder
				c       wire.Chunk
				visible int
			)
			b.ReportAllocs()
			b.SetBytes(int64(len(data)) / int64(bytes.Count(data, []byte("\n\n"))+bytes.Count(data, []byte("\r\n\r\n"))))
			for b.Loop() {
				ev, err := r.Next()
				if err == io.EOF {
					src.Reset(data)
					r.Reset(src)
					ev, err = r.Next()
				}
				if err != nil {
					b.Fatal(err)
				}
				if string(ev.Data) == "[DONE]" {
					continue
				}
				if err := d.Decode(ev.Data, &c); err != nil {
					b.Fatal(err)
				}
				visible += len(c.Content)
			}
			// A whole stream has content; a -benchtime 1x smoke run reads
			// only its first event, a role chunk.
			if visible == 0 && b.N > 100 {
				b.Fatalf("decoded no content in %d events", b.N)
			}
			perfgoal.AtMost(b, "ns per event", perfgoal.PerOp(b), 561)
		})
	}
}

// BenchmarkDecodeVsStdlib compares Decode with encoding/json on the same
// content chunk, to show what the hand-written scanner buys.
func BenchmarkDecodeVsStdlib(b *testing.B) {
	in := []byte(`{"id":"chatcmpl-9f0c2e7a41b84d7c","object":"chat.completion.chunk","created":1767225600,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" queue"},"logprobs":null,"finish_reason":null}]}`)
	b.Run("ChunkDecoder", func(b *testing.B) {
		var d ChunkDecoder
		var c wire.Chunk
		b.ReportAllocs()
		for b.Loop() {
			if err := d.Decode(in, &c); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		type wire struct {
			Choices []struct {
				Index int `json:"index"`
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
		}
		b.ReportAllocs()
		for b.Loop() {
			var w wire
			if err := json.Unmarshal(in, &w); err != nil {
				b.Fatal(err)
			}
		}
	})
}
