package costmodel

import (
	"fmt"
	"math"
	"strings"
)

// gridRes is the points per octave of a kernel plan's precomputed grids.
// Within a quarter octave a kernel's time is so nearly straight that
// linear interpolation there matches the tables' log-log interpolation to
// a fraction of a per cent, and needs no logarithm or exponential.
const gridRes = 4

// quarter holds 2^(1/4), 2^(1/2), 2^(3/4): the cell boundaries within an
// octave.
var quarter = [3]float64{math.Pow(2, 0.25), math.Pow(2, 0.5), math.Pow(2, 0.75)}

// cell returns i with 2^(i/gridRes) ≤ x < 2^((i+1)/gridRes), for x ≥ 1,
// from x's binary exponent and three comparisons.
func cell(x float64) int {
	// x's bits: its binary exponent, and its mantissa as a number in [1, 2).
	bits := math.Float64bits(x)
	exp := int(bits>>52&0x7ff) - 1023
	m := math.Float64frombits(bits&^(0x7ff<<52) | 1023<<52)
	q := 0
	if m >= quarter[1] {
		q = 2
		if m >= quarter[2] {
			q = 3
		}
	} else if m >= quarter[0] {
		q = 1
	}
	return exp*gridRes + q
}

// grid1 is seconds over x ≥ 1 sampled at x = 2^(i/gridRes); between
// points it is linear, below 1 it stays, above the last point it grows as
// x^hi (hi 1 or 2). A lookup is a few comparisons and one multiply-add:
// no search, no allocation.
type grid1 struct {
	xs, ys, slope []float64
	hi            float64
}

func newGrid1(octaves int, hi float64, f func(x float64) float64) *grid1 {
	n := octaves*gridRes + 1
	g := &grid1{xs: make([]float64, n), ys: make([]float64, n), slope: make([]float64, n), hi: hi}
	for i := range n {
		g.xs[i] = math.Exp2(float64(i) / gridRes)
		g.ys[i] = f(g.xs[i])
	}
	for i := range n - 1 {
		g.slope[i] = (g.ys[i+1] - g.ys[i]) / (g.xs[i+1] - g.xs[i])
	}
	return g
}

func (g *grid1) at(x float64) float64 {
	if x <= 1 {
		return g.ys[0]
	}
	n := len(g.xs)
	i := cell(x)
	if i >= n-1 {
		r := x / g.xs[n-1]
		if g.hi == 2 {
			return g.ys[n-1] * r * r
		}
		return g.ys[n-1] * r
	}
	return g.ys[i] + (x-g.xs[i])*g.slope[i]
}

// grid2 is seconds over (batch, length), one grid1 over length per batch
// 2^(i/gridRes); between them linear, above the last batch in proportion
// to it.
type grid2 struct {
	bs   []float64
	rows []*grid1
}

func newGrid2(batchOctaves, lenOctaves int, lenHi float64, f func(b, l float64) float64) *grid2 {
	n := batchOctaves*gridRes + 1
	g := &grid2{bs: make([]float64, n), rows: make([]*grid1, n)}
	for i := range n {
		b := math.Exp2(float64(i) / gridRes)
		g.bs[i] = b
		g.rows[i] = newGrid1(lenOctaves, lenHi, func(l float64) float64 { return f(b, l) })
	}
	return g
}

func (g *grid2) at(b, l float64) float64 {
	if b <= 1 {
		return g.rows[0].at(l)
	}
	n := len(g.bs)
	i := cell(b)
	if i >= n-1 {
		return g.rows[n-1].at(l) * b / g.bs[n-1]
	}
	a, c := g.rows[i].at(l), g.rows[i+1].at(l)
	return a + (c-a)*(b-g.bs[i])/(g.bs[i+1]-g.bs[i])
}

// kernelPlan is a Deployment's kernel tables resolved to its own shapes
// once, at NewDeployment: a step then looks each part up in a
// precomputed grid instead of searching the tables.
type kernelPlan struct {
	source      string
	denseIn     []bool  // which of Deployment.dense the tables cover
	dense       *grid1  // Σ covered dense GEMMs × layers, over tokens
	head        *grid1  // the LM head, over sequences (nil: formula)
	prefill     *grid2  // one layer's prefill attention, over (sequences, equivalent length)
	decode      *grid2  // one layer's decode attention, over (sequences, mean context)
	ar, arEager *grid1  // one all-reduce of the activations, over tokens (graph, eager)
	pairRate    float64 // (query, key) pairs per second of one layer's prefill attention at its longest measured prompt
}

// gemmDType is the GEMM table a weight dtype's GEMMs run as: bf16 or fp8
// (W8A8); int4 kernels are not tabled.
func (d *Deployment) gemmDType() string {
	switch d.weightBytes {
	case 2:
		return "bf16"
	case 1:
		if d.Sustained.FP8TFLOPS > 0 {
			return "fp8"
		}
	}
	return ""
}

// newKernelPlan resolves t to d's shapes; nil when nothing is covered.
func newKernelPlan(d *Deployment, t *KernelTables) *kernelPlan {
	p := &kernelPlan{source: t.Source, denseIn: make([]bool, len(d.dense))}
	any := false
	if dt := d.gemmDType(); dt != "" {
		var in []gemm
		for i, g := range d.dense {
			if _, ok := t.GEMMSeconds(dt, 1, g.n, g.k); ok {
				p.denseIn[i] = true
				in = append(in, g)
			}
		}
		if len(in) > 0 {
			any = true
			p.dense = newGrid1(16, 1, func(m float64) float64 {
				s := 0.0
				for _, g := range in {
					x, _ := t.GEMMSeconds(dt, m, g.n, g.k)
					s += math.Max(x, m*g.flops/d.gemmRate) * g.count
				}
				return s
			})
		}
		// The LM head is 16-bit whatever the weights.
		if _, ok := t.GEMMSeconds("bf16", 1, d.head.n, d.head.k); ok {
			any = true
			p.head = newGrid1(14, 1, func(m float64) float64 {
				x, _ := t.GEMMSeconds("bf16", m, d.head.n, d.head.k)
				return math.Max(x, m*d.head.flops/(d.Sustained.BF16TFLOPS*1e12))
			})
		}
	}
	m := &d.Model
	if !m.MLA() {
		heads := m.Heads / d.TP
		kvHeads := max(1, m.KVHeads/d.TP)
		hd := m.headDim()
		_, okP := t.PrefillAttnSeconds(d.KVDType, 1, 1, heads, kvHeads, hd)
		_, okD := t.DecodeAttnSeconds(d.KVDType, 1, 1, heads, kvHeads, hd)
		if okP && okD {
			any = true
			// No kernel beats the GPU's sustained tensor-core rate: a
			// table row faster than that is a measurement error (the
			// shared H200 prefill rows imply 2.3 PFLOP/s at 8,192 tokens,
			// 2.9× the H100's same kernel on the same compute), so the
			// lookup is held to that roofline.
			peak := d.Sustained.BF16TFLOPS * 1e12
			perPair := d.attnFlops / float64(m.Layers)
			p.prefill = newGrid2(11, 17, 2, func(b, l float64) float64 {
				x, _ := t.PrefillAttnSeconds(d.KVDType, b, l, heads, kvHeads, hd)
				return math.Max(x, b*l*(l+1)/2*perPair/peak)
			})
			const long = 16384
			p.pairRate = long * (long + 1) / 2 / p.prefill.at(1, long)
			p.decode = newGrid2(12, 18, 1, func(b, l float64) float64 {
				x, _ := t.DecodeAttnSeconds(d.KVDType, b, l, heads, kvHeads, hd)
				return x
			})
		}
	}
	if d.TP > 1 {
		_, okG := t.AllReduceSeconds(1, d.TP, false)
		_, okE := t.AllReduceSeconds(1, d.TP, true)
		if okG {
			any = true
			p.ar = newGrid1(16, 1, func(tok float64) float64 {
				x, _ := t.AllReduceSeconds(tok*d.arBytes, d.TP, false)
				return x
			})
			p.arEager = p.ar
			if okE {
				p.arEager = newGrid1(16, 1, func(tok float64) float64 {
					x, _ := t.AllReduceSeconds(tok*d.arBytes, d.TP, true)
					return x
				})
			}
		}
	}
	if !any {
		return nil
	}
	return p
}

// KernelCoverage says which parts of a step a Deployment looks up in
// measured kernel tables and which the formula estimates.
type KernelCoverage struct {
	// Source is the tables' source; "" when the deployment has none.
	Source string
	// GEMMs is the number of distinct weight GEMMs of a step (per layer,
	// and the LM head); GEMMsLookedUp how many the tables price.
	GEMMs, GEMMsLookedUp int
	// Attention and AllReduce report whether prefill and decode attention
	// and the tensor-parallel all-reduce are looked up.
	Attention, AllReduce bool
	// Estimated names the parts the formula prices.
	Estimated []string
}

// Kernels reports d's kernel-table coverage.
func (d *Deployment) Kernels() KernelCoverage {
	c := KernelCoverage{GEMMs: len(d.dense) + 1}
	p := d.plan
	if p != nil {
		c.Source = p.source
		for _, in := range p.denseIn {
			if in {
				c.GEMMsLookedUp++
			}
		}
		if p.head != nil {
			c.GEMMsLookedUp++
		}
		c.Attention = p.prefill != nil
		c.AllReduce = p.ar != nil
	}
	if c.GEMMsLookedUp < c.GEMMs {
		c.Estimated = append(c.Estimated, fmt.Sprintf("%d of %d GEMMs", c.GEMMs-c.GEMMsLookedUp, c.GEMMs))
	}
	if d.moeLayer > 0 {
		c.Estimated = append(c.Estimated, "MoE experts")
	}
	if !c.Attention {
		c.Estimated = append(c.Estimated, "attention")
	}
	if d.TP > 1 && !c.AllReduce {
		c.Estimated = append(c.Estimated, "all-reduce")
	}
	c.Estimated = append(c.Estimated, "elementwise", "sampler", "step overheads")
	return c
}

// String is one line: what is looked up (and where from), what estimated.
func (c KernelCoverage) String() string {
	if c.Source == "" {
		return "kernel tables: none (every kernel estimated by the formula)"
	}
	var in []string
	if c.GEMMsLookedUp > 0 {
		in = append(in, fmt.Sprintf("%d of %d GEMMs", c.GEMMsLookedUp, c.GEMMs))
	}
	if c.Attention {
		in = append(in, "attention")
	}
	if c.AllReduce {
		in = append(in, "all-reduce")
	}
	return fmt.Sprintf("kernel tables (%s): looked up %s; estimated %s", c.Source, strings.Join(in, ", "), strings.Join(c.Estimated, ", "))
}
