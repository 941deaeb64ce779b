// Package jobgraph is the data model of an agent job: one agent session
// as a directed acyclic graph of model requests, each waiting for the
// requests it depends on (its predecessor turn, a tool's result, the join
// of several sub-agents) and then for a recorded gap (think time, tool
// latency) before it is sent. It loads the public agent trace formats
// (AgentX/Weka JSON, TraceLab round JSONL, OpenTelemetry GenAI spans) into
// that model, checks the graph, and computes what a graph implies without
// running it: a job's end-to-end time and critical path for given request
// durations, the prompt length each request carries under its context
// rule (fork, spawn, last), and the prefix-cache hit share a trace's
// KV block hash ids imply for an unbounded cache.
//
// Loaders report bad input as one line naming the file and line
// (a *setting.FileError). Nothing here runs a request or reads a clock.
//
// A Job is not safe for concurrent use while it is being checked; once
// Check has returned nil, reading it (and the computations) from several
// goroutines is safe.
package jobgraph

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/setting"
)

// Context is what a request's prompt carries from the requests before it.
type Context uint8

const (
	// Spawn starts a fresh context: the prompt holds only the request's
	// own new tokens (a sub-agent launched without its parent's history).
	// It is the zero value, the context of a job's first request.
	Spawn Context = iota
	// Fork carries the whole history of the request it comes from (its
	// prompt and its answer), plus the answers of the other requests it
	// waits for: the next turn of a conversation, a sub-agent forked with
	// its parent's context.
	Fork
	// Last carries only the answers of the requests it comes from and
	// waits for, not their prompts.
	Last
)

// String is the context's name as traces and docs spell it.
func (c Context) String() string {
	switch c {
	case Spawn:
		return "spawn"
	case Fork:
		return "fork"
	case Last:
		return "last"
	}
	return "context(" + strconv.Itoa(int(c)) + ")"
}

// Source is where a node or job was read: a file and a line from 1
// (0 when not known).
type Source struct {
	File string
	Line int
}

// String reads "FILE:LINE", or "FILE" when the line is not known.
func (s Source) String() string {
	if s.Line > 0 {
		return s.File + ":" + strconv.Itoa(s.Line)
	}
	return s.File
}

// Node is one model request of a job.
type Node struct {
	// ID names the node, unique within its job.
	ID string
	// After lists the IDs of the nodes this one waits for: it is sent Gap
	// after the last of them is done. Empty for a root, which is sent Gap
	// after the job starts.
	After []string
	// Gap is the wait after the dependencies are done (think time, tool
	// latency, a recorded idle gap), never negative.
	Gap time.Duration
	// Context is what the prompt carries from From and After.
	Context Context
	// From is the node whose history (Fork) or answer (Last) the prompt
	// carries: an ancestor, usually also in After. "" carries nothing from
	// a particular node (Spawn, or a job's first request).
	From string
	// In is the prompt length the trace recorded, in tokens; 0 when it
	// did not record one.
	In int
	// New is the tokens this request adds to the context it carries (the
	// user message, the tool result, the sub-agent's task), so that its
	// prompt is the carried context plus New; see Job.Prompts.
	New int
	// Out is the answer length the trace recorded, in tokens.
	Out int
	// Cached is the prompt tokens the trace reports as a reused prefix
	// (TraceLab's prefix_tokens); 0 when the trace does not say.
	Cached int
	// HashIDs are the prompt's KV block identities from its first block,
	// each standing for Job.BlockSize tokens, where the trace has them:
	// two prompts that share a leading run of ids share that prefix.
	HashIDs []int64
	// Depth is the sub-agent depth: 0 for the job's main agent, 1 for a
	// sub-agent it launched, 2 for one of those's sub-agents.
	Depth int
	// Agent names the (sub-)agent the request belongs to as the trace
	// does; "" for the main agent.
	Agent string
	// Model is the model the trace recorded for the request; "" if none.
	Model string
	// Source is where the request was read.
	Source Source
}

// Job is one agent session: a graph of requests.
type Job struct {
	// ID names the job as the trace does.
	ID string
	// Source is where the job was read (its first line).
	Source Source
	// BlockSize is the tokens each of a node's HashIDs stands for; 0 when
	// the job has no hash ids.
	BlockSize int
	// Nodes are the requests, in the order the trace lists them.
	Nodes []Node
	// Start is when the job began relative to the earliest job read from
	// the same file, where the trace says (OpenTelemetry's span times); 0
	// when it does not (a Weka file holds one job, TraceLab rounds carry
	// no times the loader reads). A replay starts the job at Start.
	Start time.Duration

	// began is the job's first request's wall time, where the trace has
	// one, from which the loader sets Start.
	began time.Time

	// Filled by Check: the index form of the graph.
	checked bool
	index   map[string]int32
	preds   [][]int32 // After as indices
	from    []int32   // From as an index; -1 for none
	order   []int32   // a topological order, the Nodes order where it can be
}

// ErrCycle is wrapped by Check's error when the dependencies form a cycle.
var ErrCycle = errors.New("dependency cycle")

// nodeError is the one-line error for node i: its file:line, the job and
// the node, then what is wrong.
func (j *Job) nodeError(i int, err error) error {
	n := &j.Nodes[i]
	return &setting.FileError{File: n.Source.File, Line: n.Source.Line,
		Part: "job " + strconv.Quote(j.ID), Key: "request " + strconv.Quote(n.ID), Err: err}
}

// Check validates the graph and builds its index form, which the
// computations need: every ID unique and not empty, every After and From
// a known node, From an ancestor, no node waiting on itself or in a
// cycle, no negative gap or token count, a known Context. The error names
// the offending node's file:line as a *setting.FileError. Checking a
// checked job again does nothing; changing Nodes after Check is not
// supported.
func (j *Job) Check() error {
	if j.checked {
		return nil
	}
	n := len(j.Nodes)
	j.index = make(map[string]int32, n)
	for i := range j.Nodes {
		nd := &j.Nodes[i]
		if nd.ID == "" {
			return j.nodeError(i, errors.New("empty id"))
		}
		if k, dup := j.index[nd.ID]; dup {
			return j.nodeError(i, fmt.Errorf("duplicate id, first at %s", j.Nodes[k].Source))
		}
		j.index[nd.ID] = int32(i)
		switch {
		case nd.Gap < 0:
			return j.nodeError(i, fmt.Errorf("negative gap %v", nd.Gap))
		case nd.In < 0 || nd.New < 0 || nd.Out < 0 || nd.Cached < 0:
			return j.nodeError(i, fmt.Errorf("negative token count (in %d, new %d, out %d, cached %d)", nd.In, nd.New, nd.Out, nd.Cached))
		case nd.Context > Last:
			return j.nodeError(i, fmt.Errorf("unknown context %d", nd.Context))
		case nd.Depth < 0:
			return j.nodeError(i, fmt.Errorf("negative sub-agent depth %d", nd.Depth))
		}
	}
	preds := make([][]int32, n)
	flat := make([]int32, 0, n) // one backing array for all preds
	from := make([]int32, n)
	for i := range j.Nodes {
		nd := &j.Nodes[i]
		start := len(flat)
		for _, a := range nd.After {
			k, ok := j.index[a]
			if !ok {
				return j.nodeError(i, fmt.Errorf("waits for unknown request %q", a))
			}
			if int(k) == i {
				return j.nodeError(i, fmt.Errorf("%w: waits for itself", ErrCycle))
			}
			flat = append(flat, k)
		}
		preds[i] = flat[start:len(flat):len(flat)]
		from[i] = -1
		if nd.From != "" {
			k, ok := j.index[nd.From]
			if !ok {
				return j.nodeError(i, fmt.Errorf("context from unknown request %q", nd.From))
			}
			if int(k) == i {
				return j.nodeError(i, errors.New("context from itself"))
			}
			from[i] = k
		}
	}
	order, err := topoOrder(preds)
	if err != nil {
		var c *cycleAt
		errors.As(err, &c)
		ids, at := j.cycleIDs(preds, c.node)
		return j.nodeError(at, fmt.Errorf("%w: %s", ErrCycle, ids))
	}
	j.preds, j.from, j.order = preds, from, order
	// From must be an ancestor, so that its prompt is known before this
	// node's: check the cheap case (From in After) first.
	for i, f := range from {
		if f < 0 || contains(preds[i], f) {
			continue
		}
		if !j.isAncestor(f, int32(i)) {
			return j.nodeError(i, fmt.Errorf("context from %q, which it does not wait for, directly or not", j.Nodes[f].ID))
		}
	}
	j.checked = true
	return nil
}

func contains(s []int32, v int32) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// isAncestor reports whether a is reachable backwards from b.
func (j *Job) isAncestor(a, b int32) bool {
	seen := make(map[int32]bool)
	stack := []int32{b}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range j.preds[x] {
			if p == a {
				return true
			}
			if !seen[p] {
				seen[p] = true
				stack = append(stack, p)
			}
		}
	}
	return false
}

// cycleAt is topoOrder's error: node is on or behind a cycle.
type cycleAt struct{ node int }

func (c *cycleAt) Error() string { return "cycle at node " + strconv.Itoa(c.node) }

// topoOrder is a topological order of the nodes given their predecessors:
// Kahn's algorithm taking the lowest index ready, so a graph whose
// dependencies all point backwards keeps its listed order.
func topoOrder(preds [][]int32) ([]int32, error) {
	n := len(preds)
	indeg := make([]int32, n)
	succN := make([]int32, n+1)
	for i, ps := range preds {
		indeg[i] = int32(len(ps))
		for _, p := range ps {
			succN[p+1]++
		}
	}
	for i := 1; i <= n; i++ {
		succN[i] += succN[i-1]
	}
	succ := make([]int32, succN[n])
	fill := append([]int32(nil), succN[:n]...)
	for i, ps := range preds {
		for _, p := range ps {
			succ[fill[p]] = int32(i)
			fill[p]++
		}
	}
	// A min-heap of ready nodes keeps the order deterministic and close
	// to the listed one; when every edge points backwards the heap never
	// holds more than a few nodes.
	h := make(minHeap, 0, 16)
	for i := range n {
		if indeg[i] == 0 {
			h.push(int32(i))
		}
	}
	order := make([]int32, 0, n)
	for len(h) > 0 {
		x := h.pop()
		order = append(order, x)
		for _, s := range succ[succN[x]:succN[x+1]] {
			if indeg[s]--; indeg[s] == 0 {
				h.push(s)
			}
		}
	}
	if len(order) < n {
		for i := range n {
			if indeg[i] > 0 {
				return nil, &cycleAt{node: i}
			}
		}
	}
	return order, nil
}

// cycleIDs names a cycle reachable backwards from node start, as
// "a -> b -> a" in dependency order, for the error message, and the node
// of the cycle listed first, which the message is about.
func (j *Job) cycleIDs(preds [][]int32, start int) (string, int) {
	// Walk predecessors that are still on a cycle or behind one until a
	// node repeats; the repeat closes a cycle.
	pos := map[int32]int{}
	var path []int32
	x := int32(start)
	for {
		if k, ok := pos[x]; ok {
			path = path[k:]
			break
		}
		pos[x] = len(path)
		path = append(path, x)
		next := int32(-1)
		for _, p := range preds[x] {
			if j.onCycle(preds, p) {
				next = p
				break
			}
		}
		if next < 0 {
			return strconv.Quote(j.Nodes[start].ID), start
		}
		x = next
	}
	// Start the cycle at its node listed first.
	first := 0
	for k, x := range path {
		if x < path[first] {
			first = k
		}
	}
	s := ""
	for k := range len(path) {
		// Dependency order is the reverse of the walk.
		s += strconv.Quote(j.Nodes[path[(first-k+len(path))%len(path)]].ID) + " -> "
	}
	return s + strconv.Quote(j.Nodes[path[first]].ID), int(path[first])
}

// onCycle reports whether x can reach itself backwards.
func (j *Job) onCycle(preds [][]int32, x int32) bool {
	seen := map[int32]bool{}
	stack := append([]int32(nil), preds[x]...)
	for len(stack) > 0 {
		y := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if y == x {
			return true
		}
		if !seen[y] {
			seen[y] = true
			stack = append(stack, preds[y]...)
		}
	}
	return false
}

// minHeap is a binary min-heap of node indices.
type minHeap []int32

func (h *minHeap) push(v int32) {
	*h = append(*h, v)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() int32 {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < len(s) && s[l] < s[m] {
			m = l
		}
		if r < len(s) && s[r] < s[m] {
			m = r
		}
		if m == i {
			break
		}
		s[m], s[i] = s[i], s[m]
		i = m
	}
	*h = s
	return top
}

// Index is the position in Nodes of the node with the given ID, or -1.
// It needs a checked job.
func (j *Job) Index(id string) int {
	if k, ok := j.index[id]; ok {
		return int(k)
	}
	return -1
}

// Order is a topological order of the node indices: every node after
// all it waits for, the listed order where the dependencies allow. It
// needs a checked job; the slice is the job's own, not to be changed.
func (j *Job) Order() []int32 { return j.order }

// Edges is the number of dependency edges (the sum of len(After)).
func (j *Job) Edges() int {
	e := 0
	for i := range j.Nodes {
		e += len(j.Nodes[i].After)
	}
	return e
}
