package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/runlog"
)

// Input is a file given to report or compare: a records file or a result
// file, told apart by content.
type Input struct {
	// Records is set for a records file: its runs, one unless the file
	// holds several and was read with runlog.ReadOptions.Merge.
	Records []runlog.RecordsFile
	// Result is set for a result JSON file (ours or vLLM's).
	Result *Result
}

// maxResultSize bounds a result file read whole; records files are read
// line by line and have no bound.
const maxResultSize = 256 << 20

// ReadInput reads a records file or a result file from r. A file whose
// first non-blank line is a whole JSON object with a "meta" or "id" key
// is a records file (JSON Lines), read as runlog.ReadRecordsFile does; anything
// else is read as one result JSON document. An empty file, or one that is
// neither, is an error naming the file (and the line where it stops being
// JSON). Warnings are the records reader's (e.g. a torn last line).
func ReadInput(r io.Reader, name string, o runlog.ReadOptions) (Input, []string, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	head, _ := br.Peek(1 << 16)
	if looksLikeRecords(head) {
		fs, warns, err := runlog.ReadRecordsFile(br, name, o)
		if err != nil {
			return Input{}, warns, err
		}
		return Input{Records: fs}, warns, nil
	}
	data, err := io.ReadAll(io.LimitReader(br, maxResultSize+1))
	if err != nil {
		return Input{}, nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(data) > maxResultSize {
		return Input{}, nil, fmt.Errorf("%s: not a records file, and too large for a result file", name)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return Input{}, nil, fmt.Errorf("%s: %w: the file is empty", name, runlog.ErrNoRecords)
	}
	var raw json.RawMessage
	var se *json.SyntaxError
	if err := json.Unmarshal(data, &raw); errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(max(se.Offset-1, 0), int64(len(data)))], []byte{'\n'})
		return Input{}, nil, fmt.Errorf("%s:%d: neither a records file nor a result file: %w", name, line, err)
	}
	res, err := ParseResultJSON(data)
	if err != nil {
		return Input{}, nil, fmt.Errorf("%s: neither a records file nor a result file: %w", name, err)
	}
	return Input{Result: res}, nil, nil
}

// looksLikeRecords reports whether the first non-blank line of head starts
// a records file: {"meta": or {"id": on a line of its own.
func looksLikeRecords(head []byte) bool {
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		return bytes.HasPrefix(line, []byte(`{"meta"`)) || bytes.HasPrefix(line, []byte(`{"id"`))
	}
	return false
}

// Figures turns a parsed result file into the summary figures compare
// works with when there are no records.
func Figures(r *Result) *compare.Figures {
	f := &compare.Figures{
		Requests: r.Completed + r.Failed, Completed: r.Completed, Failed: r.Failed, DurationS: r.Duration,
		RequestThroughput: r.RequestThroughput, OutputThroughput: r.OutputThroughput,
		Metrics: map[string]compare.MetricFigures{}, SLO: r.SLOSpec, Goodput: r.RequestGoodput, Attainment: r.SLOAttainment,
	}
	if r.Completed > 0 {
		f.MeanOutputTokens = float64(r.TotalOutputTokens) / float64(r.Completed)
	}
	for name, m := range r.Metrics {
		mf := compare.MetricFigures{Mean: m.Mean, Percentiles: map[float64]float64{}}
		if m.Mean == 0 && m.Median == 0 && len(m.Percentiles) == 0 {
			mf.Mean = math.NaN()
		}
		for _, pv := range m.Percentiles {
			mf.Percentiles[pv.P] = pv.Value
		}
		if _, ok := mf.Percentiles[50]; !ok {
			mf.Percentiles[50] = m.Median
		}
		f.Metrics[name] = mf
	}
	return f
}
