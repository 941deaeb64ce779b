package cluster

import "github.com/goodput/goodput/internal/sim"

// prefixIndex is what the prefix-aware router remembers of one replica:
// the chained keys of the blocks it routed there, least recently routed
// forgotten first once they hold more than capTokens tokens. It is the
// router's guess at the replica's prefix cache, as a real router's radix
// tree of routed prompts is; the engine's cache is not consulted.
type prefixIndex struct {
	capTokens, tokens int
	at                map[uint64]int32 // key → node
	nodes             []prefixNode
	head, tail        int32 // most and least recently routed; -1 when empty
	free              []int32
}

// prefixNode is one remembered block in the recency list.
type prefixNode struct {
	key        uint64
	prev, next int32
	tokens     int32
}

func newPrefixIndex(capTokens int) *prefixIndex {
	return &prefixIndex{capTokens: capTokens, at: map[uint64]int32{}, head: -1, tail: -1}
}

// match is how many of keys, from the first, the replica is remembered to
// hold.
func (p *prefixIndex) match(keys []uint64) int {
	for i, k := range keys {
		if _, ok := p.at[k]; !ok {
			return i
		}
	}
	return len(keys)
}

// learn remembers keys (blocks of blockTokens tokens each) as just routed.
// They are touched last block first, so the first block is the most
// recent: as in the engine, which evicts a sequence's tail blocks first, a
// prefix outlives its continuations.
func (p *prefixIndex) learn(keys []uint64, blockTokens int) {
	for i := len(keys) - 1; i >= 0; i-- {
		p.touch(keys[i], blockTokens)
	}
	for p.tokens > p.capTokens && p.tail >= 0 {
		p.drop(p.tail)
	}
}

// touch moves key to the front, adding it if new.
func (p *prefixIndex) touch(key uint64, blockTokens int) {
	if n, ok := p.at[key]; ok {
		p.unlink(n)
		p.pushFront(n)
		return
	}
	var n int32
	if k := len(p.free); k > 0 {
		n = p.free[k-1]
		p.free = p.free[:k-1]
	} else {
		n = int32(len(p.nodes))
		p.nodes = append(p.nodes, prefixNode{})
	}
	p.nodes[n] = prefixNode{key: key, tokens: int32(blockTokens)}
	p.at[key] = n
	p.tokens += blockTokens
	p.pushFront(n)
}

// drop forgets node n.
func (p *prefixIndex) drop(n int32) {
	p.unlink(n)
	delete(p.at, p.nodes[n].key)
	p.tokens -= int(p.nodes[n].tokens)
	p.free = append(p.free, n)
}

func (p *prefixIndex) unlink(n int32) {
	nd := &p.nodes[n]
	if nd.prev >= 0 {
		p.nodes[nd.prev].next = nd.next
	} else {
		p.head = nd.next
	}
	if nd.next >= 0 {
		p.nodes[nd.next].prev = nd.prev
	} else {
		p.tail = nd.prev
	}
	nd.prev, nd.next = -1, -1
}

func (p *prefixIndex) pushFront(n int32) {
	nd := &p.nodes[n]
	nd.prev, nd.next = -1, p.head
	if p.head >= 0 {
		p.nodes[p.head].prev = n
	}
	p.head = n
	if p.tail < 0 {
		p.tail = n
	}
}

// chainKeys appends to dst the chained keys of r's hash blocks: key j
// stands for blocks 0..j, so equal keys mean equal prefixes whatever the
// workload's hashes mean on their own (Mooncake's hash_ids are chained
// already, a shared system prompt's are per block). The granularity is
// part of the key: blocks of different sizes never match.
func chainKeys(dst []uint64, hashes []uint64, blockTokens int) []uint64 {
	k := sim.Mix64(uint64(blockTokens) ^ 0x243f6a8885a308d3)
	for _, h := range hashes {
		k = sim.Mix64(k ^ (h * 0x9e3779b97f4a7c15))
		dst = append(dst, k)
	}
	return dst
}
