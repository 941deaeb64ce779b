package simserve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sse"
	"github.com/goodput/goodput/internal/tokenize"
)

// toolsJSON declares three tools; read_file's arguments key is "path" (its
// first property), the others' "query" (search's first property) and the
// default "query" (clock declares no parameters).
const toolsJSON = `"tools":[
	{"type":"function","function":{"name":"search","description":"web search","parameters":{"type":"object","properties":{"query":{"type":"string"},"top_k":{"type":"integer"}},"required":["query"]}}},
	{"type":"function","function":{"name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}},
	{"type":"function","function":{"name":"clock"}}]`

var argKeys = map[string]string{"search": "query", "read_file": "path", "clock": "query"}

// toolChunk is a streamed chat chunk with the tool-call fields.
type toolChunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta *struct {
			Role             *string `json:"role"`
			Content          *string `json:"content"`
			ReasoningContent *string `json:"reasoning_content"`
			ToolCalls        []struct {
				Index    *int    `json:"index"`
				ID       *string `json:"id"`
				Type     *string `json:"type"`
				Function *struct {
					Name      *string `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *usage `json:"usage"`
}

// readToolStream decodes an SSE body of chat chunks, checking it ends with
// [DONE].
func readToolStream(t *testing.T, body io.Reader) []toolChunk {
	t.Helper()
	rd := sse.NewReader(body, func() int64 { return 0 }, 0)
	var out []toolChunk
	for {
		ev, err := rd.Next()
		if err != nil {
			t.Fatalf("reading stream after %d chunks: %v", len(out), err)
		}
		if string(ev.Data) == "[DONE]" {
			return out
		}
		var c toolChunk
		if err := json.Unmarshal(ev.Data, &c); err != nil {
			t.Fatalf("chunk %s: %v", ev.Data, err)
		}
		out = append(out, c)
	}
}

// assembled is what a client makes of a streamed tool-call answer.
type assembled struct {
	Calls      []wireToolCall
	Content    string
	Reasoning  string
	ToolChunks int // chunks carrying tool_calls
	Finish     string
	Usage      *usage
}

// assemble merges the tool_calls deltas by index, as OpenAI's SDKs do,
// checking that a call's first entry carries its id, type and name and
// later ones only arguments.
func assemble(t *testing.T, cs []toolChunk) assembled {
	t.Helper()
	var a assembled
	for ci, c := range cs {
		if c.Usage != nil {
			a.Usage = c.Usage
		}
		for _, ch := range c.Choices {
			if ch.FinishReason != nil {
				a.Finish = *ch.FinishReason
			}
			d := ch.Delta
			if d == nil {
				continue
			}
			if d.Content != nil {
				a.Content += *d.Content
			}
			if d.ReasoningContent != nil {
				a.Reasoning += *d.ReasoningContent
			}
			if len(d.ToolCalls) > 0 {
				a.ToolChunks++
			}
			for _, e := range d.ToolCalls {
				if e.Index == nil || e.Function == nil || e.Function.Arguments == nil {
					t.Fatalf("chunk %d: tool call entry without index or function.arguments", ci)
				}
				i := *e.Index
				switch {
				case i == len(a.Calls):
					if e.ID == nil || e.Type == nil || e.Function.Name == nil {
						t.Fatalf("chunk %d: call %d's first entry lacks id, type or name", ci, i)
					}
					w := wireToolCall{ID: *e.ID, Type: *e.Type}
					w.Function.Name = *e.Function.Name
					a.Calls = append(a.Calls, w)
				case i == len(a.Calls)-1:
					if e.ID != nil || e.Function.Name != nil {
						t.Fatalf("chunk %d: call %d's later entry repeats its id or name", ci, i)
					}
				default:
					t.Fatalf("chunk %d: entry index %d with %d calls open; want calls one after another", ci, i, len(a.Calls))
				}
				a.Calls[i].Function.Arguments += *e.Function.Arguments
			}
		}
	}
	return a
}

var callIDPattern = regexp.MustCompile(`^call_[0-9a-f]{16}$`)

// checkCalls checks calls against the names wanted: ids well formed and
// distinct, type function, arguments a JSON object of the tool's key
// holding perCall-1 filler words.
func checkCalls(t *testing.T, calls []wireToolCall, names []string, perCall int) {
	t.Helper()
	var got []string
	ids := map[string]bool{}
	for i, c := range calls {
		got = append(got, c.Function.Name)
		if !callIDPattern.MatchString(c.ID) || ids[c.ID] {
			t.Errorf("call %d id = %q; want a fresh call_ and 16 hex digits", i, c.ID)
		}
		ids[c.ID] = true
		if c.Type != "function" {
			t.Errorf("call %d type = %q; want function", i, c.Type)
		}
		var args map[string]string
		if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
			t.Errorf("call %d arguments %q: %v; want a JSON object", i, c.Function.Arguments, err)
			continue
		}
		v, ok := args[argKeys[c.Function.Name]]
		if len(args) != 1 || !ok || len(strings.Fields(v)) != perCall-1 {
			t.Errorf("call %d arguments = %s; want {%q: %d words}", i, c.Function.Arguments, argKeys[c.Function.Name], perCall-1)
		}
	}
	if !cmp.Equal(got, names) {
		t.Errorf("called %q; want %q", got, names)
	}
}

func postHeader(t *testing.T, url, body, header string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if header != "" {
		req.Header.Set(ToolCallsHeader, header)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	return resp
}

func TestToolCallAnswers(t *testing.T) {
	const perCall = 5
	cfg := testConfig()
	cfg.ToolCallTokens = perCall
	_, never := newTestServer(t, cfg, Options{})
	cfg.ToolCallShare = 1
	_, always := newTestServer(t, cfg, Options{})

	const user = `{"role":"user","content":"what is the time"}`
	const history = user + `,{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"clock","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"noon"}`
	chat := func(messages, extra string) string {
		return `{"messages":[` + messages + `],` + toolsJSON + extra + `,"max_tokens":40}`
	}
	tests := []struct {
		name   string
		url    string
		header string
		body   string
		stream bool
		calls  []string // nil: a content answer
	}{
		{name: "header one call", url: never, header: "search", body: chat(user, ""), stream: true, calls: []string{"search"}},
		{name: "header parallel calls", url: never, header: " read_file , search,clock", body: chat(user, ""), stream: true,
			calls: []string{"read_file", "search", "clock"}},
		{name: "header repeats a tool", url: never, header: "search,search", body: chat(user, ""), stream: true, calls: []string{"search", "search"}},
		{name: "header after a tool result", url: never, header: "clock", body: chat(history, ""), stream: true, calls: []string{"clock"}},
		{name: "header over tool_choice none", url: never, header: "clock", body: chat(user, `,"tool_choice":"none"`), calls: []string{"clock"}},
		{name: "header parallel whole", url: never, header: "search,read_file", body: chat(user, ""), calls: []string{"search", "read_file"}},
		{name: "named tool_choice forces it", url: never, body: chat(user, `,"tool_choice":{"type":"function","function":{"name":"read_file"}}`),
			stream: true, calls: []string{"read_file"}},
		{name: "share 1 calls on a user turn", url: always, body: chat(user, `,"tool_choice":"auto"`), stream: true, calls: []string{"*"}},
		{name: "required calls at share 0", url: never, body: chat(user, `,"tool_choice":"required"`), calls: []string{"*"}},
		{name: "share 0 answers content", url: never, body: chat(user, ""), stream: true},
		{name: "tool result answers content", url: always, body: chat(history, ""), stream: true},
		{name: "tool_choice none answers content", url: always, body: chat(user, `,"tool_choice":"none"`)},
		{name: "no tools answers content", url: always, body: `{"messages":[` + user + `],"max_tokens":40}`, stream: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body
			if tc.stream {
				body = strings.TrimSuffix(body, "}") + `,"stream":true,"stream_options":{"include_usage":true}}`
			}
			resp := postHeader(t, tc.url+"/v1/chat/completions", body, tc.header)
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				b, _ := io.ReadAll(resp.Body)
				t.Fatalf("status = %d (%s); want 200", resp.StatusCode, b)
			}
			var (
				calls        []wireToolCall
				content      *string
				finish       string
				u            usage
				reasoningTxt string
			)
			if tc.stream {
				cs := readToolStream(t, resp.Body)
				if d := cs[0].Choices[0].Delta; d == nil || d.Role == nil || len(d.ToolCalls) > 0 {
					t.Errorf("first chunk = %+v; want role-only", cs[0])
				}
				a := assemble(t, cs)
				calls, finish, reasoningTxt = a.Calls, a.Finish, a.Reasoning
				content = &a.Content
				if a.Usage == nil {
					t.Fatal("no usage chunk")
				}
				u = *a.Usage
				// Batch 1, one token an iteration: a chunk per token, unless
				// a starved handler fell behind (TestToolCallSchedule checks
				// the exact schedule).
				if len(tc.calls) > 0 && (a.ToolChunks < 1 || a.ToolChunks > u.CompletionTokens) {
					t.Errorf("tool-call chunks = %d; want 1..%d", a.ToolChunks, u.CompletionTokens)
				}
			} else {
				var got chatResponse
				if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
					t.Fatal(err)
				}
				m := got.Choices[0].Message
				calls, content, finish, u = m.ToolCalls, m.Content, got.Choices[0].FinishReason, got.Usage
				if m.ReasoningContent != nil {
					reasoningTxt = *m.ReasoningContent
				}
			}
			if tc.calls == nil {
				if len(calls) > 0 || content == nil || *content == "" || finish == "tool_calls" {
					t.Errorf("answer = calls %+v, content %v, finish %q; want content only", calls, content, finish)
				}
				return
			}
			if tc.calls[0] == "*" { // any one declared tool
				if len(calls) != 1 || argKeys[calls[0].Function.Name] == "" {
					t.Fatalf("calls = %+v; want one declared tool", calls)
				}
				tc.calls = []string{calls[0].Function.Name}
			}
			checkCalls(t, calls, tc.calls, perCall)
			if finish != "tool_calls" {
				t.Errorf("finish_reason = %q; want tool_calls", finish)
			}
			if tc.stream && *content != "" || !tc.stream && content != nil || reasoningTxt != "" {
				t.Errorf("content %v, reasoning %q; want none with tool calls (null content when whole)", content, reasoningTxt)
			}
			n := perCall * len(tc.calls)
			if u.CompletionTokens != n || u.CompletionDetails.ReasoningTokens != n || u.TotalTokens != u.PromptTokens+n {
				t.Errorf("usage = %+v; want %d completion tokens, all hidden (reasoning_tokens)", u, n)
			}
		})
	}
}

func TestToolBadRequests(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{})
	const user = `{"role":"user","content":"hi"}`
	tool := func(fn string) string { return `{"type":"function","function":` + fn + `}` }
	search := tool(`{"name":"search"}`)
	chat := func(messages, tools, extra string) string {
		b := `{"messages":[` + messages + `]`
		if tools != "" {
			b += `,"tools":[` + tools + `]`
		}
		return b + extra + `}`
	}
	assistant := func(call string) string {
		return `{"role":"assistant","tool_calls":[` + call + `]}`
	}
	tests := []struct {
		name, endpoint, header, body string
		param                        string
	}{
		{name: "tools not an array", body: `{"messages":[` + user + `],"tools":{"type":"function"}}`, param: "tools"},
		{name: "tool not an object", body: chat(user, `"search"`, ""), param: "tools[0]"},
		{name: "tool without type", body: chat(user, `{"function":{"name":"x"}}`, ""), param: "tools[0].type"},
		{name: "tool of another type", body: chat(user, `{"type":"retrieval","function":{"name":"x"}}`, ""), param: "tools[0].type"},
		{name: "tool without function", body: chat(user, `{"type":"function"}`, ""), param: "tools[0].function"},
		{name: "second tool without name", body: chat(user, search+","+tool(`{"description":"d"}`), ""), param: "tools[1].function.name"},
		{name: "tool name a number", body: chat(user, tool(`{"name":7}`), ""), param: "tools[0].function.name"},
		{name: "tool declared twice", body: chat(user, search+","+search, ""), param: "tools[1].function.name"},
		{name: "parameters an array", body: chat(user, tool(`{"name":"x","parameters":[1]}`), ""), param: "tools[0].function.parameters"},
		{name: "tool_choice unknown", body: chat(user, search, `,"tool_choice":"always"`), param: "tool_choice"},
		{name: "tool_choice a number", body: chat(user, search, `,"tool_choice":1`), param: "tool_choice"},
		{name: "tool_choice names no tool", body: chat(user, search, `,"tool_choice":{"type":"function","function":{"name":"read"}}`), param: "tool_choice.function.name"},
		{name: "tool_choice without name", body: chat(user, search, `,"tool_choice":{"type":"function","function":{}}`), param: "tool_choice.function.name"},
		{name: "tool_choice without type", body: chat(user, search, `,"tool_choice":{"function":{"name":"search"}}`), param: "tool_choice.type"},
		{name: "required without tools", body: chat(user, "", `,"tool_choice":"required"`), param: "tool_choice"},
		{name: "tool message without tool_call_id", body: chat(user+`,{"role":"tool","content":"42"}`, search, ""), param: "messages[1].tool_call_id"},
		{name: "tool message with empty tool_call_id", body: chat(user+`,{"role":"tool","tool_call_id":"","content":"42"}`, search, ""), param: "messages[1].tool_call_id"},
		{name: "tool message without content", body: chat(user+`,{"role":"tool","tool_call_id":"c"}`, search, ""), param: "messages[1].content"},
		{name: "tool_calls on a user message", body: chat(`{"role":"user","content":"x","tool_calls":[]}`, search, ""), param: "messages[0].tool_calls"},
		{name: "tool_calls not an array", body: chat(user+`,{"role":"assistant","tool_calls":{}}`, search, ""), param: "messages[1].tool_calls"},
		{name: "tool call without id", body: chat(user+","+assistant(`{"type":"function","function":{"name":"search","arguments":"{}"}}`), search, ""),
			param: "messages[1].tool_calls[0].id"},
		{name: "tool call without name", body: chat(user+","+assistant(`{"id":"c","type":"function","function":{"arguments":"{}"}}`), search, ""),
			param: "messages[1].tool_calls[0].function.name"},
		{name: "tool call arguments an object", body: chat(user+","+assistant(`{"id":"c","function":{"name":"search","arguments":{}}}`), search, ""),
			param: "messages[1].tool_calls[0].function.arguments"},
		{name: "header names an undeclared tool", header: "search,read", body: chat(user, search, ""), param: ToolCallsHeader},
		{name: "header without tools", header: "search", body: chat(user, "", ""), param: ToolCallsHeader},
		{name: "header with an empty name", header: "search,,search", body: chat(user, search, ""), param: ToolCallsHeader},
		{name: "header on completions", endpoint: "/v1/completions", header: "search", body: `{"prompt":"hi"}`, param: ToolCallsHeader},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = "/v1/chat/completions"
			}
			resp := postHeader(t, url+endpoint, tc.body, tc.header)
			defer resp.Body.Close()
			var e errorBody
			if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
				t.Fatalf("error body: %v", err)
			}
			param := ""
			if e.Error.Param != nil {
				param = *e.Error.Param
			}
			if resp.StatusCode != 400 || param != tc.param || !strings.HasPrefix(e.Error.Message, tc.param+": ") {
				t.Errorf("POST %s = %d, param %q, message %q; want 400 naming %s", tc.body, resp.StatusCode, param, e.Error.Message, tc.param)
			}
		})
	}
}

// planFor parses a chat body and plans it on s (which need not run).
func planFor(t *testing.T, s *Server, body string) *plan {
	t.Helper()
	g, err := parseGenRequest([]byte(body), true)
	if err != nil {
		t.Fatalf("parseGenRequest(%s): %v", body, err)
	}
	p, aerr := s.planRequest(g)
	if aerr != nil {
		t.Fatalf("planRequest(%s): %v", body, aerr)
	}
	return p
}

func TestToolCallShare(t *testing.T) {
	const prompts = 2000
	userTurn := func(i int) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"question number %d please"}],%s}`, i, toolsJSON)
	}
	toolTurn := func(i int) string {
		return fmt.Sprintf(`{"messages":[{"role":"user","content":"question number %d please"},`+
			`{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"search","arguments":"{}"}}]},`+
			`{"role":"tool","tool_call_id":"c","content":"answer %d"}],%s}`, i, i, toolsJSON)
	}
	tests := []struct {
		name   string
		share  float64
		body   func(int) string
		lo, hi float64 // the share of prompts answered with a call
	}{
		{"share 0 never calls", 0, userTurn, 0, 0},
		{"share 1 always calls on a user turn", 1, userTurn, 1, 1},
		{"share 1 never calls after a tool result", 1, toolTurn, 0, 0},
		// Binomial: σ = √(0.3·0.7/2000) ≈ 0.010; ±0.04 is 4σ.
		{"share 0.3 converges", 0.3, userTurn, 0.26, 0.34},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			cfg.ToolCallShare = tc.share
			s, err := New(cfg, Options{})
			if err != nil {
				t.Fatal(err)
			}
			called := 0
			byTool := map[int]int{}
			for i := range prompts {
				p := planFor(t, s, tc.body(i))
				if p.callTools == nil {
					if p.finish == "tool_calls" {
						t.Fatalf("prompt %d: finish tool_calls without calls", i)
					}
					continue
				}
				called++
				byTool[p.callTools[0]]++
				if len(p.callTools) != 1 || p.finish != "tool_calls" || p.outputTokens != sim.DefaultToolCallTokens {
					t.Fatalf("prompt %d: calls %v, finish %q, %d tokens; want one call of %d tokens", i, p.callTools, p.finish, p.outputTokens, sim.DefaultToolCallTokens)
				}
			}
			if got := float64(called) / prompts; got < tc.lo || got > tc.hi {
				t.Errorf("share of prompts answered with a call = %.3f; want %.2f..%.2f", got, tc.lo, tc.hi)
			}
			// The hash spreads the calls over the three tools.
			for ti, n := range byTool {
				if got := float64(n) / float64(called); math.Abs(got-1.0/3) > 0.08 {
					t.Errorf("tool %d got %.3f of the calls; want 1/3 ± 0.08", ti, got)
				}
			}
		})
	}
}

func TestToolCallDeterministic(t *testing.T) {
	cfg := testConfig()
	cfg.ToolCallShare = 0.5
	newServer := func() *Server {
		s, err := New(cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := newServer(), newServer()
	for i := range 50 {
		body := fmt.Sprintf(`{"messages":[{"role":"user","content":"task %d"}],%s}`, i, toolsJSON)
		pa, pa2, pb := planFor(t, a, body), planFor(t, a, body), planFor(t, b, body)
		if !cmp.Equal(pa.callTools, pa2.callTools) || !cmp.Equal(pa.callTools, pb.callTools) {
			t.Errorf("prompt %d: calls %v, then %v, on another server %v; want the same", i, pa.callTools, pa2.callTools, pb.callTools)
		}
	}
	// Ids depend on the response id, the prompt and the call's index only.
	tools := []toolDef{{name: "search", argKey: "query"}, {name: "clock", argKey: "query"}}
	ids := func(respID string, hash uint64) []string {
		var out []string
		for _, c := range makeCalls(tools, []int{0, 1, 0}, respID, hash) {
			out = append(out, c.id)
		}
		return out
	}
	first := ids("chatcmpl-1", 42)
	if again := ids("chatcmpl-1", 42); !cmp.Equal(first, again) {
		t.Errorf("ids = %v, then %v; want the same", first, again)
	}
	seen := map[string]bool{}
	for _, set := range [][]string{first, ids("chatcmpl-2", 42), ids("chatcmpl-1", 43)} {
		for _, id := range set {
			if seen[id] || !callIDPattern.MatchString(id) {
				t.Errorf("id %q repeated or malformed; want distinct call_<16 hex> ids", id)
			}
			seen[id] = true
		}
	}
}

func TestToolArguments(t *testing.T) {
	tests := []struct {
		name    string
		key     string
		perCall int
	}{
		{"one token: the name only", "query", 1},
		{"two tokens", "query", 2},
		{"four tokens", "path", 4},
		{"key needing escapes", `a"b\c</`, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			calls := makeCalls([]toolDef{{name: "f", argKey: tc.key}}, []int{0}, "r", 1)
			got := wholeToolCalls(calls, 3, tc.perCall, tc.perCall)[0].Function.Arguments
			if tc.perCall == 1 {
				if got != "{}" {
					t.Errorf("arguments of a one-token call = %s; want {}", got)
				}
				return
			}
			var args map[string]string
			err := json.Unmarshal([]byte(got), &args)
			if v, ok := args[tc.key]; err != nil || len(args) != 1 || !ok || len(strings.Fields(v)) != tc.perCall-1 {
				t.Errorf("arguments of a %d-token call = %s (%v); want {%q: %d words}", tc.perCall, got, err, tc.key, tc.perCall-1)
			}
		})
	}
}

// TestToolCallConversation runs an agent loop against a server with prefix
// caching: the user asks, the model calls a tool, the client sends the
// result, the model answers, the user asks again. Each request resends the
// whole history, tool call included, so each hits the previous one's
// prompt blocks in the prefix cache.
func TestToolCallConversation(t *testing.T) {
	cfg := testConfig()
	cfg.ToolCallShare = 1
	_, url := newTestServer(t, cfg, Options{})
	var tok tokenize.Approx
	system := `{"role":"system","content":"` + strings.TrimSpace(strings.Repeat("you are a careful agent with tools ", 12)) + `"}`
	msgs := []string{system, `{"role":"user","content":"find the report on cache hits"}`}
	send := func(body string) chatResponse {
		t.Helper()
		resp := post(t, context.Background(), url+"/v1/chat/completions", body)
		defer resp.Body.Close()
		var got chatResponse
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != 200 {
			t.Fatalf("POST %s = %d (%v)", body, resp.StatusCode, err)
		}
		return got
	}
	body := func() string {
		return `{"messages":[` + strings.Join(msgs, ",") + `],` + toolsJSON + `,"max_tokens":40}`
	}

	r1 := send(body())
	calls := r1.Choices[0].Message.ToolCalls
	if len(calls) != 1 || r1.Choices[0].FinishReason != "tool_calls" {
		t.Fatalf("turn 1 = %+v; want one tool call (share 1)", r1.Choices[0])
	}
	callJSON, _ := json.Marshal(calls)
	const result = "the report says hits rose by half"
	msgs = append(msgs, `{"role":"assistant","content":null,"tool_calls":`+string(callJSON)+`}`,
		`{"role":"tool","tool_call_id":"`+calls[0].ID+`","content":"`+result+`"}`)
	r2 := send(body())
	if r2.Choices[0].Message.Content == nil || len(r2.Choices[0].Message.ToolCalls) > 0 {
		t.Fatalf("turn 2 (after the tool result) = %+v; want a content answer", r2.Choices[0].Message)
	}
	answer, _ := json.Marshal(*r2.Choices[0].Message.Content)
	msgs = append(msgs, `{"role":"assistant","content":`+string(answer)+`}`, `{"role":"user","content":"and the one before"}`)
	r3 := send(body())

	// The tool call's name and arguments and the tool result count into
	// the prompt.
	p1, p2, p3 := r1.Usage.PromptTokens, r2.Usage.PromptTokens, r3.Usage.PromptTokens
	if want := p1 + tok.Count(calls[0].Function.Name) + tok.Count(calls[0].Function.Arguments) + tok.Count(result); p2 != want {
		t.Errorf("turn 2 prompt_tokens = %d; want %d (turn 1's %d + the call's name and arguments + the result)", p2, want, p1)
	}
	c1, c2, c3 := r1.Usage.PromptDetails.CachedTokens, r2.Usage.PromptDetails.CachedTokens, r3.Usage.PromptDetails.CachedTokens
	t.Logf("prompt_tokens %d, %d, %d; cached_tokens %d, %d, %d", p1, p2, p3, c1, c2, c3)
	block := engineBlockSize(cfg, runlog.Engine{})
	if c1 != 0 || c2 < p1/block*block-block || c3 < p2/block*block-block || !(c1 < c2 && c2 < c3) {
		t.Errorf("cached_tokens = %d, %d, %d (prompts %d, %d, %d); want 0, then each turn's previous prompt's full blocks, growing",
			c1, c2, c3, p1, p2, p3)
	}
	// /tokenize counts the same conversation alike.
	resp := post(t, context.Background(), url+"/tokenize", `{"messages":[`+strings.Join(msgs, ",")+`]}`)
	defer resp.Body.Close()
	var tk struct{ Count int }
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || tk.Count != p3 {
		t.Errorf("/tokenize count = %d (%v); want turn 3's prompt_tokens %d", tk.Count, err, p3)
	}
}

// TestToolCallSchedule checks in a synctest bubble that a tool-call
// answer's chunks leave on the engine's schedule, one per hidden token
// (the first, carrying the call's id and name, at the first token: the
// TTFT), and that a client that stalls gets the tokens it missed merged
// into one chunk whose entries still assemble into valid calls.
func TestToolCallSchedule(t *testing.T) {
	const perCall = 4
	cfg := testConfig()
	cfg.ToolCallTokens = perCall
	body := `{"messages":[{"role":"user","content":"look it up"}],` + toolsJSON + `,"stream":true,"stream_options":{"include_usage":true}}`
	names := []string{"search", "read_file"}
	for _, stall := range []bool{false, true} {
		t.Run(fmt.Sprintf("stalled=%v", stall), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s, err := New(cfg, Options{})
				if err != nil {
					t.Fatal(err)
				}
				var fw *flushWriter
				var w http.ResponseWriter
				var release chan struct{}
				if stall {
					sw := &stallWriter{flushWriter: flushWriter{now: s.clock}, release: make(chan struct{})}
					fw, w, release = &sw.flushWriter, sw, sw.release
				} else {
					fw = &flushWriter{now: s.clock}
					w = fw
				}
				r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
				r.Header.Set(ToolCallsHeader, strings.Join(names, ","))
				var wg sync.WaitGroup
				wg.Go(func() { s.Handler().ServeHTTP(w, r) })
				synctest.Wait()
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				go func() { _ = s.Run(ctx); close(done) }()

				want := replayHidden(t, cfg, "look it up", perCall*len(names))
				if stall {
					time.Sleep(time.Duration(want[len(want)-1]) + time.Millisecond) // fake clock
					synctest.Wait()
					close(release)
				}
				wg.Wait()
				cancel()
				<-done

				var got []int64
				for _, f := range fw.flushes {
					if strings.Contains(f.data, `"tool_calls":[`) {
						got = append(got, f.t)
					}
				}
				wantTimes := want
				if stall { // the first token, then the other seven at once
					wantTimes = []int64{want[0], want[len(want)-1] + int64(time.Millisecond)}
				}
				if diff := cmp.Diff(wantTimes, got); diff != "" {
					t.Errorf("tool-call chunk departures (-want +got):\n%s", diff)
				}
				var all strings.Builder
				for _, f := range fw.flushes {
					all.WriteString(f.data)
				}
				a := assemble(t, readToolStream(t, strings.NewReader(all.String())))
				checkCalls(t, a.Calls, names, perCall)
				if a.Finish != "tool_calls" || a.Content != "" || a.Usage == nil || a.Usage.CompletionTokens != 8 {
					t.Errorf("finish %q, content %q, usage %+v; want tool_calls, none, 8 tokens", a.Finish, a.Content, a.Usage)
				}
			})
		})
	}
}

// replayHidden runs one chat request of n hidden tokens through a fresh
// engine and returns its token times.
func replayHidden(t *testing.T, cfg sim.Config, prompt string, n int) []int64 {
	t.Helper()
	eng, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	info := analyzePrompt([]string{prompt}, nil, 0, cfg.BlockSize, true)
	if err := eng.Add(0, sim.Request{ID: "r1", PromptTokens: info.tokens, OutputTokens: n, ReasoningTokens: n,
		BlockHashes: info.hashes, HashBlockTokens: cfg.BlockSize}); err != nil {
		t.Fatal(err)
	}
	var times []int64
	for now := int64(0); eng.Busy(); {
		end, evs := eng.Step(now)
		for _, ev := range evs {
			if ev.Kind == sim.EventTokens {
				if !ev.Hidden {
					t.Fatal("a visible token in a tool-call answer")
				}
				times = append(times, end)
			}
		}
		now = end
	}
	return times
}

func FuzzParseToolCallsHeader(f *testing.F) {
	for _, s := range []string{"search", " a , b ", "a,,b", ",", "", " ", "x,y,z,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		names, err := parseToolCallsHeader(v)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.param != ToolCallsHeader {
				t.Fatalf("parseToolCallsHeader(%q) error %v; want a 400 naming the header", v, err)
			}
			return
		}
		if strings.TrimSpace(v) == "" && names != nil {
			t.Fatalf("parseToolCallsHeader(%q) = %q; want nil for a blank value", v, names)
		}
		for _, n := range names {
			if n == "" || n != strings.TrimSpace(n) || strings.Contains(n, ",") {
				t.Fatalf("parseToolCallsHeader(%q) gave name %q; want trimmed, non-empty, no comma", v, n)
			}
		}
	})
}

// FuzzToolDelta checks that however the engine's tokens are grouped into
// deliveries, the streamed entries are valid JSON and assemble into the
// same calls as the whole answer.
func FuzzToolDelta(f *testing.F) {
	f.Add(uint8(4), uint8(2), []byte{1, 1, 1, 1, 1, 1, 1, 1}, "query")
	f.Add(uint8(1), uint8(3), []byte{3}, "k")
	f.Add(uint8(5), uint8(2), []byte{2, 7, 1}, `q"\`)
	f.Fuzz(func(t *testing.T, per, ncalls uint8, groups []byte, key string) {
		perCall, n := int(per%8)+1, int(ncalls%4)+1
		tools := []toolDef{{name: "f", argKey: key}, {name: "g<&>", argKey: "x"}}
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i % 2
		}
		calls := makeCalls(tools, idx, "chatcmpl-x", 7)
		total := perCall * n
		var chunks []toolChunk
		for from, gi := 0, 0; from < total; gi++ {
			k := 1
			if gi < len(groups) {
				k = int(groups[gi]%9) + 1
			}
			k = min(k, total-from)
			head := chunkHead(true, "chatcmpl-x", "m", 0)
			text := appendToolDelta(nil, calls, 5, perCall, from, k)
			b := appendChunk(nil, head, true, chunkToolCalls, text, "", nil)
			var c toolChunk
			if err := json.Unmarshal(b, &c); err != nil {
				t.Fatalf("chunk %s: %v", b, err)
			}
			chunks = append(chunks, c)
			from += k
		}
		a := assemble(t, chunks)
		whole := wholeToolCalls(calls, 5, perCall, total)
		if diff := cmp.Diff(whole, a.Calls); diff != "" {
			t.Fatalf("streamed calls differ from the whole answer (-whole +streamed):\n%s", diff)
		}
		for _, c := range whole {
			var args map[string]string
			if err := json.Unmarshal([]byte(c.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", c.Function.Arguments, err)
			}
		}
	})
}

// BenchmarkToolDelta builds one tool-call token chunk, as a stream sends
// one per token: it must not allocate.
func BenchmarkToolDelta(b *testing.B) {
	calls := makeCalls([]toolDef{{name: "search", argKey: "query"}, {name: "read_file", argKey: "path"}}, []int{0, 1}, "chatcmpl-1", 9)
	head := chunkHead(true, "chatcmpl-1", "m", 0)
	const perCall = sim.DefaultToolCallTokens
	var text, buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		text = appendToolDelta(text[:0], calls, 3, perCall, i%(2*perCall), 1)
		buf = appendChunk(buf[:0], head, true, chunkToolCalls, text, "", nil)
	}
}
