package kvcache

import "testing"

func TestAllocateFree(t *testing.T) {
	c, err := New(4, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.BlocksFor(33); got != 3 {
		t.Errorf("BlocksFor(33) = %d; want 3", got)
	}
	a, ok := c.Allocate(nil, 3)
	if !ok || len(a) != 3 || c.FreeBlocks() != 1 {
		t.Fatalf("Allocate(3) = %v, %v; free %d; want 3 blocks, 1 free", a, ok, c.FreeBlocks())
	}
	if got := c.Usage(); got != 0.75 {
		t.Errorf("Usage() = %v; want 0.75", got)
	}
	if _, ok := c.Allocate(nil, 2); ok {
		t.Error("Allocate(2) with 1 free succeeded; want failure")
	}
	if c.FreeBlocks() != 1 {
		t.Errorf("failed Allocate changed FreeBlocks to %d", c.FreeBlocks())
	}
	c.Free(a)
	if c.FreeBlocks() != 4 || c.Usage() != 0 {
		t.Errorf("after Free: free %d usage %v; want 4, 0", c.FreeBlocks(), c.Usage())
	}
	if _, err := New(0, 16, true); err == nil {
		t.Error("New(0 blocks) = nil error")
	}
}

// TestPrefixLRU checks hits, sharing and least-recently-freed eviction.
func TestPrefixLRU(t *testing.T) {
	c, _ := New(4, 16, true)
	a, _ := c.Allocate(nil, 2)
	c.Commit(a, []uint64{10, 11}, 0, 2)
	if got := c.Match([]uint64{10, 11, 12}); got != 2 {
		t.Errorf("Match(10,11,12) = %d; want 2", got)
	}
	// A second holder shares the blocks: ref 2, nothing new taken.
	b := c.Acquire(nil, []uint64{10, 11})
	if b[0] != a[0] || b[1] != a[1] || c.FreeBlocks() != 2 {
		t.Errorf("Acquire = %v (a = %v), free %d; want same blocks, 2 free", b, a, c.FreeBlocks())
	}
	c.Free(a)
	c.Free(b)
	// Freed, still cached; free order is tail-first: 11's block then 10's.
	if c.FreeBlocks() != 4 || c.Match([]uint64{10, 11}) != 2 {
		t.Errorf("after free: free %d match %d; want 4, 2", c.FreeBlocks(), c.Match([]uint64{10, 11}))
	}
	// Taking the two never-used blocks evicts nothing.
	x, _ := c.Allocate(nil, 2)
	if c.Match([]uint64{10, 11}) != 2 {
		t.Errorf("allocating unused blocks evicted cached ones")
	}
	// The next allocation evicts the least recently freed: block of hash
	// 11 (freed first, as Free releases the tail first), so 10 still hits
	// and 11 no longer does.
	y, _ := c.Allocate(nil, 1)
	if got := c.Match([]uint64{10}); got != 1 {
		t.Errorf("Match(10) after one eviction = %d; want 1", got)
	}
	if got := c.Match([]uint64{10, 11}); got != 1 {
		t.Errorf("Match(10,11) after one eviction = %d; want 1", got)
	}
	if c.FreeAmong([]uint64{10}) != 1 {
		t.Errorf("FreeAmong(10) = %d; want 1", c.FreeAmong([]uint64{10}))
	}
	c.Free(x)
	c.Free(y)
	// A duplicate hash in a different block stays private.
	d, _ := c.Allocate(nil, 1)
	c.Commit(d, []uint64{10}, 0, 1)
	if c.CachedBlocks() != 1 {
		t.Errorf("CachedBlocks() = %d; want 1 (duplicate not registered)", c.CachedBlocks())
	}
}

func BenchmarkAllocateCommitFree(b *testing.B) {
	c, _ := New(1024, 16, true)
	hashes := make([]uint64, 64)
	table := make([]int32, 0, 64)
	var n uint64
	for b.Loop() {
		for i := range hashes {
			n++
			hashes[i] = n
		}
		table, _ = c.Allocate(table[:0], 64)
		c.Commit(table, hashes, 0, 64)
		c.Free(table)
	}
}

// refCache is the plain model of the cache's eviction: a least recently
// freed queue of blocks, each hashless or holding a hash, Allocate always
// taking the front. The Cache takes any block while none free holds a
// hash; what requests see (hits, cached blocks, free blocks) must not
// differ.
type refCache struct {
	free   []int // front: evicted first
	hash   map[int]uint64
	owner  map[uint64]int
	ref    map[int]int
	blocks int
}

func (r *refCache) allocate(n int) ([]int, bool) {
	if n > len(r.free) {
		return nil, false
	}
	out := r.free[:n:n]
	r.free = append([]int(nil), r.free[n:]...)
	for _, b := range out {
		if h, ok := r.hash[b]; ok {
			delete(r.owner, h)
			delete(r.hash, b)
		}
		r.ref[b] = 1
	}
	return out, true
}

// TestAnyHashlessBlockWillDo drives a Cache and the model with the same
// random requests (allocate, commit some hashes, acquire hits, free) and
// compares what a request can observe after every step.
func TestAnyHashlessBlockWillDo(t *testing.T) {
	for seed := range uint64(20) {
		const n = 32
		c, _ := New(n, 16, true)
		ref := &refCache{hash: map[int]uint64{}, owner: map[uint64]int{}, ref: map[int]int{}, blocks: n}
		for i := range n {
			ref.free = append(ref.free, i)
		}
		// Tables: the cache's and the model's, by request; the model's
		// blocks are its own numbers, matched to the cache's by position.
		type live struct {
			cache  []int32
			model  []int
			hashes []uint64
		}
		var reqs []live
		x := seed*0x9e3779b97f4a7c15 + 1
		rnd := func(k int) int { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return int(x % uint64(k)) }
		for step := range 400 {
			switch op := rnd(3); {
			case op < 2 && len(reqs) < 8:
				// A request of 1..6 blocks whose first ones may share a
				// prefix family (hashes from a small space) or none.
				k := 1 + rnd(6)
				hashes := make([]uint64, k)
				fam := uint64(rnd(4))
				for j := range hashes {
					hashes[j] = fam<<8 | uint64(j)
				}
				shared := rnd(2) == 0
				if !shared {
					hashes = nil
				}
				hit := 0
				if shared {
					hit = c.Match(hashes)
					mh := 0
					for mh < len(hashes) {
						if _, ok := ref.owner[hashes[mh]]; !ok {
							break
						}
						mh++
					}
					if hit != mh {
						t.Fatalf("seed %d step %d: cache matches %d blocks, model %d", seed, step, hit, mh)
					}
				}
				// Taking a free cached block leaves one fewer to allocate.
				need := k - hit
				if shared {
					need += c.FreeAmong(hashes[:hit])
				}
				if !c.CanAllocate(need) {
					if need <= len(ref.free) {
						t.Fatalf("seed %d step %d: cache has no room for %d blocks, the model has", seed, step, need)
					}
					continue
				}
				var lv live
				lv.hashes = hashes
				lv.cache = c.Acquire(nil, hashes[:hit])
				for _, h := range hashes[:hit] {
					b := ref.owner[h]
					if ref.ref[b] == 0 {
						for j, f := range ref.free {
							if f == b {
								ref.free = append(ref.free[:j:j], ref.free[j+1:]...)
								break
							}
						}
					}
					ref.ref[b]++
					lv.model = append(lv.model, b)
				}
				var ok bool
				lv.cache, ok = c.Allocate(lv.cache, k-hit)
				mb, mok := ref.allocate(k - hit)
				if !ok || !mok {
					t.Fatalf("seed %d step %d: allocate %v, model %v", seed, step, ok, mok)
				}
				lv.model = append(lv.model, mb...)
				if shared {
					c.Commit(lv.cache, hashes, hit, k)
					for j := hit; j < k; j++ {
						b := lv.model[j]
						if _, has := ref.hash[b]; has {
							continue
						}
						if _, dup := ref.owner[hashes[j]]; dup {
							continue
						}
						ref.hash[b], ref.owner[hashes[j]] = hashes[j], b
					}
				}
				reqs = append(reqs, lv)
			case len(reqs) > 0:
				j := rnd(len(reqs))
				lv := reqs[j]
				reqs = append(reqs[:j:j], reqs[j+1:]...)
				c.Free(lv.cache)
				for k := len(lv.model) - 1; k >= 0; k-- {
					b := lv.model[k]
					if ref.ref[b]--; ref.ref[b] == 0 {
						ref.free = append(ref.free, b)
					}
				}
			}
			if c.FreeBlocks() != len(ref.free) || c.CachedBlocks() != len(ref.owner) {
				t.Fatalf("seed %d step %d: cache free %d cached %d; model %d, %d", seed, step, c.FreeBlocks(), c.CachedBlocks(), len(ref.free), len(ref.owner))
			}
		}
	}
}
