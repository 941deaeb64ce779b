package sim

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
)

// realRequest is one line of the validation run's requests.jsonl.
type realRequest struct {
	ID         string  `json:"request_id"`
	Input      int     `json:"input_toks"`
	Output     int     `json:"output_toks"`
	Queued     float64 `json:"queued_ts"`
	Scheduled  float64 `json:"scheduled_ts"`
	FirstToken float64 `json:"first_token_ts"`
	LastToken  float64 `json:"last_token_ts"`
}

func loadValidation(t testing.TB) []realRequest {
	t.Helper()
	path := shareddata.Path(t, "llmservingsim-vllm-validation/RTXPRO6000_Llama-3.1-8B/requests.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rs []realRequest
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r realRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("requests.jsonl: %v", err)
		}
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b realRequest) int {
		switch {
		case a.Queued < b.Queued:
			return -1
		case a.Queued > b.Queued:
			return 1
		}
		return 0
	})
	return rs
}

// stat is mean, P50 and P99 of a metric, ms.
type stat struct{ Mean, P50, P99 float64 }

func stats(xs []float64) stat {
	return stat{mean(xs), percentile(xs, 50), percentile(xs, 99)}
}

func (s stat) String() string {
	return fmt.Sprintf("mean %.1f p50 %.1f p99 %.1f", s.Mean, s.P50, s.P99)
}

// TestCalibrationRTXPro6000 replays the real vLLM 0.19 run's arrivals and
// lengths with that run's engine config and compares TTFT, TPOT and E2E.
// Metrics as the data README defines them: TTFT = first − queued, TPOT =
// (last − first)/(out − 1), E2E = last − queued.
func TestCalibrationRTXPro6000(t *testing.T) {
	rs := loadValidation(t)
	cfg := DefaultConfig()
	cfg.GPU = "rtx-pro-6000"
	cfg.Model = "meta-llama/Llama-3.1-8B"
	cfg.MaxNumSeqs = 128
	cfg.MaxNumBatchedTokens = 2048
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t0 := rs[0].Queued
	var arrivals []arrival
	var real [3][]float64
	for _, r := range rs {
		at := int64(math.Round((r.Queued - t0) * 1e9))
		arrivals = append(arrivals, arrival{at: at, req: Request{ID: r.ID, PromptTokens: r.Input, OutputTokens: r.Output}})
		real[0] = append(real[0], (r.FirstToken-r.Queued)*1e3)
		real[1] = append(real[1], (r.LastToken-r.FirstToken)/float64(r.Output-1)*1e3)
		real[2] = append(real[2], (r.LastToken-r.Queued)*1e3)
	}
	out, _ := replay(t, e, arrivals)
	var sim [3][]float64
	for _, a := range arrivals {
		o := out[a.req.ID]
		sim[0] = append(sim[0], float64(o.first-o.arrival)/1e6)
		sim[1] = append(sim[1], float64(o.last-o.first)/float64(a.req.OutputTokens-1)/1e6)
		sim[2] = append(sim[2], float64(o.last-o.arrival)/1e6)
	}
	names := []string{"TTFT", "TPOT", "E2E"}
	tol := []float64{0.10, 0.05, 0.05}
	for i, n := range names {
		rst, sst := stats(real[i]), stats(sim[i])
		t.Logf("%s real %v | sim %v | diff mean %+.1f%% p50 %+.1f%% p99 %+.1f%%", n, rst, sst,
			100*(sst.Mean/rst.Mean-1), 100*(sst.P50/rst.P50-1), 100*(sst.P99/rst.P99-1))
		for _, c := range []struct {
			what      string
			got, want float64
		}{{"mean", sst.Mean, rst.Mean}, {"p50", sst.P50, rst.P50}, {"p99", sst.P99, rst.P99}} {
			if d := c.got/c.want - 1; math.Abs(d) > tol[i] {
				t.Errorf("%s %s = %.1f ms; want %.1f ms ± %.0f%% (off %+.1f%%)", n, c.what, c.got, c.want, 100*tol[i], 100*d)
			}
		}
	}
}
