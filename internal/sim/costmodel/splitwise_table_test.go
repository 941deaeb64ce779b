package costmodel

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/shareddata"
)

// exactLinear writes a SplitwiseSim-shaped CSV whose times come exactly
// from base + perTok·tokens + perCtx·context + perAttn·pairs, on a grid of
// prompt and batch sizes, so a fit must recover those coefficients.
func exactLinear(base, perTok, perCtx, perAttn float64) string {
	var b strings.Builder
	b.WriteString("model,hardware,prompt_size,batch_size,token_size,peak_power,average_power,prompt_time,token_time,e2e_time,tensor_parallel\n")
	for _, p := range []float64{128, 512, 2048, 8192} {
		for _, n := range []float64{1, 4, 16, 64} {
			const t = 128
			pre := base + perTok*p*n + perCtx*p*n + perAttn*n*p*(p+1)/2
			ctx := n * (p + t/2 + 1)
			dec := base + perTok*n + perCtx*ctx + perAttn*ctx
			fmt.Fprintf(&b, "llama2-70b,h100-80gb,%g,%g,%d,1,1,%g,%g,0,8\n", p, n, t, pre*1e3, dec*1e3)
		}
	}
	b.WriteString("bloom-176b,a100-80gb,512,1,128,1,1,999,99,0,8\n")
	return b.String()
}

func TestParseSplitwiseRecoversALinearModel(t *testing.T) {
	// 20 ms per step, 40 µs per token, 0.1 µs per context token read,
	// 1 ns per attention pair.
	in := exactLinear(0.020, 40e-6, 1e-7, 1e-9)
	fit, err := ParseSplitwise(strings.NewReader(in), "perf.csv", "LLAMA2-70B", "h100-80gb", 8)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"Base", fit.Base, 0.020}, {"PerToken", fit.PerToken, 40e-6}, {"PerContext", fit.PerContext, 1e-7}, {"PerAttn", fit.PerAttn, 1e-9}} {
		if math.Abs(c.got-c.want) > 1e-6*c.want {
			t.Errorf("%s = %g; want %g", c.name, c.got, c.want)
		}
	}
	if fit.Points != 32 || fit.MeanAbsRelErr > 1e-9 {
		t.Errorf("fitted %d points with mean error %g; want 32 and ~0", fit.Points, fit.MeanAbsRelErr)
	}
	// A batch of one 1,000-token prefill: 20 ms + 40 ms + 0.1 ms + 0.5 ms.
	var b Batch
	b.Add(1000, 0, true)
	if got, want := fit.Seconds(&b), 0.020+0.040+1000*1e-7+500500*1e-9; math.Abs(got-want) > 1e-12 {
		t.Errorf("Seconds(1,000-token prefill) = %v; want %v", got, want)
	}
}

func TestParseSplitwiseKeepsCoefficientsNonNegative(t *testing.T) {
	// Times that fall as context grows want a negative PerContext, which
	// no hardware has: it is pinned to 0 and the rest refitted.
	in := exactLinear(0.050, 10e-6, -1e-8, 0)
	fit, err := ParseSplitwise(strings.NewReader(in), "perf.csv", "llama2-70b", "h100-80gb", 8)
	if err != nil {
		t.Fatal(err)
	}
	if fit.Base < 0 || fit.PerToken < 0 || fit.PerContext != 0 || fit.PerAttn < 0 {
		t.Errorf("fit = %+v; want PerContext pinned to 0 and the rest ≥ 0", fit)
	}
}

func TestParseSplitwiseErrors(t *testing.T) {
	good := exactLinear(0.02, 40e-6, 1e-7, 1e-9)
	cases := []struct{ name, in, model, want string }{
		{"empty", "", "llama2-70b", "perf.csv: empty"},
		{"missing column", "model,hardware\nx,y\n", "llama2-70b", `no "prompt_size" column`},
		{"no group", good, "mistral-7b", "no rows for mistral-7b/h100-80gb/tp8 (the file has bloom-176b/a100-80gb/tp8, llama2-70b/h100-80gb/tp8)"},
		{"not a number", strings.Replace(good, ",128,1,128,1,1,", ",128,1,128,1,1,fast", 1), "llama2-70b", "perf.csv:2: prompt_time"},
		{"too few rows", strings.Join(strings.Split(good, "\n")[:2], "\n"), "llama2-70b", "need at least 4"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParseSplitwise(strings.NewReader(c.in), "perf.csv", c.model, "h100-80gb", 8)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("ParseSplitwise = %v; want an error containing %q", err, c.want)
			}
		})
	}
}

// The real database: the fit reproduces its Llama-2-70B H100 TP8 steps.
func TestSplitwiseData(t *testing.T) {
	path := shareddata.Path(t, "splitwise-perf-model/perf_model.csv")
	fit, err := LoadSplitwise(path, "llama2-70b", "h100-80gb", 8)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("fit: %+v", *fit)
	var pre, dec Batch
	pre.Add(2048, 0, true)
	dec.Add(1, 2048+64, false)
	// Measured medians (shared/data README): 2048-token prefill 136.8 ms,
	// decode 29.7–31.4 ms per step at batch 1.
	if got := fit.Seconds(&pre) * 1e3; math.Abs(got-136.8)/136.8 > 0.25 {
		t.Errorf("2048-token prefill = %.1f ms; want within 25 %% of the measured 136.8 ms", got)
	}
	if got := fit.Seconds(&dec) * 1e3; math.Abs(got-30.5)/30.5 > 0.25 {
		t.Errorf("batch-1 decode at 2K context = %.1f ms; want within 25 %% of the measured ~30.5 ms", got)
	}
	if fit.MeanAbsRelErr > 0.25 {
		t.Errorf("mean relative error over the measured steps %.1f %%; want ≤ 25 %%", 100*fit.MeanAbsRelErr)
	}
}

func FuzzParseSplitwise(f *testing.F) {
	f.Add(exactLinear(0.02, 40e-6, 1e-7, 1e-9))
	f.Add("model,hardware,prompt_size,batch_size,token_size,prompt_time,token_time,tensor_parallel\nllama2-70b,h100-80gb,1,1,0,1e-9,1e300,8\n")
	f.Fuzz(func(t *testing.T, in string) {
		fit, err := ParseSplitwise(strings.NewReader(in), "fuzz", "llama2-70b", "h100-80gb", 8)
		if err != nil {
			return
		}
		var b Batch
		b.Add(100, 100, true)
		if v := fit.Seconds(&b); math.IsNaN(v) || v < 1e-6 {
			t.Fatalf("Seconds = %v for fit %+v", v, fit)
		}
	})
}
