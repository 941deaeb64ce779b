package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// retryRecords are stats' TestSummarizeRetries run: request a completes
// at 1 s; b is refused (429), times out, and its third attempt times out
// at 2 s. So 2 requests, 2 retried attempts, 2 s: original load 1
// request/s, offered load 2 attempts/s, 2 attempts per request, goodput
// (no SLO: completed/s) 0.5.
func retryRecords() []runlog.Record {
	return []runlog.Record{
		{ID: "a", Sent: 0, End: 1000 * ms, Status: 200, PromptTokens: 10,
			Chunks: []runlog.Chunk{chunk(500, 1, true), chunk(1000, 1, true)}},
		{ID: "b", Sent: 0, End: 300 * ms, ErrorClass: runlog.ErrHTTP429, Status: 429, Retried: true, RetryAfterNs: 1e9},
		{ID: "b-a2", Attempt: 2, RetryOf: "b", Sent: 400 * ms, End: 900 * ms, ErrorClass: runlog.ErrTimeout, Retried: true},
		{ID: "b-a3", Attempt: 3, RetryOf: "b", Sent: 900 * ms, End: 2000 * ms, ErrorClass: runlog.ErrTimeout},
	}
}

// TestRetriesRendered: the terminal, JSON and HTML reports show offered
// against original load, with the figures of retryRecords.
func TestRetriesRendered(t *testing.T) {
	recs := retryRecords()
	s := stats.Summarize(recs, stats.Options{})
	var b bytes.Buffer
	if err := Terminal(&b, &s, nil, TermOptions{}); err != nil {
		t.Fatal(err)
	}
	golden(t, "terminal_retries.golden", b.Bytes())
	for _, want := range []string{
		"Retried attempts (client retries):       2, 2.00 attempts per request\n",
		"Offered load (attempts/s):               2.00\n",
		"Original load (requests/s):              1.00\n",
		"Request throughput (req/s):              0.50\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("terminal report lacks %q", want)
		}
	}

	js, err := ResultJSON(&s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var top struct{ Conditions map[string]any }
	if err := json.Unmarshal(js, &top); err != nil {
		t.Fatal(err)
	}
	o := top.Conditions // with the run's other conditions
	for k, want := range map[string]float64{"retried_attempts": 2, "attempt_rate": 2, "original_request_rate": 1, "retry_amplification": 2} {
		if got, ok := o[k].(float64); !ok || got != want {
			t.Errorf("result JSON conditions.%s = %v; want %v", k, o[k], want)
		}
	}

	levels := breakdown.SummarizeLevels(nil, recs, stats.Options{})
	page := renderHTML(t, HTMLInput{Levels: levels, Records: Records(recs)})
	golden(t, "html_retries.golden", section(t, page, "Client retries"))

	// Without retries there is no such section, and no such JSON key.
	plain := stats.Summarize(recs[:1], stats.Options{})
	if page := string(renderHTML(t, HTMLInput{Levels: []breakdown.LevelSummary{{Summary: plain}}})); strings.Contains(page, "Client retries") {
		t.Error("a run without retries has a Client retries section")
	}
	if js, _ := ResultJSON(&plain, nil, nil); bytes.Contains(js, []byte("attempt_rate")) {
		t.Error("a run without retries has attempt_rate in its JSON")
	}
}
