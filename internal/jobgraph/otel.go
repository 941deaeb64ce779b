package jobgraph

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// otelSpan is one span of an OpenTelemetry trace file, as far as the
// graph needs it.
type otelSpan struct {
	line                int
	id, trace, parent   string
	name, op, model     string
	agentName           string
	start, end          time.Time
	hasStart, hasEnd    bool
	input               []otelMessage
	hasInput            bool
	output              string
	inTokens, outTokens int
	hasInTok, hasOutTok bool
}

// otelMessage is one chat message of gen_ai.input.messages: its role and
// its content as text (a content that is not a string is kept as its
// JSON text, which still compares equal between spans).
type otelMessage struct {
	Role    string
	Content string
}

// LoadOTel reads an OpenTelemetry trace file (a JSON object with a spans
// array; each span's span_id, trace_id, parent_span_id, name, start_time,
// end_time and GenAI attributes) into one job per trace_id, in order of
// first appearance. The model calls are the spans with
// gen_ai.input.messages or a name starting "chat"; the others (agents,
// tools) only give the sub-agent depth. docs/agent-traces.md gives how
// dependencies are inferred: a call waits for every earlier call whose
// answer its input repeats (fan-in), or else for the closest earlier call
// that ended before it started; edges implied by others are dropped.
func LoadOTel(file string, r io.Reader) ([]Job, error) {
	data, err := readAll(file, r)
	if err != nil {
		return nil, err
	}
	d := &jsonDoc{file: file}
	d.reset(data, 0)
	if d.sc.Peek() != '{' {
		return nil, d.errAt(d.here(), "", errors.New("not an OpenTelemetry trace file: want a JSON object with spans or resourceSpans"))
	}
	var spans []otelSpan
	hasSpans := false
	_, err = d.sc.Members(func(k []byte) error {
		if string(k) == "resourceSpans" {
			hasSpans = true
			var err error
			spans, err = d.otlpResourceSpans(spans)
			return err
		}
		if string(k) != "spans" {
			return d.syntaxOrNil(d.sc.Skip())
		}
		hasSpans = true
		return d.arrayOf("spans", func() error {
			sp, err := d.otelSpan()
			spans = append(spans, sp)
			return err
		})
	})
	if err != nil {
		return nil, d.syntax(err)
	}
	if err := d.sc.End(); err != nil {
		return nil, d.syntax(err)
	}
	if !hasSpans {
		return nil, d.errAt(1, "spans", errors.New("missing (nor resourceSpans): not an OpenTelemetry trace file"))
	}
	var traces []string
	byTrace := map[string][]int{}
	for i := range spans {
		t := spans[i].trace
		if _, ok := byTrace[t]; !ok {
			traces = append(traces, t)
		}
		byTrace[t] = append(byTrace[t], i)
	}
	jobs := make([]Job, 0, len(traces))
	for _, t := range traces {
		j, err := otelJob(file, t, spans, byTrace[t])
		if err != nil {
			return nil, err
		}
		if len(j.Nodes) > 0 {
			jobs = append(jobs, j)
		}
	}
	// Jobs keep their places in time relative to the first one, so a
	// replay starts them as the traces did.
	var first time.Time
	for i := range jobs {
		if i == 0 || jobs[i].began.Before(first) {
			first = jobs[i].began
		}
	}
	for i := range jobs {
		jobs[i].Start = jobs[i].began.Sub(first)
	}
	return jobs, nil
}

// otelSpan reads one span.
func (d *jsonDoc) otelSpan() (otelSpan, error) {
	s := otelSpan{line: d.here()}
	if d.sc.Peek() != '{' {
		if err := d.sc.Skip(); err != nil {
			return s, d.syntax(err)
		}
		return s, d.errAt(s.line, "", errors.New("span is not a JSON object"))
	}
	_, err := d.sc.Members(func(k []byte) (err error) {
		key := string(k)
		switch key {
		case "span_id":
			s.id, err = d.str(key)
		case "trace_id":
			s.trace, err = d.str(key)
		case "parent_span_id":
			s.parent, err = d.str(key)
		case "name":
			s.name, err = d.str(key)
		case "start_time":
			s.start, s.hasStart, err = d.timestamp(key)
		case "end_time":
			s.end, s.hasEnd, err = d.timestamp(key)
		case "attributes":
			err = d.otelAttributes(&s)
		default:
			err = d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
	if err != nil {
		return s, d.syntax(err)
	}
	return s, nil
}

// timestamp reads an ISO-8601 time (a zone optional, UTC when absent) or
// a number of nanoseconds since the Unix epoch.
func (d *jsonDoc) timestamp(key string) (time.Time, bool, error) {
	line := d.here()
	switch c := d.sc.Peek(); {
	case c == 'n':
		return time.Time{}, false, d.syntaxOrNil(d.sc.Skip())
	case c == '"':
		s, err := d.str(key)
		if err != nil {
			return time.Time{}, false, err
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t, true, nil
			}
		}
		return time.Time{}, false, d.errAt(line, key, fmt.Errorf("%q is not an ISO-8601 time", s))
	}
	// Nanoseconds since 1970 are about 1.8e18, past a float64's integers:
	// read the number's own digits.
	start := d.sc.Pos()
	if err := d.sc.Skip(); err != nil {
		return time.Time{}, false, d.syntax(err)
	}
	text := string(d.sc.Data()[start:d.sc.Pos()])
	n, err := strconv.ParseInt(text, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, false, d.errAt(line, key, fmt.Errorf("%s is not an ISO-8601 time or a count of nanoseconds since 1970", text))
	}
	return time.Unix(0, n).UTC(), true, nil
}

// otelAttributes reads a span's attributes object into s.
func (d *jsonDoc) otelAttributes(s *otelSpan) error {
	line := d.here()
	return d.objectOf("attributes", func(key string) error {
		known, err := s.genAI(key, line, attrReader{
			text:  func() (string, error) { return d.str(key) },
			raw:   d.rawOrString,
			count: func() (int, bool, error) { return d.integer(key) },
		}, d)
		if !known {
			return d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
}

// attrReader reads one attribute's value as the key needs it: text, JSON
// text (a string holding JSON, or inline JSON), or a count.
type attrReader struct {
	text  func() (string, error)
	raw   func() ([]byte, error)
	count func() (int, bool, error)
}

// genAI sets the GenAI attribute key of s from v, the flat form's and
// OTLP's alike; known is false for a key the graph does not need (its
// value left unread).
func (s *otelSpan) genAI(key string, line int, v attrReader, d *jsonDoc) (known bool, err error) {
	messages := func() ([]otelMessage, error) {
		raw, err := v.raw()
		if err != nil {
			return nil, err
		}
		msgs, err := parseMessages(raw)
		if err != nil {
			return nil, d.errAt(line, key, err)
		}
		return msgs, nil
	}
	switch key {
	case "gen_ai.operation.name":
		s.op, err = v.text()
	case "gen_ai.request.model":
		s.model, err = v.text()
	case "gen_ai.agent.name":
		s.agentName, err = v.text()
	case "gen_ai.input.messages":
		s.hasInput = true
		s.input, err = messages()
	case "gen_ai.output.messages":
		var msgs []otelMessage
		if msgs, err = messages(); err == nil {
			var b strings.Builder
			for _, m := range msgs {
				b.WriteString(m.Content)
			}
			s.output = b.String()
		}
	case "gen_ai.output.text":
		s.output, err = v.text()
	case "gen_ai.usage.prompt_tokens", "gen_ai.usage.input_tokens":
		s.inTokens, s.hasInTok, err = v.count()
	case "gen_ai.usage.completion_tokens", "gen_ai.usage.output_tokens":
		s.outTokens, s.hasOutTok, err = v.count()
	default:
		return false, nil
	}
	return true, err
}

// rawOrString reads a value that is JSON text either encoded in a string
// (as OTel attributes carry structured values) or inline.
func (d *jsonDoc) rawOrString() ([]byte, error) {
	if d.sc.Peek() == '"' {
		s, err := d.str("")
		return []byte(s), err
	}
	start := d.sc.Pos()
	if err := d.sc.Skip(); err != nil {
		return nil, d.syntax(err)
	}
	return d.sc.Data()[start:d.sc.Pos()], nil
}

// parseMessages reads a list of chat messages.
func parseMessages(raw []byte) ([]otelMessage, error) {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &msgs); err != nil {
		return nil, fmt.Errorf("not a JSON list of messages: %w", err)
	}
	out := make([]otelMessage, len(msgs))
	for i, m := range msgs {
		out[i].Role = m.Role
		var s string
		if json.Unmarshal(m.Content, &s) == nil {
			out[i].Content = s
		} else {
			out[i].Content = string(m.Content)
		}
	}
	return out, nil
}

// estimateTokens is a token count for text when the span records none:
// four bytes a token, the usual rule of thumb for English text and code.
func estimateTokens(n int) int { return (n + 3) / 4 }

// otelJob builds the job of one trace from its spans (indices into all).
func otelJob(file, trace string, all []otelSpan, idx []int) (Job, error) {
	id := trace
	if id == "" {
		id = strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	}
	j := Job{ID: id, Source: Source{File: file, Line: all[idx[0]].line}}
	byID := map[string]int{}
	for _, i := range idx {
		if all[i].id != "" {
			byID[all[i].id] = i
		}
	}
	// The model calls, in order of start (the listed order on ties).
	var calls []int
	for _, i := range idx {
		s := &all[i]
		if !s.hasInput && !strings.HasPrefix(s.name, "chat") {
			continue
		}
		fe := func(key string, err error) error {
			return (&jsonDoc{file: file}).errAt(s.line, key, err)
		}
		switch {
		case s.id == "":
			return Job{}, fe("span_id", errors.New("missing"))
		case !s.hasStart:
			return Job{}, fe("start_time", errors.New("missing"))
		case !s.hasEnd:
			return Job{}, fe("end_time", errors.New("missing"))
		case s.end.Before(s.start):
			return Job{}, fe("end_time", fmt.Errorf("%v before start_time", s.start.Sub(s.end)))
		case s.inTokens < 0 || s.outTokens < 0:
			return Job{}, fe("", errors.New("negative token count"))
		}
		calls = append(calls, i)
	}
	if len(calls) == 0 {
		return j, nil
	}
	slices.SortStableFunc(calls, func(a, b int) int { return all[a].start.Compare(all[b].start) })
	t0 := all[calls[0]].start
	j.began = t0
	preds := make([][]int, len(calls)) // positions in calls
	from := make([]int, len(calls))
	ctx := make([]Context, len(calls))
	for b := range calls {
		sb := &all[calls[b]]
		from[b] = -1
		bestFork := -1
		for a := range b {
			sa := &all[calls[a]]
			if sa.end.After(sb.start) || sa.output == "" {
				continue
			}
			k := slices.IndexFunc(sb.input, func(m otelMessage) bool { return m.Role == "assistant" && m.Content == sa.output })
			if k < 0 {
				continue
			}
			preds[b] = append(preds[b], a)
			// A fork carries a's whole input then its answer, at the
			// start of b's input; the longest such history wins.
			if k == len(sa.input) && slices.Equal(sb.input[:k], sa.input) && (bestFork < 0 || k > len(all[calls[bestFork]].input)) {
				bestFork = a
			}
			if from[b] < 0 || !all[calls[from[b]]].end.After(sa.end) {
				from[b] = a
			}
		}
		switch {
		case bestFork >= 0:
			from[b], ctx[b] = bestFork, Fork
		case from[b] >= 0:
			ctx[b] = Last
		default:
			// No answer repeated: wait for the closest earlier call that
			// ended before this one started (a timing fallback), carrying
			// nothing from it.
			closest := -1
			for a := range b {
				sa := &all[calls[a]]
				if !sa.end.After(sb.start) && (closest < 0 || !sa.end.Before(all[calls[closest]].end)) {
					closest = a
				}
			}
			if closest >= 0 {
				preds[b] = []int{closest}
			}
		}
	}
	reduce(preds)
	for b, ci := range calls {
		s := &all[ci]
		nd := Node{ID: s.id, Context: ctx[b], Model: s.model, Source: Source{File: file, Line: s.line}}
		ready := t0
		for _, a := range preds[b] {
			nd.After = append(nd.After, all[calls[a]].id)
			if e := all[calls[a]].end; e.After(ready) {
				ready = e
			}
		}
		nd.Gap = s.start.Sub(ready)
		if from[b] >= 0 {
			nd.From = all[calls[from[b]]].id
		}
		nd.In, nd.Out = s.inTokens, s.outTokens
		if !s.hasInTok {
			n := 0
			for _, m := range s.input {
				n += len(m.Content)
			}
			nd.In = estimateTokens(n)
		}
		if !s.hasOutTok {
			nd.Out = estimateTokens(len(s.output))
		}
		nd.Depth, nd.Agent = otelDepth(all, byID, ci)
		j.Nodes = append(j.Nodes, nd)
	}
	if err := j.Check(); err != nil {
		return Job{}, err
	}
	fillNew(&j)
	return j, nil
}

// reduce drops from each preds[b] the predecessors that another of its
// predecessors already depends on, directly or not (a transitive
// reduction; preds point to smaller positions).
func reduce(preds [][]int) {
	for b, ps := range preds {
		if len(ps) < 2 {
			continue
		}
		// Everything reachable from b's predecessors, not counting the
		// predecessors themselves.
		behind := map[int]bool{}
		stack := []int{}
		for _, p := range ps {
			stack = append(stack, preds[p]...)
		}
		for len(stack) > 0 {
			x := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if !behind[x] {
				behind[x] = true
				stack = append(stack, preds[x]...)
			}
		}
		kept := ps[:0]
		for _, p := range ps {
			if !behind[p] {
				kept = append(kept, p)
			}
		}
		preds[b] = kept
	}
}

// otelDepth is a span's sub-agent depth (its invoke_agent ancestors
// less the outermost) and the name of its nearest agent.
func otelDepth(all []otelSpan, byID map[string]int, i int) (int, string) {
	agents, name := 0, ""
	seen := map[int]bool{i: true}
	for p, ok := byID[all[i].parent]; ok && !seen[p]; p, ok = byID[all[p].parent] {
		seen[p] = true
		if all[p].op == "invoke_agent" {
			if agents == 0 {
				name = all[p].agentName
				if name == "" {
					name = all[p].name
				}
			}
			agents++
		}
	}
	if agents <= 1 {
		// The outermost agent is the job's main agent.
		return 0, ""
	}
	return agents - 1, name
}
