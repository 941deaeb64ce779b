package costmodel

import (
	"errors"
	"fmt"
	"math"
)

// LinearProfile is an iteration-time model fitted to measured steps:
//
//	seconds = Base + PerToken·tokens + PerContext·context + PerAttn·pairs
//
// where tokens are the iteration's new tokens, context the KV tokens it
// reads, and pairs its attention (query, key) pairs (Batch.AttnPairs). It
// stands in for the formula when measured data of another stack is given
// (--profile-table splitwise:…). Coefficients are ≥ 0.
type LinearProfile struct {
	Base, PerToken, PerContext, PerAttn float64
	// Points is how many measured steps it was fitted to; MeanAbsRelErr
	// its mean |predicted − measured| / measured over them.
	Points        int
	MeanAbsRelErr float64
}

// Seconds is the predicted time of an iteration over b.
func (p *LinearProfile) Seconds(b *Batch) float64 {
	return p.at(float64(b.Tokens), float64(b.ContextTokens), b.AttnPairs)
}

func (p *LinearProfile) at(tokens, ctx, pairs float64) float64 {
	return math.Max(p.Base+p.PerToken*tokens+p.PerContext*ctx+p.PerAttn*pairs, 1e-6)
}

// fitPoint is one measured step: its features and time, seconds.
type fitPoint struct{ tokens, ctx, pairs, secs float64 }

// fitLinear fits a LinearProfile by least squares on relative error (each
// row weighted by 1/time, so a 30 ms decode counts as much as a 3 s
// prefill), keeping every coefficient ≥ 0: a negative one is pinned to 0
// and the rest refitted.
func fitLinear(pts []fitPoint) (*LinearProfile, error) {
	if len(pts) < 4 {
		return nil, fmt.Errorf("%d measured steps: need at least 4 to fit", len(pts))
	}
	const k = 4
	feat := func(p fitPoint) [k]float64 { return [k]float64{1, p.tokens, p.ctx, p.pairs} }
	// Scale columns to their largest value so the normal equations stay
	// well conditioned (pairs reach 1e9 where the intercept is 1).
	var scale [k]float64
	for _, p := range pts {
		f := feat(p)
		for j := range k {
			scale[j] = math.Max(scale[j], math.Abs(f[j]))
		}
	}
	active := [k]bool{true, true, true, true}
	for j := range k {
		if scale[j] == 0 {
			active[j] = false
		}
	}
	var beta [k]float64
	for range k + 1 {
		var idx []int
		for j := range k {
			if active[j] {
				idx = append(idx, j)
			}
		}
		if len(idx) == 0 {
			return nil, errors.New("nothing to fit")
		}
		n := len(idx)
		a := make([][]float64, n)
		for i := range a {
			a[i] = make([]float64, n+1)
		}
		for _, p := range pts {
			if p.secs <= 0 {
				continue
			}
			w := 1 / p.secs
			f := feat(p)
			for r, jr := range idx {
				xr := f[jr] / scale[jr] * w
				for c, jc := range idx {
					a[r][c] += xr * f[jc] / scale[jc] * w
				}
				a[r][n] += xr * p.secs * w
			}
		}
		sol, err := solve(a)
		if err != nil {
			return nil, err
		}
		beta = [k]float64{}
		worst, worstJ := 0.0, -1
		for r, j := range idx {
			beta[j] = sol[r] / scale[j]
			if sol[r] < worst {
				worst, worstJ = sol[r], j
			}
		}
		if worstJ < 0 {
			break
		}
		active[worstJ] = false
	}
	for j := range beta {
		beta[j] = math.Max(beta[j], 0)
	}
	lp := &LinearProfile{Base: beta[0], PerToken: beta[1], PerContext: beta[2], PerAttn: beta[3], Points: len(pts)}
	for _, p := range pts {
		lp.MeanAbsRelErr += math.Abs(lp.at(p.tokens, p.ctx, p.pairs)-p.secs) / p.secs
	}
	lp.MeanAbsRelErr /= float64(len(pts))
	return lp, nil
}

// solve solves the augmented system a (n rows of n+1) by Gaussian
// elimination with partial pivoting.
func solve(a [][]float64) ([]float64, error) {
	n := len(a)
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[p][c]) {
				p = r
			}
		}
		if math.Abs(a[p][c]) < 1e-12 {
			return nil, errors.New("measured steps do not determine the model (collinear)")
		}
		a[c], a[p] = a[p], a[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k <= n; k++ {
				a[r][k] -= f * a[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		s := a[r][n]
		for k := r + 1; k < n; k++ {
			s -= a[r][k] * x[k]
		}
		x[r] = s / a[r][r]
	}
	return x, nil
}
