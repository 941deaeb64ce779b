package llamafake

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func post(t *testing.T, c *http.Client, url, body string) string {
	t.Helper()
	resp, err := c.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: HTTP %d: %s", url, resp.StatusCode, b)
	}
	return string(b)
}

// TestThreadsHeldByIdleConnections: a connection beyond the threads waits
// until an idle one is closed, as llama-server's one thread per connection.
func TestThreadsHeldByIdleConnections(t *testing.T) {
	waiting := make(chan struct{}, 1)
	s, err := Start(Config{Slots: 1, Threads: 1, KeepAlive: time.Minute, OnThreadWait: func() { waiting <- struct{}{} }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tr := &http.Transport{}
	c := &http.Client{Transport: tr}
	post(t, c, s.URL+"/tokenize", `{"content":"a b c"}`) // kept alive: holds the one thread
	addr := strings.TrimPrefix(s.URL, "http://")
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := io.WriteString(raw, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// The second connection waits for the thread; closing the idle one
	// frees it, and only then does the answer come.
	<-waiting
	tr.CloseIdleConnections()
	resp, err := http.ReadResponse(bufio.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if st := s.Stats(); st.ThreadWaits != 1 || st.Conns != 2 {
		t.Errorf("stats = %+v; want 1 thread wait over 2 connections", st)
	}
}

// TestStreamUsageTimingsAndCache: the final chunk carries usage and
// timings; a repeated prompt is served from the slot's cache.
func TestStreamUsageTimingsAndCache(t *testing.T) {
	for _, noCacheN := range []bool{false, true} {
		s, err := Start(Config{Slots: 1, NoCacheN: noCacheN})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"model":"m","messages":[{"role":"user","content":"one two three four"}],"max_tokens":3,"stream":true}`
		var last map[string]any
		for range 2 {
			out := post(t, http.DefaultClient, s.URL+"/v1/chat/completions", body)
			if !strings.HasSuffix(out, "data: [DONE]\n\n") || strings.Count(out, "data: ") != 5 {
				t.Fatalf("stream = %q; want 3 tokens, the final chunk and [DONE]", out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n\n")
			last = nil
			if err := json.Unmarshal([]byte(strings.TrimPrefix(lines[len(lines)-2], "data: ")), &last); err != nil {
				t.Fatal(err)
			}
		}
		s.Close()
		usage := last["usage"].(map[string]any)
		timings := last["timings"].(map[string]any)
		// <s> <|user|> one two three four <|assistant|>: 7 tokens, 6 cached.
		if usage["prompt_tokens"] != 7.0 || timings["prompt_n"] != 1.0 || timings["predicted_n"] != 3.0 {
			t.Errorf("usage %v, timings %v; want 7 prompt tokens, prompt_n 1, predicted_n 3", usage, timings)
		}
		if _, ok := timings["cache_n"]; ok == noCacheN {
			t.Errorf("NoCacheN %v: timings %v", noCacheN, timings)
		}
	}
}

// TestPropsAndMetrics: /props says the slots as llama.cpp does; /metrics
// uses its names.
func TestPropsAndMetrics(t *testing.T) {
	s, err := Start(Config{Slots: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	resp, err := http.Get(s.URL + "/props")
	if err != nil {
		t.Fatal(err)
	}
	var props struct {
		TotalSlots int `json:"total_slots"`
		Defaults   struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&props)
	resp.Body.Close()
	if props.TotalSlots != 3 || props.Defaults.NCtx != 4096 {
		t.Errorf("props = %+v; want 3 slots, n_ctx 4096", props)
	}
	resp, err = http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"llamacpp:prompt_tokens_total", "llamacpp:requests_processing", "llamacpp:kv_cache_usage_ratio"} {
		if !strings.Contains(string(b), "\n"+name+" ") {
			t.Errorf("/metrics lacks %s:\n%s", name, b)
		}
	}
}
