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

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simserve"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
	"github.com/goodput/goodput/internal/workload"
)

// chatServer answers every chat request "reply-N" where N counts its user
// messages, after a first-token delay of N × 10 ms, and fails (HTTP 500)
// any request whose last user message is "fail". It keeps every request's
// messages.
type chatServer struct {
	mu   sync.Mutex
	seen [][]wire.Message
	// sessions is each request's openai.HeaderSession, by its last user
	// message.
	sessions map[string]string
}

func (cs *chatServer) start(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		var body struct{ Messages []wire.Message }
		_ = json.NewDecoder(r.Body).Decode(&body)
		cs.mu.Lock()
		cs.seen = append(cs.seen, body.Messages)
		if n := len(body.Messages); n > 0 {
			if cs.sessions == nil {
				cs.sessions = map[string]string{}
			}
			cs.sessions[body.Messages[n-1].Content] = r.Header.Get(wire.HeaderSession)
		}
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

func sessionConfig(t testing.TB, url string, set workload.SessionSet) Config {
	cfg := simConfig(t, 1)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Output.Records = "none"
	cfg.Sessions = &SessionLoad{Set: set, MaxConcurrent: 2}
	cfg.Target = Target{BaseURL: url, API: "openai-chat", Endpoint: "/v1/chat/completions",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/chat/completions", Model: "m", MaxConns: conns, Now: now, KeepText: true})
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
	// Turn k's TTFT holds the server's k × 10 ms (plus the loopback and
	// whatever a busy host adds: the upper bound is a sanity limit, not a
	// speed claim).
	for k, r := range []*runlog.Record{a1, a2, a3} {
		d, ok := r.TTFT()
		if want := time.Duration(k+1) * 10 * time.Millisecond; !ok || d < want || d > want+time.Minute {
			t.Errorf("turn %d TTFT %v; want at least %v", k+1, d, want)
		}
		if r.History != runlog.HistoryServer {
			t.Errorf("turn %d history %q; want server", k+1, r.History)
		}
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var third []wire.Message
	for _, m := range cs.seen {
		if len(m) > 0 && m[len(m)-1].Content == "last" {
			third = m
		}
	}
	want := []wire.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}, {Role: "assistant", Content: "reply-1"},
		{Role: "user", Content: "more"}, {Role: "assistant", Content: "reply-2"}, {Role: "user", Content: "last"}}
	if fmt.Sprint(third) != fmt.Sprint(want) {
		t.Errorf("turn 3 sent %v; want the history with the server's answers %v", third, want)
	}
	// Every turn names its session, for a session-affinity router.
	for msg, sess := range map[string]string{"hello": "a", "more": "a", "last": "a", "hi": "b", "fail": "b"} {
		if got := cs.sessions[msg]; got != sess {
			t.Errorf("turn %q sent session %q; want %q", msg, got, sess)
		}
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

// toolServer answers a chat request whose last message is the user's with
// the calls its X-Goodput-Tool-Calls header names (or, with always set,
// with one call of "search" after tool results too), with ids call-<request
// number>-<j>, and anything else with "done". It checks that every tool
// message answers, by id, a call of the assistant message before it.
type toolServer struct {
	always string // when set, every answer is a call of this tool
	mu     sync.Mutex
	seen   [][]wire.Message
	bad    []string
}

func (ts *toolServer) start(t *testing.T) *httptest.Server {
	var n int
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		var body struct {
			Messages []wire.Message
			Tools    []struct{ Function struct{ Name string } }
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		ts.mu.Lock()
		n++
		req := n
		ts.seen = append(ts.seen, body.Messages)
		open := map[string]bool{}
		for i, m := range body.Messages {
			for _, c := range m.ToolCalls {
				open[c.ID] = true
			}
			if m.Role == "tool" && !open[m.ToolCallID] {
				ts.bad = append(ts.bad, fmt.Sprintf("request %d message %d answers unknown call %q", req, i, m.ToolCallID))
			}
			delete(open, m.ToolCallID)
		}
		if len(open) > 0 {
			ts.bad = append(ts.bad, fmt.Sprintf("request %d leaves calls unanswered: %v", req, open))
		}
		ts.mu.Unlock()
		var names []string
		last := body.Messages[len(body.Messages)-1]
		if h := r.Header.Get(wire.HeaderToolCalls); h != "" && last.Role != "assistant" {
			names = strings.Split(h, ",")
		}
		if ts.always != "" {
			names = []string{ts.always}
		}
		w.Header().Set("Content-Type", "text/event-stream")
		if len(names) == 0 {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"done\"},\"finish_reason\":\"stop\"}]}\n\n")
		} else {
			for j, name := range names {
				fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":%d,\"id\":\"call-%d-%d\",\"type\":\"function\",\"function\":{\"name\":%q,\"arguments\":\"{}\"}}]}}]}\n\n", j, req, j, name)
			}
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n")
		}
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A turn with two parallel calls and then one more: three requests, the
// tool rounds counted, the results sent back under the calls' ids after
// the longest call of each round, then the next turn with all of it in
// its history.
func TestSessionToolRounds(t *testing.T) {
	var ts toolServer
	srv := ts.start(t)
	set, err := workload.NewSessions("tools", []workload.Session{{ID: "a", Tools: []string{"search", "read"}, Turns: []workload.Turn{
		{Content: "find it", OutputTokens: 5, ToolCalls: []workload.ToolCall{
			{Name: "search", Latency: 30 * time.Millisecond, ResultTokens: 7},
			{Name: "read", Latency: 60 * time.Millisecond, ResultTokens: 3, Parallel: true},
			{Name: "search", Latency: 10 * time.Millisecond},
		}},
		{Content: "thanks"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), sessionConfig(t, srv.URL, set))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 4 {
		t.Fatalf("%d records; want 3 for turn 1 (2 tool rounds) and 1 for turn 2", len(res.Records))
	}
	r0, r1, r2, t2 := &res.Records[0], &res.Records[1], &res.Records[2], &res.Records[3]
	for i, r := range []*runlog.Record{r0, r1, r2, t2} {
		wantTurn, wantRound := 1, i
		if i == 3 {
			wantTurn, wantRound = 2, 0
		}
		if !r.OK() || r.Turn != wantTurn || r.ToolRound != wantRound {
			t.Errorf("record %d (%s): turn %d round %d ok %v (%s); want turn %d round %d", i, r.ID, r.Turn, r.ToolRound, r.OK(), r.Error, wantTurn, wantRound)
		}
	}
	if len(r0.ToolCalls) != 2 || r0.ToolCalls[0].ID != "call-1-0" || r0.ToolCalls[1].Name != "read" || r0.ToolLatencyNs != int64(60*time.Millisecond) {
		t.Errorf("round 0 calls %v wait %v; want search and read, the longest latency 60ms", r0.ToolCalls, time.Duration(r0.ToolLatencyNs))
	}
	if r1.Intended != r0.End+int64(60*time.Millisecond) || r2.Intended != r1.End+int64(10*time.Millisecond) {
		t.Errorf("round 1 intended %d (round 0 ended %d + 60ms), round 2 intended %d (round 1 ended %d + 10ms)", r1.Intended, r0.End, r2.Intended, r1.End)
	}
	if r2.ToolCalls != nil || r2.ToolLatencyNs != 0 {
		t.Errorf("final answer carries calls %v, wait %d", r2.ToolCalls, r2.ToolLatencyNs)
	}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.bad) > 0 {
		t.Errorf("tool results did not answer their calls: %v", ts.bad)
	}
	// Turn 2 resends turn 1 whole: user, calls, 2 results, call, result, answer.
	var roles []string
	for _, m := range ts.seen[3] {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant tool tool assistant tool assistant user" {
		t.Errorf("turn 2 history roles %q", got)
	}
	if m := ts.seen[1][2]; m.ToolCallID != "call-1-0" || len(strings.Fields(m.Content)) == 0 {
		t.Errorf("first tool result %+v; want the answer to call-1-0 with 7 tokens of text", m)
	}
}

// A model that keeps calling tools is cut off after MaxToolRounds; a call
// of a tool the request did not declare fails the request and ends its
// session.
func TestSessionToolRoundCapAndUndeclared(t *testing.T) {
	ts := toolServer{always: "search"}
	srv := ts.start(t)
	set, err := workload.NewSessions("loop", []workload.Session{{ID: "a", Tools: []string{"search"}, Turns: []workload.Turn{{Content: "go"}, {Content: "again"}}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := sessionConfig(t, srv.URL, set)
	cfg.Sessions.MaxToolRounds = 2
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var rounds []string
	for _, r := range res.Records {
		rounds = append(rounds, fmt.Sprintf("%d.%d", r.Turn, r.ToolRound))
	}
	if got := strings.Join(rounds, " "); got != "1.0 1.1 1.2 2.0 2.1 2.2" {
		t.Errorf("turn.round of the requests %q; want 3 requests per turn", got)
	}
	if len(ts.bad) > 0 {
		t.Errorf("history after the cap leaves calls unanswered: %v", ts.bad)
	}

	bad := toolServer{always: "rm"}
	srv2 := bad.start(t)
	res, err = Run(context.Background(), sessionConfig(t, srv2.URL, set))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Records) != 1 || res.Records[0].ErrorClass != runlog.ErrBadResponse || !strings.Contains(res.Records[0].Error, `"rm"`) {
		t.Fatalf("records %+v; want one failed by the undeclared tool", res.Records)
	}
	if s := res.Sessions; s == nil || s.Failed != 1 {
		t.Errorf("sessions %+v; want the session failed", s)
	}
}

// Sessions against a simulated fleet behind session-affinity routing:
// every turn of a session is served by the replica its first turn went
// to, since each request names its session (openai.HeaderSession).
func TestSessionsStayOnTheirReplica(t *testing.T) {
	reps := make([]sim.Config, 3)
	for i := range reps {
		reps[i] = sim.DefaultConfig()
	}
	srv, err := simserve.NewFleet(cluster.Config{Replicas: reps, Router: cluster.Router{Policy: cluster.PolicySessionAffinity}}, simserve.Options{ServedModelName: "m"})
	if err != nil {
		t.Fatal(err)
	}
	url, stop, err := srv.Start(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stop() }()
	var sessions []workload.Session
	for i := range 6 {
		sessions = append(sessions, workload.Session{ID: fmt.Sprintf("s%d", i), Turns: []workload.Turn{
			{Content: "one", OutputTokens: 4}, {Content: "two", OutputTokens: 4}, {Content: "three", OutputTokens: 4}}})
	}
	set, err := workload.NewSessions("test", sessions)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sessionConfig(t, url, set)
	cfg.Sessions.MaxConcurrent = 6
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := map[string]int{}
	used := map[int]bool{}
	for _, r := range res.Records {
		if !r.OK() || r.Replica == 0 {
			t.Fatalf("record %s: ok %v, replica %d; want served and named", r.ID, r.OK(), r.Replica)
		}
		if k, ok := first[r.SessionID]; ok && k != r.Replica {
			t.Errorf("session %s turn %d on replica %d; its first turn was on %d", r.SessionID, r.Turn, r.Replica, k)
		}
		first[r.SessionID] = r.Replica
		used[r.Replica] = true
	}
	if len(res.Records) != 18 || len(used) < 2 {
		t.Errorf("%d records over replicas %v; want 18 over several", len(res.Records), used)
	}
}
