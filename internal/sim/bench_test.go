package sim

import (
	"encoding/csv"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/shareddata"
)

const shareGPTFile = "sharegpt-lengths/sharegpt_8k_filtered_stats_llama2_tokenizer.csv"

// loadShareGPT returns (prompt, output) token lengths from the ShareGPT
// length trace, skipping when the data is absent.
func loadShareGPT(tb testing.TB) [][2]int {
	tb.Helper()
	f, err := os.Open(shareddata.Path(tb, shareGPTFile))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		tb.Fatal(err)
	}
	var out [][2]int
	for _, r := range rows[1:] {
		p, err1 := strconv.Atoi(r[0])
		o, err2 := strconv.Atoi(r[1])
		if err1 != nil || err2 != nil || p <= 0 || o <= 0 {
			tb.Fatalf("bad row %v", r)
		}
		out = append(out, [2]int{p, o})
	}
	return out
}

// poissonArrivals samples n requests from lengths with Poisson arrivals at
// rate req/s, deterministically from seed.
func poissonArrivals(lengths [][2]int, n int, rate float64, seed uint64) []arrival {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	out := make([]arrival, n)
	var t float64
	for i := range out {
		t += rng.ExpFloat64() / rate
		l := lengths[rng.IntN(len(lengths))]
		out[i] = arrival{at: int64(t * 1e9), req: Request{ID: "r" + strconv.Itoa(i), PromptTokens: l[0], OutputTokens: l[1]}}
	}
	return out
}

// drive runs arrivals through e in virtual time keeping only counters (the
// way a driver that streams records out would), and returns the virtual
// end time, the steps taken and the tokens generated.
func drive(tb testing.TB, e *Engine, arrivals []arrival) (end int64, steps, tokens int) {
	var now int64
	i := 0
	for i < len(arrivals) || e.Busy() {
		for i < len(arrivals) && arrivals[i].at <= now {
			if err := e.Add(arrivals[i].at, arrivals[i].req); err != nil {
				tb.Fatal(err)
			}
			i++
		}
		end, evs := e.Step(now)
		steps++
		for k := range evs {
			if evs[k].Kind == EventTokens {
				tokens += evs[k].Tokens
			}
		}
		if end > now {
			now = end
		} else if i < len(arrivals) {
			now = max(now, arrivals[i].at)
		}
	}
	return now, steps, tokens
}

// BenchmarkShareGPT100k simulates 100,000 ShareGPT-length requests arriving
// Poisson at 7 req/s on Llama-3.1-8B / H100-SXM (the speed target:
// under 10 s on one core).
func BenchmarkShareGPT100k(b *testing.B) {
	lengths := loadShareGPT(b)
	arrivals := poissonArrivals(lengths, perfgoal.Size(100_000, 1000), 7, 1)
	for b.Loop() {
		e, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		end, steps, tokens := drive(b, e, arrivals)
		b.ReportMetric(float64(end)/1e9, "virtual-s")
		b.ReportMetric(float64(steps), "steps")
		b.ReportMetric(float64(tokens), "tokens")
	}
}

// BenchmarkStep measures one Step of a steady decode-heavy batch: 64
// running requests with long outputs, refilled as they finish.
func BenchmarkStep(b *testing.B) {
	cfg := DefaultConfig()
	e, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var now int64
	n := 0
	add := func() {
		if err := e.Add(now, Request{ID: "r" + strconv.Itoa(n), PromptTokens: 1000 + n%500, OutputTokens: 400 + n%300}); err != nil {
			b.Fatal(err)
		}
		n++
	}
	for range 64 {
		add()
	}
	for range 200 { // warm up past the prefills
		now, _ = e.Step(now)
	}
	b.ReportAllocs()
	for b.Loop() {
		end, evs := e.Step(now)
		now = end
		for k := range evs {
			if evs[k].Kind == EventFinished {
				add()
			}
		}
	}
	perfgoal.AtMost(b, "ns per step", perfgoal.PerOp(b), 4000)
}

// TestStepNoAllocs holds BenchmarkStep's allocation figure as a test: a
// decode step of 64 running requests (past their prefills, none finishing
// in the window) allocates nothing. The engine steps hundreds of
// thousands of times a simulated run, so garbage here is the simulator's
// speed.
func TestStepNoAllocs(t *testing.T) {
	e, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i := range 64 {
		if err := e.Add(0, Request{ID: "r" + strconv.Itoa(i), PromptTokens: 1000 + i, OutputTokens: 2000}); err != nil {
			t.Fatal(err)
		}
	}
	var now int64
	for range 200 { // past the prefills and any one-off growth
		now, _ = e.Step(now)
	}
	running := 0
	allocs := testing.AllocsPerRun(100, func() {
		var evs []Event
		now, evs = e.Step(now)
		running = 0
		for k := range evs {
			if evs[k].Kind == EventFinished {
				t.Fatalf("request %s finished inside the window", evs[k].ID)
			}
			if evs[k].Kind == EventTokens {
				running++
			}
		}
	})
	if running != 64 {
		t.Fatalf("%d requests got a token in the last step; want 64 running decodes", running)
	}
	if allocs != 0 {
		t.Errorf("%v allocations per decode step of 64 requests; want 0", allocs)
	}
}
