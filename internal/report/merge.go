package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// RecordsFile is one records file read whole: its last meta line and its
// records in file order.
type RecordsFile struct {
	// Name is the file's name, used in messages.
	Name string
	// Meta is the file's last meta line; nil when it has none.
	Meta *runlog.Meta
	// Records are every record of the file, warm-ups included.
	Records []runlog.Record
}

// ReadRecordsFile reads a records file (JSON Lines: meta lines and records).
// Warnings report skipped torn last lines; an error names file and line.
func ReadRecordsFile(r io.Reader, name string) (RecordsFile, []string, error) {
	meta, recs, warns, err := runlog.ReadAll(r, name)
	if err != nil {
		return RecordsFile{}, warns, err
	}
	return RecordsFile{Name: name, Meta: meta, Records: recs}, warns, nil
}

// ErrIncompatible is wrapped by Merge's error when two files come from runs
// that should not be summarised together.
var ErrIncompatible = errors.New("incompatible records files")

// compatField is one property two merged files must share.
type compatField struct {
	name string
	get  func(*runlog.Meta) any
}

// compatFields are what makes two runs the same experiment: the same model
// behind the same API on the same workload (and, when simulated, the same
// simulated engine). Load differs between levels of a sweep and is allowed.
var compatFields = []compatField{
	{"model", func(m *runlog.Meta) any { return m.Model }},
	{"backend", func(m *runlog.Meta) any { return m.Backend }},
	{"endpoint", func(m *runlog.Meta) any { return m.Endpoint }},
	{"dataset", func(m *runlog.Meta) any { return m.Dataset }},
	{"simulated", func(m *runlog.Meta) any { return canonical(m.Simulated) }},
}

// canonical renders a free-form map as JSON so maps decoded from different
// files compare equal when their content is (numbers decode as float64 on
// both sides).
func canonical(m map[string]any) string {
	if len(m) == 0 {
		return ""
	}
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Sprint(m)
	}
	return string(b)
}

// Merge combines records files into one run: the levels of a sweep written
// to separate files, or shards of one load written by several machines.
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
// Meta.Levels, in order of first appearance. Record times are shifted onto
// the first file's clock by the difference of the files' Started times, so
// shards line up and sequential levels follow each other. The merged Meta is
// the first file's with the merged Levels.
func Merge(files []RecordsFile, force bool) (*runlog.Meta, []runlog.Record, []string, error) {
	if len(files) == 0 {
		return nil, nil, nil, errors.New("no records files")
	}
	var warns []string
	var base *runlog.Meta
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
				what = mapDiff("simulated", base.Simulated, f.Meta.Simulated)
			}
			msg := fmt.Sprintf("%s and %s differ in %s", baseName, f.Name, what)
			if !force {
				return nil, nil, warns, fmt.Errorf("%w: %s; use --force to merge them anyway", ErrIncompatible, msg)
			}
			warns = append(warns, msg+": merged anyway (--force)")
		}
	}
	if len(files) == 1 && files[0].Meta != nil && denseLevels(files[0].Records) &&
		maxLevel(files[0].Records) < len(files[0].Meta.Levels) {
		// One well-formed file: keep its levels exactly, including levels
		// without records.
		m := *files[0].Meta
		m.Levels = slices.Clone(m.Levels)
		return &m, files[0].Records, warns, nil
	}
	merged := &runlog.Meta{Tool: "goodput"}
	if base != nil {
		*merged = *base
	}
	merged.Levels = nil
	total := 0
	for _, f := range files {
		total += len(f.Records)
	}
	out := make([]runlog.Record, 0, total)
	for _, f := range files {
		var shift int64
		if f.Meta != nil && base != nil && !f.Meta.Started.IsZero() && !base.Started.IsZero() {
			shift = int64(f.Meta.Started.Sub(base.Started))
		}
		remap := map[int]int{}
		for _, r := range f.Records {
			idx, ok := remap[r.Level]
			if !ok {
				lv := runlog.Level{}
				if f.Meta != nil && r.Level >= 0 && r.Level < len(f.Meta.Levels) {
					lv = f.Meta.Levels[r.Level]
				}
				idx = slices.IndexFunc(merged.Levels, func(m runlog.Level) bool { return sameLoad(m, lv) })
				if idx < 0 {
					idx = len(merged.Levels)
					merged.Levels = append(merged.Levels, lv)
				} else {
					// Another shard of the same load: its counts add up.
					merged.Levels[idx] = addShard(merged.Levels[idx], lv)
				}
				remap[r.Level] = idx
			}
			r.Level = idx
			if shift != 0 {
				shiftRecord(&r, shift)
			}
			out = append(out, r)
		}
	}
	return merged, out, warns, nil
}

// addShard folds another shard's description of the same load into m: the
// prompt and warm-up counts and delayed arrivals add up.
func addShard(m, lv runlog.Level) runlog.Level {
	m.NumPrompts += lv.NumPrompts
	m.NumWarmups += lv.NumWarmups
	m.DelayedArrivals += lv.DelayedArrivals
	return m
}

// denseLevels reports whether records use level indexes without gaps
// starting at 0 (true for a file with no records).
func denseLevels(recs []runlog.Record) bool {
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

func maxLevel(recs []runlog.Record) int {
	m := -1
	for i := range recs {
		m = max(m, recs[i].Level)
	}
	return m
}

// sameLoad reports whether two level descriptions are the same offered load.
func sameLoad(a, b runlog.Level) bool {
	return a.RequestRate == b.RequestRate && a.Burstiness == b.Burstiness &&
		a.MaxConcurrency == b.MaxConcurrency && a.Label == b.Label && a.DurationS == b.DurationS
}

// mapDiff names the keys whose values differ between a and b, with both
// values, at most three of them, so a refusal stays one readable line.
func mapDiff(name string, a, b map[string]any) string {
	keys := slices.Sorted(maps.Keys(a))
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	var parts []string
	for _, k := range keys {
		va, vb := canonicalValue(a[k]), canonicalValue(b[k])
		if va == vb {
			continue
		}
		if len(parts) == 3 {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s.%s (%s vs %s)", name, k, show(unquote(va)), show(unquote(vb))))
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

// canonicalValue renders one value as JSON for comparison.
func canonicalValue(v any) string {
	if v == nil {
		return ""
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func show(v any) string {
	if s, ok := v.(string); ok && s == "" {
		return "none"
	}
	return fmt.Sprint(v)
}

// shiftRecord moves every time of r by d ns.
func shiftRecord(r *runlog.Record, d int64) {
	r.Intended += d
	r.Sent += d
	r.End += d
	chunks := make([]runlog.Chunk, len(r.Chunks))
	for i, c := range r.Chunks {
		c.T += d
		chunks[i] = c
	}
	r.Chunks = chunks
	if r.Server != nil {
		s := *r.Server
		s.ArrivalNs += d
		r.Server = &s
	}
}

// LevelSummary is the summary of one load level of a run.
type LevelSummary struct {
	// Index is the level's index (Record.Level).
	Index int
	// Level describes the offered load (zero when the meta did not say).
	Level runlog.Level
	// Summary aggregates the level's records.
	Summary stats.Summary
}

// SummarizeLevels summarises recs per load level, in level order: one
// LevelSummary per level of meta (even one without records) and per other
// level index found in the records. meta may be nil.
func SummarizeLevels(meta *runlog.Meta, recs []runlog.Record, o stats.Options) []LevelSummary {
	n := 0
	if meta != nil {
		n = len(meta.Levels)
	}
	for i := range recs {
		n = max(n, recs[i].Level+1)
	}
	if n == 0 {
		n = 1
	}
	accs := make([]*stats.Accumulator, n)
	for i := range accs {
		accs[i] = stats.NewAccumulator(o)
	}
	var stray *stats.Accumulator
	for i := range recs {
		if l := recs[i].Level; l >= 0 {
			accs[l].Add(&recs[i])
		} else {
			if stray == nil {
				stray = stats.NewAccumulator(o)
			}
			stray.Add(&recs[i])
		}
	}
	out := make([]LevelSummary, 0, n)
	for i, a := range accs {
		ls := LevelSummary{Index: i, Summary: a.Summary()}
		if meta != nil && i < len(meta.Levels) {
			ls.Level = meta.Levels[i]
		}
		if ls.Summary.Level < 0 {
			ls.Summary.Level = i // empty level: still say which it is
		}
		out = append(out, ls)
	}
	if stray != nil {
		out = append(out, LevelSummary{Index: -1, Summary: stray.Summary()})
	}
	return out
}
