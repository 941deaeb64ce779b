// Package kvcache is a paged KV cache with prefix caching, as vLLM's block
// manager keeps it: a fixed pool of blocks of BlockSize tokens, a free queue
// in least-recently-freed order, and (with prefix caching on) a map from a
// full block's content hash to the block that holds it, so a later request
// with the same prefix reuses it. A free block that still holds a hash stays
// findable until it is reused for something else (evicted, LRU).
//
// A Cache is not safe for concurrent use. No method allocates after New
// except to grow the caller's block tables and the hash map.
package kvcache

import "fmt"

// nilBlock marks the end of the free list.
const nilBlock = -1

type block struct {
	ref        int32  // requests holding the block
	prev, next int32  // free-list links (valid while ref == 0)
	hash       uint64 // content hash when hashed
	hashed     bool
	inFree     bool
}

// Cache is a pool of KV blocks.
type Cache struct {
	blockSize int
	caching   bool
	blocks    []block
	head      int32 // free-list head: evicted first
	tail      int32
	nFree     int
	// hashedFree counts the free blocks that hold a hash: while it is 0,
	// every free block is alike and Allocate may take any.
	hashedFree int
	cached     map[uint64]int32 // hash → block, only with prefix caching
}

// New returns a cache of numBlocks blocks of blockSize tokens; prefixCaching
// turns on reuse of full blocks by content hash.
func New(numBlocks, blockSize int, prefixCaching bool) (*Cache, error) {
	if numBlocks < 1 {
		return nil, fmt.Errorf("kvcache: %d blocks; need at least 1", numBlocks)
	}
	if blockSize < 1 {
		return nil, fmt.Errorf("kvcache: block size %d; need at least 1", blockSize)
	}
	c := &Cache{blockSize: blockSize, caching: prefixCaching, blocks: make([]block, numBlocks)}
	if prefixCaching {
		c.cached = make(map[uint64]int32)
	}
	c.head, c.tail = nilBlock, nilBlock
	for i := range c.blocks {
		c.pushTail(int32(i))
	}
	return c, nil
}

// BlockSize is the tokens per block.
func (c *Cache) BlockSize() int { return c.blockSize }

// NumBlocks is the pool size in blocks.
func (c *Cache) NumBlocks() int { return len(c.blocks) }

// FreeBlocks is the blocks no request holds (cached ones included: they
// can be evicted).
func (c *Cache) FreeBlocks() int { return c.nFree }

// Usage is the fraction of blocks held by requests (0..1), as vLLM's
// kv_cache_usage_perc reports it.
func (c *Cache) Usage() float64 {
	return float64(len(c.blocks)-c.nFree) / float64(len(c.blocks))
}

// PrefixCaching reports whether prefix caching is on.
func (c *Cache) PrefixCaching() bool { return c.caching }

// BlocksFor is the blocks needed to hold tokens tokens.
func (c *Cache) BlocksFor(tokens int) int { return (tokens + c.blockSize - 1) / c.blockSize }

func (c *Cache) pushTail(i int32) {
	b := &c.blocks[i]
	b.prev, b.next, b.inFree = c.tail, nilBlock, true
	if c.tail != nilBlock {
		c.blocks[c.tail].next = i
	} else {
		c.head = i
	}
	c.tail = i
	c.nFree++
	if b.hashed {
		c.hashedFree++
	}
}

func (c *Cache) unlink(i int32) {
	b := &c.blocks[i]
	if b.prev != nilBlock {
		c.blocks[b.prev].next = b.next
	} else {
		c.head = b.next
	}
	if b.next != nilBlock {
		c.blocks[b.next].prev = b.prev
	} else {
		c.tail = b.prev
	}
	b.prev, b.next, b.inFree = nilBlock, nilBlock, false
	c.nFree--
	if b.hashed {
		c.hashedFree--
	}
}

// Match returns how many leading hashes name blocks in the cache (0 when
// prefix caching is off). It changes nothing.
func (c *Cache) Match(hashes []uint64) int {
	if !c.caching {
		return 0
	}
	for i, h := range hashes {
		if _, ok := c.cached[h]; !ok {
			return i
		}
	}
	return len(hashes)
}

// Acquire takes the cached blocks for the first n hashes (which Match must
// have found) and appends them to table, returning it. A taken block that
// was free leaves the free queue.
func (c *Cache) Acquire(table []int32, hashes []uint64) []int32 {
	for _, h := range hashes {
		i := c.cached[h]
		b := &c.blocks[i]
		if b.ref == 0 {
			c.unlink(i)
		}
		b.ref++
		table = append(table, i)
	}
	return table
}

// CanAllocate reports whether n new blocks are available.
func (c *Cache) CanAllocate(n int) bool { return n <= c.nFree }

// Allocate appends n fresh blocks to table, evicting the least recently
// freed cached blocks; ok is false (and nothing changes) when fewer than n
// are free.
func (c *Cache) Allocate(table []int32, n int) (_ []int32, ok bool) {
	if n > c.nFree {
		return table, false
	}
	for range n {
		i := c.head
		if c.hashedFree == 0 {
			// No free block holds a hash, so which one is taken changes
			// nothing a request sees (the order of the hashed blocks freed
			// later is the same): the most recently freed is likely still
			// in the CPU's cache, the least recently freed seldom is.
			i = c.tail
		}
		c.unlink(i)
		b := &c.blocks[i]
		if b.hashed {
			// Evict: the content is about to be overwritten. Commit
			// hashes a block only when it becomes the hash's owner.
			delete(c.cached, b.hash)
			b.hashed = false
		}
		b.ref = 1
		table = append(table, i)
	}
	return table, true
}

// Commit records that the blocks table[from:to] are full and hold the
// contents hashes[from:to], so later requests can reuse them. A hash
// already cached in another block is left alone (the duplicate stays
// private). Without prefix caching it does nothing.
func (c *Cache) Commit(table []int32, hashes []uint64, from, to int) {
	if !c.caching {
		return
	}
	for k := from; k < to; k++ {
		i := table[k]
		b := &c.blocks[i]
		if b.hashed {
			continue
		}
		if _, dup := c.cached[hashes[k]]; dup {
			continue
		}
		b.hash, b.hashed = hashes[k], true
		c.cached[hashes[k]] = i
		if b.inFree {
			c.hashedFree++
		}
	}
}

// Free releases table's blocks, last block first, so that the tail of a
// sequence (least likely to be shared) is evicted first.
func (c *Cache) Free(table []int32) {
	for k := len(table) - 1; k >= 0; k-- {
		i := table[k]
		b := &c.blocks[i]
		b.ref--
		if b.ref == 0 {
			c.pushTail(i)
		}
	}
}

// CachedBlocks is the number of blocks findable by hash (held or free).
func (c *Cache) CachedBlocks() int { return len(c.cached) }

// FreeAmong counts the cached blocks named by hashes that no request holds
// (taking them with Acquire removes them from the free queue).
func (c *Cache) FreeAmong(hashes []uint64) int {
	n := 0
	for _, h := range hashes {
		if i, ok := c.cached[h]; ok && c.blocks[i].ref == 0 {
			n++
		}
	}
	return n
}
