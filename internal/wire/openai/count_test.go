package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/wire"
)

// countServer answers the counting endpoints the way one kind of server
// does, counting one token per word plus BOS where the server adds it, and
// notes every request as "path form" (form: the body's keys).
type countServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string
}

func (s *countServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

func (s *countServer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = nil
}

func newCountServer(t *testing.T, kind string) *countServer {
	t.Helper()
	s := &countServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		_ = json.NewDecoder(r.Body).Decode(&body)
		var keys []string
		for _, k := range []string{"prompt", "messages", "content", "inputs"} {
			if _, ok := body[k]; ok {
				keys = append(keys, k)
			}
		}
		s.mu.Lock()
		s.seen = append(s.seen, r.URL.Path+" "+strings.Join(keys, ","))
		s.mu.Unlock()
		str := func(k string) string {
			var v string
			_ = json.Unmarshal(body[k], &v)
			return v
		}
		user := func() string {
			var ms []wire.Message
			_ = json.Unmarshal(body["messages"], &ms)
			if len(ms) == 0 {
				return ""
			}
			return ms[0].Content
		}
		words := func(text string) int { return len(strings.Fields(text)) }
		switch kind + " " + r.URL.Path {
		case "vllm /tokenize":
			switch {
			case body["prompt"] != nil:
				fmt.Fprintf(w, `{"count":%d,"max_model_len":4096,"tokens":[]}`, 1+words(str("prompt")))
			case body["messages"] != nil:
				fmt.Fprintf(w, `{"count":%d,"max_model_len":4096}`, 5+words(user()))
			default:
				http.Error(w, `{"error":"Field required: prompt"}`, http.StatusBadRequest)
			}
		case "llama.cpp /tokenize":
			// llama-server reads "content" only; without it the answer is
			// an empty list, with status 200.
			if body["content"] == nil {
				fmt.Fprint(w, `{"tokens":[]}`)
				return
			}
			n := words(str("content"))
			if string(body["add_special"]) == "true" {
				n++ // BOS
			}
			fmt.Fprintf(w, `{"tokens":[%s]}`, strings.TrimSuffix(strings.Repeat("7,", n), ","))
		case "llama.cpp /apply-template":
			fmt.Fprintf(w, `{"prompt":%q}`, "<|user|> "+user()+" <|assistant|>")
		case "tgi /tokenize":
			if body["inputs"] == nil {
				http.Error(w, `{"error":"missing field inputs"}`, http.StatusUnprocessableEntity)
				return
			}
			fmt.Fprintf(w, `[%s]`, strings.TrimSuffix(strings.Repeat(`{"id":7,"text":"x"},`, words(str("inputs"))), ","))
		case "broken /tokenize":
			http.Error(w, "boom", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

func TestCounterFindsTheServersForm(t *testing.T) {
	const text = "one two three"
	for _, tc := range []struct {
		name, kind string
		chat       bool
		want       int
		form       string
		first      []string // the requests of the first Count
		then       []string // those of each later Count
	}{
		{"vllm completions", "vllm", false, 4, `{"prompt"}`, []string{"/tokenize prompt"}, []string{"/tokenize prompt"}},
		{"vllm chat", "vllm", true, 8, `{"messages"}`, []string{"/tokenize messages"}, []string{"/tokenize messages"}},
		{"llama.cpp completions", "llama.cpp", false, 4, `{"content"} (llama.cpp)`,
			[]string{"/tokenize prompt", "/tokenize content"}, []string{"/tokenize content"}},
		{"llama.cpp chat", "llama.cpp", true, 6, `/apply-template, then {"content"} (llama.cpp)`,
			[]string{"/tokenize messages", "/apply-template messages", "/tokenize content"},
			[]string{"/apply-template messages", "/tokenize content"}},
		{"tgi", "tgi", false, 3, `{"inputs"} (TGI)`,
			[]string{"/tokenize prompt", "/tokenize content", "/tokenize inputs"}, []string{"/tokenize inputs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newCountServer(t, tc.kind)
			endpoint := "/v1/completions"
			if tc.chat {
				endpoint = "/v1/chat/completions"
			}
			c, err := NewClient(wire.Config{BaseURL: srv.URL, Endpoint: endpoint, Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			k := wire.NewCounter(c)
			for round, want := range [][]string{tc.first, tc.then, tc.then} {
				srv.reset()
				n, err := k.Count(t.Context(), text)
				if err != nil || n != tc.want {
					t.Fatalf("round %d: Count(%q) = %d, %v; want %d", round, text, n, err, tc.want)
				}
				if got := srv.requests(); strings.Join(got, "|") != strings.Join(want, "|") {
					t.Errorf("round %d: requests %q; want %q", round, got, want)
				}
			}
			if got := k.Form(); got != tc.form {
				t.Errorf("Form() = %q; want %q", got, tc.form)
			}
		})
	}
}

func TestCounterErrors(t *testing.T) {
	t.Run("no tokenize", func(t *testing.T) {
		srv := newCountServer(t, "none")
		c, _ := NewClient(wire.Config{BaseURL: srv.URL, Model: "m"})
		if _, err := wire.NewCounter(c).Count(t.Context(), "a b"); !errors.Is(err, wire.ErrNoTokenize) {
			t.Errorf("Count = %v; want wire.ErrNoTokenize", err)
		}
	})
	t.Run("broken", func(t *testing.T) {
		srv := newCountServer(t, "broken")
		c, _ := NewClient(wire.Config{BaseURL: srv.URL, Model: "m"})
		_, err := wire.NewCounter(c).Count(t.Context(), "a b")
		if err == nil || errors.Is(err, wire.ErrNoTokenize) || !strings.Contains(err.Error(), `{"prompt"}: HTTP 500`) {
			t.Errorf("Count = %v; want each form's failure, HTTP 500 among them", err)
		}
	})
	t.Run("never answers", func(t *testing.T) {
		// A /tokenize that hangs: Count gives up at the deadline and does
		// not go on to send the other forms into it.
		var n int
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			n++
			mu.Unlock()
			_, _ = io.Copy(io.Discard, r.Body) // so that the server sees the client go
			<-r.Context().Done()
		}))
		defer srv.Close()
		c, _ := NewClient(wire.Config{BaseURL: srv.URL, Model: "m"})
		ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		_, err := wire.NewCounter(c).Count(ctx, "a b")
		// A minute is a sanity limit: the server never answers, so a
		// Count that ignored the deadline would hang.
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Minute {
			t.Errorf("Count = %v after %v; want the deadline, promptly", err, time.Since(start))
		}
		mu.Lock()
		defer mu.Unlock()
		if n != 1 {
			t.Errorf("server saw %d requests; want 1", n)
		}
	})
}

func TestContextLength(t *testing.T) {
	for _, tc := range []struct {
		name, props, models string
		want                int
		from                string
	}{
		{"llama.cpp slot", `{"default_generation_settings":{"n_ctx":2048},"total_slots":4}`,
			`{"data":[{"id":"m","owned_by":"llamacpp","meta":{"n_ctx_train":131072}}]}`, 2048, "/props default_generation_settings.n_ctx"},
		{"llama.cpp top-level n_ctx", `{"n_ctx":4096}`, ``, 4096, "/props n_ctx"},
		{"llama.cpp models only", ``, `{"data":[{"id":"m","meta":{"n_ctx_train":8192}}]}`, 8192, "/v1/models meta.n_ctx_train"},
		{"vllm", ``, `{"data":[{"id":"m","owned_by":"vllm","max_model_len":32768}]}`, 32768, "/v1/models max_model_len"},
		{"the served model's entry", ``, `{"data":[{"id":"other","max_model_len":1024},{"id":"m","max_model_len":16384}]}`, 16384, "/v1/models max_model_len"},
		{"unknown", ``, `{"data":[{"id":"m"}]}`, 0, ""},
		{"not JSON", `<html>`, `data: {}`, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body := map[string]string{"/props": tc.props, "/v1/models": tc.models}[r.URL.Path]
				if body == "" {
					http.NotFound(w, r)
					return
				}
				fmt.Fprint(w, body)
			}))
			defer srv.Close()
			c, _ := NewClient(wire.Config{BaseURL: srv.URL, Model: "m"})
			n, from := c.ContextLength(t.Context())
			if n != tc.want || from != tc.from {
				t.Errorf("ContextLength() = %d, %q; want %d, %q", n, from, tc.want, tc.from)
			}
		})
	}
}
