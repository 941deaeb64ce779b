package runlog

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// RecordsFile is one run of a records file read whole: its meta line and
// its records in file order.
type RecordsFile struct {
	// Name is the file's name, used in messages; for one run of a file
	// that holds several, the file's name and the line of the run's meta
	// line, e.g. "all.jsonl:57".
	Name string
	// Meta is the run's meta line (the last one that describes the run);
	// nil when it has none.
	Meta *Meta
	// Records are every record of the run, warm-ups included.
	Records []Record
	// Scrapes are the run's scrapes of the server's metrics.
	Scrapes []Scrape
}

// ErrNoRecords is wrapped by the error for a file without a single record.
var ErrNoRecords = errors.New("no records")

// ErrSeveralRuns is wrapped by ReadRecordsFile's error for a file that
// holds several runs, read without ReadOptions.Merge.
var ErrSeveralRuns = errors.New("several runs in one records file")

// ReadRecordsFile reads a records file (JSON Lines: meta lines, records,
// end lines): one RecordsFile per run (see Reader; one unless o.Merge
// lets a file of several through), in file order. A run with no records
// is left out with a warning. Warnings also report skipped lines; an error
// names file and line, wraps ErrNoRecords when the file has no record at
// all, and wraps ErrSeveralRuns for several runs without o.Merge.
func ReadRecordsFile(r io.Reader, name string, o ReadOptions) ([]RecordsFile, []string, error) {
	runs, warns, err := ReadRuns(r, name, o)
	if err != nil {
		return nil, warns, err
	}
	var kept []Run
	for _, run := range runs {
		if len(run.Records) > 0 {
			kept = append(kept, run)
		} else if len(runs) > 1 {
			warns = append(warns, fmt.Sprintf("%s:%d: a meta line with no records after it (a run that recorded nothing): ignored", name, run.Line))
		}
	}
	if len(kept) == 0 && len(runs) == 1 && runs[0].Meta != nil && runs[0].Meta.Shard != nil {
		// A shard that finished nothing still counts: the merge says it
		// is short, by all of its share.
		warns = append(warns, fmt.Sprintf("%s: shard %d of %d recorded nothing", name, runs[0].Meta.Shard.Index, runs[0].Meta.Shard.Count))
		return []RecordsFile{{Name: name, Meta: runs[0].Meta, Scrapes: runs[0].Scrapes}}, warns, nil
	}
	if len(kept) == 0 {
		why := "the file is empty"
		switch {
		case len(runs) == 0 && len(warns) > 0:
			why = "no line could be used (see the warnings)"
		case len(runs) > 0 && len(warns) > 0:
			why = "only meta lines (see the warnings)"
		case len(runs) > 0:
			why = "only meta lines: the run recorded nothing"
		}
		return nil, warns, fmt.Errorf("%s: %w: %s", name, ErrNoRecords, why)
	}
	if len(kept) == 1 {
		return []RecordsFile{{Name: name, Meta: kept[0].Meta, Records: kept[0].Records, Scrapes: kept[0].Scrapes}}, warns, nil
	}
	if !o.Merge {
		diff := "meta line (none vs one)"
		if kept[0].Meta != nil && kept[1].Meta != nil {
			diff = RunDiff(kept[0].Meta, kept[1].Meta)
		}
		return nil, warns, fmt.Errorf("%w: %s holds %d runs: line %d starts another run than line %d, differing in %s, as when files are concatenated",
			ErrSeveralRuns, name, len(kept), kept[1].Line, kept[0].Line, diff)
	}
	out := make([]RecordsFile, len(kept))
	lines := make([]string, len(kept))
	for i, run := range kept {
		out[i] = RecordsFile{Name: fmt.Sprintf("%s:%d", name, run.Line), Meta: run.Meta, Records: run.Records, Scrapes: run.Scrapes}
		lines[i] = strconv.Itoa(run.Line)
	}
	if len(lines) > 6 {
		lines = append(lines[:5], "…")
	}
	warns = append(warns, fmt.Sprintf("%s holds %d runs (starting at lines %s): merged as separate runs, each on its own clock, as asked",
		name, len(kept), strings.Join(lines, ", ")))
	return out, warns, nil
}

// ErrIncompatible is wrapped by Merge's error when two files come from runs
// that should not be summarised together.
var ErrIncompatible = errors.New("incompatible records files")

// compatField is one property two merged files must share.
type compatField struct {
	name string
	get  func(*Meta) any
}

// compatFields are what makes two runs the same experiment: the same model
// behind the same API on the same workload (and, when simulated, the same
// simulated engine). Load differs between levels of a sweep and is allowed.
var compatFields = []compatField{
	{"model", func(m *Meta) any { return m.Model }},
	{"backend", func(m *Meta) any { return m.Backend }},
	{"endpoint", func(m *Meta) any { return m.Endpoint }},
	{"dataset", func(m *Meta) any { return m.Dataset }},
	// As JSON, so descriptions decoded from different files compare
	// equal when their content is.
	{"simulated", func(m *Meta) any { return m.Simulated.canonical() }},
}

// Merge combines records files (or the runs of one file, see
// ReadRecordsFile) into one run: the levels of a sweep written to separate
// files, or shards of one load written by several machines.
//
// Files must agree on model, backend, endpoint, dataset and simulated
// engine; otherwise Merge returns an error wrapping ErrIncompatible that
// names both files and the first field that differs, unless force is set
// (then the difference becomes a warning). A file without a meta line is
// accepted as it is, with a warning.
//
// Levels are matched by their description (rate, burstiness, concurrency
// cap, label): equal descriptions in different files become one level (the
// shards of a distributed run), others get their own index in the merged
// Meta.Levels, in order of first appearance.
//
// Shards' files (meta lines with a Shard: goodput bench --shard) must be
// shards of one run, each once, unless force. A shard's level counts
// toward the whole level it was a share of: the merged level is that whole
// (its rate, cap and counts), with the shards' delayed arrivals added up
// and the busiest shard's client CPU. The merged Meta.Shards lists every
// shard of the count, saying which is missing, which stopped before its
// end (no end line) and which is short, and by how much, each with a
// warning.
//
// Each file's times are ns from its own run's start; Merge puts them on one
// clock, whose zero is the earliest run's start (the merged Meta.Started),
// taking the runs in order of their start time. A run that started while
// the runs before it were still running, or within a minute of their end
// (the shards of a distributed run, the levels of a sweep run one after the
// other), keeps its place by the difference of the start times. A run that
// started later than that, or whose start time is unknown (no meta line,
// or none in it), is a separate run on an unrelated clock: it is laid end
// to end with the runs before it (its records shifted to begin where
// theirs ended), with a warning, so no duration spans the idle time
// between runs. A level made of runs laid end to end therefore has the sum
// of their durations as its duration, and its throughputs are its requests
// and tokens over that sum. Merged times that would pass MaxTimeNs are an
// error. The merged Meta is the first file's with the merged Levels and
// that start time. Merge does not modify files: a shifted record is a copy.
func Merge(files []RecordsFile, force bool) (*Meta, []Record, []string, error) {
	if len(files) == 0 {
		return nil, nil, nil, errors.New("no records files")
	}
	var warns []string
	var base *Meta
	var baseName string
	for _, f := range files {
		if f.Meta == nil {
			warns = append(warns, fmt.Sprintf("%s: no meta line: cannot check it belongs with the others", f.Name))
			continue
		}
		if base == nil {
			base, baseName = f.Meta, f.Name
			continue
		}
		for _, cf := range compatFields {
			a, b := cf.get(base), cf.get(f.Meta)
			if reflect.DeepEqual(a, b) {
				continue
			}
			what := fmt.Sprintf("%s (%v vs %v)", cf.name, show(a), show(b))
			if cf.name == "simulated" {
				what = engineDiff("simulated", &base.Simulated, &f.Meta.Simulated)
			}
			msg := fmt.Sprintf("%s and %s differ in %s", baseName, f.Name, what)
			if !force {
				return nil, nil, warns, fmt.Errorf("%w: %s", ErrIncompatible, msg)
			}
			warns = append(warns, msg+": merged anyway, as forced")
		}
	}
	shards, shardOf, shardWarns, err := checkShards(files, force)
	warns = append(warns, shardWarns...)
	if err != nil {
		return nil, nil, warns, err
	}
	if len(files) == 1 && files[0].Meta != nil && denseLevels(files[0].Records) &&
		maxLevel(files[0].Records) < len(files[0].Meta.Levels) {
		// One well-formed file: keep its levels exactly, including levels
		// without records (one shard's file stays that shard's run).
		m := *files[0].Meta
		m.Levels = slices.Clone(m.Levels)
		m.Shards = shards
		return &m, files[0].Records, warns, nil
	}
	merged := &Meta{Tool: "goodput"}
	if base != nil {
		*merged = *base
	}
	merged.Levels = nil
	if shards != nil {
		// The shards together are the whole run.
		merged.Shard, merged.Shards = nil, shards
	}
	shifts, origin, placeWarns, err := placeRuns(files)
	warns = append(warns, placeWarns...)
	if err != nil {
		return nil, nil, warns, err
	}
	if !origin.IsZero() {
		merged.Started = origin
	}
	total := 0
	for _, f := range files {
		total += len(f.Records)
	}
	out := make([]Record, 0, total)
	for fi, f := range files {
		shift := shifts[fi]
		remap := map[int]int{}
		part := shardOf != nil && shardOf[fi] >= 0
		if part {
			shards[shardOf[fi]].From = len(out)
		}
		for _, r := range f.Records {
			idx, ok := remap[r.Level]
			if !ok {
				lv := Level{}
				if f.Meta != nil && r.Level >= 0 && r.Level < len(f.Meta.Levels) {
					lv = f.Meta.Levels[r.Level]
				}
				key := lv
				if part {
					// A shard's share counts toward the whole level.
					key = lv.whole()
				}
				idx = slices.IndexFunc(merged.Levels, func(m Level) bool { return sameLoad(m, key) })
				switch {
				case idx < 0:
					idx = len(merged.Levels)
					merged.Levels = append(merged.Levels, key)
				case part:
					merged.Levels[idx] = addPart(merged.Levels[idx], lv)
				default:
					// Another shard of the same load: its counts add up.
					merged.Levels[idx] = addShard(merged.Levels[idx], lv)
				}
				remap[r.Level] = idx
			}
			r.Level = idx
			if shift != 0 {
				// A copy: r shares its chunks and server timing with the
				// caller's record.
				var moved Record
				r.CopyTo(&moved)
				moved.Shift(shift)
				r = moved
			}
			out = append(out, r)
		}
		if part {
			shards[shardOf[fi]].To = len(out)
		}
	}
	return merged, out, warns, nil
}

// concurrentSlack is how long after the runs before it ended a run may
// start and still be taken for part of the same measurement, on their
// clock (the next level of a sweep, a shard started late).
const concurrentSlack = time.Minute

// placeRuns returns the shift, ns, that puts each file's records on the
// merged clock, and that clock's zero (the earliest start time; zero when
// no file has one); see Merge.
func placeRuns(files []RecordsFile) (shifts []int64, origin time.Time, warns []string, err error) {
	shifts = make([]int64, len(files))
	type run struct {
		i      int
		known  bool
		lo, hi int64
	}
	var runs []run
	for i, f := range files {
		if len(f.Records) == 0 {
			continue
		}
		lo, hi := recordsSpan(f.Records)
		known := f.Meta != nil && !f.Meta.Started.IsZero()
		if known && (origin.IsZero() || f.Meta.Started.Before(origin)) {
			origin = f.Meta.Started
		}
		runs = append(runs, run{i: i, known: known, lo: lo, hi: hi})
	}
	if len(runs) < 2 {
		return shifts, origin, nil, nil
	}
	// Known start times first, earliest first; then the unknown in file
	// order.
	slices.SortStableFunc(runs, func(a, b run) int {
		switch {
		case a.known && b.known:
			return files[a.i].Meta.Started.Compare(files[b.i].Meta.Started)
		case a.known:
			return -1
		case b.known:
			return 1
		}
		return 0
	})
	// Comparisons in float64: a start time decades off must not wrap.
	var end int64 // the latest end placed so far, ns on the merged clock
	var endName string
	for k, rn := range runs {
		f := files[rn.i]
		var shift int64
		if rn.known {
			shift = int64(f.Meta.Started.Sub(origin)) // ≥ 0, saturated
		}
		if k > 0 {
			// end and rn.lo are within ±MaxTimeNs, so end − rn.lo fits.
			switch start := float64(shift) + float64(rn.lo); {
			case !rn.known:
				shift = end - rn.lo
				warns = append(warns, fmt.Sprintf("%s has no start time (no meta line, or none in it): its records are laid after %s's on the merged clock, as a separate run", f.Name, endName))
			case start > float64(end)+float64(concurrentSlack):
				gap := start - float64(end)
				shift = end - rn.lo
				warns = append(warns, fmt.Sprintf("%s started %s after %s's records ended: laid end to end with them on the merged clock, as a separate run, so the time between counts in no duration or throughput",
					f.Name, gapText(gap), endName))
			}
		}
		if lo, hi := float64(shift)+float64(rn.lo), float64(shift)+float64(rn.hi); lo < -MaxTimeNs || hi > MaxTimeNs {
			return nil, origin, warns, fmt.Errorf("%s: on the merged clock its records would lie more than %s from the first run's start: too long a span to merge", f.Name, gapText(MaxTimeNs))
		}
		shifts[rn.i] = shift
		if e := shift + rn.hi; k == 0 || e > end {
			end, endName = e, f.Name
		}
	}
	return shifts, origin, warns, nil
}

// recordsSpan is the earliest and latest time of any record of recs, ns:
// of the measured ones, or of the warm-ups when there are no others (a
// warm-up is in no duration, so runs laid end to end may overlap there).
func recordsSpan(recs []Record) (lo, hi int64) {
	measured := slices.ContainsFunc(recs, func(r Record) bool { return !r.Warmup })
	first := true
	see := func(t int64) {
		if first {
			lo, hi, first = t, t, false
		}
		lo, hi = min(lo, t), max(hi, t)
	}
	for i := range recs {
		r := &recs[i]
		if measured && r.Warmup {
			continue
		}
		see(r.Intended)
		see(r.Sent)
		see(r.End)
		for _, c := range r.Chunks {
			see(c.T)
		}
		if r.Server != nil {
			see(r.Server.ArrivalNs)
		}
	}
	return lo, hi
}

// gapText is a duration of ns for a message: "3m20s", "5.2 days",
// "25.0 years".
func gapText(ns float64) string {
	const day = 24 * float64(time.Hour)
	switch {
	case ns >= 365.25*day:
		return strconv.FormatFloat(ns/(365.25*day), 'f', 1, 64) + " years"
	case ns >= 2*day:
		return strconv.FormatFloat(ns/day, 'f', 1, 64) + " days"
	}
	return time.Duration(ns).Round(time.Millisecond).String()
}

// addShard folds another shard's description of the same load into m: the
// prompt and warm-up counts and delayed arrivals add up (saturating: the
// counts come from files).
func addShard(m, lv Level) Level {
	m.NumPrompts = satAdd(m.NumPrompts, lv.NumPrompts)
	m.NumWarmups = satAdd(m.NumWarmups, lv.NumWarmups)
	m.DelayedArrivals = satAdd(m.DelayedArrivals, lv.DelayedArrivals)
	return m
}

// satAdd is a + b, held at the int range instead of wrapping.
func satAdd(a, b int) int {
	s := a + b
	switch {
	case a > 0 && b > 0 && s < 0:
		return math.MaxInt
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt
	}
	return s
}

// denseLevels reports whether records use level indexes without gaps
// starting at 0 (true for a file with no records).
func denseLevels(recs []Record) bool {
	seen := map[int]bool{}
	for _, r := range recs {
		if r.Level < 0 {
			return false
		}
		seen[r.Level] = true
	}
	for i := range len(seen) {
		if !seen[i] {
			return false
		}
	}
	return true
}

func maxLevel(recs []Record) int {
	m := -1
	for i := range recs {
		m = max(m, recs[i].Level)
	}
	return m
}

// sameLoad reports whether two level descriptions are the same offered load.
func sameLoad(a, b Level) bool {
	return a.RequestRate == b.RequestRate && a.Burstiness == b.Burstiness &&
		a.MaxConcurrency == b.MaxConcurrency && a.Label == b.Label && a.DurationS == b.DurationS
}

// engineDiff names the keys whose values differ between a and b, with
// both values, at most three of them, so a refusal stays one readable
// line.
func engineDiff(name string, a, b *Engine) string {
	va, vb := a.values(), b.values()
	keys := slices.Sorted(maps.Keys(va))
	for _, k := range slices.Sorted(maps.Keys(vb)) {
		if _, ok := va[k]; !ok {
			keys = append(keys, k)
		}
	}
	var parts []string
	for _, k := range keys {
		x, y := va[k], vb[k]
		if x == y {
			continue
		}
		if len(parts) == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s.%s (%s vs %s)", name, k, show(unquote(x)), show(unquote(y))))
	}
	if len(parts) == 0 {
		return name
	}
	return strings.Join(parts, ", ")
}

// unquote shows a JSON string without its quotes.
func unquote(s string) string {
	if u, err := strconv.Unquote(s); err == nil && strings.HasPrefix(s, `"`) {
		return u
	}
	return s
}

func show(v any) string {
	if s, ok := v.(string); ok && s == "" {
		return "none"
	}
	return fmt.Sprint(v)
}
