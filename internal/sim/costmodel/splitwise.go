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

// splitwiseColumns are the columns of SplitwiseSim's profiling database
// (perf_model.csv) this reader needs; times are ms.
var splitwiseColumns = []string{"model", "hardware", "prompt_size", "batch_size", "token_size", "prompt_time", "token_time", "tensor_parallel"}

// ParseSplitwise reads a SplitwiseSim profiling database and fits a
// LinearProfile to the rows of one (model, hardware, tensor-parallel)
// group, so that stack's measured step times drive the engine:
//
//   - a prompt row (batch b of p-token prompts, prompt_time) is an iteration
//     of p·b new tokens, reading p·b tokens of context, with b·p(p+1)/2
//     attention pairs;
//   - a token row (token_time) is a decode iteration of b tokens, each
//     reading its prompt plus, on average, half its output, b·(p + t/2 + 1)
//     tokens of context and as many pairs.
//
// A fit, not an interpolation, because the rows sit on a grid of batch and
// prompt sizes that mixed batches (chunked prefill beside decodes) fall
// between. name is used in messages. Names compare case-insensitively.
func ParseSplitwise(r io.Reader, name, model, hardware string, tp int) (*LinearProfile, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty", name)
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(h))] = i
	}
	for _, c := range splitwiseColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("%s: no %q column (want SplitwiseSim's perf_model.csv: %s)", name, c, strings.Join(splitwiseColumns, ","))
		}
	}
	var pts []fitPoint
	groups := map[string]bool{}
	line := 1
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		line++
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		num := func(c string) (float64, error) {
			x, err := strconv.ParseFloat(strings.TrimSpace(rec[col[c]]), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
				return 0, fmt.Errorf("%s:%d: %s %q is not a number ≥ 0", name, line, c, rec[col[c]])
			}
			return x, nil
		}
		var v [6]float64
		for i, c := range []string{"prompt_size", "batch_size", "token_size", "prompt_time", "token_time", "tensor_parallel"} {
			if v[i], err = num(c); err != nil {
				return nil, err
			}
		}
		m, hw := strings.TrimSpace(rec[col["model"]]), strings.TrimSpace(rec[col["hardware"]])
		groups[fmt.Sprintf("%s/%s/tp%g", m, hw, v[5])] = true
		if !strings.EqualFold(m, model) || !strings.EqualFold(hw, hardware) || int(v[5]) != tp {
			continue
		}
		p, b, t := v[0], v[1], v[2]
		if p < 1 || b < 1 || v[3] <= 0 || v[4] <= 0 || p > 1e7 || b > 1e6 || t > 1e7 {
			return nil, fmt.Errorf("%s:%d: want prompt_size, batch_size ≥ 1 (and sane) and times > 0", name, line)
		}
		dctx := b * (p + t/2 + 1)
		pts = append(pts,
			fitPoint{tokens: p * b, ctx: p * b, pairs: b * p * (p + 1) / 2, secs: v[3] / 1e3},
			fitPoint{tokens: b, ctx: dctx, pairs: dctx, secs: v[4] / 1e3})
	}
	if len(pts) == 0 {
		have := make([]string, 0, len(groups))
		for g := range groups {
			have = append(have, g)
		}
		return nil, fmt.Errorf("%s: %w for %s/%s/tp%d (the file has %s)", name, ErrNoRows, model, hardware, tp, strings.Join(slices.Sorted(slices.Values(have)), ", "))
	}
	lp, err := fitLinear(pts)
	if err != nil {
		return nil, fmt.Errorf("%s: %s/%s/tp%d: %w", name, model, hardware, tp, err)
	}
	return lp, nil
}

// ErrNoRows is LoadSplitwise's error for a file that has no rows for the
// model, hardware and TP asked.
var ErrNoRows = errors.New("no rows")

// LoadSplitwise reads ParseSplitwise's input from a file.
func LoadSplitwise(path, model, hardware string, tp int) (*LinearProfile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("profile table: %w", err)
	}
	defer f.Close()
	return ParseSplitwise(f, path, model, hardware, tp)
}
