package sim

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"unknown gpu", func(c *Config) { c.GPU = "tpu-v5" }, "GPU"},
		{"unknown model", func(c *Config) { c.Model = "gpt-5" }, "Model"},
		{"unknown scheduler", func(c *Config) { c.Scheduler = "round-robin" }, "Scheduler"},
		{"model does not fit", func(c *Config) { c.Model = "llama-3.1-70b"; c.GPU = "rtx-4090" }, "Model"},
		{"negative max-num-seqs", func(c *Config) { c.MaxNumSeqs = -1 }, "MaxNumSeqs"},
		{"negative batched tokens", func(c *Config) { c.MaxNumBatchedTokens = -5 }, "MaxNumBatchedTokens"},
		{"negative block size", func(c *Config) { c.BlockSize = -16 }, "BlockSize"},
		{"utilization over 1", func(c *Config) { c.GPUMemoryUtilization = 1.5 }, "GPUMemoryUtilization"},
		{"negative waiting", func(c *Config) { c.MaxWaiting = -1 }, "MaxWaiting"},
		{"negative queue time", func(c *Config) { c.MaxQueueTime = -1 }, "MaxQueueTime"},
		{"tp not dividing heads", func(c *Config) { c.TP = 3 }, "TP"},
		{"bad dtype", func(c *Config) { c.DType = "fp3" }, "DType"},
		{"model len over KV", func(c *Config) { c.NumGPUBlocksOverride = 10; c.MaxModelLen = 1000 }, "MaxModelLen"},
		{"missing table", func(c *Config) { c.ProfileTable = "/nonexistent.csv" }, "ProfileTable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.edit(&cfg)
			_, err := New(cfg)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Fatalf("New(%s) = %v; want a ConfigError on %s", tt.name, err, tt.field)
			}
			if !strings.HasPrefix(err.Error(), tt.field+": ") || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q; want one line starting with %s:", err, tt.field)
			}
			if msg := err.Error(); strings.Contains(msg, "--") {
				t.Errorf("error %q; want no flag names in it", err)
			}
		})
	}
}

// The CLI's engine flags set these fields; internal/cli's
// TestEngineFlags checks that the flags land in them.
func TestDefaultsAndSettings(t *testing.T) {
	cfg := DefaultConfig()
	cfg.GPU, cfg.TP, cfg.EnablePrefixCaching, cfg.MaxQueueTime = "a100-80gb", 2, false, 2*time.Second
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	d := e.Describe()
	got := map[string]any{"gpu": d.GPU, "tp": d.TensorParallelSize, "pc": d.EnablePrefixCaching,
		"seqs": d.MaxNumSeqs, "tokens": d.MaxNumBatchedTokens, "qt": d.MaxQueueTimeS}
	// A100 keeps vLLM's smaller server defaults (256 seqs, 2048 tokens).
	want := map[string]any{"gpu": "a100-80gb", "tp": 2, "pc": false, "seqs": 256, "tokens": 2048, "qt": 2.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Describe() after settings (-want +got):\n%s", diff)
	}
	h, _ := New(DefaultConfig())
	if s, n := h.Describe().MaxNumSeqs, h.Describe().MaxNumBatchedTokens; s != 1024 || n != 8192 {
		t.Errorf("H100 defaults = %v seqs, %v tokens; want 1024, 8192", s, n)
	}
}

func TestAddErrors(t *testing.T) {
	e, _ := New(DefaultConfig())
	if err := e.Add(0, Request{ID: "a", PromptTokens: 10, OutputTokens: 1}); err != nil {
		t.Fatal(err)
	}
	bad := []Request{
		{ID: "", PromptTokens: 1, OutputTokens: 1},
		{ID: "b", PromptTokens: 0, OutputTokens: 1},
		{ID: "c", PromptTokens: 1, OutputTokens: 0},
		{ID: "a", PromptTokens: 1, OutputTokens: 1},
		{ID: "d", PromptTokens: 200_000, OutputTokens: 1},
	}
	for _, r := range bad {
		if err := e.Add(0, r); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Add(%+v) = %v; want ErrInvalidRequest", r, err)
		}
	}
}

// uniform builds n requests arriving every gap ns.
func uniform(n int, gap int64, prompt, output int) []arrival {
	out := make([]arrival, n)
	for i := range out {
		out[i] = arrival{at: int64(i) * gap, req: Request{ID: "r" + strconv.Itoa(i), PromptTokens: prompt, OutputTokens: output}}
	}
	return out
}

// TestMaxNumSeqs: more concurrent sequences raise throughput (bigger
// batches amortise the weight reads) and TPOT (each step is longer).
func TestMaxNumSeqs(t *testing.T) {
	var prevThr, prevTPOT float64
	for _, seqs := range []int{8, 32, 128} {
		cfg := DefaultConfig()
		cfg.MaxNumSeqs = seqs
		e, _ := New(cfg)
		arr := uniform(400, 0, 500, 200) // a burst: the engine is saturated
		out, _ := replay(t, e, arr)
		var last int64
		var tpots []float64
		for _, o := range out {
			last = max(last, o.last)
			tpots = append(tpots, float64(o.last-o.first)/199)
		}
		thr := 400 * 200 / (float64(last) / 1e9)
		tpot := mean(tpots) / 1e6
		t.Logf("max_num_seqs %d: %.0f output tok/s, mean TPOT %.2f ms", seqs, thr, tpot)
		if prevThr > 0 && (thr <= prevThr || tpot <= prevTPOT) {
			t.Errorf("max_num_seqs %d: throughput %.0f tok/s, TPOT %.2f ms; want both above %.0f, %.2f", seqs, thr, tpot, prevThr, prevTPOT)
		}
		prevThr, prevTPOT = thr, tpot
	}
}

// itlP99 returns the P99 of every inter-token gap (ms) and the fraction of
// requests meeting an ITL SLO on their own P99 gap.
func itls(t *testing.T, sched string, arr []arrival, sloMs float64) (p99 float64, goodFrac float64) {
	cfg := DefaultConfig()
	cfg.Scheduler = sched
	cfg.MaxNumBatchedTokens = 512
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A loop recording every token time per request.
	times := map[string][]int64{}
	var now int64
	i := 0
	for i < len(arr) || e.Busy() {
		for i < len(arr) && arr[i].at <= now {
			e.Add(arr[i].at, arr[i].req)
			i++
		}
		end, evs := e.Step(now)
		for _, ev := range evs {
			if ev.Kind == EventTokens {
				times[ev.ID] = append(times[ev.ID], end)
			}
		}
		if end > now {
			now = end
		} else if i < len(arr) {
			now = arr[i].at
		}
	}
	var all []float64
	good := 0
	for _, a := range arr {
		ts := times[a.req.ID]
		var mine []float64
		for k := 1; k < len(ts); k++ {
			mine = append(mine, float64(ts[k]-ts[k-1])/1e6)
		}
		all = append(all, mine...)
		if len(mine) == 0 || percentile(mine, 99) <= sloMs {
			good++
		}
	}
	return percentile(all, 99), float64(good) / float64(len(arr))
}

// TestSarathiBeatsPrefillFirst: on a mix of short chats and long
// documents, stall-free chunking keeps decode gaps short while
// prefill-first stalls every running decode for each long prefill (the
// Sarathi-Serve result, in direction and rough size).
func TestSarathiBeatsPrefillFirst(t *testing.T) {
	var arr []arrival
	for i := range 300 {
		r := Request{ID: "s" + strconv.Itoa(i), PromptTokens: 200, OutputTokens: 150}
		if i%5 == 0 {
			r = Request{ID: "l" + strconv.Itoa(i), PromptTokens: 6000, OutputTokens: 50}
		}
		arr = append(arr, arrival{at: int64(i) * 100e6, req: r}) // 10 req/s
	}
	const slo = 50.0 // ms, per-request P99 ITL
	res := map[string][2]float64{}
	for _, s := range []string{SchedVLLMV1, SchedSarathi, SchedPrefillFirst} {
		p99, good := itls(t, s, arr, slo)
		res[s] = [2]float64{p99, good}
		t.Logf("%s: ITL P99 %.1f ms, %.0f%% of requests meet P99 ITL ≤ %.0f ms", s, p99, 100*good, slo)
	}
	pf := res[SchedPrefillFirst]
	for _, s := range []string{SchedVLLMV1, SchedSarathi} {
		if res[s][0]*2 > pf[0] {
			t.Errorf("%s ITL P99 %.1f ms; want under half of prefill-first's %.1f ms", s, res[s][0], pf[0])
		}
		if res[s][1] < pf[1]+0.3 {
			t.Errorf("%s SLO attainment %.2f; want ≥ prefill-first's %.2f + 0.3", s, res[s][1], pf[1])
		}
	}
}

// TestPrefixCachingCutsTTFT: requests sharing a 2,000-token system prompt
// prefill far less with prefix caching, and the hit rate shows it.
func TestPrefixCachingCutsTTFT(t *testing.T) {
	shared := make([]uint64, 125) // 2000 tokens of 16-token blocks
	for i := range shared {
		shared[i] = uint64(1000 + i)
	}
	run := func(caching bool) (ttft float64, hitRate float64) {
		cfg := DefaultConfig()
		cfg.EnablePrefixCaching = caching
		e, _ := New(cfg)
		var arr []arrival
		for i := range 50 {
			h := append(append([]uint64{}, shared...), uint64(1e6+i)*7, uint64(1e6+i)*7+1)
			arr = append(arr, arrival{at: int64(i) * 200e6, req: Request{ID: strconv.Itoa(i), PromptTokens: 2032, OutputTokens: 20, BlockHashes: h, HashBlockTokens: 16}})
		}
		out, _ := replay(t, e, arr)
		var xs []float64
		for _, o := range out {
			xs = append(xs, float64(o.first-o.arrival)/1e6)
		}
		s := e.Snapshot()
		if s.PrefixQueryTokens > 0 {
			hitRate = float64(s.PrefixHitTokens) / float64(s.PrefixQueryTokens)
		}
		return mean(xs), hitRate
	}
	off, _ := run(false)
	on, hit := run(true)
	t.Logf("mean TTFT: caching off %.2f ms, on %.2f ms; hit rate %.3f", off, on, hit)
	// 49 of 50 requests hit 2000 of 2032 tokens: 49·2000/(50·2032) = 0.9646.
	if want := 49.0 * 2000 / (50 * 2032); hit < want-1e-9 || hit > want+1e-9 {
		t.Errorf("hit rate = %.4f; want %.4f", hit, want)
	}
	if on > off/2 {
		t.Errorf("TTFT with caching %.2f ms; want under half of %.2f ms", on, off)
	}
}

// TestDeterministic: the same inputs give the same events.
func TestDeterministic(t *testing.T) {
	trace := func() []Event {
		e, _ := New(DefaultConfig())
		var all []Event
		arr := uniform(50, 3e6, 300, 40)
		i := 0
		var now int64
		for i < len(arr) || e.Busy() {
			for i < len(arr) && arr[i].at <= now {
				e.Add(arr[i].at, arr[i].req)
				i++
			}
			end, evs := e.Step(now)
			all = append(all, evs...)
			if end > now {
				now = end
			} else if i < len(arr) {
				now = arr[i].at
			}
		}
		return all
	}
	if diff := cmp.Diff(trace(), trace()); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
}

// TestConfigResolved: Config reports the settings New resolved, defaults
// filled in, so that drivers need not repeat them.
func TestConfigResolved(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ToolCallShare, cfg.ReasoningTokens = 0.25, 0.5
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Config()
	if got.ToolCallShare != 0.25 || got.ToolCallTokens != DefaultToolCallTokens || got.BlockSize != 16 ||
		got.MaxNumSeqs != 1024 || got.MaxNumBatchedTokens != 8192 || got.Scheduler != SchedVLLMV1 || got.MaxModelLen == 0 {
		t.Errorf("Config() = %+v; want the settings with their defaults resolved", got)
	}
	if d := e.Describe(); d.MaxModelLen != got.MaxModelLen || d.BlockSize != got.BlockSize {
		t.Errorf("Config() disagrees with Describe(): max_model_len %d vs %v, block_size %d vs %v",
			got.MaxModelLen, d.MaxModelLen, got.BlockSize, d.BlockSize)
	}
}

func TestReasoningFor(t *testing.T) {
	tests := []struct {
		name      string
		reasoning float64
		output    int
		want      int
	}{
		{"none", 0, 100, 0},
		{"count", 30, 100, 30},
		{"count over output", 30, 10, 10},
		{"share", 0.25, 10, 3}, // 2.5 rounds away from zero
		{"small share", 0.01, 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Config{ReasoningTokens: tt.reasoning}
			if got := c.ReasoningFor(tt.output); got != tt.want {
				t.Errorf("Config{ReasoningTokens: %v}.ReasoningFor(%d) = %d; want %d", tt.reasoning, tt.output, got, tt.want)
			}
		})
	}
}

// Snapshot.Add sums gauges and counters; AddCounters leaves the gauges.
func TestSnapshotAdd(t *testing.T) {
	a := Snapshot{Running: 1, Waiting: 2, KVUsage: 0.25, PromptTokens: 10, Finished: 3, Rejected: 1, SpecDraftTokens: 4}
	b := Snapshot{Running: 2, Waiting: 1, KVUsage: 0.5, PromptTokens: 5, Finished: 1, PrefixHitTokens: 7, SpecAcceptedTokens: 2}
	s := a
	s.Add(b)
	want := Snapshot{Running: 3, Waiting: 3, KVUsage: 0.75, PromptTokens: 15, Finished: 4, Rejected: 1, PrefixHitTokens: 7, SpecDraftTokens: 4, SpecAcceptedTokens: 2}
	if s != want {
		t.Errorf("Add = %+v; want %+v", s, want)
	}
	s = a
	s.AddCounters(b)
	want = Snapshot{Running: 1, Waiting: 2, KVUsage: 0.25, PromptTokens: 15, Finished: 4, Rejected: 1, PrefixHitTokens: 7, SpecDraftTokens: 4, SpecAcceptedTokens: 2}
	if s != want {
		t.Errorf("AddCounters = %+v; want %+v", s, want)
	}
}

// A KV cache dtype the deployment cannot store is the kv-cache-dtype
// field's fault, not the parallelism's.
func TestKVCacheDTypeField(t *testing.T) {
	for dt, field := range map[string]string{"int4": "KVCacheDType", "fp3": "KVCacheDType"} {
		c := DefaultConfig()
		c.KVCacheDType = dt
		_, err := New(c)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != field {
			t.Errorf("KV cache dtype %s: %v; want a ConfigError of %s", dt, err, field)
		}
	}
}
