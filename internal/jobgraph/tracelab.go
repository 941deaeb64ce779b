package jobgraph

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"

	"github.com/goodput/goodput/internal/setting"
)

// TraceLabBlockSize is the tokens per synthesized hash id of a TraceLab
// job: the corpus has no block ids, so LoadTraceLab mints them from each
// round's prefix/new split at this size (AIPerf's default, 64).
const TraceLabBlockSize = 64

// maxPromptTokens bounds a TraceLab round's prompt, far beyond any
// model's context, so that minting its hash ids cannot exhaust memory.
const maxPromptTokens = 1 << 24

// traceLabRound is one line of a TraceLab trace.
type traceLabRound struct {
	line                  int
	session, model        string
	round                 int
	hasRound              bool
	total, prefix, newTok int
	hasTotal, hasPrefix   bool
	hasNew                bool
	out                   int
	toolMs                float64 // the sum of the round's tool wall latencies
}

// LoadTraceLab reads a TraceLab round trace (JSONL, one LLM round a line:
// session_id, round_index, input_tokens_total = prefix_tokens +
// newly_append_tokens, output_tokens, tools[].tool_wall_latency_ms) into
// one job per session, in order of first appearance: each round waits for
// the round before it (Fork) and then for the previous round's tool
// latencies summed. Hash ids are synthesized: a round keeps the leading
// whole blocks of its prefix from the previous round's ids and mints new
// ones for the rest, so the implied cache hits follow the recorded
// prefix_tokens to block granularity.
func LoadTraceLab(file string, r io.Reader) ([]Job, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	d := &jsonDoc{file: file}
	var sessions []string
	bySession := map[string][]traceLabRound{}
	var read int64
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadBytes('\n')
		read += int64(len(line))
		if read > maxTraceBytes {
			return nil, &setting.FileError{File: file, Line: lineNo, Err: fmt.Errorf("larger than %d bytes", maxTraceBytes)}
		}
		if len(bytes.TrimSpace(line)) > 0 {
			rd, perr := d.traceLabRound(line, lineNo)
			if perr != nil {
				return nil, perr
			}
			if _, ok := bySession[rd.session]; !ok {
				sessions = append(sessions, rd.session)
			}
			bySession[rd.session] = append(bySession[rd.session], rd)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, &setting.FileError{File: file, Line: lineNo, Err: err}
		}
	}
	jobs := make([]Job, 0, len(sessions))
	for _, s := range sessions {
		j, err := traceLabJob(file, s, bySession[s])
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// traceLabRound reads one line.
func (d *jsonDoc) traceLabRound(line []byte, lineNo int) (traceLabRound, error) {
	rd := traceLabRound{line: lineNo}
	d.reset(line, lineNo)
	err := d.sc.Document(line, func(k []byte) (err error) {
		key := string(k)
		switch key {
		case "session_id":
			rd.session, err = d.str(key)
		case "round_index":
			rd.round, rd.hasRound, err = d.integer(key)
		case "input_tokens_total":
			rd.total, rd.hasTotal, err = d.integer(key)
		case "prefix_tokens":
			rd.prefix, rd.hasPrefix, err = d.integer(key)
		case "newly_append_tokens":
			rd.newTok, rd.hasNew, err = d.integer(key)
		case "output_tokens":
			rd.out, _, err = d.integer(key)
		case "model":
			rd.model, err = d.str(key)
		case "tools":
			rd.toolMs, err = d.toolLatency(key)
		default:
			err = d.syntaxOrNil(d.sc.Skip())
		}
		return err
	})
	if err != nil {
		return rd, d.syntax(err)
	}
	switch {
	case rd.session == "":
		return rd, d.errAt(lineNo, "session_id", errors.New("missing"))
	case !rd.hasRound:
		return rd, d.errAt(lineNo, "round_index", errors.New("missing"))
	case rd.round < 0:
		return rd, d.errAt(lineNo, "round_index", fmt.Errorf("%d is negative", rd.round))
	case !rd.hasTotal && !(rd.hasPrefix && rd.hasNew):
		return rd, d.errAt(lineNo, "input_tokens_total", errors.New("missing, and no prefix_tokens and newly_append_tokens to sum"))
	case rd.prefix < 0 || rd.newTok < 0 || rd.total < 0 || rd.out < 0:
		return rd, d.errAt(lineNo, "", errors.New("negative token count"))
	case rd.total > maxPromptTokens || rd.prefix > maxPromptTokens || rd.newTok > maxPromptTokens:
		return rd, d.errAt(lineNo, "input_tokens_total", fmt.Errorf("more than %d tokens", maxPromptTokens))
	}
	if !rd.hasTotal {
		rd.total = rd.prefix + rd.newTok
	}
	if rd.hasPrefix && rd.hasNew && rd.prefix+rd.newTok != rd.total {
		return rd, d.errAt(lineNo, "input_tokens_total", fmt.Errorf("%d is not prefix_tokens %d + newly_append_tokens %d", rd.total, rd.prefix, rd.newTok))
	}
	if !rd.hasNew {
		rd.newTok = rd.total - rd.prefix
	}
	if !rd.hasPrefix {
		rd.prefix = rd.total - rd.newTok
	}
	if rd.prefix < 0 || rd.newTok < 0 {
		return rd, d.errAt(lineNo, "input_tokens_total", fmt.Errorf("%d is less than prefix_tokens %d or newly_append_tokens %d", rd.total, rd.prefix, rd.newTok))
	}
	return rd, nil
}

// toolLatency reads a tools array and sums its tool_wall_latency_ms.
func (d *jsonDoc) toolLatency(key string) (float64, error) {
	line := d.here()
	if d.sc.Peek() == 'n' {
		return 0, d.syntaxOrNil(d.sc.Skip())
	}
	if d.sc.Peek() != '[' {
		if err := d.sc.Skip(); err != nil {
			return 0, d.syntax(err)
		}
		return 0, d.errAt(line, key, errors.New("not an array"))
	}
	sum := 0.0
	more, err := d.sc.OpenArray()
	for i := 0; more && err == nil; more, err = d.sc.NextElement() {
		k := key + "[" + strconv.Itoa(i) + "].tool_wall_latency_ms"
		if _, err = d.sc.Members(func(m []byte) error {
			if string(m) != "tool_wall_latency_ms" {
				return d.syntaxOrNil(d.sc.Skip())
			}
			v, _, err := d.float(k)
			if err == nil && v < 0 {
				err = d.errAt(line, k, fmt.Errorf("negative latency %v", v))
			}
			sum += v
			return err
		}); err != nil {
			return 0, err
		}
		i++
	}
	if err != nil {
		return 0, d.syntax(err)
	}
	if math.IsInf(sum, 0) {
		return 0, d.errAt(line, key, errors.New("latency out of range"))
	}
	return sum, nil
}

// traceLabJob builds one session's job from its rounds.
func traceLabJob(file, session string, rounds []traceLabRound) (Job, error) {
	slices.SortStableFunc(rounds, func(a, b traceLabRound) int { return a.round - b.round })
	j := Job{ID: session, Source: Source{File: file, Line: rounds[0].line}, BlockSize: TraceLabBlockSize,
		Nodes: make([]Node, 0, len(rounds))}
	for i := 1; i < len(rounds); i++ {
		if rounds[i].round == rounds[i-1].round {
			a, b := rounds[i-1], rounds[i]
			if b.line < a.line {
				a, b = b, a
			}
			return Job{}, &setting.FileError{File: file, Line: b.line, Part: "session " + strconv.Quote(session),
				Key: "round_index", Err: fmt.Errorf("round %d again, first at line %d", b.round, a.line)}
		}
	}
	var prev []int64
	next := int64(0) // the next fresh hash id; ids are scoped to the job
	for i, rd := range rounds {
		nd := Node{ID: strconv.Itoa(rd.round), In: rd.total, New: rd.newTok, Out: rd.out, Cached: rd.prefix,
			Model: rd.model, Source: Source{File: file, Line: rd.line}}
		if i > 0 {
			p := &j.Nodes[i-1]
			nd.After, nd.From, nd.Context = []string{p.ID}, p.ID, Fork
			nd.Gap = max(seconds(rounds[i-1].toolMs/1000), 0)
		}
		blocks := (rd.total + TraceLabBlockSize - 1) / TraceLabBlockSize
		keep := min(rd.prefix/TraceLabBlockSize, len(prev), blocks)
		ids := make([]int64, 0, blocks)
		ids = append(ids, prev[:keep]...)
		for len(ids) < blocks {
			ids = append(ids, next)
			next++
		}
		nd.HashIDs, prev = ids, ids
		j.Nodes = append(j.Nodes, nd)
	}
	if err := j.Check(); err != nil {
		return Job{}, err
	}
	return j, nil
}
