package report

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// classRecord is a successful request of class prio with a TTFT of ttftMs.
func classRecord(prio int, ttftMs int64, degraded string) runlog.Record {
	return runlog.Record{ID: "r", Priority: prio, Degraded: degraded, End: (ttftMs + 10) * ms, Status: 200, PromptTokens: 10,
		CompletionTokens: 2, Chunks: []runlog.Chunk{chunk(ttftMs, 1, true), chunk(ttftMs+10, 1, true)}}
}

// The Gateway block of a hand-made run, TTFT SLO 150 ms. By hand:
//
//	class 0: TTFTs 100, 200 (one capped at max_tokens) and one refused
//	         (a 429 "rate limited"): 3 requests, 1 failed, 1 limited,
//	         1 degraded; P50 150, P99 199 (linear interpolation); SLO met
//	         by the 100 ms one only: 1/3.
//	class 1: TTFTs 50 (routed to the small model) and 300; a retried
//	         attempt refused first (counted as limited, not as a
//	         request): 2 requests, 1 limited, 1 degraded; SLO 1/2.
//
// Rate-limited attempts 2; degraded 2 (max_tokens 1, small_model 1).
func TestClassesGolden(t *testing.T) {
	c := breakdown.ClassCounter{SLO: stats.SLO{TTFT: 150 * time.Millisecond}}
	limited := func(prio int, retried bool) runlog.Record {
		return runlog.Record{ID: "x", Priority: prio, Status: 429, ErrorClass: runlog.ErrHTTP429, Error: "rate limited: over", Retried: retried}
	}
	for _, r := range []runlog.Record{
		classRecord(0, 100, ""), classRecord(0, 200, "max_tokens"), limited(0, false),
		limited(1, true), classRecord(1, 50, "small_model"), classRecord(1, 300, ""),
		{ID: "w", Priority: 1, Warmup: true, Status: 200}, // a warm-up counts nowhere
	} {
		c.Add(&r)
	}
	g := c.Summary()
	if g == nil || len(g.Rows) != 2 || g.RateLimited != 2 || g.Degraded["max_tokens"] != 1 || g.Degraded["small_model"] != 1 {
		t.Fatalf("Summary() = %+v; want two classes, 2 limited, max_tokens 1, small_model 1", g)
	}
	r0, r1 := g.Rows[0], g.Rows[1]
	if r0.Requests != 3 || r0.Failed != 1 || r0.RateLimited != 1 || r0.Degraded != 1 || r0.TTFTP50 != 150 || math.Abs(r0.TTFTP99-199) > 1e-9 || math.Abs(r0.SLOMet-1.0/3) > 1e-12 {
		t.Errorf("class 0 %+v; want 3 requests, 1 failed, 1 limited, 1 degraded, P50 150, P99 199, SLO 1/3", r0)
	}
	if r1.Requests != 2 || r1.Failed != 0 || r1.RateLimited != 1 || r1.Degraded != 1 || r1.SLOMet != 0.5 {
		t.Errorf("class 1 %+v; want 2 requests, none failed, 1 limited, 1 degraded, SLO 1/2", r1)
	}
	var b bytes.Buffer
	if err := ClassesTerminal(&b, g); err != nil {
		t.Fatal(err)
	}
	golden(t, "classes.golden", b.Bytes())
	js, err := json.MarshalIndent(ClassesJSON(g), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "classes.golden.json", append(js, '\n'))
}

// A run with no gateway (every request class 0, none refused by a rate
// limit or degraded) has no block; an engine's own 429 (queue full) is not
// a rate limit.
func TestClassesOnlyWithAGateway(t *testing.T) {
	var c breakdown.ClassCounter
	for _, r := range []runlog.Record{classRecord(0, 10, ""), {ID: "q", Status: 429, Error: "waiting queue full (4 requests)"}} {
		c.Add(&r)
	}
	if g := c.Summary(); g != nil {
		t.Errorf("Summary() = %+v; want nil", g)
	}
	var b bytes.Buffer
	if err := ClassesTerminal(&b, nil); err != nil || b.Len() != 0 || ClassesJSON(nil) != nil {
		t.Errorf("nil block rendered %q, %v", b.String(), err)
	}
}

// The HTML page shows the Gateway block as the terminal lays it out, and
// has no such section without one.
func TestHTMLClasses(t *testing.T) {
	meta := handMeta()
	levels := breakdown.SummarizeLevels(meta, handRecords(), stats.Options{})
	g := &breakdown.Classes{Rows: []breakdown.ClassRow{{Class: 0, Requests: 3, TTFTN: 3, TTFTP50: 12.5, TTFTP99: 20}, {Class: 1, Requests: 1}}, RateLimited: 7}
	page := string(renderHTML(t, HTMLInput{Meta: meta, Levels: levels, Classes: g}))
	for _, want := range []string{"<h2>Gateway</h2>", "Rate-limited attempts:                   7", "12.50"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := string(renderHTML(t, HTMLInput{Meta: meta, Levels: levels})); strings.Contains(page, "<h2>Gateway</h2>") {
		t.Error("a run without a gateway has its section")
	}
}
