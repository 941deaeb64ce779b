package simvalidate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/sim/validate"
	"github.com/goodput/goodput/internal/simrun"
	"github.com/goodput/goodput/internal/workload"
)

// Run is one real run or point to replay: what was sent, how, on what,
// and what the real server measured.
type Run struct {
	// Name names the run in the matrix: the file's base name, with the
	// level or the CSV row's name.
	Name string
	// Workload and Load are what to replay: the recorded lengths and
	// arrivals (or a point's fixed lengths), the closed loop's
	// concurrency or the rate.
	Workload workload.Dataset
	Load     simrun.Load
	// Deployment is the fleet it ran on.
	Deployment cluster.Config
	// Samples is the per-request truth; nil where the truth is aggregate
	// (Figures).
	Samples *validate.Samples
	// Figures is the aggregate truth, where there are no Samples.
	Figures validate.Figures
}

// read reads one input into its runs, each with its deployment.
func (s *Spec) read(in Input) ([]*Run, error) {
	path := s.path(in.Truth)
	data, err := os.ReadFile(path)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &InputError{File: in.Truth, Err: err}
	}
	depFile := in.Deployment
	if depFile == "" {
		depFile = s.Deployment
	}
	dep, err := s.deployment(depFile)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSuffix(filepath.Base(in.Truth), filepath.Ext(in.Truth))
	if name == "requests" || name == "records" {
		// A generic file name: the run is its folder (as the shared runs
		// are laid out, one folder per run).
		name = filepath.Base(filepath.Dir(in.Truth))
	}
	switch form := formOf(in.Truth, data); form {
	case formPoints:
		return s.readPoints(in.Truth, filepath.Dir(path), data, dep)
	case formMeans:
		r, err := s.readMeans(in.Truth, path, data)
		if err != nil {
			return nil, err
		}
		r.Name, r.Deployment = name, dep
		return []*Run{r}, nil
	case formServingSim:
		r, err := readServingSim(in.Truth, data)
		if err != nil {
			return nil, err
		}
		r.Name, r.Deployment = name, dep
		return []*Run{r}, nil
	default:
		rs, meta, err := readRecords(in.Truth, name, data)
		if err != nil {
			return nil, err
		}
		if depFile == "" && meta != nil {
			// The deployment the user stated with the run (bench
			// --metadata gpu=h100-sxm --metadata tp=4 ...), over the
			// engine flags.
			keys := map[string]string{}
			var order []string
			for k, v := range meta.Metadata {
				if c := canonical(k); c == "dp" || c == "ep" || slices.Contains(engineKeys(), c) {
					keys[c] = strings.TrimSpace(v)
					order = append(order, c)
				}
			}
			slices.Sort(order)
			c, col, err := s.stated(order, keys, in.Truth)
			if err != nil {
				return nil, &InputError{File: in.Truth, Err: fmt.Errorf("metadata %s: %w", col, err)}
			}
			if c != nil {
				dep = *c
			}
		}
		for _, r := range rs {
			r.Deployment = dep
		}
		return rs, nil
	}
}

// deployment is the cluster file's fleet, or Base alone for "".
func (s *Spec) deployment(file string) (cluster.Config, error) {
	if file == "" {
		if _, err := sim.New(s.Base); err != nil {
			return cluster.Config{}, &InputError{File: "engine flags", Err: err}
		}
		return cluster.Config{Replicas: []sim.Config{s.Base}}, nil
	}
	c, err := cluster.ParseFile(s.path(file), s.Base)
	var fe *setting.FileError
	if errors.As(err, &fe) {
		fe.File = file // as the user named it, not resolved
	}
	return c, err
}

// The forms of truth a file may hold.
const (
	formRecords    = iota // goodput records (JSON Lines)
	formServingSim        // LLMServingSim's requests.jsonl of a real vLLM run
	formPoints            // a CSV of aggregate points
	formMeans             // LLMServingSim 2.0's per-framework means (TSV)
)

// formOf tells a file's form from its name and first line.
func formOf(name string, data []byte) int {
	first, _, _ := bytes.Cut(data, []byte("\n"))
	switch {
	case strings.HasSuffix(strings.ToLower(name), ".csv"):
		return formPoints
	case strings.HasSuffix(strings.ToLower(name), ".tsv") || bytes.HasPrefix(first, []byte("framework\t")):
		return formMeans
	case bytes.Contains(first, []byte(`"queued_ts"`)) && bytes.Contains(first, []byte(`"first_token_ts"`)):
		return formServingSim
	}
	return formRecords
}

// SamplesOf are the per-request figures of records (ms) and their rates:
// successful measured requests only, throughput over first send to last
// end. It is how the truth of a records file and the simulator's replay
// are both measured, so the two are read alike.
func SamplesOf(recs []runlog.Record) *validate.Samples {
	s := &validate.Samples{}
	first, last := int64(math.MaxInt64), int64(math.MinInt64)
	var out, n int
	var gaps []time.Duration
	for i := range recs {
		r := &recs[i]
		if r.Warmup || !r.OK() {
			continue
		}
		if d, ok := r.TTFT(); ok {
			s.TTFT = append(s.TTFT, ms(d))
		}
		if d, ok := r.TPOT(); ok {
			s.TPOT = append(s.TPOT, ms(d))
		}
		if d, ok := r.E2E(); ok {
			s.E2E = append(s.E2E, ms(d))
		}
		gaps = r.ITLs(gaps[:0])
		for _, g := range gaps {
			s.ITL = append(s.ITL, ms(g))
		}
		first, last = min(first, r.Sent), max(last, r.End)
		out += r.OutputTokens()
		n++
	}
	if n > 0 && last > first {
		secs := float64(last-first) / 1e9
		s.OutputThroughput, s.RequestThroughput = float64(out)/secs, float64(n)/secs
	}
	return s
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// replayed is a workload of recorded requests, held in memory.
type replayed struct {
	name string
	reqs []workload.Request
}

var _ workload.Dataset = (*replayed)(nil)

func (d *replayed) Name() string                   { return d.name }
func (d *replayed) Len() int                       { return len(d.reqs) }
func (d *replayed) Shape(i int) workload.Request   { return d.reqs[i] }
func (d *replayed) Request(i int) workload.Request { return d.reqs[i] }

// readRecords reads a goodput records file: one run per load level, its
// requests replayed as recorded — at their intended send times under the
// level's in-flight cap, or, for a closed-loop level, in their send order
// at the level's concurrency. It returns the file's meta too (nil: none).
func readRecords(file, name string, data []byte) ([]*Run, *runlog.Meta, error) {
	meta, recs, _, err := runlog.ReadAll(bytes.NewReader(data), file)
	if err != nil {
		return nil, nil, err
	}
	levels := map[int][]runlog.Record{}
	for _, r := range recs {
		if !r.Warmup {
			levels[r.Level] = append(levels[r.Level], r)
		}
	}
	if len(levels) == 0 {
		return nil, nil, &InputError{File: file, Err: errors.New("no request records: want a goodput records file of a real server")}
	}
	idx := make([]int, 0, len(levels))
	for l := range levels {
		idx = append(idx, l)
	}
	slices.Sort(idx)
	var runs []*Run
	for _, l := range idx {
		rs := levels[l]
		var lv runlog.Level
		if meta != nil && l < len(meta.Levels) {
			lv = meta.Levels[l]
		}
		closed := lv.RequestRate == 0 && lv.MaxConcurrency > 0
		slices.SortStableFunc(rs, func(a, b runlog.Record) int {
			if closed {
				return cmpInt(a.Sent, b.Sent)
			}
			return cmpInt(a.Intended, b.Intended)
		})
		t0 := rs[0].Intended
		d := &replayed{name: "records:" + file}
		for i, r := range rs {
			q := workload.Request{Index: i, PromptTokens: r.PromptTokens, OutputTokens: max(r.OutputTokens(), 1), OutputRecorded: true}
			if !closed {
				q.Arrival, q.HasArrival = time.Duration(r.Intended-t0), true
			}
			d.reqs = append(d.reqs, q)
		}
		run := &Run{Name: name, Workload: d, Samples: SamplesOf(rs)}
		// The client's in-flight cap, closed loop or open (an arrival
		// finding it full waits, as it did).
		run.Load.Level = runlog.Level{MaxConcurrency: lv.MaxConcurrency, NumPrompts: len(rs)}
		if len(idx) > 1 {
			run.Name = fmt.Sprintf("%s#%d", name, l)
		}
		if len(run.Samples.TTFT) == 0 {
			return nil, nil, &InputError{File: file, Err: fmt.Errorf("level %d holds no successful streamed request", l)}
		}
		runs = append(runs, run)
	}
	return runs, meta, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// readServingSim reads LLMServingSim's requests.jsonl of a real vLLM run
// (request_id, input_toks, output_toks, arrival_time in epoch s, and the
// engine's queued_ts, first_token_ts, last_token_ts in monotonic s) with
// that repository's definitions: TTFT = first − queued, TPOT = (last −
// first)/(output − 1), E2E = last − queued. The workload is the same file
// read as a trace.
func readServingSim(file string, data []byte) (*Run, error) {
	ds, err := workload.ReadTrace(bytes.NewReader(data), file, workload.TraceOptions{})
	if err != nil {
		return nil, &InputError{File: file, Err: err}
	}
	s := &validate.Samples{}
	first, last := math.Inf(1), math.Inf(-1)
	var out, n int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var r struct {
			Output *int     `json:"output_toks"`
			Queued *float64 `json:"queued_ts"`
			First  *float64 `json:"first_token_ts"`
			Last   *float64 `json:"last_token_ts"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, &InputError{File: file, Line: line, Err: err}
		}
		for _, f := range []struct {
			name string
			ok   bool
		}{{"output_toks", r.Output != nil}, {"queued_ts", r.Queued != nil}, {"first_token_ts", r.First != nil}, {"last_token_ts", r.Last != nil}} {
			if !f.ok {
				return nil, &InputError{File: file, Line: line, Column: f.name, Err: errors.New("missing")}
			}
		}
		q, f, l := *r.Queued, *r.First, *r.Last
		if !(q <= f && f <= l) || *r.Output < 1 {
			return nil, &InputError{File: file, Line: line, Err: fmt.Errorf("want queued_ts ≤ first_token_ts ≤ last_token_ts and output_toks ≥ 1; got %v, %v, %v, %d", q, f, l, *r.Output)}
		}
		s.TTFT = append(s.TTFT, 1000*(f-q))
		s.E2E = append(s.E2E, 1000*(l-q))
		if *r.Output > 1 {
			s.TPOT = append(s.TPOT, 1000*(l-f)/float64(*r.Output-1))
		}
		first, last = math.Min(first, q), math.Max(last, l)
		out += *r.Output
		n++
	}
	if err := sc.Err(); err != nil {
		return nil, &InputError{File: file, Err: err}
	}
	if last > first {
		s.OutputThroughput, s.RequestThroughput = float64(out)/(last-first), float64(n)/(last-first)
	}
	return &Run{Workload: ds, Samples: s}, nil
}

// meansColumns maps LLMServingSim 2.0's means columns to the matrix's
// figures: throughput_tok_s is generated tokens over the run's time.
var meansColumns = map[string]string{
	"throughput_tok_s": validate.OutputThroughput,
	"mean_ttft_ms":     validate.FigureKey(validate.TTFT, "mean"),
	"mean_tpot_ms":     validate.FigureKey(validate.TPOT, "mean"),
}

// readMeans reads LLMServingSim 2.0's per-framework means (a TSV with a
// "framework" column; the truth is TruthRow's row, "X" a figure not
// given) and the workload they ran.
func (s *Spec) readMeans(file, path string, data []byte) (*Run, error) {
	want := s.TruthRow
	if want == "" {
		want = "vLLM"
	}
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	head := strings.Split(lines[0], "\t")
	if head[0] != "framework" {
		return nil, &InputError{File: file, Line: 1, Column: head[0], Err: errors.New(`want "framework" first: a means file is LLMServingSim 2.0's TSV (framework, throughput_tok_s, mean_ttft_ms, mean_tpot_ms)`)}
	}
	for _, h := range head[1:] {
		if _, ok := meansColumns[h]; !ok {
			return nil, &InputError{File: file, Line: 1, Column: h, Err: errors.New("unknown column (want throughput_tok_s, mean_ttft_ms, mean_tpot_ms)")}
		}
	}
	var figs validate.Figures
	for i, l := range lines[1:] {
		cells := strings.Split(l, "\t")
		if cells[0] != want {
			continue
		}
		if len(cells) != len(head) {
			return nil, &InputError{File: file, Line: i + 2, Err: fmt.Errorf("%d cells; the header has %d", len(cells), len(head))}
		}
		figs = validate.Figures{}
		for j, c := range cells[1:] {
			if c == "X" || c == "" {
				continue
			}
			v, err := strconv.ParseFloat(c, 64)
			if err != nil || !(v > 0) || math.IsInf(v, 0) {
				return nil, &InputError{File: file, Line: i + 2, Column: head[j+1], Err: fmt.Errorf("%q: want a positive number (or X: not measured)", c)}
			}
			figs[meansColumns[head[j+1]]] = v
		}
	}
	if figs == nil {
		return nil, &InputError{File: file, Err: fmt.Errorf("no row %q (the real measurement's framework)", want)}
	}
	wl := s.Workload
	wpath := s.path(wl)
	if wl == "" {
		wl, wpath = filepath.Join(filepath.Dir(file), "requests.jsonl"), filepath.Join(filepath.Dir(path), "requests.jsonl")
	}
	f, err := os.Open(wpath)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &InputError{File: wl, Err: fmt.Errorf("the workload of %s: %w", file, err)}
	}
	defer f.Close()
	ds, err := workload.ReadTrace(f, wl, workload.TraceOptions{})
	if err != nil {
		return nil, &InputError{File: wl, Err: err}
	}
	return &Run{Workload: ds, Figures: figs}, nil
}
