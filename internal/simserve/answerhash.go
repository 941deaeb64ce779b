package simserve

import (
	"sync"

	"github.com/goodput/goodput/internal/tokenize"
)

// fillerIDs are the token ids of fillerWords by tokenize.Approx: what the
// words of an answer count as when a client resends it in its history.
var fillerIDs = sync.OnceValue(func() []int {
	var tok tokenize.Approx
	ids := make([]int, len(fillerWords))
	for i, w := range fillerWords {
		ids[i] = tok.Encode(w)[0] // each filler word is exactly one token
	}
	return ids
})

// answerHashes extends a prompt's block hashes over the answer the server
// will generate for the request of sequence number seq: n filler tokens,
// the same ids the next turn's prompt has when it resends the answer as an
// assistant message. The engine then caches the answer's blocks as they
// fill (vLLM hashes prompt and output alike), so a conversation's next
// turn hits them. The chain continues from the prompt's whole-prompt hash,
// as analyzePrompt would over the resent ids.
func answerHashes(info promptInfo, seq uint64, n, blockTokens int) []uint64 {
	if blockTokens <= 0 || n <= 0 {
		return info.hashes
	}
	ids := fillerIDs()
	hashes := make([]uint64, len(info.hashes), len(info.hashes)+(info.tokens%blockTokens+n)/blockTokens)
	copy(hashes, info.hashes)
	var buf [8]byte
	h := info.hash
	for i := range n {
		v := uint64(ids[(seq*7+uint64(i))%uint64(len(ids))])
		for k := range buf {
			buf[k] = byte(v >> (8 * k))
		}
		h = fnv64(h, buf[:])
		if (info.tokens+i+1)%blockTokens == 0 {
			hashes = append(hashes, h)
		}
	}
	return hashes
}
