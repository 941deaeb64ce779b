package stats

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/shareddata"
)

// TestRealVLLMRun summarises a real vLLM 0.19.0 run (300 requests, from
// LLMServingSim's validation set, in ../shared/data) and checks TTFT,
// TPOT and E2E mean and percentiles against the figures in the run's own
// summary.txt (computed by numpy, printed to 0.1 ms). Engine timestamps
// stand in for client ones: sent = queued_ts, one chunk at first_token_ts
// with 1 token and one at last_token_ts with the rest, so TTFT, TPOT and
// E2E are the summary's definitions.
func TestRealVLLMRun(t *testing.T) {
	dir := shareddata.Path(t, "llmservingsim-vllm-validation/RTXPRO6000_Llama-3.1-8B")
	f, err := os.Open(filepath.Join(dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ns := func(s float64) int64 { return int64(math.Round(s * 1e9)) }
	var recs []runlog.Record
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			In        int     `json:"input_toks"`
			Out       int     `json:"output_toks"`
			Queued    float64 `json:"queued_ts"`
			First     float64 `json:"first_token_ts"`
			LastToken float64 `json:"last_token_ts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("requests.jsonl: %v", err)
		}
		rec := runlog.Record{Intended: ns(r.Queued), Sent: ns(r.Queued), End: ns(r.LastToken),
			PromptTokens: r.In, CompletionTokens: r.Out, Status: 200,
			Chunks: []runlog.Chunk{{T: ns(r.First), Tokens: 1, Visible: true}}}
		if r.Out > 1 {
			rec.Chunks = append(rec.Chunks, runlog.Chunk{T: ns(r.LastToken), Tokens: int32(r.Out - 1), Visible: true})
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		t.Skip("requests.jsonl is empty")
	}
	want := readSummaryTxt(t, filepath.Join(dir, "summary.txt"))
	s := Summarize(recs, Options{Percentiles: []float64{50, 90, 95, 99}})
	for metric, name := range map[string]string{"TTFT": MetricTTFT, "TPOT": MetricTPOT, "Latency": MetricE2E} {
		m, _ := s.Metric(name)
		got := map[string]float64{"Mean": m.Mean, "Median": m.Median}
		for _, p := range m.Percentiles {
			got["P"+PercentileName(p.P)] = p.Value
		}
		for stat, g := range got {
			w, ok := want[metric+" "+stat]
			if !ok {
				continue
			}
			// summary.txt rounds to 0.1 ms.
			if math.Abs(g-w) > 0.05+1e-9 {
				t.Errorf("%s %s = %.3f ms; summary.txt says %.1f", metric, stat, g, w)
			}
		}
	}
}

// readSummaryTxt reads "TTFT Mean   7097.2   6815.7  -4.0%" lines: metric,
// statistic, then the vLLM column.
func readSummaryTxt(t *testing.T, path string) map[string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("summary.txt unreadable: %v", err)
	}
	out := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) < 3 {
			continue
		}
		if v, err := strconv.ParseFloat(fs[2], 64); err == nil {
			out[fs[0]+" "+fs[1]] = v
		}
	}
	if len(out) < 10 {
		t.Skipf("summary.txt has %d figures; format not recognised", len(out))
	}
	return out
}
