// Package fit fits a GPU profile's sustained figures and fixed costs to a
// user's own measurements: it turns bench records into observed step
// times (Observe), models each with the cost model, and solves for the
// parameters the observations identify by Levenberg–Marquardt on relative
// error (Fit), leaving the rest at the base profile's values.
//
// It does no I/O: the caller reads the records and writes the profile
// (Profile renders it as YAML). Its functions are safe for concurrent use.
package fit

import (
	"errors"
	"fmt"
	"math"

	"github.com/goodput/goodput/internal/sim/costmodel"
)

// Setup is the deployment the records were measured on.
type Setup struct {
	// Model and GPU are the model served and the base GPU profile.
	Model costmodel.Model
	GPU   costmodel.GPU
	// TP is the tensor-parallel degree (0 means 1).
	TP int
	// DType and KVCacheDType are the weight and KV dtypes ("" means bf16
	// and auto).
	DType, KVCacheDType string
	// MaxBatchedTokens is the engine's token budget per step, which
	// splits a long prompt's prefill into chunks, tokens (0: no chunking).
	MaxBatchedTokens int
	// GraphMaxTokens is the largest step a CUDA graph covers, tokens (0:
	// the GPU's or the default).
	GraphMaxTokens float64
}

// Param names a fitted parameter.
type Param string

// The parameters Fit may fit.
const (
	// Compute is the sustained GEMM rate (sustained.bf16_tflops, and
	// fp8_tflops at the same ratio), TFLOP/s.
	Compute Param = "sustained.bf16_tflops"
	// Bandwidth is the sustained copy bandwidth (sustained.bandwidth_gbs),
	// GB/s.
	Bandwidth Param = "sustained.bandwidth_gbs"
	// Iteration is the fixed cost of a step (efficiency.iteration_us), µs.
	Iteration Param = "efficiency.iteration_us"
	// Request is the cost per scheduled request per step
	// (efficiency.request_us), µs.
	Request Param = "efficiency.request_us"
)

// Params is every parameter in the order Fit reports them.
var Params = []Param{Compute, Bandwidth, Iteration, Request}

// Estimate is one parameter's outcome.
type Estimate struct {
	// Param names it.
	Param Param
	// Base is the base profile's value and Value the fitted one (equal
	// when not identified), in the parameter's unit.
	Base, Value float64
	// RelErr is one standard error of Value as a fraction of it (from the
	// Jacobian's covariance at the fit's residual noise, at least 0.2 %
	// per observation); 0 when not identified.
	RelErr float64
	// Identified says the observations pinned it down; Why says why not.
	Identified bool
	Why        string
}

// Result is a fit: the estimates, the fitted profile, and each
// observation beside the fitted model's time.
type Result struct {
	Estimates []Estimate
	// GPU is the fitted profile (the base with the estimates applied).
	GPU costmodel.GPU
	// Observations are the inputs; Modelled[i] is the fitted model's time
	// of Observations[i], seconds, and BaseModelled the base profile's.
	Observations []Observation
	Modelled     []float64
	BaseModelled []float64
	// RMSRelErr is the root-mean-square relative error of the fit.
	RMSRelErr float64
	// Warnings say what the fit had to assume.
	Warnings []string
}

// noiseFloor is the relative noise assumed per observation at least (a
// median's resolution), so that a perfect fit (simulated records) still
// shows which parameters the observations barely move.
const noiseFloor = 0.002

// maxRelErr is the largest standard error, as a fraction, at which a
// parameter counts as identified.
const maxRelErr = 0.10

// LongPrompt is the prompt length from which prefill is compute-bound
// enough for the compute rate to show, tokens.
const LongPrompt = 512

// model evaluates observations under one parameter vector.
type model struct {
	setup Setup
	base  costmodel.Sustained
	eff   costmodel.Efficiency
}

// theta is the parameter vector in Params order, in their units.
type theta [4]float64

func newModel(s Setup) (*model, theta, error) {
	if s.TP == 0 {
		s.TP = 1
	}
	if s.DType == "" {
		s.DType = "bf16"
	}
	if s.KVCacheDType == "" {
		s.KVCacheDType = "auto"
	}
	d, err := costmodel.NewDeployment(s.Model, s.GPU, s.TP, s.DType, s.KVCacheDType)
	if err != nil {
		return nil, theta{}, err
	}
	m := &model{setup: s, base: d.Sustained, eff: d.Eff}
	if s.GraphMaxTokens > 0 {
		m.eff.GraphMaxTokens = s.GraphMaxTokens
	}
	return m, theta{d.Sustained.BF16TFLOPS, d.Sustained.BandwidthGBs, d.Eff.IterationUs, d.Eff.RequestUs}, nil
}

// gpu is the base GPU with th's sustained figures.
func (m *model) gpu(th theta) costmodel.GPU {
	g := m.setup.GPU
	s := m.base
	scale := th[0] / s.BF16TFLOPS
	s.BF16TFLOPS, s.BF16Source = th[0], costmodel.SourceMeasured
	if s.FP8TFLOPS > 0 {
		s.FP8TFLOPS, s.FP8Source = s.FP8TFLOPS*scale, costmodel.SourceMeasured
	}
	s.BandwidthGBs, s.BandwidthSource = th[1], costmodel.SourceMeasured
	g.Sustained = s
	return g
}

// deployment builds the cost model at th.
func (m *model) deployment(th theta) (*costmodel.Deployment, error) {
	d, err := costmodel.NewDeployment(m.setup.Model, m.gpu(th), m.setup.TP, m.setup.DType, m.setup.KVCacheDType)
	if err != nil {
		return nil, err
	}
	d.Eff = m.eff
	d.Eff.IterationUs, d.Eff.RequestUs = th[2], th[3]
	return d, nil
}

// seconds is the modelled time of every observation at th.
func (m *model) seconds(th theta, obs []Observation, out []float64) error {
	d, err := m.deployment(th)
	if err != nil {
		return err
	}
	var b costmodel.Batch
	for i, o := range obs {
		switch o.Kind {
		case Prefill:
			// The lone prompt's chunks, each a step of its own.
			done := int(math.Round(o.Cached))
			left := int(math.Round(o.Prompt)) - done
			t := 0.0
			for left > 0 {
				n := left
				if c := m.setup.MaxBatchedTokens; c > 0 && n > c {
					n = c
				}
				b.Reset()
				b.Add(n, done, true)
				t += d.Breakdown(&b).Total
				done += n
				left -= n
			}
			out[i] = t
		case Decode:
			b.Reset()
			c := int(math.Round(o.Context)) - 1
			for range o.Batch {
				b.Add(1, max(c, 0), false)
			}
			out[i] = d.Breakdown(&b).Total
		}
	}
	return nil
}

// ErrNoObservations says the records held nothing to fit.
var ErrNoObservations = errors.New("no observation to fit")

// Fit fits the parameters the observations identify, starting from the
// base profile in s. A parameter the observations cannot identify keeps
// the base value; its Estimate says why.
func Fit(s Setup, obs []Observation) (*Result, error) {
	if len(obs) == 0 {
		return nil, ErrNoObservations
	}
	m, base, err := newModel(s)
	if err != nil {
		return nil, err
	}
	res := &Result{Observations: obs}
	var prefillLong, prefill, decode bool
	batches := map[int]bool{}
	server := true
	for _, o := range obs {
		server = server && o.ServerTimed
		switch o.Kind {
		case Prefill:
			prefill = true
			prefillLong = prefillLong || o.Prompt-o.Cached >= LongPrompt
		case Decode:
			decode = true
			batches[o.Batch] = true
		}
	}
	free := [4]bool{true, true, true, true}
	why := [4]string{}
	if !prefillLong {
		free[0] = false
		why[0] = fmt.Sprintf("no lone prefill of ≥ %d tokens (prefill of short prompts is not compute-bound)", LongPrompt)
		if !prefill {
			why[0] = "no request ran alone, so no prefill was observed"
		}
	}
	if !decode {
		free[1] = false
		why[1] = "no decode observed (requests of ≥ 4 tokens)"
	}
	if len(batches) < 2 {
		free[3] = false
		why[3] = "decode seen at one batch size only (run at several concurrencies)"
	}
	if !server {
		res.Warnings = append(res.Warnings, "some times are the client's (no server timing): the assumed network share was taken off TTFT")
	}
	if !prefill {
		res.Warnings = append(res.Warnings, "no request ran alone: run a level at concurrency 1 to observe prefill")
	}
	// The noise is judged once, from the fit with every parameter the
	// rules allow free: pinning one later worsens the fit, and that misfit
	// must not unseat the others in turn.
	th, err := solve(m, base, free, obs)
	if err != nil {
		return nil, err
	}
	s2 := math.Max(noiseFloor*noiseFloor, meanSquare(m, th, free, obs))
	for {
		// A free parameter the fit barely constrains goes back to the
		// base, the least constrained first, and the rest are refitted.
		se, err := stdErrs(m, th, free, obs, s2)
		if err != nil {
			return nil, err
		}
		worst, wi := 0.0, -1
		for i := range free {
			if free[i] && se[i] > maxRelErr && se[i] > worst {
				worst, wi = se[i], i
			}
		}
		if wi < 0 {
			final := math.Max(noiseFloor*noiseFloor, meanSquare(m, th, free, obs))
			if se, err = stdErrs(m, th, free, obs, final); err != nil {
				return nil, err
			}
			for i := range free {
				res.Estimates = append(res.Estimates, Estimate{Param: Params[i], Base: base[i], Value: th[i], RelErr: se[i], Identified: free[i], Why: why[i]})
			}
			break
		}
		free[wi] = false
		why[wi] = fmt.Sprintf("the observations barely move it (standard error %s at the fit's %.1f %% noise)", RelErrText(worst), 100*math.Sqrt(s2))
		if th, err = solve(m, base, free, obs); err != nil {
			return nil, err
		}
	}
	res.GPU = m.gpu(th)
	res.GPU.Name = s.GPU.Name + "-fitted"
	// A figure kept from the base keeps its source too.
	if !free[0] {
		res.GPU.Sustained.BF16Source, res.GPU.Sustained.FP8Source = m.base.BF16Source, m.base.FP8Source
	}
	if !free[1] {
		res.GPU.Sustained.BandwidthSource = m.base.BandwidthSource
	}
	eff := m.eff
	if s.GPU.Efficiency != nil {
		eff = *s.GPU.Efficiency
	} else {
		eff = costmodel.Efficiency{}
	}
	eff.IterationUs, eff.RequestUs = th[2], th[3]
	res.GPU.Efficiency = &eff
	res.Modelled = make([]float64, len(obs))
	res.BaseModelled = make([]float64, len(obs))
	if err := m.seconds(th, obs, res.Modelled); err != nil {
		return nil, err
	}
	if err := m.seconds(base, obs, res.BaseModelled); err != nil {
		return nil, err
	}
	var ss float64
	for i, o := range obs {
		r := res.Modelled[i]/o.Seconds - 1
		ss += r * r
	}
	res.RMSRelErr = math.Sqrt(ss / float64(len(obs)))
	return res, nil
}

// unidentifiedRelErr is the standard error, as a fraction, past which a
// figure means nothing to a reader: the fit did not constrain the
// parameter at all.
const unidentifiedRelErr = 10

// RelErrText writes a relative standard error for people: "±12 %", or
// "not identified" where it is infinite, NaN or above 1000 % (a figure
// such as ±1947020382166 % says only that).
func RelErrText(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) || x > unidentifiedRelErr {
		return "not identified"
	}
	return fmt.Sprintf("±%.0f %%", 100*x)
}

// Identified reports whether the fit pinned down any parameter.
func (r *Result) Identified() bool {
	for _, e := range r.Estimates {
		if e.Identified {
			return true
		}
	}
	return false
}

// meanSquare is the residual variance of the fit at th: Σr²/(n − p), p
// the free parameters (Σr² when n ≤ p).
func meanSquare(m *model, th theta, free [4]bool, obs []Observation) float64 {
	out := make([]float64, len(obs))
	if m.seconds(th, obs, out) != nil {
		return math.Inf(1)
	}
	ss := 0.0
	for i, o := range obs {
		r := out[i]/o.Seconds - 1
		ss += r * r
	}
	dof := len(obs)
	for _, f := range free {
		if f {
			dof--
		}
	}
	return ss / float64(max(dof, 1))
}

// residuals fills r with the relative errors at the free parameters u
// (log scale factors of base).
func residuals(m *model, base theta, free [4]bool, u []float64, obs []Observation, r, buf []float64) error {
	th := base
	k := 0
	for i := range free {
		if free[i] {
			th[i] = base[i] * math.Exp(u[k])
			k++
		}
	}
	if err := m.seconds(th, obs, buf); err != nil {
		return err
	}
	for i, o := range obs {
		r[i] = buf[i]/o.Seconds - 1
	}
	return nil
}

// solve runs Levenberg–Marquardt over the log scale factors of the free
// parameters (log keeps them positive and equally scaled) and returns the
// fitted vector.
func solve(m *model, base theta, free [4]bool, obs []Observation) (theta, error) {
	p := 0
	for _, f := range free {
		if f {
			p++
		}
	}
	n := len(obs)
	if p == 0 {
		return base, nil
	}
	u := make([]float64, p)
	r := make([]float64, n)
	rt := make([]float64, n)
	buf := make([]float64, n)
	jac := make([][]float64, p)
	for i := range jac {
		jac[i] = make([]float64, n)
	}
	cost := func(r []float64) float64 {
		s := 0.0
		for _, x := range r {
			s += x * x
		}
		return s
	}
	if err := residuals(m, base, free, u, obs, r, buf); err != nil {
		return base, err
	}
	c := cost(r)
	lambda := 1e-3
	const h = 1e-6
	trial := make([]float64, p)
	for iter := 0; iter < 200; iter++ {
		for k := range p {
			copy(trial, u)
			trial[k] += h
			if err := residuals(m, base, free, trial, obs, rt, buf); err != nil {
				return base, err
			}
			for i := range n {
				jac[k][i] = (rt[i] - r[i]) / h
			}
		}
		a, g := normal(jac, r)
		improved := false
		for tries := 0; tries < 20; tries++ {
			aa := make([][]float64, p)
			for i := range p {
				aa[i] = append([]float64(nil), a[i]...)
				aa[i][i] += lambda * max(a[i][i], 1e-12)
			}
			step, ok := solveLinear(aa, g)
			if !ok {
				lambda *= 10
				continue
			}
			for k := range p {
				// A step beyond ×e per iteration is not trusted.
				trial[k] = u[k] - math.Max(-1, math.Min(1, step[k]))
			}
			if err := residuals(m, base, free, trial, obs, rt, buf); err != nil {
				return base, err
			}
			if ct := cost(rt); ct < c {
				rel := (c - ct) / math.Max(c, 1e-300)
				copy(u, trial)
				copy(r, rt)
				c = ct
				lambda = math.Max(lambda/10, 1e-12)
				improved = true
				if rel < 1e-12 {
					return thetaOf(base, free, u), nil
				}
				break
			}
			lambda *= 10
		}
		if !improved {
			break
		}
	}
	return thetaOf(base, free, u), nil
}

func thetaOf(base theta, free [4]bool, u []float64) theta {
	th := base
	k := 0
	for i := range free {
		if free[i] {
			th[i] = base[i] * math.Exp(u[k])
			k++
		}
	}
	return th
}

// stdErrs returns each free parameter's standard error as a fraction of
// its value: √diag(s2·(JᵀJ)⁻¹) in log scale, s2 the relative noise
// variance; +Inf where JᵀJ is singular.
func stdErrs(m *model, th theta, free [4]bool, obs []Observation, s2 float64) ([4]float64, error) {
	var out [4]float64
	p := 0
	for _, f := range free {
		if f {
			p++
		}
	}
	if p == 0 {
		return out, nil
	}
	n := len(obs)
	u := make([]float64, p)
	r := make([]float64, n)
	rt := make([]float64, n)
	buf := make([]float64, n)
	if err := residuals(m, th, free, u, obs, r, buf); err != nil {
		return out, err
	}
	jac := make([][]float64, p)
	const h = 1e-5
	for k := range p {
		jac[k] = make([]float64, n)
		t := make([]float64, p)
		t[k] = h
		if err := residuals(m, th, free, t, obs, rt, buf); err != nil {
			return out, err
		}
		for i := range n {
			jac[k][i] = (rt[i] - r[i]) / h
		}
	}
	a, _ := normal(jac, r)
	inv, ok := invert(a)
	k := 0
	for i := range free {
		if !free[i] {
			continue
		}
		if !ok || inv[k][k] < 0 {
			out[i] = math.Inf(1)
		} else {
			out[i] = math.Sqrt(s2 * inv[k][k])
		}
		k++
	}
	return out, nil
}

// normal returns JᵀJ and Jᵀr for the Jacobian jac (one row per parameter).
func normal(jac [][]float64, r []float64) ([][]float64, []float64) {
	p := len(jac)
	a := make([][]float64, p)
	g := make([]float64, p)
	for i := range p {
		a[i] = make([]float64, p)
		for j := range p {
			for k := range r {
				a[i][j] += jac[i][k] * jac[j][k]
			}
		}
		for k := range r {
			g[i] += jac[i][k] * r[k]
		}
	}
	return a, g
}

// solveLinear solves a·x = b by Gaussian elimination with partial
// pivoting (a is overwritten); ok is false for a singular a.
func solveLinear(a [][]float64, b []float64) ([]float64, bool) {
	n := len(b)
	x := append([]float64(nil), b...)
	for c := range n {
		piv := c
		for r := c + 1; r < n; r++ {
			if math.Abs(a[r][c]) > math.Abs(a[piv][c]) {
				piv = r
			}
		}
		if math.Abs(a[piv][c]) < 1e-300 {
			return nil, false
		}
		a[c], a[piv] = a[piv], a[c]
		x[c], x[piv] = x[piv], x[c]
		for r := c + 1; r < n; r++ {
			f := a[r][c] / a[c][c]
			for k := c; k < n; k++ {
				a[r][k] -= f * a[c][k]
			}
			x[r] -= f * x[c]
		}
	}
	for c := n - 1; c >= 0; c-- {
		for k := c + 1; k < n; k++ {
			x[c] -= a[c][k] * x[k]
		}
		x[c] /= a[c][c]
	}
	return x, true
}

// invert returns a⁻¹, column by column; ok is false for a singular a.
func invert(a [][]float64) ([][]float64, bool) {
	n := len(a)
	inv := make([][]float64, n)
	for i := range inv {
		inv[i] = make([]float64, n)
	}
	for c := range n {
		aa := make([][]float64, n)
		for i := range a {
			aa[i] = append([]float64(nil), a[i]...)
		}
		e := make([]float64, n)
		e[c] = 1
		x, ok := solveLinear(aa, e)
		if !ok {
			return nil, false
		}
		for r := range n {
			inv[r][c] = x[r]
		}
	}
	return inv, true
}
