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
