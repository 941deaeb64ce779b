package cli

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// goodput report on a run's records says what the run said: the same
// findings, the same SLA sentence and, for a sweep, the same knee, peaks
// and highest load within SLO — with no flag repeated (the run stored how
// it judged itself).
func TestReportReproducesTheRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		keys []string // compared between the run's result JSON and report's
	}{
		{"sweep", []string{"sweep", "--sim", "--request-rate", "4,12,20,28,36", "--num-prompts", "300", "--goodput", "ttft:500", "tpot:40"},
			[]string{"sweep", "findings", "slo"}},
		{"sweep search", []string{"sweep", "--sim", "--search", "--request-rate", "4,40", "--num-prompts", "200", "--precision", "4"},
			[]string{"sweep", "findings"}},
		{"sim", []string{"sim", "--request-rate", "30", "--num-prompts", "300", "--goodput", "ttft:300", "--reading-speed-ms", "40"},
			[]string{"findings", "p99_ttft_ms", "request_goodput", "p50_ttft_ms_ci", "median_tpot_ms_ci", "mean_e2el_ms_ci",
				"request_throughput_ci", "request_goodput_ci", "slo_attainment_ci", "confidence_level"}},
		// A level asked for at the run is the one report uses unless told
		// otherwise: 90 % intervals, not report's default 95 %.
		{"sim at 90 %", []string{"sim", "--request-rate", "30", "--num-prompts", "300", "--goodput", "ttft:300", "--confidence", "0.9"},
			[]string{"p50_ttft_ms_ci", "request_goodput_ci", "confidence_level"}},
		{"bench", []string{"bench", "--request-rate", "50", "--num-prompts", "40", "--goodput", "ttft:1000", "tpot:50", "--quiet"},
			[]string{"findings", "request_goodput", "completed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(tc.args, "--save-result", "--result-filename", "run.json", "--records", filepath.Join(dir, "run.records.jsonl"), "--result-dir", dir)
			r := runCLI(t, t.Context(), nil, args...)
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			code, out, errOut := runReportCLI(t, dir, "report", "run.records.jsonl", "--json", "report.json")
			if code != ExitOK {
				t.Fatalf("report: exit %d: %s", code, errOut)
			}
			run, rep := readJSON(t, filepath.Join(dir, "run.json")), readJSON(t, filepath.Join(dir, "report.json"))
			for _, k := range tc.keys {
				if run[k] == nil {
					t.Errorf("the run's result has no %q: nothing compared", k)
				}
				if ci, ok := run[k].([]any); strings.HasSuffix(k, "_ci") && (!ok || len(ci) != 2) {
					t.Errorf("the run's %s is %v, not an interval", k, run[k])
				}
				if !reflect.DeepEqual(run[k], rep[k]) {
					a, _ := json.Marshal(run[k])
					b, _ := json.Marshal(rep[k])
					t.Errorf("%s differs:\nrun:    %s\nreport: %s", k, a, b)
				}
			}
			// The findings printed are the same lines too.
			for _, line := range strings.Split(r.stdout, "\n") {
				if strings.Contains(line, "] ") && strings.HasPrefix(strings.TrimSpace(line), "[") && !strings.Contains(out, line) {
					t.Errorf("report lacks the run's line %q", line)
				}
			}
		})
	}
}

func readJSON(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// An 8-turn conversation workload with a shared system prompt against the
// embedded simulator, one session at a time (no turn queues behind another
// session's, so a turn's TTFT is its prefill): with prefix caching the
// turns' TTFT stays nearly flat as the history grows; without it, it rises
// with every turn. In virtual time (sim): a wall-clock run's slope holds a
// busy host's delays too, and the finding is about the engine.
func TestConversationTTFTByTurn(t *testing.T) {
	slope := map[bool]float64{}
	for _, caching := range []bool{true, false} {
		dir := t.TempDir()
		args := []string{"sim", "--dataset-name", "conversations", "--num-sessions", "2", "--turns", "fixed:10", "--shared-prefix-len", "1024",
			"--random-input-len", "300", "--random-output-len", "20", "--max-concurrent-sessions", "1", "--quiet",
			"--save-result", "--result-filename", "r.json", "--result-dir", dir, "--records", "none"}
		if !caching {
			args = append(args, "--no-enable-prefix-caching")
		}
		r := runCLI(t, t.Context(), nil, args...)
		if r.code != ExitOK {
			t.Fatalf("exit %d: %s", r.code, r.stderr)
		}
		doc := readJSON(t, filepath.Join(dir, "r.json"))
		// Without caching the resent history is prefilled again, and the
		// finding says so; with it TTFT stays flat and neither is said.
		fs := fmt.Sprint(doc["findings"])
		if notCached := strings.Contains(fs, "history-not-cached"); notCached == caching || strings.Contains(fs, "history-growth") {
			t.Errorf("caching %v: findings %s; want history-not-cached only without caching", caching, fs)
		}
		s, _ := doc["sessions"].(map[string]any)
		if s == nil || s["sessions"] != 2.0 {
			t.Fatalf("result sessions = %v", s)
		}
		slope[caching], _ = s["ttft_ms_per_1k_history_tokens"].(float64)
		turns, _ := s["turns"].([]any)
		last, _ := turns[len(turns)-1].(map[string]any)
		if share, _ := last["cached_share"].(float64); caching != (share > 0.5) {
			t.Errorf("caching %v: the last turn's cached share %v", caching, share)
		}
	}
	if !(slope[false] > 20) || !(slope[true] < 10) {
		t.Errorf("TTFT per 1K tokens of history: %.1f ms without prefix caching, %.1f with; want it rising without and flat with", slope[false], slope[true])
	}
}

// A 10-turn conversation with a shared 512-token system prompt, 64-token
// messages and 32-token answers, two sessions one after the other: the
// prefix cache hit share of every turn is worked out by hand, and the
// embedded simulator gives exactly it over HTTP (bench) and in virtual
// time (sim). Turn k's prompt is 576 + 96(k−1) tokens. Turn 1 of the second
// session finds the system prompt (512 of 576; the first finds nothing).
// Turn k ≥ 2 finds turn k−1's prompt and answer but its last token, whose
// KV is never computed: ⌊(576 + 96(k−2) + 32 − 1)/16⌋·16 = 592 + 96(k−2).
func TestConversationCacheShareByHand(t *testing.T) {
	want := []float64{512.0 / (2 * 576)}
	for k := 2; k <= 10; k++ {
		want = append(want, float64(592+96*(k-2))/float64(576+96*(k-1)))
	}
	for _, cmd := range []string{"sim", "bench"} {
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			r := runCLI(t, t.Context(), nil, cmd, "--dataset-name", "conversations", "--num-sessions", "2", "--turns", "fixed:10",
				"--shared-prefix-len", "512", "--random-input-len", "64", "--random-output-len", "32", "--ignore-eos",
				"--max-concurrent-sessions", "1", "--quiet", "--save-result", "--result-filename", "r.json", "--result-dir", dir, "--records", "none")
			if r.code != ExitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			s, _ := readJSON(t, filepath.Join(dir, "r.json"))["sessions"].(map[string]any)
			turns, _ := s["turns"].([]any)
			if len(turns) != 10 {
				t.Fatalf("%d turns in %v; want 10", len(turns), s)
			}
			for k, tv := range turns {
				got, _ := tv.(map[string]any)["cached_share"].(float64)
				if math.Abs(got-want[k]) > 1e-9 {
					t.Errorf("turn %d cached share %.4f; want %.4f by hand", k+1, got, want[k])
				}
			}
		})
	}
}
