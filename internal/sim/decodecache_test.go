package sim

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// span returns n block hashes base, base+1, ...: a run of blocks with its
// own identity.
func span(base uint64, n int) []uint64 {
	hs := make([]uint64, n)
	for i := range hs {
		hs[i] = base + uint64(i)
	}
	return hs
}

// smallEngine is an engine of blocks 16-token KV blocks, so that the tests
// can count them by hand.
func smallEngine(t *testing.T, blocks int, caching bool) *Engine {
	t.Helper()
	cfg := DefaultConfig()
	cfg.NumGPUBlocksOverride, cfg.MaxModelLen, cfg.MaxNumBatchedTokens = blocks, blocks*16, 256
	cfg.EnablePrefixCaching = caching
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// served is what serve saw of one request.
type served struct {
	Cached, Tokens, Preemptions int
}

// serve adds reqs at now and steps e until it is idle; it returns each
// request's cached tokens, generated tokens and preemptions, and the time
// it went idle.
func serve(t *testing.T, e *Engine, now int64, reqs ...Request) (map[string]served, int64) {
	t.Helper()
	for _, r := range reqs {
		if err := e.Add(now, r); err != nil {
			t.Fatalf("Add(%s) = %v", r.ID, err)
		}
	}
	got := map[string]served{}
	for e.Busy() {
		end, evs := e.Step(now)
		if end == now {
			t.Fatalf("engine stalled at %d with work left", now)
		}
		now = end
		for _, ev := range evs {
			s := got[ev.ID]
			switch ev.Kind {
			case EventTokens:
				if s.Tokens == 0 {
					s.Cached = ev.Cached
				}
				s.Tokens += ev.Tokens
			case EventFinished:
				s.Preemptions = ev.Timing.Preemptions
			case EventRejected:
				t.Fatalf("%s rejected: %s", ev.ID, ev.Err)
			}
			got[ev.ID] = s
		}
	}
	return got, now
}

// TestOutputBlocksCached: hashes that run over a request's output make its
// generated blocks join the prefix cache once computed, so the next turn,
// whose prompt resends prompt + answer, finds them. The last generated
// token is never fed back (its KV is never computed), so the blocks
// cached are ⌊(P + O − 1)/16⌋.
func TestOutputBlocksCached(t *testing.T) {
	tests := []struct {
		name      string
		caching   bool
		p, o      int
		hashes    []uint64 // a's
		hashBlock int      // tokens per hash; 0: the engine's 16
		next      []uint64 // b's hashes: a's sequence, then b's own
		cached    int      // b's cached tokens
		blocks    int      // blocks findable after a ended
	}{
		// 40 + 30 = 70 tokens, 69 computed: ⌊69/16⌋ = 4 blocks, 64
		// tokens; a's fifth hash covers [64, 80), past its end, unused.
		{"answer blocks", true, 40, 30, span(1, 5), 0, append(span(1, 4), 99), 64, 4},
		// Two hashes stop inside the 40-token prompt: as before, only
		// those ⌊32/16⌋ = 2 prompt blocks are shared.
		{"prompt-only hashes", true, 40, 30, span(1, 2), 0, append(span(1, 2), 98, 99), 32, 2},
		// 40 + 24 = 64 tokens: block 3 would be full only with the last
		// token, which is never computed: ⌊63/16⌋ = 3 blocks, 48 tokens.
		{"last token's block", true, 40, 24, span(1, 4), 0, append(span(1, 4), 99), 48, 3},
		// 40 + 20 = 60 tokens stop inside block 3: ⌊59/16⌋ = 3 blocks.
		{"partial block", true, 40, 20, span(1, 4), 0, append(span(1, 3), 97, 99), 48, 3},
		// 32-token hashes over 16-token blocks: hashes 1, 2 cover [0, 64),
		// engine blocks 0–3, all computed; hash 3 covers [64, 96), where
		// a's 70-token sequence ends: block 4 is never full.
		{"coarser hashes", true, 40, 30, span(1, 3), 32, append(span(1, 2), 99), 64, 4},
		{"no caching", false, 40, 30, span(1, 5), 0, append(span(1, 4), 99), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := smallEngine(t, 64, tt.caching)
			a := Request{ID: "a", PromptTokens: tt.p, OutputTokens: tt.o, BlockHashes: tt.hashes, HashBlockTokens: tt.hashBlock}
			got, end := serve(t, e, 0, a)
			if got["a"].Tokens != tt.o {
				t.Fatalf("a generated %d tokens; want %d", got["a"].Tokens, tt.o)
			}
			// a's blocks are free again, the hashed ones still findable:
			// evictable cached blocks, not blanks.
			if n, free := e.kv.CachedBlocks(), e.kv.FreeBlocks(); n != tt.blocks || free != 64 {
				t.Errorf("after a: %d cached blocks, %d free; want %d, 64", n, free, tt.blocks)
			}
			b := Request{ID: "b", PromptTokens: tt.p + tt.o + 20, OutputTokens: 1, BlockHashes: tt.next, HashBlockTokens: tt.hashBlock}
			got, _ = serve(t, e, end, b)
			if got["b"].Cached != tt.cached {
				t.Errorf("b's cached tokens = %d; want %d", got["b"].Cached, tt.cached)
			}
		})
	}
}

// TestOutputBlocksAfterPreemption works a preemption mid-decode by hand on
// 6 blocks of 16 tokens. a and b (prompt 20, output 30, b's hashes over its
// whole sequence) take 2 blocks each, then a third at 32 tokens: all 6. At
// 48 computed tokens a needs a fourth: b, the newest, is preempted, its 3
// full blocks registered and freed, tail first, and a's new block evicts
// b's block 2. b waits until a ends, then recomputes its 49 tokens hitting
// blocks 0–1, and finishes. Its 50 tokens leave ⌊49/16⌋ = 3 blocks cached,
// so c, whose prompt is b's 50 tokens and 10 more, hits 48.
func TestOutputBlocksAfterPreemption(t *testing.T) {
	e := smallEngine(t, 6, true)
	a := Request{ID: "a", PromptTokens: 20, OutputTokens: 30, BlockHashes: span(100, 3)}
	b := Request{ID: "b", PromptTokens: 20, OutputTokens: 30, BlockHashes: span(1, 3)}
	got, end := serve(t, e, 0, a, b)
	want := map[string]served{"a": {Tokens: 30}, "b": {Tokens: 30, Preemptions: 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("a and b (-want +got):\n%s", diff)
	}
	// Only b's recompute hit: blocks 0–1, 32 tokens.
	if s := e.Snapshot(); s.Preemptions != 1 || s.PrefixHitTokens != 32 {
		t.Errorf("preemptions %d, prefix hit tokens %d; want 1, 32", s.Preemptions, s.PrefixHitTokens)
	}
	c := Request{ID: "c", PromptTokens: 60, OutputTokens: 1, BlockHashes: append(span(1, 3), 99)}
	got, _ = serve(t, e, end, c)
	if got["c"].Cached != 48 {
		t.Errorf("c's cached tokens = %d; want 48 (b's 3 blocks)", got["c"].Cached)
	}
}

// TestOutputBlocksEvicted works eviction by hand on 6 blocks of 16 tokens.
// a (prompt 40, output 25: 64 tokens computed) leaves its 4 blocks cached
// and free, behind the 2 blocks never used: the free queue is
// [4 5 a3 a2 a1 a0], a's freed tail first. b, unrelated, needs ⌈50/16⌉ = 4
// blocks and takes blocks 4, 5, a3, a2, evicting a's last two. c resends
// a's prompt and answer and 15 more tokens: it finds a0 and a1, 32 tokens.
func TestOutputBlocksEvicted(t *testing.T) {
	e := smallEngine(t, 6, true)
	_, end := serve(t, e, 0, Request{ID: "a", PromptTokens: 40, OutputTokens: 25, BlockHashes: span(1, 4)})
	if n := e.kv.CachedBlocks(); n != 4 {
		t.Fatalf("after a: %d cached blocks; want 4", n)
	}
	_, end = serve(t, e, end, Request{ID: "b", PromptTokens: 50, OutputTokens: 1})
	if n := e.kv.CachedBlocks(); n != 2 {
		t.Errorf("after b: %d cached blocks; want 2 (a's first two)", n)
	}
	got, _ := serve(t, e, end, Request{ID: "c", PromptTokens: 80, OutputTokens: 1, BlockHashes: append(span(1, 4), 99)})
	if got["c"].Cached != 32 {
		t.Errorf("c's cached tokens = %d; want 32", got["c"].Cached)
	}
}

// TestOutputBlocksShared: while a decodes, its generated blocks are in the
// cache as soon as computed (held by a, so not evictable), and a request
// arriving meanwhile that resends them finds them.
func TestOutputBlocksShared(t *testing.T) {
	e := smallEngine(t, 64, true)
	if err := e.Add(0, Request{ID: "a", PromptTokens: 16, OutputTokens: 40, BlockHashes: span(1, 3)}); err != nil {
		t.Fatal(err)
	}
	var now int64
	// Prefill (16 tokens, 1 block), then 16 decodes: 32 tokens computed
	// in 2 full blocks, the second of generated tokens.
	for range 17 {
		now, _ = e.Step(now)
	}
	if n, used := e.kv.CachedBlocks(), e.kv.NumBlocks()-e.kv.FreeBlocks(); n != 2 || used != 2 {
		t.Fatalf("a mid-decode: %d cached blocks, %d held; want 2, 2", n, used)
	}
	got, _ := serve(t, e, now, Request{ID: "b", PromptTokens: 40, OutputTokens: 1, BlockHashes: append(span(1, 2), 99)})
	if got["b"].Cached != 32 {
		t.Errorf("b's cached tokens = %d; want 32 (a's two blocks, one of them generated)", got["b"].Cached)
	}
}
