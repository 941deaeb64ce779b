package workload

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// Dist is a distribution of lengths in tokens.
type Dist interface {
	// Sample draws one length (tokens) from rng.
	Sample(rng *rand.Rand) int
	// String gives the distribution in ParseDist's syntax.
	String() string
}

// Fixed is a constant length in tokens.
type Fixed int

// Sample returns the constant.
func (f Fixed) Sample(*rand.Rand) int { return int(f) }

// String returns "fixed:N".
func (f Fixed) String() string { return "fixed:" + strconv.Itoa(int(f)) }

// Uniform is a uniform integer length in [Min, Max] tokens, both included.
type Uniform struct{ Min, Max int }

// Sample draws a length.
func (u Uniform) Sample(rng *rand.Rand) int {
	if u.Max <= u.Min {
		return u.Min
	}
	return u.Min + rng.IntN(u.Max-u.Min+1)
}

// String returns "uniform:A,B".
func (u Uniform) String() string {
	return "uniform:" + strconv.Itoa(u.Min) + "," + strconv.Itoa(u.Max)
}

// Normal is a normal length distribution in tokens, rounded to the nearest
// integer and clamped to at least 1.
type Normal struct{ Mean, Std float64 }

// Sample draws a length.
func (n Normal) Sample(rng *rand.Rand) int {
	return clampLen(n.Mean + n.Std*rng.NormFloat64())
}

// String returns "normal:MEAN,STD".
func (n Normal) String() string { return "normal:" + ftoa(n.Mean) + "," + ftoa(n.Std) }

// LogNormal is a log-normal length distribution in tokens: exp(Mu + Sigma·Z)
// rounded and clamped to at least 1. Mu and Sigma are of the logarithm.
type LogNormal struct{ Mu, Sigma float64 }

// z99 is the standard normal's 99th percentile, Φ⁻¹(0.99).
const z99 = 2.3263478740408408

// LogNormalFromMeanStd returns the log-normal whose mean and standard
// deviation (in tokens) are mean and std: σ² = ln(1 + std²/mean²),
// μ = ln(mean) − σ²/2.
func LogNormalFromMeanStd(mean, std float64) LogNormal {
	s2 := math.Log1p(std * std / (mean * mean))
	return LogNormal{Mu: math.Log(mean) - s2/2, Sigma: math.Sqrt(s2)}
}

// LogNormalFromP50P99 returns the log-normal with median p50 and 99th
// percentile p99 (tokens): μ = ln p50, σ = (ln p99 − μ)/Φ⁻¹(0.99).
func LogNormalFromP50P99(p50, p99 float64) LogNormal {
	mu := math.Log(p50)
	return LogNormal{Mu: mu, Sigma: (math.Log(p99) - mu) / z99}
}

// Sample draws a length.
func (l LogNormal) Sample(rng *rand.Rand) int {
	return clampLen(math.Exp(l.Mu + l.Sigma*rng.NormFloat64()))
}

// String returns "lognormal:p50=..,p99=..", the median and 99th percentile
// in tokens.
func (l LogNormal) String() string {
	return "lognormal:p50=" + ftoa(math.Exp(l.Mu)) + ",p99=" + ftoa(math.Exp(l.Mu+z99*l.Sigma))
}

// Empirical draws uniformly from observed lengths (tokens), e.g. a column of
// a trace.
type Empirical struct {
	// Source names where the values came from, for String.
	Source string
	Values []int
}

// Sample draws one of the values.
func (e Empirical) Sample(rng *rand.Rand) int {
	if len(e.Values) == 0 {
		return 1
	}
	return e.Values[rng.IntN(len(e.Values))]
}

// String returns "empirical:" and the source.
func (e Empirical) String() string { return "empirical:" + e.Source }

// maxLen caps sampled lengths so that float draws far in a tail stay valid
// ints (tokens); no model has a context near it.
const maxLen = 1 << 30

func clampLen(x float64) int {
	if !(x >= 1) {
		return 1
	}
	return int(math.Min(math.Round(x), maxLen))
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// ParseDist parses a length distribution (tokens):
//
//	fixed:N                 always N
//	uniform:A,B             integers A..B, both included
//	normal:MEAN,STD         normal, rounded, at least 1
//	lognormal:MEAN,STD      log-normal with that mean and standard deviation
//	lognormal:p50=X,p99=Y   log-normal with that median and 99th percentile
//	empirical:FILE[:COLUMN] uniform over the values of a CSV column (a header
//	                        name or 1-based number; default the first column)
//	                        or of a one-number-per-line file
//
// A bare number N means fixed:N.
func ParseDist(s string) (Dist, error) {
	kind, arg, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		if n, err := strconv.Atoi(kind); err == nil && n >= 0 {
			return Fixed(n), nil
		}
		return nil, fmt.Errorf("length distribution %q: want KIND:ARGS, e.g. fixed:512, uniform:100,900, normal:500,100, lognormal:p50=500,p99=4000, empirical:FILE[:COLUMN]", s)
	}
	bad := func(want string) error {
		return fmt.Errorf("length distribution %q: want %s", s, want)
	}
	switch strings.ToLower(kind) {
	case "fixed":
		n, err := strconv.Atoi(arg)
		if err != nil || n < 0 {
			return nil, bad("fixed:N with N a non-negative integer")
		}
		return Fixed(n), nil
	case "uniform":
		a, b, ok := strings.Cut(arg, ",")
		lo, err1 := strconv.Atoi(strings.TrimSpace(a))
		hi, err2 := strconv.Atoi(strings.TrimSpace(b))
		if !ok || err1 != nil || err2 != nil || lo < 0 || hi < lo {
			return nil, bad("uniform:A,B with integers 0 <= A <= B")
		}
		return Uniform{Min: lo, Max: hi}, nil
	case "normal":
		m, sd, err := twoFloats(arg)
		if err != nil || m <= 0 || sd < 0 {
			return nil, bad("normal:MEAN,STD with MEAN > 0, STD >= 0")
		}
		return Normal{Mean: m, Std: sd}, nil
	case "lognormal":
		if strings.Contains(arg, "=") {
			p50, p99, err := percentilePair(arg)
			if err != nil || p50 <= 0 || p99 < p50 {
				return nil, bad("lognormal:p50=X,p99=Y with 0 < X <= Y")
			}
			return LogNormalFromP50P99(p50, p99), nil
		}
		m, sd, err := twoFloats(arg)
		if err != nil || m <= 0 || sd < 0 {
			return nil, bad("lognormal:MEAN,STD with MEAN > 0, STD >= 0")
		}
		return LogNormalFromMeanStd(m, sd), nil
	case "empirical":
		return loadEmpirical(arg)
	}
	return nil, fmt.Errorf("length distribution %q: unknown kind %q (want fixed, uniform, normal, lognormal or empirical)", s, kind)
}

func twoFloats(s string) (float64, float64, error) {
	a, b, ok := strings.Cut(s, ",")
	if !ok {
		return 0, 0, errors.New("want two numbers")
	}
	x, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
	y, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, 0, err
	}
	if math.IsInf(x, 0) || math.IsInf(y, 0) || math.IsNaN(x) || math.IsNaN(y) {
		return 0, 0, errors.New("want finite numbers")
	}
	return x, y, nil
}

// percentilePair parses "p50=X,p99=Y" (either order).
func percentilePair(s string) (p50, p99 float64, err error) {
	var have50, have99 bool
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return 0, 0, errors.New("want KEY=VALUE")
		}
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return 0, 0, errors.New("want a finite number")
		}
		switch strings.TrimSpace(strings.ToLower(k)) {
		case "p50":
			p50, have50 = x, true
		case "p99":
			p99, have99 = x, true
		default:
			return 0, 0, errors.New("want keys p50 and p99")
		}
	}
	if !have50 || !have99 {
		return 0, 0, errors.New("want keys p50 and p99")
	}
	return p50, p99, nil
}

// loadEmpirical reads FILE[:COLUMN]. A trailing ":COLUMN" is taken as a
// column only when the whole argument is not an existing file.
func loadEmpirical(arg string) (Dist, error) {
	file, col := arg, ""
	if _, err := os.Stat(arg); err != nil {
		if i := strings.LastIndexByte(arg, ':'); i > 0 {
			file, col = arg[:i], arg[i+1:]
		}
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("empirical length distribution: %w", err)
	}
	defer f.Close()
	vals, err := readColumn(f, file, col)
	if err != nil {
		return nil, err
	}
	src := file
	if col != "" {
		src += ":" + col
	}
	return Empirical{Source: src, Values: vals}, nil
}

// readColumn reads the non-negative integer values of one column of a CSV
// (with or without a header) from r; col is a header name or a 1-based
// column number, "" for the first column.
func readColumn(r io.Reader, file, col string) ([]int, error) {
	t, err := readTable(r, file)
	if err != nil {
		return nil, err
	}
	idx := 0
	if col != "" {
		idx = t.column(col)
		if idx < 0 {
			if n, err := strconv.Atoi(col); err == nil && n >= 1 && n <= t.width {
				idx = n - 1
			} else {
				return nil, fmt.Errorf("%s: no column %q (columns: %s)", file, col, t.describeColumns())
			}
		}
	}
	vals := make([]int, 0, len(t.rows))
	for _, row := range t.rows {
		v, err := parseTokens(row.fields[idx])
		if err != nil {
			return nil, fmt.Errorf("%s:%d: column %d: %w", file, row.line, idx+1, err)
		}
		vals = append(vals, v)
	}
	return vals, nil
}
