package sim

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/sim/costmodel"
)

// stamped is an EventTokens with the end of the step that emitted it.
type stamped struct {
	at     int64
	tokens int
	hidden bool
}

// drain adds reqs at 0, runs the engine until idle and returns each
// request's token events.
func drain(t *testing.T, cfg Config, reqs ...Request) (*Engine, map[string][]stamped) {
	t.Helper()
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		if err := e.Add(0, r); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string][]stamped{}
	var now int64
	for e.Busy() {
		end, evs := e.Step(now)
		if end == now {
			t.Fatal("engine stalled")
		}
		for _, ev := range evs {
			if ev.Kind == EventTokens {
				got[ev.ID] = append(got[ev.ID], stamped{end, ev.Tokens, ev.Hidden})
			}
		}
		now = end
	}
	return e, got
}

func specConfig(k int, alpha float64) Config {
	c := DefaultConfig()
	c.SpecTokens, c.SpecAcceptance = k, alpha
	return c
}

// TestSpecTPOTBatch1 checks the speedup at batch 1 against the formula:
// TPOT_base is the decode step, TPOT_spec the verification step (drafts
// included) over E = (1 − α^(k+1)) / (1 − α) tokens, both priced by the
// cost model at the request's mean decode context.
func TestSpecTPOTBatch1(t *testing.T) {
	const prompt, output = 512, 3001
	r := Request{ID: "solo", PromptTokens: prompt, OutputTokens: output}
	tpot := func(evs []stamped) float64 {
		return float64(evs[len(evs)-1].at-evs[0].at) / float64(output-1)
	}
	base, bev := drain(t, DefaultConfig(), r)
	for _, tt := range []struct {
		k     int
		alpha float64
	}{{4, 0.7}, {2, 0.9}, {8, 0.5}} {
		t.Run("k="+strconv.Itoa(tt.k)+",α="+strconv.FormatFloat(tt.alpha, 'g', -1, 64), func(t *testing.T) {
			spec, sev := drain(t, specConfig(tt.k, tt.alpha), r)
			if sev["solo"][0].at != bev["solo"][0].at {
				t.Errorf("first token at %d; want %d, as without drafts (prefill is unchanged)", sev["solo"][0].at, bev["solo"][0].at)
			}
			ctx := prompt + output/2
			var one, verify, drafts costmodel.Batch
			one.Add(1, ctx, false)
			verify.Add(1+tt.k, ctx, false)
			drafts.Add(1, ctx, false)
			stepBase := float64(base.dep.IterationNs(&one))
			stepSpec := float64(spec.cfg.spec.StepNs(spec.dep, &verify, tt.k, &drafts))
			e := costmodel.TokensPerStep(tt.alpha, tt.k)
			gotBase, gotSpec := tpot(bev["solo"]), tpot(sev["solo"])
			if math.Abs(gotBase/stepBase-1) > 0.02 {
				t.Errorf("TPOT without drafts = %.0f ns; want the decode step %.0f ns ± 2%%", gotBase, stepBase)
			}
			want := stepSpec / e
			if math.Abs(gotSpec/want-1) > 0.04 {
				t.Errorf("TPOT with k=%d, α=%v = %.0f ns; want step %.0f ns / E %.3f = %.0f ns ± 4%%", tt.k, tt.alpha, gotSpec, stepSpec, e, want)
			}
			t.Logf("k=%d α=%v: E %.3f, step %.3f ms → %.3f ms; TPOT %.3f → %.3f ms (formula %.3f): speedup %.2f× (formula %.2f×)",
				tt.k, tt.alpha, e, stepBase/1e6, stepSpec/1e6, gotBase/1e6, gotSpec/1e6, want/1e6, gotBase/gotSpec, stepBase/want)
		})
	}
}

// TestSpecChunks checks what a client sees: chunks of 1 to k+1 tokens,
// about E on average, so the gap per token jitters while the steps are
// nearly even; and exactly the asked output.
func TestSpecChunks(t *testing.T) {
	const k, alpha, output = 4, 0.7, 2001
	e, got := drain(t, specConfig(k, alpha), Request{ID: "a", PromptTokens: 256, OutputTokens: output})
	evs := got["a"]
	seen := map[int]int{}
	total := 0
	perToken := map[int64]bool{}
	for i, ev := range evs {
		if ev.tokens < 1 || ev.tokens > k+1 {
			t.Fatalf("chunk %d has %d tokens; want 1..%d", i, ev.tokens, k+1)
		}
		seen[ev.tokens]++
		total += ev.tokens
		if i > 0 {
			perToken[(ev.at-evs[i-1].at)/int64(ev.tokens)] = true
		}
	}
	if total != output {
		t.Errorf("tokens emitted = %d; want %d", total, output)
	}
	if len(seen) != k+1 {
		t.Errorf("chunk sizes %v; want every size 1..%d", seen, k+1)
	}
	if len(perToken) < k {
		t.Errorf("%d distinct per-token gaps; want jitter (≥ %d)", len(perToken), k)
	}
	// The first chunk is prefill's single token.
	mean := float64(total-1) / float64(len(evs)-1)
	if want := costmodel.TokensPerStep(alpha, k); math.Abs(mean/want-1) > 0.04 {
		t.Errorf("mean tokens per decode chunk = %.3f; want E = %.3f ± 4%%", mean, want)
	}
	s := e.Snapshot()
	if acc := float64(s.SpecAcceptedTokens) / float64(s.SpecDraftTokens); s.SpecDraftTokens == 0 || acc > alpha || acc < alpha*0.6 {
		// Accepted over proposed is below α: a rejection wastes the drafts
		// after it.
		t.Errorf("acceptance %d/%d; want a fraction a little under α = %v", s.SpecAcceptedTokens, s.SpecDraftTokens, alpha)
	}
}

// TestSpecDeterministic checks that the same requests give the same chunks,
// and that acceptances depend on the request (its id), not the run.
func TestSpecDeterministic(t *testing.T) {
	reqs := []Request{
		{ID: "x", PromptTokens: 300, OutputTokens: 200},
		{ID: "y", PromptTokens: 800, OutputTokens: 150},
		{ID: "z", PromptTokens: 100, OutputTokens: 300, ReasoningTokens: 37},
	}
	_, a := drain(t, specConfig(3, 0.8), reqs...)
	_, b := drain(t, specConfig(3, 0.8), reqs...)
	if diff := cmp.Diff(a, b, cmp.AllowUnexported(stamped{})); diff != "" {
		t.Errorf("two runs differ (-first +second):\n%s", diff)
	}
	sizes := func(evs []stamped) []int {
		var n []int
		for _, ev := range evs {
			n = append(n, ev.tokens)
		}
		return n
	}
	_, alone := drain(t, specConfig(3, 0.8), reqs[0])
	if diff := cmp.Diff(sizes(a["x"]), sizes(alone["x"])); diff != "" {
		t.Errorf("x's chunk sizes depend on its batch (-batched +alone):\n%s", diff)
	}
	if cmp.Equal(sizes(a["x"])[:50], sizes(a["z"])[:50]) {
		t.Error("x and z accept the same drafts; want draws seeded by the request")
	}
	hidden, visible := 0, 0
	for _, ev := range a["z"] {
		if ev.hidden {
			hidden += ev.tokens
		} else {
			visible += ev.tokens
		}
	}
	if hidden != 37 || visible != 263 {
		t.Errorf("z: %d hidden + %d visible tokens; want 37 + 263 (a chunk straddling the reasoning's end splits)", hidden, visible)
	}
}

func TestSpecConfigErrors(t *testing.T) {
	tests := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"negative k", func(c *Config) { c.SpecTokens = -1 }, "SpecTokens"},
		{"k over 16", func(c *Config) { c.SpecTokens = 17 }, "SpecTokens"},
		{"acceptance over 1", func(c *Config) { c.SpecTokens, c.SpecAcceptance = 4, 1.2 }, "SpecAcceptance"},
		{"negative acceptance", func(c *Config) { c.SpecTokens, c.SpecAcceptance = 4, -0.1 }, "SpecAcceptance"},
		{"NaN acceptance", func(c *Config) { c.SpecTokens, c.SpecAcceptance = 4, math.NaN() }, "SpecAcceptance"},
		{"cost fraction over 1", func(c *Config) { c.SpecTokens, c.SpecDraftCostFrac = 4, 2 }, "SpecDraftCostFrac"},
		{"unknown draft", func(c *Config) { c.SpecTokens, c.SpecDraft = 4, "tiny-llama-9000" }, "SpecDraft"},
		{"draft of another vocabulary", func(c *Config) { c.SpecTokens, c.SpecDraft = 4, "qwen2.5-7b" }, "SpecDraft"},
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
		})
	}
}

// TestSpecDraftModel checks a draft model: it shrinks the KV cache (its
// weights and its own KV share the GPU) and its passes are priced.
func TestSpecDraftModel(t *testing.T) {
	off, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c := specConfig(3, 0.8)
	c.SpecDraft = "mistral-7b"
	if _, err := New(c); err == nil {
		t.Fatal("mistral-7b (32768-token vocabulary) accepted as a draft of llama-3.1-8b")
	}
	// The profiles hold no small Llama; the target itself, spelled as its
	// HF id, exercises the path (and keeps its spelling).
	c.SpecDraft = "Llama-3.1-8B"
	on, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if on.cfg.numBlocks >= off.cfg.numBlocks {
		t.Errorf("KV blocks with a draft model %d; want fewer than %d", on.cfg.numBlocks, off.cfg.numBlocks)
	}
	if d := on.Describe(); d.SpecDraft != "Llama-3.1-8B" || d.NumSpeculativeTokens != 3 {
		t.Errorf("Describe() = %v; want the draft and k", d)
	}
	if js, _ := json.Marshal(off.Describe()); strings.Contains(string(js), `"spec_draft"`) {
		t.Error("Describe() without speculative decoding names a draft")
	}
}
