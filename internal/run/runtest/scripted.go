// Package runtest holds test servers that behave as real LLM servers do
// where calibration and runs must cope with them: tokenize endpoints in
// several forms, short contexts, truncation. Tests only.
package runtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/wire"
)

// Scripted is a server to calibrate against, as real ones behave. Its
// tokenizer counts 1.25 tokens for every approximate one (rounded down)
// plus BOS, and wraps a chat message in a template: the truth to find is
// server = 1 + 1.25 × written for completions, 1 + 1.25 × (template +
// written) for chat.
type Scripted struct {
	// tokenize is how POST /tokenize answers: "" 404 Not Found,
	// "llama.cpp" like llama-server (200 {"tokens": []} to a body without
	// "content"; /apply-template renders chat), "empty" {"tokens": []} to
	// every form, "constant" the same count for every text, "hang" never.
	Tokenize string
	// nCtx is the context in tokens (0 unlimited); a prompt past it is,
	// per over: "cap" counted n_ctx in usage, "llama" cut the way
	// llama-server truncates input (whole blocks of half the context
	// dropped), "refuse" answered HTTP 400 like vLLM.
	NCtx int
	Over string
	// props serves llama.cpp's /props with n_ctx.
	Props bool
	// split counts like foreignServer instead, one more token for each
	// word of 4 letters or more: a count padding with " a" can reach.
	Split bool
}

// ChatTemplate is the chat template Scripted wraps a message in.
const ChatTemplate = "system you are a helpful assistant user %s assistant"

func (sc Scripted) count(text string, bos bool) int {
	n := tokenize.Approx{}.Count(text)
	if sc.Split {
		for _, w := range strings.Fields(text) {
			if len(w) >= 4 {
				n++
			}
		}
	} else {
		n += n / 4
	}
	if bos {
		n++
	}
	return n
}

// Start serves sc until the test ends; tokenizeForms counts the /tokenize requests by the
// body's text field ("prompt", "content", "messages").
func (sc Scripted) Start(t testing.TB) (srv *httptest.Server, tokenizeForms func(string) int) {
	t.Helper()
	var mu sync.Mutex
	forms := map[string]int{}
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt     *string        `json:"prompt"`
			Content    *string        `json:"content"`
			Messages   []wire.Message `json:"messages"`
			AddSpecial bool           `json:"add_special"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		user := ""
		if len(body.Messages) > 0 {
			user = body.Messages[0].Content
		}
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"scripted","owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`)
			return
		case "/props":
			if !sc.Props {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d},"total_slots":1}`, sc.NCtx)
			return
		case "/apply-template":
			if sc.Tokenize != "llama.cpp" {
				http.NotFound(w, r)
				return
			}
			fmt.Fprintf(w, `{"prompt":%q}`, fmt.Sprintf(ChatTemplate, user))
			return
		case "/tokenize":
			mu.Lock()
			switch {
			case body.Prompt != nil:
				forms["prompt"]++
			case body.Content != nil:
				forms["content"]++
			case body.Messages != nil:
				forms["messages"]++
			}
			mu.Unlock()
			switch sc.Tokenize {
			case "llama.cpp":
				if body.Content == nil {
					fmt.Fprint(w, `{"tokens":[]}`)
					return
				}
				n := sc.count(*body.Content, body.AddSpecial)
				fmt.Fprintf(w, `{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat("7,", n), ","))
			case "empty":
				fmt.Fprint(w, `{"tokens":[]}`)
			case "constant":
				fmt.Fprint(w, `{"count":5}`)
			case "hang":
				<-r.Context().Done()
			default:
				http.NotFound(w, r)
			}
			return
		}
		chat := body.Messages != nil
		n := 0
		if chat {
			n = sc.count(fmt.Sprintf(ChatTemplate, user), true)
		} else if body.Prompt != nil {
			n = sc.count(*body.Prompt, true)
		}
		if sc.NCtx > 0 && n+1 > sc.NCtx {
			switch sc.Over {
			case "refuse":
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens. However, you requested %d tokens."}}`, sc.NCtx, n+1)
				return
			case "llama":
				block := sc.NCtx / 2
				n -= (n - block) / block * block
			default:
				n = sc.NCtx
			}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if chat {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":\"length\"}]}\n\n")
		} else {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"x\",\"finish_reason\":\"length\"}]}\n\n")
		}
		fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n", n)
	}))
	t.Cleanup(srv.Close)
	return srv, func(f string) int {
		mu.Lock()
		defer mu.Unlock()
		return forms[f]
	}
}
