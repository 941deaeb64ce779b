package run

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/run/runtest"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/wire/openai"
)

func newTestClient(t *testing.T, url string, chat bool) *wire.Client {
	t.Helper()
	endpoint := "/v1/completions"
	if chat {
		endpoint = "/v1/chat/completions"
	}
	c, err := openai.NewClient(wire.Config{BaseURL: url, Endpoint: endpoint, Model: "scripted"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// checkLine fails t unless cal is within a rounding of the scripted
// server's truth: overhead 1 (BOS) and for chat the template, 1.25 per
// token.
func checkLine(t *testing.T, cal tokenize.Calibration, chat bool) {
	t.Helper()
	want := 1.0
	if chat {
		want += 1.25 * float64(tokenize.Approx{}.Count(fmt.Sprintf(runtest.ChatTemplate, "")))
	}
	if math.Abs(cal.Overhead-want) > 2 || math.Abs(cal.PerToken-1.25) > 0.02 {
		t.Errorf("calibration = %.1f + %.3f × written; want %.0f + 1.250 × written", cal.Overhead, cal.PerToken, want)
	}
}

// Calibration against servers that count in their own ways or cut long
// prompts: the line comes out right, and the description says how it was
// found and what was left out.
func TestCalibrateAgainstServers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sc     runtest.Scripted
		chat   bool
		method string
		notes  []string // the description contains each
		absent []string // and none of these
	}{
		{"llama.cpp tokenize", runtest.Scripted{Tokenize: "llama.cpp"}, false, "/tokenize",
			[]string{`/tokenize read as {"content"} (llama.cpp)`}, []string{"not used"}},
		{"llama.cpp tokenize, chat", runtest.Scripted{Tokenize: "llama.cpp"}, true, "/tokenize",
			[]string{`/tokenize read as /apply-template, then {"content"} (llama.cpp)`}, []string{"not used"}},
		{"no tokenize", runtest.Scripted{}, false, "usage of probe requests", nil, []string{"/tokenize", "not used"}},
		{"tokenize answers no tokens", runtest.Scripted{Tokenize: "empty"}, false, "usage of probe requests",
			[]string{`/tokenize not used: POST /tokenize: no body form counted ({"prompt"}: counted no tokens; {"content"} (llama.cpp): counted no tokens`}, nil},
		{"tokenize counts nothing right", runtest.Scripted{Tokenize: "constant"}, true, "usage of probe requests",
			[]string{"/tokenize not used: ", "no more than the 64-token one (5): truncated"}, nil},
		{"2k context in /props", runtest.Scripted{NCtx: 2048, Props: true}, false, "usage of probe requests",
			[]string{"probes up to 1016 written tokens for the server's context of 2048 (/props default_generation_settings.n_ctx)"},
			[]string{"truncated"}},
		{"2k context in /props, chat", runtest.Scripted{NCtx: 2048, Props: true}, true, "usage of probe requests",
			[]string{"probes up to 1016 written tokens for the server's context of 2048"}, []string{"truncated"}},
		{"2k context, capped in usage", runtest.Scripted{NCtx: 2048}, false, "usage of probe requests",
			[]string{"the 2048-token probe was counted 2048 tokens where the shorter ones predict 2561: truncated: not used"}, nil},
		{"2k context, capped in usage, chat", runtest.Scripted{NCtx: 2048}, true, "usage of probe requests",
			[]string{"the 2048-token probe was counted 2048 tokens where the shorter ones predict", "truncated: not used"}, nil},
		{"2k context, llama.cpp truncation", runtest.Scripted{NCtx: 2048, Over: "llama"}, false, "usage of probe requests",
			[]string{"the 2048-token probe was counted 1537 tokens where the shorter ones predict 2561: truncated: not used"}, nil},
		{"short context, long probes refused", runtest.Scripted{NCtx: 600, Over: "refuse"}, false, "usage of probe requests",
			[]string{"the 1024-token probe failed (probe request: http_4xx: HTTP 400", "not used"}, nil},
		{"tiny context, long probes refused", runtest.Scripted{NCtx: 200, Over: "refuse"}, true, "usage of probe requests",
			[]string{"the 256-token probe failed", "not used"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, _ := tc.sc.Start(t)
			cal, err := calibrate(t.Context(), newTestClient(t, srv.URL, tc.chat), "")
			if err != nil {
				t.Fatal(err)
			}
			desc := cal.describe("")
			t.Log(desc)
			if cal.method.String() != tc.method {
				t.Fatalf("method = %q; want %q (%s)", cal.method.String(), tc.method, desc)
			}
			checkLine(t, cal.cal, tc.chat)
			for _, s := range tc.notes {
				if !strings.Contains(desc, s) {
					t.Errorf("description %q lacks %q", desc, s)
				}
			}
			for _, s := range tc.absent {
				if strings.Contains(desc, s) {
					t.Errorf("description %q has %q", desc, s)
				}
			}
		})
	}
}

// A /tokenize that never answers costs only its own deadline: the probe
// requests then run on theirs, not on an expired context.
func TestCalibrateTokenizeNeverAnswers(t *testing.T) {
	defer func(d time.Duration) { tokenizeWait = d }(tokenizeWait)
	tokenizeWait = 200 * time.Millisecond
	srv, _ := runtest.Scripted{Tokenize: "hang", NCtx: 2048, Props: true}.Start(t)
	start := time.Now()
	cal, err := calibrate(t.Context(), newTestClient(t, srv.URL, true), "")
	if err != nil {
		t.Fatal(err)
	}
	desc := cal.describe("")
	if cal.method != calProbes || !strings.Contains(desc, "/tokenize not used: no answer within 200ms") {
		t.Errorf("description %q; want probe requests after /tokenize's deadline", desc)
	}
	checkLine(t, cal.cal, true)
	// A sanity limit, not a timing claim: /tokenize hangs until the
	// client goes, so a calibration that waited on it would never end.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("calibration took %v; want it to give up on /tokenize at its deadline", d)
	}
}

func TestProbeLengths(t *testing.T) {
	for _, tc := range []struct {
		ctx  int
		want []int
	}{
		{0, []int{64, 256, 1024, 2048}},
		{131072, []int{64, 256, 1024, 2048}},
		{4112, []int{64, 256, 1024, 2048}},
		{4096, []int{64, 256, 1024, 2040}},
		{2048, []int{64, 256, 1016}},
		{600, []int{64, 256}},
		{512, []int{64, 248}},
		{100, []int{10, 42}},
		{10, []int{64, 256, 1024, 2048}},
	} {
		if got := probeLengths(tc.ctx); !slices.Equal(got, tc.want) {
			t.Errorf("probeLengths(%d) = %v; want %v", tc.ctx, got, tc.want)
		}
	}
}
