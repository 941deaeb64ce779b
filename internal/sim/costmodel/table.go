package costmodel

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
)

// Table is a measured profile: iteration times at points of (tokens in the
// batch, KV context tokens read). Lookup interpolates linearly in tokens
// within each measured context level and linearly between levels, and
// extrapolates from the nearest two points beyond the edges. It overrides
// the formula when set on a Deployment.
type Table struct {
	levels []tableLevel // sorted by ctx
}

type tableLevel struct {
	ctx    float64
	tokens []float64 // sorted ascending, unique
	secs   []float64
}

// tableHeader is the CSV header a profile table must start with.
var tableHeader = []string{"tokens", "context_tokens", "time_ms"}

// ParseTable reads a profile table in CSV: a header
// "tokens,context_tokens,time_ms" then one row per measured iteration
// (tokens ≥ 1, context_tokens ≥ 0, time_ms > 0). Duplicate points average.
func ParseTable(r io.Reader) (*Table, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(tableHeader)
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("profile table: empty")
		}
		return nil, fmt.Errorf("profile table: %w", err)
	}
	for i, h := range tableHeader {
		if !strings.EqualFold(strings.TrimSpace(head[i]), h) {
			return nil, fmt.Errorf("profile table: header %q; want %q", strings.Join(head, ","), strings.Join(tableHeader, ","))
		}
	}
	var pts []tablePoint
	line := 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("profile table: %w", err)
		}
		var v [3]float64
		for i, f := range rec {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, fmt.Errorf("profile table line %d: %s %q is not a number", line, tableHeader[i], f)
			}
			v[i] = x
		}
		if v[0] < 1 || v[1] < 0 || v[2] <= 0 || v[0] > 1e9 || v[1] > 1e12 || v[2] > 1e9 {
			return nil, fmt.Errorf("profile table line %d: want tokens ≥ 1, context_tokens ≥ 0, time_ms > 0 (and sane)", line)
		}
		pts = append(pts, tablePoint{tokens: v[0], ctx: v[1], secs: v[2] / 1e3})
	}
	return newTable(pts)
}

// tablePoint is one measured iteration.
type tablePoint struct{ tokens, ctx, secs float64 }

// newTable sorts measured points into context levels; duplicate points
// average.
func newTable(pts []tablePoint) (*Table, error) {
	type key struct{ ctx, tok float64 }
	sum := map[key]float64{}
	cnt := map[key]int{}
	var keys []key
	for _, p := range pts {
		k := key{ctx: p.ctx, tok: p.tokens}
		if _, ok := cnt[k]; !ok {
			keys = append(keys, k)
		}
		sum[k] += p.secs
		cnt[k]++
	}
	if len(keys) == 0 {
		return nil, errors.New("profile table: no rows")
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.ctx != b.ctx {
			if a.ctx < b.ctx {
				return -1
			}
			return 1
		}
		if a.tok < b.tok {
			return -1
		}
		if a.tok > b.tok {
			return 1
		}
		return 0
	})
	t := &Table{}
	for _, k := range keys {
		if n := len(t.levels); n == 0 || t.levels[n-1].ctx != k.ctx {
			t.levels = append(t.levels, tableLevel{ctx: k.ctx})
		}
		l := &t.levels[len(t.levels)-1]
		l.tokens = append(l.tokens, k.tok)
		l.secs = append(l.secs, sum[k]/float64(cnt[k]))
	}
	return t, nil
}

// LoadTable reads a profile table from a CSV file.
func LoadTable(path string) (*Table, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile table: %w", err)
	}
	defer f.Close()
	t, err := ParseTable(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// interp returns y at x on the polyline (xs, ys), extending the end
// segments linearly; a single point is a constant.
func interp(xs, ys []float64, x float64) float64 {
	n := len(xs)
	if n == 1 {
		return ys[0]
	}
	i, _ := slices.BinarySearch(xs, x)
	i = min(max(i, 1), n-1)
	x0, x1 := xs[i-1], xs[i]
	return ys[i-1] + (ys[i]-ys[i-1])*(x-x0)/(x1-x0)
}

// Lookup returns the interpolated iteration time, seconds, for a batch of
// tokens new tokens reading ctx context tokens. It never returns less than
// a microsecond, so a wild extrapolation cannot stop time.
func (t *Table) Lookup(tokens int, ctx int64) float64 {
	at := func(l *tableLevel) float64 { return interp(l.tokens, l.secs, float64(tokens)) }
	var s float64
	if len(t.levels) == 1 {
		s = at(&t.levels[0])
	} else {
		xs := make([]float64, 0, 2)
		ys := make([]float64, 0, 2)
		i, _ := slices.BinarySearchFunc(t.levels, float64(ctx), func(l tableLevel, c float64) int {
			switch {
			case l.ctx < c:
				return -1
			case l.ctx > c:
				return 1
			}
			return 0
		})
		i = min(max(i, 1), len(t.levels)-1)
		xs = append(xs, t.levels[i-1].ctx, t.levels[i].ctx)
		ys = append(ys, at(&t.levels[i-1]), at(&t.levels[i]))
		s = interp(xs, ys, float64(ctx))
	}
	return math.Max(s, 1e-6)
}
