package sweep

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
)

// Axis is the load dimension a sweep varies.
type Axis string

// The axes a sweep can vary.
const (
	// AxisRate varies the open-loop arrival rate, requests/s.
	AxisRate Axis = "rate"
	// AxisConcurrency varies the in-flight cap, requests.
	AxisConcurrency Axis = "concurrency"
)

// Unit names the axis' unit for people.
func (a Axis) Unit() string {
	if a == AxisConcurrency {
		return "concurrent requests"
	}
	return "req/s"
}

// step names one unit of load, for slopes ("ms per req/s").
func (a Axis) step() string {
	if a == AxisConcurrency {
		return "added concurrent request"
	}
	return "req/s"
}

// Load is level l's position on axis a: its rate or its concurrency.
func (a Axis) Load(l runlog.Level) float64 {
	if a == AxisConcurrency {
		return float64(l.MaxConcurrency)
	}
	return l.RequestRate
}

// At returns tmpl moved to load x on axis a, labelled; a concurrency is
// rounded to the nearest whole request.
func (a Axis) At(tmpl runlog.Level, x float64) runlog.Level {
	l := tmpl
	if a == AxisConcurrency {
		l.MaxConcurrency = int(math.Round(x))
		l.Label = "c=" + strconv.Itoa(l.MaxConcurrency)
	} else {
		l.RequestRate = x
		l.Label = "rate=" + label(x)
	}
	return l
}

// label writes a rate for a level's name at three significant figures: a
// bisection's midpoints (22.1640625) are noise past that, and the exact
// rate stays in the level's RequestRate.
func label(x float64) string {
	r, err := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	if err != nil {
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
}

// Levels places tmpl at each load on axis a.
func Levels(a Axis, loads []float64, tmpl runlog.Level) []runlog.Level {
	out := make([]runlog.Level, len(loads))
	for i, x := range loads {
		out[i] = a.At(tmpl, x)
	}
	return out
}

// maxLevels bounds a level list: more is a typo, not a sweep.
const maxLevels = 1000

// ParseList reads a comma- or space-separated list of positive loads such
// as "1,2,4,8" (requests/s or concurrencies). Errors name the entry.
func ParseList(s string) ([]float64, error) {
	return parseLoads(s, false)
}

// ParseMultiples reads multiples of a target load such as "1x,1.5x,2x"
// (the x is optional). Errors name the entry.
func ParseMultiples(s string) ([]float64, error) {
	return parseLoads(s, true)
}

func parseLoads(s string, multiples bool) ([]float64, error) {
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' })
	if len(fields) == 0 {
		return nil, fmt.Errorf("no levels in %q", s)
	}
	if len(fields) > maxLevels {
		return nil, fmt.Errorf("%d levels: at most %d", len(fields), maxLevels)
	}
	out := make([]float64, 0, len(fields))
	for _, f := range fields {
		num := f
		if multiples {
			num = strings.TrimSuffix(strings.TrimSuffix(f, "x"), "X")
		}
		v, err := strconv.ParseFloat(num, 64)
		if err != nil || !(v > 0) || math.IsInf(v, 0) || v > 1e9 {
			if multiples {
				return nil, fmt.Errorf("level %q: want a positive multiple such as 1.5x", f)
			}
			return nil, fmt.Errorf("level %q: want a positive number", f)
		}
		out = append(out, v)
	}
	return out, nil
}
