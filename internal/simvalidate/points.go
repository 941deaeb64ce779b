package simvalidate

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/sim/validate"
	"github.com/goodput/goodput/internal/workload"
)

// Columns of a points CSV besides the truth's figures and the engine's
// keys (docs/simulator.md, "Validating the simulator").
var pointColumns = []string{
	"name",       // the point's name in the matrix (default FILE:LINE)
	"workload",   // a trace to replay, relative to the CSV (instead of isl/osl)
	"isl", "osl", // every request's prompt and output tokens
	"concurrency",        // closed loop at this many in flight (max_concurrency)
	"rate",               // open loop, Poisson at this many requests/s (request_rate)
	"burstiness",         // the arrivals' gamma shape (1: Poisson)
	"num_prompts",        // requests replayed (default Spec.NumPrompts)
	"deployment",         // a cluster file, relative to the CSV
	"dp",                 // replicas behind a router (data parallelism)
	"ep",                 // true: the dp replicas are one MoE deployment's ranks
	"input_len",          // = isl
	"output_len",         // = osl
	"max_concurrency",    // = concurrency
	"request_rate",       // = rate
	"data_parallel_size", // = dp
}

// columnAliases are other spellings of a column, vLLM's and the flags'.
var columnAliases = map[string]string{
	"input_len": "isl", "output_len": "osl", "max_concurrency": "concurrency",
	"request_rate": "rate", "data_parallel_size": "dp", "tensor_parallel_size": "tp",
	"enable_expert_parallel": "ep",
}

// figureColumn matches a latency figure's column: vLLM's result keys.
var figureColumn = regexp.MustCompile(`^(mean|median|p50|p90|p99)_(ttft|tpot|itl|e2el)_ms$`)

// figureOf is the Figures key of a truth column ("" for none).
func figureOf(col string) string {
	if m := figureColumn.FindStringSubmatch(col); m != nil {
		stat := m[1]
		if stat == "median" {
			stat = "p50"
		}
		return validate.FigureKey(m[2], stat)
	}
	if col == validate.OutputThroughput || col == validate.RequestThroughput {
		return col
	}
	return ""
}

// engineKeys are a pool's engine keys a points CSV may set per row.
func engineKeys() []string {
	var out []string
	for _, k := range cluster.PoolKeys() {
		if k != "name" && k != "replicas" && k != "role" {
			out = append(out, k)
		}
	}
	return append(out, "tp")
}

// canonical is a column's name as matched: lower case, _ between words,
// an alias resolved.
func canonical(col string) string {
	c := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(col)), "-", "_")
	if a, ok := columnAliases[c]; ok {
		return a
	}
	return c
}

// point is one row's parsed columns.
type point struct {
	line  int
	cells map[string]string // canonical column → non-empty cell
}

// ReadPoints parses a points CSV: a header, then one row per point.
// Every mistake is an *InputError naming file, line and column. header is
// the columns' canonical names; each row maps a column to its non-empty
// cell, lines[i] being row i's line. It parses only: Validate builds and
// replays the rows.
func ReadPoints(file string, data []byte) (header []string, rows []map[string]string, lines []int, err error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.Comment = '#'
	r.TrimLeadingSpace = true
	head, err := r.Read()
	if err == io.EOF {
		return nil, nil, nil, &InputError{File: file, Err: errors.New("empty: want a header line, then one row per point")}
	}
	if err != nil {
		return nil, nil, nil, csvError(file, err)
	}
	known := append(slices.Clone(pointColumns), engineKeys()...)
	seen := map[string]bool{}
	figures := 0
	for _, h := range head {
		c := canonical(h)
		switch {
		case figureOf(c) != "":
			figures++
		case !slices.Contains(known, c):
			return nil, nil, nil, &InputError{File: file, Line: 1, Column: h, Err: errors.New("unknown column (want name, workload, isl, osl, concurrency, rate, burstiness, num_prompts, deployment, dp, ep, an engine key such as gpu, model, tp, max_num_seqs, or a figure such as mean_ttft_ms, p99_tpot_ms, output_throughput)")}
		}
		if seen[c] {
			return nil, nil, nil, &InputError{File: file, Line: 1, Column: h, Err: errors.New("given twice")}
		}
		seen[c] = true
		header = append(header, c)
	}
	if figures == 0 {
		return nil, nil, nil, &InputError{File: file, Line: 1, Err: errors.New("no truth column: want at least one figure, e.g. mean_ttft_ms, p99_tpot_ms, output_throughput")}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, nil, csvError(file, err)
		}
		line, _ := r.FieldPos(0)
		row := map[string]string{}
		for i, c := range rec {
			if c = strings.TrimSpace(c); c != "" {
				row[header[i]] = c
			}
		}
		rows, lines = append(rows, row), append(lines, line)
	}
	if len(rows) == 0 {
		return nil, nil, nil, &InputError{File: file, Err: errors.New("no point: want one row per point after the header")}
	}
	return header, rows, lines, nil
}

func csvError(file string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &InputError{File: file, Line: pe.Line, Err: pe.Err}
	}
	return &InputError{File: file, Err: err}
}

// readPoints reads a points CSV into one run per row; dir resolves the
// rows' relative paths, dep is the deployment of rows that state none.
func (s *Spec) readPoints(file, dir string, data []byte, dep cluster.Config) ([]*Run, error) {
	header, rows, lines, err := ReadPoints(file, data)
	if err != nil {
		return nil, err
	}
	var runs []*Run
	for i, row := range rows {
		r, err := s.point(file, dir, header, point{line: lines[i], cells: row}, dep)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// point builds one row's run.
func (s *Spec) point(file, dir string, header []string, p point, dep cluster.Config) (*Run, error) {
	bad := func(col string, format string, args ...any) error {
		return &InputError{File: file, Line: p.line, Column: col, Err: fmt.Errorf(format, args...)}
	}
	num := func(col string, integer bool) (float64, bool, error) {
		c, ok := p.cells[col]
		if !ok {
			return 0, false, nil
		}
		v, err := strconv.ParseFloat(c, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) || (integer && v != math.Trunc(v)) || (integer && v > 1e9) {
			what := "a positive number"
			if integer {
				what = "a positive whole number"
			}
			return 0, false, bad(col, "%q: want %s", c, what)
		}
		return v, true, nil
	}
	run := &Run{Name: fmt.Sprintf("%s:%d", file, p.line), Figures: validate.Figures{}}
	if n, ok := p.cells["name"]; ok {
		run.Name = n
	}
	for _, h := range header {
		if key := figureOf(h); key != "" {
			if v, ok, err := num(h, false); err != nil {
				return nil, err
			} else if ok {
				run.Figures[key] = v
			}
		}
	}
	if len(run.Figures) == 0 {
		return nil, bad("", "no figure given: the row's truth columns are all empty")
	}
	n := s.NumPrompts
	if n == 0 {
		n = DefaultNumPrompts
	}
	if v, ok, err := num("num_prompts", true); err != nil {
		return nil, err
	} else if ok {
		n = int(v)
	}
	conc, hasConc, err := num("concurrency", true)
	if err != nil {
		return nil, err
	}
	rate, hasRate, err := num("rate", false)
	if err != nil {
		return nil, err
	}
	burst, _, err := num("burstiness", false)
	if err != nil {
		return nil, err
	}
	if wl, ok := p.cells["workload"]; ok {
		if _, has := p.cells["isl"]; has {
			return nil, bad("isl", "give a workload trace or isl and osl, not both")
		}
		ds, err := workload.LoadTrace(filepath.Join(dir, wl), workload.TraceOptions{})
		if err != nil {
			return nil, bad("workload", "%v", err)
		}
		run.Workload = ds
		run.Load.Level = runlog.Level{MaxConcurrency: int(conc)}
	} else {
		isl, okI, err := num("isl", true)
		if err != nil {
			return nil, err
		}
		osl, okO, err := num("osl", true)
		if err != nil {
			return nil, err
		}
		switch {
		case !okI:
			return nil, bad("isl", "missing: give the prompt length (isl and osl) or a workload trace")
		case !okO:
			return nil, bad("osl", "missing: give the output length (isl and osl) or a workload trace")
		case !hasConc && !hasRate:
			return nil, bad("concurrency", "missing: give the closed loop's concurrency or the open loop's rate")
		}
		d := &replayed{name: fmt.Sprintf("isl=%d osl=%d", int(isl), int(osl))}
		for i := range n {
			d.reqs = append(d.reqs, workload.Request{Index: i, PromptTokens: int(isl), OutputTokens: int(osl), OutputRecorded: true})
		}
		run.Workload = d
		run.Load.Level = runlog.Level{RequestRate: rate, Burstiness: burst, MaxConcurrency: int(conc), NumPrompts: n}
		run.Load.Seed = s.Seed
	}
	run.Deployment, err = s.rowDeployment(file, dir, header, p, dep)
	return run, err
}

// rowDeployment is a row's deployment: its cluster file, its engine
// columns over the Spec's base, or dep when it states neither.
func (s *Spec) rowDeployment(file, dir string, header []string, p point, dep cluster.Config) (cluster.Config, error) {
	if d, ok := p.cells["deployment"]; ok {
		c, err := cluster.ParseFile(filepath.Join(dir, d), s.Base)
		if err != nil {
			return c, &InputError{File: file, Line: p.line, Column: "deployment", Err: err}
		}
		return c, nil
	}
	c, col, err := s.stated(header, p.cells, file)
	if err != nil {
		return dep, &InputError{File: file, Line: p.line, Column: col, Err: err}
	}
	if c == nil {
		return dep, nil
	}
	return *c, nil
}

// stated is the deployment that keys state (a CSV row's columns, a
// records file's --metadata): "dp" the replicas, "ep" expert parallelism,
// engine keys over the Spec's base, taken in order; nil when they state
// none. An error names the key at fault.
func (s *Spec) stated(order []string, keys map[string]string, file string) (*cluster.Config, string, error) {
	var b strings.Builder
	pool := false
	for _, h := range order {
		v, ok := keys[h]
		if !ok {
			continue
		}
		switch {
		case h == "ep":
			fmt.Fprintf(&b, "enable_expert_parallel: %s\n", yamlScalar(v))
		case h == "dp" || slices.Contains(engineKeys(), h):
			pool = true
		}
	}
	if !pool && b.Len() == 0 {
		return nil, "", nil
	}
	b.WriteString("pools:\n  - name: stated\n")
	for _, h := range order {
		v, ok := keys[h]
		switch {
		case !ok:
		case h == "dp":
			fmt.Fprintf(&b, "    replicas: %s\n", yamlScalar(v))
		case slices.Contains(engineKeys(), h):
			fmt.Fprintf(&b, "    %s: %s\n", h, yamlScalar(v))
		}
	}
	c, err := cluster.Parse([]byte(b.String()), file, s.Base)
	if err != nil {
		var fe *setting.FileError
		if errors.As(err, &fe) {
			col := fe.Key
			if col == "replicas" {
				col = "dp"
			} else if col == "enable_expert_parallel" {
				col = "ep"
			}
			return nil, col, fe.Err
		}
		return nil, "", err
	}
	return &c, "", nil
}

// yamlScalar quotes v for a YAML flow scalar unless it is plain.
var plain = regexp.MustCompile(`^[A-Za-z0-9._/+-]+$`)

func yamlScalar(v string) string {
	if plain.MatchString(v) {
		return v
	}
	return strconv.Quote(v)
}
