package simserve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/tokenize"
)

// respItem is an output item of a Responses answer.
type respItem struct {
	ID      string `json:"id"`
	Type    string `json:"type"`
	Status  string `json:"status"`
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// respObject is a Responses response object.
type respObject struct {
	ID                string     `json:"id"`
	Object            string     `json:"object"`
	Status            string     `json:"status"`
	Model             string     `json:"model"`
	Output            []respItem `json:"output"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	PreviousResponseID *string `json:"previous_response_id"`
	Usage              *struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	} `json:"usage"`
}

// respEvent is the part of a Responses stream event the tests read.
type respEvent struct {
	Type           string      `json:"type"`
	SequenceNumber *int        `json:"sequence_number"`
	Response       *respObject `json:"response"`
	OutputIndex    *int        `json:"output_index"`
	ContentIndex   *int        `json:"content_index"`
	ItemID         string      `json:"item_id"`
	Item           *respItem   `json:"item"`
	Delta          string      `json:"delta"`
	Text           string      `json:"text"`
	Arguments      string      `json:"arguments"`
	Code           string      `json:"code"`
	Message        string      `json:"message"`
}

// assembleResponse rebuilds a streamed response as a client would from the
// deltas, checking the protocol: sequence numbers 0, 1, ...; created and
// in_progress first; items added, delta'd and done in output order, deltas
// naming the open item; every done event's text equal to its deltas'; the
// final event's response carrying the same items. It returns the final
// response object, the items as assembled from the deltas and the stream's
// shape (event types, runs collapsed to one with "+").
func assembleResponse(t *testing.T, evs []sseEvent) (*respObject, []respItem, string) {
	t.Helper()
	var shape []string
	add := func(s string) {
		if n := len(shape); n > 0 && strings.TrimSuffix(shape[n-1], "+") == s {
			shape[n-1] = s + "+"
			return
		}
		shape = append(shape, s)
	}
	var items []respItem
	var final *respObject
	open := -1
	text := ""
	for i, raw := range evs {
		var e respEvent
		if err := json.Unmarshal([]byte(raw.Data), &e); err != nil {
			t.Fatalf("event %d %s: %v", i, raw.Data, err)
		}
		if e.SequenceNumber == nil || *e.SequenceNumber != i {
			t.Fatalf("event %d (%s): sequence_number %v; want %d", i, e.Type, e.SequenceNumber, i)
		}
		add(e.Type)
		inItem := func() {
			if open < 0 || e.ItemID != items[open].ID || e.OutputIndex == nil || *e.OutputIndex != open {
				t.Fatalf("event %d: %s for item %q at %v; the open item is %d", i, raw.Data, e.ItemID, e.OutputIndex, open)
			}
		}
		switch e.Type {
		case "response.created", "response.in_progress":
			if i > 1 || e.Response == nil || e.Response.Status != "in_progress" || len(e.Response.Output) != 0 {
				t.Fatalf("event %d: %s; want one of the first two, in progress, with no output", i, raw.Data)
			}
		case "response.output_item.added":
			if open != -1 || e.Item == nil || e.OutputIndex == nil || *e.OutputIndex != len(items) || e.Item.Status != "in_progress" {
				t.Fatalf("event %d: %s with item %d open; want the next output index in progress", i, raw.Data, open)
			}
			open, text = len(items), ""
			items = append(items, *e.Item)
		case "response.content_part.added", "response.content_part.done":
			inItem()
		case "response.output_text.delta", "response.reasoning_text.delta", "response.function_call_arguments.delta":
			inItem()
			text += e.Delta
		case "response.output_text.done", "response.reasoning_text.done":
			inItem()
			if e.Text != text {
				t.Errorf("event %d: done text %q; the deltas made %q", i, e.Text, text)
			}
			items[open].Content = append(items[open].Content, struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}{strings.TrimSuffix(strings.TrimPrefix(e.Type, "response."), ".done"), text})
		case "response.function_call_arguments.done":
			inItem()
			if e.Arguments != text {
				t.Errorf("event %d: done arguments %q; the deltas made %q", i, e.Arguments, text)
			}
			items[open].Arguments = text
		case "response.output_item.done":
			if e.Item == nil || e.OutputIndex == nil || *e.OutputIndex != open || e.Item.ID != items[open].ID {
				t.Fatalf("event %d: %s; want item %d done", i, raw.Data, open)
			}
			items[open].Status = e.Item.Status
			open = -1
		case "response.completed", "response.incomplete":
			if i != len(evs)-1 || open != -1 || e.Response == nil {
				t.Fatalf("event %d of %d: %s with item %d open; want last, all items done", i, len(evs), e.Type, open)
			}
			final = e.Response
		case "error":
		default:
			t.Fatalf("event %d: unknown type %q", i, e.Type)
		}
	}
	return final, items, strings.Join(shape, " ")
}

// postResponses posts a Responses request and returns the status and body.
func postResponses(t *testing.T, url, body, calls string) (int, []byte) {
	t.Helper()
	resp := postHeader(t, url+"/v1/responses", body, calls)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// whole posts a non-streamed Responses request and decodes its answer.
func wholeResponse(t *testing.T, url, body, calls string) *respObject {
	t.Helper()
	code, b := postResponses(t, url, body, calls)
	if code != 200 {
		t.Fatalf("status %d: %s", code, b)
	}
	var o respObject
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

// streamResponse posts a streamed Responses request and assembles it.
func streamResponse(t *testing.T, url, body, calls string) (*respObject, []respItem, string) {
	t.Helper()
	resp := postHeader(t, url+"/v1/responses", body, calls)
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d, Content-Type %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	return assembleResponse(t, readEvents(t, resp.Body))
}

var respIDPattern = regexp.MustCompile(`^resp_[0-9a-f]{24}$`)

func TestResponsesAnswer(t *testing.T) {
	var tok tokenize.Approx
	cfg := testConfig()
	cfg.ReasoningTokens = 4
	_, thinking := newTestServer(t, cfg, Options{ServedModelName: "sim"})
	// Natural answers of a few tokens (median 8), so the test is quick.
	_, plain := newTestServer(t, testConfig(), Options{ServedModelName: "sim", NaturalOutputMedian: 8})
	const reasoningShape = "response.output_item.added response.reasoning_text.delta+ response.reasoning_text.done response.output_item.done "
	const messageShape = "response.output_item.added response.content_part.added response.output_text.delta+ response.output_text.done response.content_part.done response.output_item.done "
	tests := []struct {
		name      string
		url       string
		body      string
		reasoning int
		status    string // completed or incomplete
		wantShape string
	}{
		{"reasoning, cut", thinking, `"max_output_tokens":10,"ignore_eos":true`, 4, "incomplete",
			"response.created response.in_progress " + reasoningShape + messageShape + "response.incomplete"},
		{"no reasoning, natural end", plain, `"max_output_tokens":1000`, 0, "completed",
			"response.created response.in_progress " + messageShape + "response.completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := func(stream bool) string {
				return fmt.Sprintf(`{"model":"sim","instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"one two three four five"}]}],"stream":%v,%s}`, stream, tt.body)
			}
			final, items, shape := streamResponse(t, tt.url, body(true), "")
			if shape != tt.wantShape {
				t.Errorf("stream shape:\n got %s\nwant %s", shape, tt.wantShape)
			}
			// The streamed items, assembled, are the final object's.
			if diff := cmp.Diff(final.Output, items); diff != "" {
				t.Errorf("final output vs assembled deltas (-final +assembled):\n%s", diff)
			}
			whole := wholeResponse(t, tt.url, body(false), "")
			for _, o := range []*respObject{final, whole} {
				if !respIDPattern.MatchString(o.ID) || o.Object != "response" || o.Model != "sim" || o.Status != tt.status {
					t.Errorf("id %q object %q model %q status %q; want resp_…, response, sim, %s", o.ID, o.Object, o.Model, o.Status, tt.status)
				}
				if (tt.status == "incomplete") != (o.IncompleteDetails != nil && o.IncompleteDetails.Reason == "max_output_tokens") {
					t.Errorf("incomplete_details %+v with status %s", o.IncompleteDetails, o.Status)
				}
				u := o.Usage
				if u == nil {
					t.Fatal("no usage")
				}
				// The instructions count with the input: 2 + 5 tokens.
				if u.InputTokens != 7 || u.OutputTokensDetails.ReasoningTokens != tt.reasoning || u.TotalTokens != 7+u.OutputTokens {
					t.Errorf("usage %+v; want 7 input, %d reasoning, total = input + output", *u, tt.reasoning)
				}
				if tt.status == "incomplete" && u.OutputTokens != 10 {
					t.Errorf("output_tokens %d; want max_output_tokens 10", u.OutputTokens)
				}
				var got []string
				visible := 0
				for _, it := range o.Output {
					got = append(got, it.Type)
					for _, c := range it.Content {
						n := tok.Count(c.Text)
						switch {
						case it.Type == "reasoning" && (c.Type != "reasoning_text" || n != tt.reasoning):
							t.Errorf("reasoning content %+v; want reasoning_text of %d tokens", c, tt.reasoning)
						case it.Type == "message":
							visible += n
						}
					}
				}
				want := []string{"message"}
				if tt.reasoning > 0 {
					want = []string{"reasoning", "message"}
				}
				if !cmp.Equal(got, want) || visible != u.OutputTokens-tt.reasoning {
					t.Errorf("output items %q with %d visible tokens; want %q with %d", got, visible, want, u.OutputTokens-tt.reasoning)
				}
			}
		})
	}
}

func TestResponsesToolCalls(t *testing.T) {
	const perCall = 5
	cfg := testConfig()
	cfg.ToolCallTokens = perCall
	_, never := newTestServer(t, cfg, Options{})
	cfg.ToolCallShare = 1
	_, always := newTestServer(t, cfg, Options{})
	const tools = `"tools":[{"type":"function","name":"search","description":"web search","parameters":{"type":"object","properties":{"query":{"type":"string"}}}},
		{"type":"function","name":"read_file","parameters":{"type":"object","properties":{"path":{"type":"string"}}}},{"type":"function","name":"clock"}]`
	body := func(stream bool, extra string) string {
		return fmt.Sprintf(`{"input":"what time is it","max_output_tokens":20,"stream":%v,%s%s}`, stream, tools, extra)
	}
	tests := []struct {
		name, url, header, extra string
		want                     []string // nil: a text answer; "@": one call
	}{
		{"header", never, "search,read_file", "", []string{"search", "read_file"}},
		{"share", always, "", "", []string{"@"}},
		{"share, tool_choice none", always, "", `,"tool_choice":"none"`, nil},
		{"required", never, "", `,"tool_choice":"required"`, []string{"@"}},
		{"named", never, "", `,"tool_choice":{"type":"function","name":"clock"}`, []string{"clock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			final, _, _ := streamResponse(t, tt.url, body(true, tt.extra), tt.header)
			whole := wholeResponse(t, tt.url, body(false, tt.extra), tt.header)
			for _, o := range []*respObject{final, whole} {
				if tt.want == nil {
					if len(o.Output) != 1 || o.Output[0].Type != "message" {
						t.Errorf("output %+v; want one message", o.Output)
					}
					continue
				}
				if o.Status != "completed" || o.Usage.OutputTokens != perCall*len(tt.want) || o.Usage.OutputTokensDetails.ReasoningTokens != 0 {
					t.Errorf("status %s, usage %+v; want completed, %d output tokens, no reasoning", o.Status, *o.Usage, perCall*len(tt.want))
				}
				var calls []wireToolCall
				for i, it := range o.Output {
					if it.Type != "function_call" || it.ID != "fc_"+strings.TrimPrefix(it.CallID, "call_") || it.Status != "completed" {
						t.Errorf("item %d: type %q id %q call_id %q status %q; want a completed function_call, fc_ id matching its call_ id", i, it.Type, it.ID, it.CallID, it.Status)
					}
					c := wireToolCall{ID: it.CallID, Type: "function"}
					c.Function.Name, c.Function.Arguments = it.Name, it.Arguments
					calls = append(calls, c)
				}
				if tt.want[0] == "@" {
					if len(calls) != 1 {
						t.Fatalf("calls %+v; want one", calls)
					}
					checkCalls(t, calls, []string{calls[0].Function.Name}, perCall)
				} else {
					checkCalls(t, calls, tt.want, perCall)
				}
			}
		})
	}
}

// TestResponsesChain checks server-side history: a second turn that names
// the first as previous_response_id is planned with the first's input and
// output before its own, so the prefix cache serves them; a turn after a
// function call answers it; unknown and unstored ids are 400s.
func TestResponsesChain(t *testing.T) {
	const perCall = 5
	cfg := testConfig()
	cfg.ToolCallTokens = perCall
	s, url := newTestServer(t, cfg, Options{})

	first := wholeResponse(t, url, `{"input":"`+words(40)+`","max_output_tokens":20,"ignore_eos":true}`, "")
	if first.Usage.InputTokens != 40 || first.Usage.InputTokensDetails.CachedTokens != 0 {
		t.Fatalf("turn 1 usage %+v; want 40 input, none cached", *first.Usage)
	}
	second, _, _ := streamResponse(t, url, `{"input":"and then","previous_response_id":"`+first.ID+`","max_output_tokens":5,"ignore_eos":true,"stream":true}`, "")
	// 40 + 20 + 2 tokens, of which the first turn's three full blocks of
	// prompt and answer hit (its answer's last token is never cached).
	if u := second.Usage; u.InputTokens != 62 || u.InputTokensDetails.CachedTokens != 48 {
		t.Errorf("turn 2 usage %+v; want 62 input, 48 cached", *u)
	}
	if second.PreviousResponseID == nil || *second.PreviousResponseID != first.ID {
		t.Errorf("turn 2 previous_response_id = %v; want %q", second.PreviousResponseID, first.ID)
	}
	// The same history resent by hand counts alike.
	resent := wholeResponse(t, url, `{"input":[{"role":"user","content":"`+words(40)+`"},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"`+
		first.Output[0].Content[0].Text+`"}]},{"role":"user","content":"and then"}],"max_output_tokens":5,"ignore_eos":true}`, "")
	if resent.Usage.InputTokens != 62 {
		t.Errorf("resent history: %d input tokens; want 62, as chained", resent.Usage.InputTokens)
	}

	// A function call, answered in the next turn by its call_id.
	const tools = `"tools":[{"type":"function","name":"clock"}]`
	call := wholeResponse(t, url, `{"input":"what time is it","max_output_tokens":20,`+tools+`}`, "clock")
	if len(call.Output) != 1 || call.Output[0].Type != "function_call" {
		t.Fatalf("output %+v; want one function call", call.Output)
	}
	answer := wholeResponse(t, url, `{"previous_response_id":"`+call.ID+`","max_output_tokens":20,`+tools+`,"input":[{"type":"function_call_output","call_id":"`+call.Output[0].CallID+`","output":"noon"}]}`, "")
	if len(answer.Output) != 1 || answer.Output[0].Type != "message" {
		t.Errorf("answer to the call: output %+v; want a message (a tool's output is answered, not called again)", answer.Output)
	}
	// The question, the call (its name and arguments, as chat renders a
	// call) and the call's output.
	var tok tokenize.Approx
	if want := tok.Count("what time is it") + tok.Count("clock "+call.Output[0].Arguments) + tok.Count("noon"); answer.Usage.InputTokens != want {
		t.Errorf("answer to the call: %d input tokens; want %d", answer.Usage.InputTokens, want)
	}

	unstored := wholeResponse(t, url, `{"input":"x","store":false,"max_output_tokens":2}`, "")
	tests := []struct {
		name, body, param, code string
	}{
		{"unknown id", `{"input":"x","previous_response_id":"resp_nope"}`, "previous_response_id", "previous_response_not_found"},
		{"store false", `{"input":"x","previous_response_id":"` + unstored.ID + `"}`, "previous_response_id", "previous_response_not_found"},
		{"output for no call", `{"previous_response_id":"` + first.ID + `","input":[{"type":"function_call_output","call_id":"call_x","output":"y"}]}`, "input[0].call_id", ""},
		{"output before its call", `{"input":[{"type":"function_call_output","call_id":"c1","output":"y"},{"type":"function_call","call_id":"c1","name":"clock","arguments":"{}"}]}`, "input[0].call_id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := postResponses(t, url, tt.body, "")
			e := decodeRespError(t, b)
			if code != 400 || e.Type != "invalid_request_error" || e.Param == nil || *e.Param != tt.param || tt.code != "" && (e.Code == nil || *e.Code != tt.code) {
				t.Errorf("status %d, body %s; want 400 invalid_request_error, param %s, code %q", code, b, tt.param, tt.code)
			}
		})
	}
	if n := s.stored.len(); n != 5 {
		t.Errorf("%d responses stored; want 5 (all answered but the store=false one)", n)
	}
}

// respError is the Responses API's error object.
type respError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

func decodeRespError(t *testing.T, b []byte) respError {
	t.Helper()
	var e struct {
		Error respError `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		t.Fatalf("error body %s: %v", b, err)
	}
	return e.Error
}

func TestResponsesStoreEvicts(t *testing.T) {
	st := newResponseStore(2, 10)
	put := func(id string, size int) { st.put(&storedResponse{id: id, size: size}) }
	put("a", 1)
	put("b", 1)
	st.get("a") // a is now the most recently used
	put("c", 1)
	if st.get("b") != nil || st.get("a") == nil || st.get("c") == nil {
		t.Errorf("after a, b, get a, c with room for 2: want b evicted, a and c kept")
	}
	put("d", 9) // 1 + 1 + 9 bytes > 10: the least recently used go
	if st.len() != 2 || st.get("d") == nil || st.get("c") == nil {
		t.Errorf("after a 9-byte entry with a 10-byte bound: %d stored; want c and d", st.len())
	}
	put("e", 20) // alone over the byte bound: kept (the newest is never evicted)
	if st.len() != 1 || st.get("e") == nil {
		t.Errorf("after a 20-byte entry: %d stored; want it alone", st.len())
	}

	// The server's bound: with room for one, the older response is gone.
	_, url := newTestServer(t, testConfig(), Options{MaxStoredResponses: 1})
	r1 := wholeResponse(t, url, `{"input":"one","max_output_tokens":2}`, "")
	wholeResponse(t, url, `{"input":"two","max_output_tokens":2}`, "")
	if code, b := postResponses(t, url, `{"input":"x","previous_response_id":"`+r1.ID+`"}`, ""); code != 400 {
		t.Errorf("chaining onto an evicted response: status %d %s; want 400", code, b)
	}
}

func TestResponsesBadRequests(t *testing.T) {
	_, url := newTestServer(t, testConfig(), Options{ServedModelName: "sim"})
	tests := []struct {
		name, body, header string
		status             int
		typ, param         string
	}{
		{"no input", `{}`, "", 400, "invalid_request_error", "input"},
		{"empty input", `{"input":[]}`, "", 400, "invalid_request_error", "input"},
		{"input a number", `{"input":3}`, "", 400, "invalid_request_error", "input"},
		{"item without type or role", `{"input":[{"content":"x"}]}`, "", 400, "invalid_request_error", "input[0].type"},
		{"bad role", `{"input":[{"role":"robot","content":"x"}]}`, "", 400, "invalid_request_error", "input[0].role"},
		{"call without call_id", `{"input":[{"role":"user","content":"x"},{"type":"function_call","name":"f","arguments":"{}"}]}`, "", 400, "invalid_request_error", "input[1].call_id"},
		{"output without output", `{"input":[{"type":"function_call_output","call_id":"c"}]}`, "", 400, "invalid_request_error", "input[0].output"},
		{"unknown item", `{"input":[{"type":"item_reference","id":"x"}]}`, "", 400, "invalid_request_error", "input[0].type"},
		{"bad part", `{"input":[{"role":"user","content":[{"type":"video"}]}]}`, "", 400, "invalid_request_error", "input[0].content[0].type"},
		{"zero max_output_tokens", `{"input":"x","max_output_tokens":0}`, "", 400, "invalid_request_error", "max_output_tokens"},
		{"max_output_tokens over the context", `{"input":"x","max_output_tokens":100000000}`, "", 400, "invalid_request_error", "max_output_tokens"},
		{"built-in tool", `{"input":"x","tools":[{"type":"web_search"}]}`, "", 400, "invalid_request_error", "tools[0].type"},
		{"tool_choice undeclared", `{"input":"x","tools":[{"type":"function","name":"a"}],"tool_choice":{"type":"function","name":"b"}}`, "", 400, "invalid_request_error", "tool_choice.name"},
		{"bad effort", `{"input":"x","reasoning":{"effort":"max"}}`, "", 400, "invalid_request_error", "reasoning.effort"},
		{"header undeclared", `{"input":"x"}`, "search", 400, "invalid_request_error", ToolCallsHeader},
		{"empty previous id", `{"input":"x","previous_response_id":""}`, "", 400, "invalid_request_error", "previous_response_id"},
		{"no prompt tokens", `{"input":""}`, "", 400, "invalid_request_error", "input"},
		{"unknown model", `{"model":"gpt-9","input":"x"}`, "", 404, "invalid_request_error", "model"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := postResponses(t, url, tt.body, tt.header)
			e := decodeRespError(t, b)
			if code != tt.status || e.Type != tt.typ || e.Param == nil || *e.Param != tt.param || !strings.Contains(e.Message, tt.param) && tt.param != "model" {
				t.Errorf("status %d, body %s; want %d %s naming %s", code, b, tt.status, tt.typ, tt.param)
			}
		})
	}
}

func TestResponsesMidStreamError(t *testing.T) {
	const body = `{"input":"hello","max_output_tokens":100000,"ignore_eos":true,"stream":true}`
	url, cancel := queueTimeoutServer(t, "/v1/responses", body)
	defer cancel()
	resp := postHeader(t, url+"/v1/responses", body, "")
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("second request: status %d; want 200 (admitted to the queue)", resp.StatusCode)
	}
	evs := readEvents(t, resp.Body)
	_, _, shape := assembleResponse(t, evs)
	if shape != "response.created response.in_progress error" {
		t.Fatalf("stream shape %s; want created, in_progress, error", shape)
	}
	var e respEvent
	if err := json.Unmarshal([]byte(evs[2].Data), &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != "rate_limit_exceeded" || !strings.Contains(e.Message, "queued") {
		t.Errorf("error event %s; want code rate_limit_exceeded saying it queued too long", evs[2].Data)
	}
}

func FuzzParseResponsesRequest(f *testing.F) {
	for _, s := range []string{
		`{"input":"hi"}`,
		`{"instructions":"be brief","input":[{"role":"user","content":[{"type":"input_text","text":"a"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"b"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"},{"type":"function_call_output","call_id":"c","output":"r"},{"type":"reasoning","summary":[]}],"max_output_tokens":9,"previous_response_id":"resp_1","store":false,"stream":true}`,
		`{"input":"x","tools":[{"type":"function","name":"f","parameters":{"properties":{"k":{}}}}],"tool_choice":{"type":"function","name":"f"},"reasoning":{"effort":"low"}}`,
		`{}`, `[]`, `{"input":[]}`, `{"input":[{"role":"user","content":3}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		pr, err := parseResponsesRequest(body)
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) || ae.status != 400 || ae.message == "" {
				t.Fatalf("error %v; want a 400 apiError with a message", err)
			}
			return
		}
		// What was accepted round-trips: the output limit, the chain, the
		// store flag, and a piece per input item with text.
		var w struct {
			Input           json.RawMessage `json:"input"`
			MaxOutputTokens *int            `json:"max_output_tokens"`
			PreviousID      *string         `json:"previous_response_id"`
			Store           *bool           `json:"store"`
		}
		if err := json.Unmarshal(body, &w); err != nil {
			t.Fatalf("accepted a body encoding/json refuses: %v", err)
		}
		if (w.MaxOutputTokens == nil) != (pr.g.maxTokens == 0) || w.MaxOutputTokens != nil && *w.MaxOutputTokens != pr.g.maxTokens {
			t.Fatalf("max_output_tokens %v parsed as %d", w.MaxOutputTokens, pr.g.maxTokens)
		}
		if (w.PreviousID == nil) != (pr.prevID == "") || w.Store != nil && *w.Store != pr.store || w.Store == nil && !pr.store {
			t.Fatalf("previous_response_id %v store %v parsed as %q, %v", w.PreviousID, w.Store, pr.prevID, pr.store)
		}
		var items []struct {
			Type *string `json:"type"`
		}
		want := 1 // a string input
		if json.Unmarshal(w.Input, &items) == nil {
			want = 0
			for _, it := range items {
				if it.Type == nil || *it.Type != "reasoning" {
					want++ // reasoning items have no piece
				}
			}
		}
		if len(pr.input) != want || pr.g.lastRole == "" {
			t.Fatalf("%d input pieces, last role %q; want %d and a role", len(pr.input), pr.g.lastRole, want)
		}
	})
}
