package run

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/workload"
)

// chatServer answers every chat request "reply-N" where N counts its user
// messages, after a first-token delay of N × 10 ms, and fails (HTTP 500)
// any request whose last user message is "fail". It keeps every request's
// messages.
type chatServer struct {
	mu   sync.Mutex
	seen [][]openai.Message
}

func (cs *chatServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		var body struct{ Messages []openai.Message }
		_ = json.NewDecoder(r.Body).Decode(&body)
		cs.mu.Lock()
		cs.seen = append(cs.seen, body.Messages)
		cs.mu.Unlock()
		users := 0
		for _, m := range body.Messages {
			if m.Role == "user" {
				users++
			}
		}
		if last := body.Messages[len(body.Messages)-1]; last.Content == "fail" {
			http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
			return
		}
		time.Sleep(time.Duration(users) * 10 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"reply-%d\"}}]}\n\n", users)
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

func sessionConfig(t *testing.T, url string, set workload.SessionSet) Config {
	cfg := simConfig(t, 1)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Output.Records = "none"
	cfg.Sessions = &SessionLoad{Set: set, MaxConcurrent: 2}
	cfg.Target = Target{BaseURL: url, API: "openai-chat", Endpoint: "/v1/chat/completions",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(openai.Config{BaseURL: base, Endpoint: "/v1/chat/completions", Model: "m", MaxConns: conns, Now: now, KeepText: true})
		}}
	cfg.Output.KeepRecords = true
	return cfg
}

// Turn k resends the history with the server's own answers, is sent only
// after the previous answer and the think time, and is measured as the
// session's turn k; a failed turn ends its session, nothing lost.
func TestSessionsOverHTTP(t *testing.T) {
	var cs chatServer
	srv := cs.start(t)
	set, err := workload.NewSessions("test", []workload.Session{
		{ID: "a", System: "be brief", Turns: []workload.Turn{{Content: "hello"}, {Content: "more", ThinkTime: 50 * time.Millisecond}, {Content: "last"}}},
		{ID: "b", Turns: []workload.Turn{{Content: "hi"}, {Content: "fail"}, {Content: "never sent"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sessionConfig(t, srv.URL, set))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*runlog.Record{}
	for i := range res.Records {
		r := &res.Records[i]
		byID[fmt.Sprintf("%s%d", r.SessionID, r.Turn)] = r
	}
	if len(res.Records) != 5 || byID["b3"] != nil {
		t.Fatalf("%d records %v; want a's 3 and b's 2 (its third turn not sent)", len(res.Records), byID)
	}
	a1, a2, a3 := byID["a1"], byID["a2"], byID["a3"]
	if a2.Intended != a1.End+int64(50*time.Millisecond) || a2.Sent < a2.Intended || a3.Intended != a2.End {
		t.Errorf("a2 intended %d (a1 ended %d + 50 ms), sent %d; a3 intended %d (a2 ended %d)", a2.Intended, a1.End, a2.Sent, a3.Intended, a2.End)
	}
	// Turn k's TTFT is the server's k × 10 ms (plus the loopback).
	for k, r := range []*runlog.Record{a1, a2, a3} {
		d, ok := r.TTFT()
		if want := time.Duration(k+1) * 10 * time.Millisecond; !ok || d < want || d > want+250*time.Millisecond {
			t.Errorf("turn %d TTFT %v; want about %v", k+1, d, want)
		}
		if r.History != runlog.HistoryServer {
			t.Errorf("turn %d history %q; want server", k+1, r.History)
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var third []openai.Message
	for _, m := range cs.seen {
		if len(m) > 0 && m[len(m)-1].Content == "last" {
			third = m
		}
	}
	want := []openai.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}, {Role: "assistant", Content: "reply-1"},
		{Role: "user", Content: "more"}, {Role: "assistant", Content: "reply-2"}, {Role: "user", Content: "last"}}
	if fmt.Sprint(third) != fmt.Sprint(want) {
		t.Errorf("turn 3 sent %v; want the history with the server's answers %v", third, want)
	}
	s := res.Sessions
	if s == nil || s.Sessions != 2 || s.Failed != 1 || len(s.Turns) != 3 || s.Turns[2].N != 1 {
		t.Fatalf("sessions summary %+v", s)
	}
	if !strings.HasPrefix(res.Levels[0].Level.Label, "sessions ") || res.Meta.Dataset != "test" {
		t.Errorf("level %q, dataset %q", res.Levels[0].Level.Label, res.Meta.Dataset)
	}
}

// A context cap drops the earliest turns (message and answer) until a
// turn's request fits, and each record counts the turns left out.
func TestSessionsMaxContext(t *testing.T) {
	var cs chatServer
	srv := cs.start(t)
	var turns []workload.Turn
	for k := 1; k <= 4; k++ {
		turns = append(turns, workload.Turn{Content: fmt.Sprintf("turn %d", k), InputTokens: 100, OutputTokens: 10})
	}
	set, err := workload.NewSessions("capped", []workload.Session{{ID: "a", Turns: turns}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sessionConfig(t, srv.URL, set)
	// Turn 3 would be 100+1+100+1+100 tokens + 10 asked > 250: turn 1 goes;
	// turn 4 then drops turn 2 as well. The server answers 1 token.
	cfg.Sessions.MaxContext = 250
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var dropped []int
	for _, r := range res.Records {
		dropped = append(dropped, r.HistoryDropped)
	}
	if fmt.Sprint(dropped) != "[0 0 1 2]" {
		t.Errorf("history dropped per turn %v; want [0 0 1 2]", dropped)
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	last := cs.seen[len(cs.seen)-1]
	if len(last) != 3 || last[0].Content != "turn 3" || last[2].Content != "turn 4" {
		t.Errorf("turn 4 sent %v; want turn 3, its answer, turn 4", last)
	}
}
