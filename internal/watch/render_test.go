package watch

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/goodput/goodput/internal/redact"
)

// TestWriteSummaryOrder: ok comes first, then the other outcomes by name;
// one probe reads "1 probe". Worked by hand: 3 ok + 1 http_5xx + 2
// rate_limited = 6 probes; the tabwriter pads each column to its widest
// cell plus 2 spaces ("a" and "bb" → width 4).
func TestWriteSummaryOrder(t *testing.T) {
	var b strings.Builder
	err := WriteSummary(&b, []TargetSummary{
		{Target: "a", Model: "m", Probes: 6, Outcomes: map[string]int{"rate_limited": 2, OutcomeOK: 3, "http_5xx": 1}, Missed: 1},
		{Target: "bb", Model: "m", Probes: 1, Outcomes: map[string]int{OutcomeOK: 1}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "a   m  6 probes: 3 ok, 1 http_5xx, 2 rate_limited  1 missed\n" +
		"bb  m  1 probe: 1 ok                               0 missed\n"
	if b.String() != want {
		t.Errorf("got\n%q\nwant\n%q", b.String(), want)
	}
}

// TestWriteResultsError: a probe that sent nothing prints its error on one
// line, cut to 160 runes (159 and an ellipsis).
func TestWriteResultsError(t *testing.T) {
	var b strings.Builder
	long := strings.Repeat("x", 200)
	if err := WriteResults(&b, []Result{{Target: "t", Model: "m", Outcome: OutcomeResolve, Err: errors.New("no\nmodel " + long)}}); err != nil {
		t.Fatal(err)
	}
	want := "t  m  " + OutcomeResolve + "  " + string([]rune("no model " + long)[:159]) + "…\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
}

// TestServeRedacts: a secret in a label value never leaves in a page.
func TestServeRedacts(t *testing.T) {
	reg := prometheus.NewRegistry()
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "probe_up", Help: "h"}, []string{"model"})
	reg.MustRegister(g)
	g.WithLabelValues("model-sk-secret123456").Set(1)
	secrets := &redact.Secrets{}
	secrets.Add("sk-secret123456")
	url, stop, err := Serve("127.0.0.1:0", reg, secrets)
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "sk-secret123456") || !strings.Contains(string(body), "probe_up") {
		t.Errorf("page %q: want probe_up without the secret", body)
	}
}

// TestNotOKAndIntervals: of an ok and a rate-limited probe only the latter
// is named; two targets' intervals read in the config's order.
func TestNotOKAndIntervals(t *testing.T) {
	got := NotOK([]Result{{Target: "a", Outcome: OutcomeOK}, {Target: "b", Outcome: "http_429"}})
	if len(got) != 1 || got[0] != "b: http_429" {
		t.Errorf("NotOK = %q", got)
	}
	cfg := &Config{Targets: []Target{{Name: "a", Interval: 30 * time.Second}, {Name: "b", Interval: time.Minute}}}
	if got, want := Intervals(cfg), "a every 30s, b every 1m0s"; got != want {
		t.Errorf("Intervals = %q; want %q", got, want)
	}
}
