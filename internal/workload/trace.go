package workload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/tokenize"
)

// TraceOptions configures trace replay.
type TraceOptions struct {
	// Speedup compresses time: arrivals come Speedup times faster than in
	// the trace (2 = twice as fast). 0 means 1.
	Speedup float64
	// WindowStart and WindowEnd select a slice of the trace, as offsets of
	// trace time from its first arrival, before the speed-up; the slice's
	// arrivals are shifted so that WindowStart is the run's start.
	// A zero WindowEnd means to the end.
	WindowStart, WindowEnd time.Duration
	// MaxRequests caps the number of requests taken from the window; 0
	// means all.
	MaxRequests int
	// Seed makes the synthesized text reproducible.
	Seed int64
	// Synth writes the prompts; nil means tokenize.Approx.
	Synth *tokenize.Synthesizer
}

// MooncakeBlockTokens is the number of prompt tokens per Mooncake hash_id.
const MooncakeBlockTokens = 512

// traceRow is one parsed trace request.
type traceRow struct {
	line    int
	t       float64 // seconds, trace clock
	in, out int
	hashes  []uint64
}

// LoadTrace reads a trace with arrival times. The format is recognised from
// the content:
//
//   - CSV with TIMESTAMP,ContextTokens,GeneratedTokens (the Azure LLM
//     inference traces; timestamps as "2006-01-02 15:04:05.9999999" or
//     seconds);
//   - JSON Lines with "timestamp" in milliseconds and input_length,
//     output_length and optional hash_ids of 512-token blocks (Mooncake);
//   - JSON Lines with "timestamp" in milliseconds and "queries" of
//     {prompt_length, response_length} (vLLM's timed trace; every query is
//     one request at that time);
//   - JSON Lines with "arrival_time" in seconds and input_toks, output_toks
//     (LLMServingSim's requests.jsonl of a real vLLM run).
//
// Timestamps must not decrease. Errors name the file and line.
func LoadTrace(path string, o TraceOptions) (Dataset, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadTrace(f, path, o)
}

// ReadTrace is LoadTrace over a reader; file names it in errors.
func ReadTrace(r io.Reader, file string, o TraceOptions) (Dataset, error) {
	if !(o.Speedup >= 0) || math.IsInf(o.Speedup, 1) {
		return nil, fmt.Errorf("trace speed-up %g: want a positive number", o.Speedup)
	}
	if o.Speedup == 0 {
		o.Speedup = 1
	}
	if o.WindowStart < 0 || o.WindowEnd < 0 || (o.WindowEnd > 0 && o.WindowEnd <= o.WindowStart) {
		return nil, fmt.Errorf("trace window %v:%v: want 0 <= START < END", o.WindowStart, o.WindowEnd)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	trimmed := bytes.TrimLeft(bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")), " \t\r\n")
	var rs []traceRow
	if len(trimmed) > 0 && trimmed[0] == '{' {
		rs, err = readTraceJSONL(data, file)
	} else {
		rs, err = readTraceCSV(data, file)
	}
	if err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return nil, fmt.Errorf("%s: no requests in trace", file)
	}
	for k := 1; k < len(rs); k++ {
		if rs[k].t < rs[k-1].t {
			return nil, fmt.Errorf("%s:%d: timestamp goes back in time (%.6g s before line %d's); traces must be sorted by time",
				file, rs[k].line, rs[k-1].t-rs[k].t, rs[k-1].line)
		}
	}
	d := &rows{name: "trace:" + filepath.Base(file)}
	if d.text, err = newTexter(o.Seed, o.Synth); err != nil {
		return nil, err
	}
	t0, start, end := rs[0].t, o.WindowStart.Seconds(), math.Inf(1)
	if o.WindowEnd > 0 {
		end = o.WindowEnd.Seconds()
	}
	for _, row := range rs {
		at := row.t - t0
		if at < start || at >= end {
			continue
		}
		if o.MaxRequests > 0 && len(d.shapes) == o.MaxRequests {
			break
		}
		req := Request{
			Index:        len(d.shapes),
			PromptTokens: row.in,
			OutputTokens: row.out,
			// A trace's output length is what the server generated.
			OutputRecorded: row.out > 0,
			Arrival:        time.Duration(math.Round((at - start) / o.Speedup * 1e9)),
			HasArrival:     true,
		}
		if len(row.hashes) > 0 {
			req.BlockHashes, req.HashBlockTokens = row.hashes, MooncakeBlockTokens
		}
		d.shapes = append(d.shapes, req)
	}
	if len(d.shapes) == 0 {
		return nil, fmt.Errorf("%s: no requests in trace window %v:%v (the trace spans %.1f s)", file, o.WindowStart, o.WindowEnd, rs[len(rs)-1].t-t0)
	}
	return d, nil
}

// Azure trace timestamps; the fraction has 7 digits in the 2023 traces.
var timeLayouts = []string{"2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999Z07:00", "2006-01-02T15:04:05.999999999"}

func readTraceCSV(data []byte, file string) ([]traceRow, error) {
	t, err := readTable(bytes.NewReader(data), file)
	if err != nil {
		return nil, err
	}
	if t.header == nil {
		return nil, fmt.Errorf("%s:1: no header; want e.g. TIMESTAMP,ContextTokens,GeneratedTokens", file)
	}
	ts := t.firstColumn("timestamp", "arrival_time", "arrival", "time")
	in, out := t.firstColumn(inputColumns...), t.firstColumn(outputColumns...)
	if ts < 0 || in < 0 || out < 0 {
		return nil, fmt.Errorf("%s:1: header %s lacks a timestamp, prompt or output token column (want e.g. TIMESTAMP,ContextTokens,GeneratedTokens)", file, t.describeColumns())
	}
	rs := make([]traceRow, 0, len(t.rows))
	var base time.Time
	for k, row := range t.rows {
		r := traceRow{line: row.line}
		s := strings.TrimSpace(row.fields[ts])
		if x, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(x, 0) && !math.IsNaN(x) {
			r.t = x
		} else {
			tm, err := parseTime(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: timestamp %q: want seconds or a time like 2023-11-16 18:17:03.9799600", file, row.line, s)
			}
			if k == 0 {
				base = tm
			} else if base.IsZero() {
				return nil, fmt.Errorf("%s:%d: timestamp %q is a date but earlier rows are seconds", file, row.line, s)
			}
			r.t = tm.Sub(base).Seconds()
		}
		if r.in, err = parseTokens(row.fields[in]); err != nil {
			return nil, fmt.Errorf("%s:%d: prompt tokens: %w", file, row.line, err)
		}
		if r.out, err = parseTokens(row.fields[out]); err != nil {
			return nil, fmt.Errorf("%s:%d: output tokens: %w", file, row.line, err)
		}
		rs = append(rs, r)
	}
	return rs, nil
}

func parseTime(s string) (time.Time, error) {
	var err error
	for _, l := range timeLayouts {
		var t time.Time
		if t, err = time.Parse(l, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// traceLine holds the fields of every JSONL trace format this package reads.
type traceLine struct {
	Timestamp      *float64      `json:"timestamp"`    // ms
	ArrivalTime    *float64      `json:"arrival_time"` // s
	InputLength    *float64      `json:"input_length"`
	OutputLength   *float64      `json:"output_length"`
	InputToks      *float64      `json:"input_toks"`
	OutputToks     *float64      `json:"output_toks"`
	HashIDs        []json.Number `json:"hash_ids"`
	Queries        []traceQuery  `json:"queries"`
	PromptLength   *float64      `json:"prompt_length"`
	ResponseLength *float64      `json:"response_length"`
}

type traceQuery struct {
	PromptLength   *float64 `json:"prompt_length"`
	ResponseLength *float64 `json:"response_length"`
}

func readTraceJSONL(data []byte, file string) ([]traceRow, error) {
	var rs []traceRow
	err := eachLine(bytes.NewReader(data), file, func(line int, b []byte) error {
		b = bytes.TrimSpace(b)
		if len(b) == 0 {
			return nil
		}
		var l traceLine
		if err := json.Unmarshal(b, &l); err != nil {
			return fmt.Errorf("%s:%d: %w", file, line, jsonError(err))
		}
		r := traceRow{line: line}
		switch {
		case l.Timestamp != nil:
			r.t = *l.Timestamp / 1000
		case l.ArrivalTime != nil:
			r.t = *l.ArrivalTime
		default:
			return fmt.Errorf("%s:%d: no \"timestamp\" (ms) or \"arrival_time\" (s)", file, line)
		}
		if l.Queries != nil {
			for q, x := range l.Queries {
				in, err1 := tokenField(x.PromptLength, "prompt_length")
				out, err2 := tokenField(x.ResponseLength, "response_length")
				if err1 != nil || err2 != nil {
					return fmt.Errorf("%s:%d: query %d: %w", file, line, q+1, firstErr(err1, err2))
				}
				rs = append(rs, traceRow{line: line, t: r.t, in: in, out: out})
			}
			return nil
		}
		var err1, err2 error
		switch {
		case l.InputLength != nil:
			r.in, err1 = tokenField(l.InputLength, "input_length")
		case l.InputToks != nil:
			r.in, err1 = tokenField(l.InputToks, "input_toks")
		default:
			r.in, err1 = tokenField(l.PromptLength, "input_length")
		}
		switch {
		case l.OutputLength != nil:
			r.out, err2 = tokenField(l.OutputLength, "output_length")
		case l.OutputToks != nil:
			r.out, err2 = tokenField(l.OutputToks, "output_toks")
		default:
			r.out, err2 = tokenField(l.ResponseLength, "output_length")
		}
		if err := firstErr(err1, err2); err != nil {
			return fmt.Errorf("%s:%d: %w", file, line, err)
		}
		for _, h := range l.HashIDs {
			v, err := strconv.ParseInt(h.String(), 10, 64)
			if err != nil {
				return fmt.Errorf("%s:%d: hash_ids: %s is not an integer", file, line, h)
			}
			r.hashes = append(r.hashes, uint64(v))
		}
		rs = append(rs, r)
		return nil
	})
	return rs, err
}

func tokenField(v *float64, name string) (int, error) {
	if v == nil {
		return 0, fmt.Errorf("no %q", name)
	}
	n, err := parseTokens(strconv.FormatFloat(*v, 'f', -1, 64))
	if err != nil {
		return 0, fmt.Errorf("%q: %w", name, err)
	}
	return n, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
