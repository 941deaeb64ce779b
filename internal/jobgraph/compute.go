package jobgraph

import (
	"errors"
	"time"
)

// errUnchecked is returned by the computations on a job whose Check
// failed; they check it first.
var errUnchecked = errors.New("jobgraph: job does not check")

// Schedule is when each request of a job runs given each one's duration,
// with no limit on how many run at once: the job's own shape, before any
// server queue.
type Schedule struct {
	// Start and Finish are each node's send and done times since the job
	// started, indexed like Job.Nodes.
	Start, Finish []time.Duration
	// End is the job's end-to-end time: the latest Finish (0 for an empty
	// job).
	End time.Duration
	// Critical is the critical path, node indices from a root to the node
	// that finished last: each node the one its successor on the path
	// waited for longest (the latest-finishing of its After; ties to the
	// one listed first). Shortening any node off this path does not
	// shorten the job; its gaps and durations sum to End.
	Critical []int
}

// Plan computes the Schedule for per-node durations dur(i) (the model
// time of node i; a negative duration counts as 0). A node starts Gap
// after the last of its After finishes, a root Gap after the job starts.
func (j *Job) Plan(dur func(i int) time.Duration) (Schedule, error) {
	if err := j.Check(); err != nil {
		return Schedule{}, errors.Join(errUnchecked, err)
	}
	n := len(j.Nodes)
	s := Schedule{Start: make([]time.Duration, n), Finish: make([]time.Duration, n)}
	waited := make([]int32, n) // the predecessor a node waited for; -1 for none
	last := -1
	for _, x := range j.order {
		ready, w := time.Duration(0), int32(-1)
		for _, p := range j.preds[x] {
			if f := s.Finish[p]; w < 0 || f > ready || (f == ready && p < w) {
				ready, w = f, p
			}
		}
		waited[x] = w
		s.Start[x] = ready + j.Nodes[x].Gap
		s.Finish[x] = s.Start[x] + max(dur(int(x)), 0)
		if last < 0 || s.Finish[x] > s.End || (s.Finish[x] == s.End && int(x) < last) {
			s.End, last = s.Finish[x], int(x)
		}
	}
	for x := last; x >= 0; x = int(waited[x]) {
		s.Critical = append(s.Critical, x)
	}
	for a, b := 0, len(s.Critical)-1; a < b; a, b = a+1, b-1 {
		s.Critical[a], s.Critical[b] = s.Critical[b], s.Critical[a]
	}
	return s, nil
}

// Prompts is each node's prompt length in tokens under its context rule,
// indexed like Job.Nodes: its New tokens plus what it carries —
//
//	Spawn: nothing;
//	Fork:  From's prompt and answer, plus the answers of the other nodes
//	       it waits for (joined sub-agents hand back their answers);
//	Last:  From's answer and the answers of the other nodes it waits for.
//
// For a trace whose In is consistent with its graph, Prompts equals In.
func (j *Job) Prompts() ([]int, error) {
	if err := j.Check(); err != nil {
		return nil, errors.Join(errUnchecked, err)
	}
	p := make([]int, len(j.Nodes))
	for _, x := range j.order {
		p[x] = j.carried(x, p) + j.Nodes[x].New
	}
	return p, nil
}

// carried is the context node x carries given its ancestors' prompts.
func (j *Job) carried(x int32, prompt []int) int {
	nd := &j.Nodes[x]
	if nd.Context == Spawn {
		return 0
	}
	c := 0
	f := j.from[x]
	if f >= 0 {
		c += j.Nodes[f].Out
		if nd.Context == Fork {
			c += prompt[f]
		}
	}
	for _, a := range j.preds[x] {
		if a != f {
			c += j.Nodes[a].Out
		}
	}
	return c
}

// CacheHit counts, for one request or summed over several, the prompt
// blocks and tokens an unbounded prefix cache would already hold.
type CacheHit struct {
	// Blocks is the prompt's hash ids; HitBlocks the leading ones already
	// seen: block for block from the start of the prompt, up to the first
	// block not seen before.
	Blocks, HitBlocks int
	// Tokens is the prompt length (In, or Blocks × BlockSize when the
	// trace did not record In); HitTokens is HitBlocks × BlockSize, at
	// most Tokens.
	Tokens, HitTokens int
}

// Share is HitTokens / Tokens, 0 when there are no tokens.
func (c CacheHit) Share() float64 {
	if c.Tokens == 0 {
		return 0
	}
	return float64(c.HitTokens) / float64(c.Tokens)
}

// Add sums o into c.
func (c *CacheHit) Add(o CacheHit) {
	c.Blocks += o.Blocks
	c.HitBlocks += o.HitBlocks
	c.Tokens += o.Tokens
	c.HitTokens += o.HitTokens
}

// CacheHits is the hit share the job's hash ids imply for an unbounded
// prefix cache shared by the job's requests (a trace's hash ids are
// scoped to the job), the requests taken in Order — the order they are
// sent when each finishes before the next listed one starts. It returns
// each node's count, indexed like Job.Nodes, and their sum. Nodes without
// hash ids count their tokens as misses.
func (j *Job) CacheHits() ([]CacheHit, CacheHit, error) {
	if err := j.Check(); err != nil {
		return nil, CacheHit{}, errors.Join(errUnchecked, err)
	}
	per := make([]CacheHit, len(j.Nodes))
	var all CacheHit
	seen := make(map[int64]struct{})
	bs := j.BlockSize
	for _, x := range j.order {
		nd := &j.Nodes[x]
		c := CacheHit{Blocks: len(nd.HashIDs), Tokens: nd.In}
		if c.Tokens == 0 {
			c.Tokens = len(nd.HashIDs) * bs
		}
		prefix := true
		for _, h := range nd.HashIDs {
			if _, ok := seen[h]; ok && prefix {
				c.HitBlocks++
			} else {
				prefix = false
				seen[h] = struct{}{}
			}
		}
		c.HitTokens = min(c.HitBlocks*bs, c.Tokens)
		per[x] = c
		all.Add(c)
	}
	return per, all, nil
}
