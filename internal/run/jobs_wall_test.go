package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/shard"
	"github.com/goodput/goodput/internal/wire"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestJobsOverHTTP replays a job of a root, two branches and a join over
// HTTP on the wall clock: each request is intended exactly when the last
// of what it waits for ended plus its gap, and sent then; the fork's
// prompt begins with its parent's prompt (the history it carries, the
// same text, so a prefix cache serves it); the join waits for both
// branches; and the records carry the job, node and edges.
func TestJobsOverHTTP(t *testing.T) {
	var mu sync.Mutex
	prompts := map[string]string{} // by request id
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","owned_by":"test"}]}`)
			return
		}
		var body struct{ Prompt string }
		_ = json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		prompts[r.Header.Get("X-Request-Id")] = body.Prompt
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"ok\"}]}\n\n")
		fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":10,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	job := jobgraph.Job{ID: "job", Nodes: []jobgraph.Node{
		{ID: "root", In: 40, Out: 4},
		{ID: "a", After: []string{"root"}, Gap: 30 * time.Millisecond, Context: jobgraph.Fork, From: "root", In: 80, Out: 4},
		{ID: "b", After: []string{"root"}, Gap: 10 * time.Millisecond, In: 20, Out: 4},
		{ID: "join", After: []string{"a", "b"}, Gap: 20 * time.Millisecond, Context: jobgraph.Last, From: "a", In: 30, Out: 4},
	}}
	cfg := simConfig(t, 1)
	cfg.Command, cfg.Virtual = "bench", false
	cfg.Output.Records, cfg.Output.KeepRecords = "none", true
	cfg.Sessions = &SessionLoad{Jobs: []jobgraph.Job{job}, JobsName: "test"}
	cfg.Target = Target{BaseURL: srv.URL, API: "openai", Endpoint: "/v1/completions",
		Open: func(base string, conns int, now func() int64) (Backend, error) {
			return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", Model: "m", MaxConns: conns, Now: now})
		}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]*runlog.Record{}
	for i := range res.Records {
		r := &res.Records[i]
		if !r.OK() || r.SessionID != "job" {
			t.Fatalf("record %s: %+v", r.ID, r)
		}
		by[r.JobNode] = r
	}
	if len(by) != 4 {
		t.Fatalf("records %v; want the four nodes", by)
	}
	ms := int64(time.Millisecond)
	for _, tt := range []struct {
		node string
		want int64
	}{
		{"a", by["root"].End + 30*ms},
		{"b", by["root"].End + 10*ms},
		{"join", max(by["a"].End, by["b"].End) + 20*ms},
	} {
		if r := by[tt.node]; r.Intended != tt.want || r.Sent < r.Intended {
			t.Errorf("%s: intended %d, sent %d; want intended %d (its predecessors' last end plus its gap)", tt.node, r.Intended, r.Sent, tt.want)
		}
	}
	if got := strings.Join(by["join"].JobAfter, ","); got != "a,b" || by["join"].JobGapNs != 20*ms {
		t.Errorf("join's edges %q gap %d; want a,b and 20 ms", got, by["join"].JobGapNs)
	}
	mu.Lock()
	defer mu.Unlock()
	var root, a, b string
	for id, p := range prompts {
		switch {
		case strings.HasSuffix(id, "-root"):
			root = p
		case strings.HasSuffix(id, "-a"):
			a = p
		case strings.HasSuffix(id, "-b"):
			b = p
		}
	}
	if root == "" || !strings.HasPrefix(a, root) || len(a) <= len(root) {
		t.Errorf("the fork's prompt does not begin with its parent's:\nroot %q\na    %q", root, a)
	}
	if strings.HasPrefix(b, root) {
		t.Errorf("the spawned branch carries its parent's prompt: %q", b)
	}
}

// A sharded run of agent jobs is refused before anything is sent: every
// shard would replay every job.
func TestJobsRefuseShards(t *testing.T) {
	cfg := simConfig(t, 1)
	cfg.Sessions = &SessionLoad{Jobs: []jobgraph.Job{{ID: "j", Nodes: []jobgraph.Node{{ID: "0", In: 10, Out: 1}}}}, JobsName: "test"}
	cfg.Shard = &shard.Shard{Index: 0, Count: 2}
	_, err := Run(context.Background(), cfg)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Sessions" || !strings.Contains(err.Error(), "shards") {
		t.Errorf("Run = %v; want the Sessions setting refused for shards", err)
	}
}
