package jobgraph

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// WekaBlockSize is the tokens per hash id when a Weka trace does not say
// (its block_size is absent): the corpora's published value.
const WekaBlockSize = 64

// wekaEntry is one element of a Weka requests list: a request ("n", "s")
// or a sub-agent ("subagent") with its own requests.
type wekaEntry struct {
	line              int
	typ               string
	t, api, think     float64
	hasT, hasAPI      bool
	hasThink          bool
	in, out           int
	hashIDs           []int64
	model, agentID    string
	durationMs        float64
	hasDur            bool
	requests          []wekaEntry
	hasIn, hasOut     bool
	hasHash, hasTypeK bool
}

// LoadWeka reads one AgentX/Weka trace (a JSON object: id, block_size,
// requests; each request's t, in, out, hash_ids, api_time, think_time;
// "subagent" entries with their own requests) into one job. docs/agent-
// traces.md gives the mapping: the main agent's requests form a chain
// (Fork), a sub-agent's first request waits for the parent request
// before it (Spawn), and the first later parent request sent after the
// sub-agent finished waits for it (the join).
func LoadWeka(file string, r io.Reader) ([]Job, error) {
	data, err := readAll(file, r)
	if err != nil {
		return nil, err
	}
	d := &jsonDoc{file: file}
	d.reset(data, 0)
	job := Job{Source: Source{File: file, Line: 1}, BlockSize: WekaBlockSize}
	var entries []wekaEntry
	var hasReqs bool
	if d.sc.Peek() != '{' {
		return nil, d.errAt(d.here(), "", errors.New("not a Weka trace: want a JSON object"))
	}
	_, err = d.sc.Members(func(k []byte) error {
		switch string(k) {
		case "id":
			s, err := d.str("id")
			job.ID = s
			return err
		case "block_size":
			line := d.here()
			n, ok, err := d.integer("block_size")
			if err == nil && ok && n <= 0 {
				err = d.errAt(line, "block_size", fmt.Errorf("%d is not positive", n))
			}
			if ok {
				job.BlockSize = n
			}
			return err
		case "requests":
			hasReqs = true
			var err error
			entries, err = d.wekaEntries("requests", 0)
			return err
		}
		return d.syntaxOrNil(d.sc.Skip())
	})
	if err != nil {
		return nil, d.syntax(err)
	}
	if err := d.sc.End(); err != nil {
		return nil, d.syntax(err)
	}
	if !hasReqs {
		return nil, d.errAt(1, "requests", errors.New("missing: not a Weka trace"))
	}
	if job.ID == "" {
		job.ID = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	b := wekaBuilder{job: &job}
	if _, err := b.agent(entries, "", 0, "", -1); err != nil {
		return nil, err
	}
	if err := job.Check(); err != nil {
		return nil, err
	}
	fillNew(&job)
	return []Job{job}, nil
}

// maxWekaDepth bounds sub-agent nesting, far beyond any real trace, so a
// hostile file cannot recurse without end.
const maxWekaDepth = 64

// wekaEntries reads a requests array.
func (d *jsonDoc) wekaEntries(key string, depth int) ([]wekaEntry, error) {
	line := d.here()
	if d.sc.Peek() != '[' {
		if err := d.sc.Skip(); err != nil {
			return nil, d.syntax(err)
		}
		return nil, d.errAt(line, key, errors.New("not an array"))
	}
	if depth > maxWekaDepth {
		return nil, d.errAt(line, key, fmt.Errorf("sub-agents nested deeper than %d", maxWekaDepth))
	}
	var out []wekaEntry
	more, err := d.sc.OpenArray()
	for ; more && err == nil; more, err = d.sc.NextElement() {
		var e wekaEntry
		if e, err = d.wekaEntry(depth); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	if err != nil {
		return nil, d.syntax(err)
	}
	return out, nil
}

// wekaEntry reads one element of a requests array.
func (d *jsonDoc) wekaEntry(depth int) (wekaEntry, error) {
	e := wekaEntry{line: d.here()}
	if d.sc.Peek() != '{' {
		if err := d.sc.Skip(); err != nil {
			return e, d.syntax(err)
		}
		return e, d.errAt(e.line, "", errors.New("request is not a JSON object"))
	}
	_, err := d.sc.Members(func(k []byte) (err error) {
		key := string(k)
		switch key {
		case "type":
			e.typ, err = d.str(key)
			e.hasTypeK = true
		case "t":
			e.t, e.hasT, err = d.float(key)
		case "api_time":
			e.api, e.hasAPI, err = d.float(key)
		case "think_time":
			e.think, e.hasThink, err = d.float(key)
		case "duration_ms":
			e.durationMs, e.hasDur, err = d.float(key)
		case "in":
			e.in, e.hasIn, err = d.integer(key)
		case "out":
			e.out, e.hasOut, err = d.integer(key)
		case "model":
			e.model, err = d.str(key)
		case "agent_id":
			e.agentID, err = d.str(key)
		case "hash_ids":
			e.hashIDs, err = d.hashIDs(key)
			e.hasHash = true
		case "requests":
			e.requests, err = d.wekaEntries(key, depth+1)
		default:
			err = d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
	if err != nil {
		return e, d.syntax(err)
	}
	switch e.typ {
	case "n", "s":
		if !e.hasIn || !e.hasOut {
			return e, d.errAt(e.line, "", errors.New(`request without "in" and "out" token counts`))
		}
	case "subagent":
	case "":
		return e, d.errAt(e.line, "type", errors.New(`missing: want "n", "s" or "subagent"`))
	default:
		return e, d.errAt(e.line, "type", fmt.Errorf(`unknown type %q: want "n", "s" or "subagent"`, e.typ))
	}
	return e, nil
}

// hashIDs reads an array of integer block ids.
func (d *jsonDoc) hashIDs(key string) ([]int64, error) {
	line := d.here()
	if d.sc.Peek() != '[' {
		if err := d.sc.Skip(); err != nil {
			return nil, d.syntax(err)
		}
		return nil, d.errAt(line, key, errors.New("not an array"))
	}
	// Read into the reused scratch, then copy at the exact size: long
	// prompts have thousands of ids, and growing each slice by appending
	// would allocate about twice what it keeps.
	ids := d.scratch[:0]
	more, err := d.sc.OpenArray()
	for ; more && err == nil; more, err = d.sc.NextElement() {
		l := d.here()
		n, ok, e := d.sc.Int()
		if e != nil {
			return nil, d.syntax(e)
		}
		if !ok {
			return nil, d.errAt(l, key, errors.New("a hash id that is not an integer"))
		}
		ids = append(ids, n)
	}
	if err != nil {
		return nil, d.syntax(err)
	}
	d.scratch = ids
	return slices.Clone(ids), nil
}

// wekaBuilder turns the entries into the job's nodes.
type wekaBuilder struct {
	job *Job
	// start and end are each node's recorded send and done times,
	// seconds since the trace's start, for gaps the trace did not record.
	start, end []float64
	ids        map[string]int
}

// pendingAgent is a sub-agent not yet joined: its last request and when
// it finished.
type pendingAgent struct {
	last int
	end  float64
}

// joinSlack is how much later than the next parent request a sub-agent
// may be recorded to finish and still count as joined by it: the
// recorded times come from different clocks (the sub-agent's requests,
// the parent's), so exact order within a millisecond means nothing.
const joinSlack = 0.001

// agent adds the nodes of one agent's entries, its first request waiting
// for node parent (-1: none), and returns its last node (-1 if it has no
// request).
func (b *wekaBuilder) agent(entries []wekaEntry, prefix string, depth int, agent string, parent int) (int, error) {
	prev := -1
	var pending []pendingAgent
	for i := range entries {
		e := &entries[i]
		id := prefix + strconv.Itoa(i)
		if e.typ == "subagent" {
			from := prev
			if from < 0 {
				from = parent
			}
			last, err := b.agent(e.requests, id+"/", depth+1, e.agentID, from)
			if err != nil {
				return -1, err
			}
			if last < 0 {
				continue
			}
			end := b.end[last]
			if e.hasT && e.hasDur && !b.hasRecordedEnd(last) {
				end = e.t + e.durationMs/1000
			}
			pending = append(pending, pendingAgent{last: last, end: end})
			continue
		}
		nd := Node{ID: id, Depth: depth, Agent: agent, In: e.in, Out: e.out,
			HashIDs: e.hashIDs, Model: e.model, Source: Source{File: b.job.Source.File, Line: e.line}}
		switch {
		case prev >= 0:
			nd.After, nd.From, nd.Context = []string{b.job.Nodes[prev].ID}, b.job.Nodes[prev].ID, Fork
		case parent >= 0:
			nd.After, nd.Context = []string{b.job.Nodes[parent].ID}, Spawn
		}
		joined := false
		if e.hasT {
			kept := pending[:0]
			for _, p := range pending {
				if p.end <= e.t+joinSlack {
					nd.After = append(nd.After, b.job.Nodes[p.last].ID)
					joined = true
				} else {
					kept = append(kept, p)
				}
			}
			pending = kept
		}
		ready := 0.0
		for _, a := range nd.After {
			ready = max(ready, b.end[b.ids[a]])
		}
		switch {
		case e.hasThink && !joined:
			nd.Gap = seconds(e.think)
		case e.hasT:
			nd.Gap = max(seconds(e.t-ready), 0)
		}
		t := ready + nd.Gap.Seconds()
		if e.hasT {
			t = e.t
		}
		end := t
		if e.hasAPI {
			end += max(e.api, 0)
		}
		b.add(nd, t, end)
		prev = len(b.job.Nodes) - 1
	}
	return prev, nil
}

// hasRecordedEnd reports whether node i's end came from a recorded
// api_time (so it beats a sub-agent's duration_ms).
func (b *wekaBuilder) hasRecordedEnd(i int) bool { return b.end[i] > b.start[i] }

func (b *wekaBuilder) add(nd Node, start, end float64) {
	if b.ids == nil {
		b.ids = map[string]int{}
	}
	b.ids[nd.ID] = len(b.job.Nodes)
	b.job.Nodes = append(b.job.Nodes, nd)
	b.start = append(b.start, start)
	b.end = append(b.end, end)
}
