package simserve

import (
	"github.com/goodput/goodput/internal/tokenize"
)

// fillerWords are the simulated model's vocabulary: short common words, each
// exactly one tokenize.Approx token, so a response's text counts to its
// completion_tokens with Approx. Each token is sent as " word".
var fillerWords = [...]string{
	"the", "of", "and", "to", "in", "is", "it", "for", "on", "that",
	"with", "as", "be", "at", "by", "this", "from", "or", "an", "they",
	"which", "one", "you", "were", "all", "we", "there", "can", "more", "will",
	"time", "some", "these", "two", "may", "then", "first", "any", "like", "over",
	"made", "after", "also", "many", "must", "back", "years", "where", "much", "your",
	"way", "well", "down", "each", "just", "those", "how", "too", "state", "good",
	"very", "make", "world", "still", "own", "see", "work", "long", "here", "both",
}

// appendFiller appends n filler tokens, " word" each, starting at output
// token index from of the request with sequence number seq: the words cycle
// through fillerWords from a point that depends on seq, so responses
// differ.
func appendFiller(dst []byte, seq uint64, from, n int) []byte {
	for i := range n {
		dst = append(dst, ' ')
		dst = append(dst, fillerWords[(seq*7+uint64(from+i))%uint64(len(fillerWords))]...)
	}
	return dst
}

// fnv64 folds b into the FNV-1a hash h.
func fnv64(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	return h
}

const fnvOffset64 = 14695981039346656037

// promptInfo is what the server derives from a prompt: its token count,
// the prefix-cache identity of each full block, and a content hash.
type promptInfo struct {
	tokens int
	hashes []uint64
	hash   uint64
}

// promptIDs returns the prompt's token ids by tokenize.Approx, with
// perMessage template tokens (id -1) before each chat message's content.
func promptIDs(text []string, perMessage int, chat bool) []int {
	var tok tokenize.Approx
	var ids []int
	for _, t := range text {
		if chat {
			// The same ids for every message, so a shared system prompt
			// still hashes alike across requests.
			for range perMessage {
				ids = append(ids, -1)
			}
		}
		ids = append(ids, tok.Encode(t)...)
	}
	return ids
}

// analyzePrompt counts the prompt's tokens (the ids given, else
// promptIDs) and hashes every full block of blockTokens ids with a chained
// hash (block i's hash covers blocks 0..i, as vLLM's prefix-cache keys do),
// so two prompts that share their first k blocks share their first k
// hashes. hash covers the whole prompt.
func analyzePrompt(text []string, ids []int, perMessage, blockTokens int, chat bool) promptInfo {
	if ids == nil {
		ids = promptIDs(text, perMessage, chat)
	}
	info := promptInfo{tokens: len(ids)}
	var buf [8]byte
	h := uint64(fnvOffset64)
	for i, id := range ids {
		v := uint64(id)
		for k := range buf {
			buf[k] = byte(v >> (8 * k))
		}
		h = fnv64(h, buf[:])
		if blockTokens > 0 && (i+1)%blockTokens == 0 {
			info.hashes = append(info.hashes, h)
		}
	}
	info.hash = h
	return info
}
