package costmodel

import (
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// KernelTables holds measured times of single kernels on one GPU: weight
// GEMMs, prefill and decode attention and the tensor-parallel all-reduce.
// A Deployment whose GPU carries them prices those kernels from the tables
// (interpolated log-log in every size dimension) and the rest of a step
// from the formula; Deployment.Kernels says which is which. Values are
// immutable after parsing and safe for concurrent use.
type KernelTables struct {
	// Source says where the figures come from (a file, or the built-in
	// table's citation).
	Source string

	gemm      map[string]*gemmTable // by dtype
	prefill   map[attnKey]*surface  // per layer, over (batch, prompt length)
	decode    map[attnKey]*surface  // per layer, over (batch, cached length)
	allreduce map[arKey]*curve      // over message bytes
	rows      int
}

// Kernel kinds of a kernel table row (its first column).
const (
	KernelGEMM           = "gemm"
	KernelPrefillAttn    = "prefill_attention"
	KernelDecodeAttn     = "decode_attention"
	KernelAllReduce      = "allreduce"
	KernelAllReduceEager = "allreduce_eager"
)

// KernelHeader is the header a kernel table CSV starts with. Every row
// fills the columns its kernel uses and leaves the others empty:
//
//	gemm:                                 dtype (bf16, fp8), m (rows: tokens), n, k
//	prefill_attention, decode_attention:  dtype (KV cache), batch, len (prompt
//	                                      or cached tokens), heads, kv_heads,
//	                                      head_dim (per GPU, one layer)
//	allreduce, allreduce_eager:           dtype, gpus, bytes (the message);
//	                                      inside a CUDA graph, or launched eagerly
//
// time_us is the kernel's time, µs. Lines starting with # are comments
// (a table cites its source there).
var KernelHeader = []string{"kernel", "dtype", "m", "n", "k", "batch", "len", "heads", "kv_heads", "head_dim", "gpus", "bytes", "time_us"}

// KernelRow is one measured kernel time (see KernelHeader); zero fields
// are the columns its kernel does not use.
type KernelRow struct {
	Kernel, DType                 string
	M, N, K                       float64
	Batch, Len                    float64
	Heads, KVHeads, HeadDim, GPUs int
	Bytes                         float64
	TimeUs                        float64
}

type attnKey struct {
	dtype                   string
	heads, kvHeads, headDim int
}

type arKey struct {
	gpus  int
	eager bool
}

// normDType folds a dtype name to bf16, fp16 or fp8 (others unchanged).
func normDType(s string) string {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "bf16", "bfloat16", "auto", "":
		return "bf16"
	case "fp16", "float16", "half":
		return "fp16"
	case "fp8", "fp8_e4m3", "float8", "float8_e4m3fn":
		return "fp8"
	}
	return strings.ToLower(strings.TrimSpace(s))
}

// curve is y(x) measured at points, both as natural logs, x ascending.
// Between points it is linear in log-log; below the first it stays at the
// first (a kernel never gets faster by doing less than its floor); above
// the last it grows with slope hi in log-log.
type curve struct {
	lx, ly []float64
	hi     float64
}

func newCurve(xs, ys []float64, hi float64) *curve {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	c := &curve{hi: hi}
	for _, i := range idx {
		lx, ly := math.Log(xs[i]), math.Log(ys[i])
		if n := len(c.lx); n > 0 && c.lx[n-1] == lx {
			c.ly[n-1] = (c.ly[n-1] + ly) / 2 // duplicate: geometric mean
			continue
		}
		c.lx = append(c.lx, lx)
		c.ly = append(c.ly, ly)
	}
	return c
}

// at returns ln y at ln x = lx.
func (c *curve) at(lx float64) float64 {
	n := len(c.lx)
	if lx <= c.lx[0] {
		return c.ly[0]
	}
	if lx >= c.lx[n-1] {
		return c.ly[n-1] + c.hi*(lx-c.lx[n-1])
	}
	i, _ := slices.BinarySearch(c.lx, lx)
	f := (lx - c.lx[i-1]) / (c.lx[i] - c.lx[i-1])
	return c.ly[i-1] + f*(c.ly[i]-c.ly[i-1])
}

// surface is a kernel's time over (batch, length): one curve over length
// per measured batch size; between batch sizes it is linear in log-log,
// beyond the largest it grows in proportion to the batch, below the
// smallest it stays.
type surface struct {
	lb   []float64 // ln batch, ascending
	rows []*curve
}

func newSurface(pts []KernelRow, lenSlope float64) *surface {
	byBatch := map[float64][]KernelRow{}
	for _, p := range pts {
		byBatch[p.Batch] = append(byBatch[p.Batch], p)
	}
	bs := make([]float64, 0, len(byBatch))
	for b := range byBatch {
		bs = append(bs, b)
	}
	slices.Sort(bs)
	s := &surface{}
	for _, b := range bs {
		var xs, ys []float64
		for _, p := range byBatch[b] {
			xs = append(xs, p.Len)
			ys = append(ys, p.TimeUs*1e-6)
		}
		s.lb = append(s.lb, math.Log(b))
		s.rows = append(s.rows, newCurve(xs, ys, lenSlope))
	}
	return s
}

// at returns ln seconds at ln batch lb and ln length ll.
func (s *surface) at(lb, ll float64) float64 {
	n := len(s.lb)
	if n == 1 || lb <= s.lb[0] {
		return s.rows[0].at(ll)
	}
	if lb >= s.lb[n-1] {
		return s.rows[n-1].at(ll) + (lb - s.lb[n-1])
	}
	i, _ := slices.BinarySearch(s.lb, lb)
	i = min(max(i, 1), n-1)
	f := (lb - s.lb[i-1]) / (s.lb[i] - s.lb[i-1])
	a, b := s.rows[i-1].at(ll), s.rows[i].at(ll)
	return a + f*(b-a)
}

// gemmTable is one dtype's GEMMs: a curve over m for each measured (n, k).
type gemmTable struct {
	ns, ks []float64 // measured n and k, ascending, unique
	c      map[[2]float64]*curve
}

// seconds returns a GEMM's time of m rows by n×k weights, and whether
// the table covers it. Between measured n and k it interpolates log-log
// over the four corners; an n or k above the largest measured runs as
// column (or split-K) blocks of the largest, in proportion; below the
// smallest it is not covered.
func (g *gemmTable) seconds(m, n, k float64) (float64, bool) {
	if len(g.ns) == 0 || n < g.ns[0] || k < g.ks[0] {
		return 0, false
	}
	scale := 1.0
	if top := g.ns[len(g.ns)-1]; n > top {
		scale *= n / top
		n = top
	}
	if top := g.ks[len(g.ks)-1]; k > top {
		scale *= k / top
		k = top
	}
	n0, n1, fn := bracket(g.ns, n)
	k0, k1, fk := bracket(g.ks, k)
	lm := math.Log(math.Max(m, 1))
	corner := func(n, k float64) (float64, bool) {
		c := g.c[[2]float64{n, k}]
		if c == nil {
			return 0, false
		}
		return c.at(lm), true
	}
	a, ok1 := corner(n0, k0)
	b, ok2 := corner(n1, k0)
	c, ok3 := corner(n0, k1)
	d, ok4 := corner(n1, k1)
	if !(ok1 && ok2 && ok3 && ok4) {
		return 0, false
	}
	ly := (a*(1-fn)+b*fn)*(1-fk) + (c*(1-fn)+d*fn)*fk
	return math.Exp(ly) * scale, true
}

// bracket finds x's neighbours in ascending xs and its log-space fraction
// between them (x within [xs[0], xs[len-1]]).
func bracket(xs []float64, x float64) (lo, hi, f float64) {
	i, found := slices.BinarySearch(xs, x)
	if found {
		return xs[i], xs[i], 0
	}
	lo, hi = xs[i-1], xs[i]
	return lo, hi, math.Log(x/lo) / math.Log(hi/lo)
}

// NewKernelTables builds tables from measured rows; source cites them.
func NewKernelTables(rows []KernelRow, source string) (*KernelTables, error) {
	t := &KernelTables{Source: source, gemm: map[string]*gemmTable{}, prefill: map[attnKey]*surface{},
		decode: map[attnKey]*surface{}, allreduce: map[arKey]*curve{}}
	type gk struct {
		dtype string
		n, k  float64
	}
	gemms := map[gk][]KernelRow{}
	attn := map[string]map[attnKey][]KernelRow{}
	ars := map[arKey][]KernelRow{}
	for i, r := range rows {
		if !(r.TimeUs > 0) || math.IsInf(r.TimeUs, 0) {
			return nil, fmt.Errorf("kernel table row %d: time_us must be > 0", i+1)
		}
		switch r.Kernel {
		case KernelGEMM:
			if !(r.M >= 1 && r.N >= 1 && r.K >= 1) {
				return nil, fmt.Errorf("kernel table row %d: gemm needs m, n, k ≥ 1", i+1)
			}
			key := gk{normDType(r.DType), r.N, r.K}
			gemms[key] = append(gemms[key], r)
		case KernelPrefillAttn, KernelDecodeAttn:
			if !(r.Batch >= 1 && r.Len >= 1 && r.Heads >= 1 && r.KVHeads >= 1 && r.HeadDim >= 1) {
				return nil, fmt.Errorf("kernel table row %d: %s needs batch, len, heads, kv_heads, head_dim ≥ 1", i+1, r.Kernel)
			}
			if attn[r.Kernel] == nil {
				attn[r.Kernel] = map[attnKey][]KernelRow{}
			}
			key := attnKey{normDType(r.DType), r.Heads, r.KVHeads, r.HeadDim}
			attn[r.Kernel][key] = append(attn[r.Kernel][key], r)
		case KernelAllReduce, KernelAllReduceEager:
			if !(r.GPUs >= 2 && r.Bytes >= 1) {
				return nil, fmt.Errorf("kernel table row %d: %s needs gpus ≥ 2 and bytes ≥ 1", i+1, r.Kernel)
			}
			key := arKey{r.GPUs, r.Kernel == KernelAllReduceEager}
			ars[key] = append(ars[key], r)
		default:
			return nil, fmt.Errorf("kernel table row %d: unknown kernel %q (want %s, %s, %s, %s or %s)", i+1, r.Kernel,
				KernelGEMM, KernelPrefillAttn, KernelDecodeAttn, KernelAllReduce, KernelAllReduceEager)
		}
		t.rows++
	}
	if t.rows == 0 {
		return nil, errors.New("kernel table: no rows")
	}
	for key, rs := range gemms {
		g := t.gemm[key.dtype]
		if g == nil {
			g = &gemmTable{c: map[[2]float64]*curve{}}
			t.gemm[key.dtype] = g
		}
		var xs, ys []float64
		for _, r := range rs {
			xs = append(xs, r.M)
			ys = append(ys, r.TimeUs*1e-6)
		}
		// Above the largest measured m a GEMM is compute-bound: time ∝ m.
		g.c[[2]float64{key.n, key.k}] = newCurve(xs, ys, 1)
		if !slices.Contains(g.ns, key.n) {
			g.ns = append(g.ns, key.n)
		}
		if !slices.Contains(g.ks, key.k) {
			g.ks = append(g.ks, key.k)
		}
	}
	for _, g := range t.gemm {
		slices.Sort(g.ns)
		slices.Sort(g.ks)
	}
	for key, rs := range attn[KernelPrefillAttn] {
		// A causal prefill's work grows with the square of its length.
		t.prefill[key] = newSurface(rs, 2)
	}
	for key, rs := range attn[KernelDecodeAttn] {
		t.decode[key] = newSurface(rs, 1)
	}
	for key, rs := range ars {
		var xs, ys []float64
		for _, r := range rs {
			xs = append(xs, r.Bytes)
			ys = append(ys, r.TimeUs*1e-6)
		}
		t.allreduce[key] = newCurve(xs, ys, 1)
	}
	return t, nil
}

// Rows is the number of measured kernel times the tables hold.
func (t *KernelTables) Rows() int { return t.rows }

// GEMMSeconds is a weight GEMM's time of m rows by an n×k weight of dtype
// (bf16, fp8), seconds, and whether the tables cover it.
func (t *KernelTables) GEMMSeconds(dtype string, m, n, k float64) (float64, bool) {
	g := t.gemm[normDType(dtype)]
	if g == nil {
		return 0, false
	}
	return g.seconds(m, n, k)
}

// attnSurface finds the measured head configuration for heads and kvHeads
// per GPU: the same one, or one of the same grouping (heads per KV head)
// whose time is scaled by the ratio of heads (attention's work and reads
// grow with them). scale is that ratio.
func attnSurface(m map[attnKey]*surface, dtype string, heads, kvHeads, headDim int) (*surface, float64) {
	dtype = normDType(dtype)
	if s := m[attnKey{dtype, heads, kvHeads, headDim}]; s != nil {
		return s, 1
	}
	var best *surface
	bestScale := 0.0
	for k, s := range m {
		if k.dtype != dtype || k.headDim != headDim || k.heads*kvHeads != heads*k.kvHeads {
			continue
		}
		sc := float64(heads) / float64(k.heads)
		if best == nil || math.Abs(math.Log(sc)) < math.Abs(math.Log(bestScale)) {
			best, bestScale = s, sc
		}
	}
	return best, bestScale
}

// PrefillAttnSeconds is one layer's causal prefill attention of batch
// prompts of length tokens each, with heads and kvHeads per GPU of
// headDim, KV cache in dtype, seconds, and whether the tables cover it.
func (t *KernelTables) PrefillAttnSeconds(dtype string, batch, length float64, heads, kvHeads, headDim int) (float64, bool) {
	s, sc := attnSurface(t.prefill, dtype, heads, kvHeads, headDim)
	if s == nil {
		return 0, false
	}
	return math.Exp(s.at(math.Log(math.Max(batch, 1)), math.Log(math.Max(length, 1)))) * sc, true
}

// DecodeAttnSeconds is one layer's decode attention of batch sequences
// each over length cached tokens, seconds, and whether the tables cover it.
func (t *KernelTables) DecodeAttnSeconds(dtype string, batch, length float64, heads, kvHeads, headDim int) (float64, bool) {
	s, sc := attnSurface(t.decode, dtype, heads, kvHeads, headDim)
	if s == nil {
		return 0, false
	}
	return math.Exp(s.at(math.Log(math.Max(batch, 1)), math.Log(math.Max(length, 1)))) * sc, true
}

// AllReduceSeconds is one all-reduce of bytes over gpus GPUs, inside a
// CUDA graph or launched eagerly, seconds, and whether the tables cover it.
func (t *KernelTables) AllReduceSeconds(bytes float64, gpus int, eager bool) (float64, bool) {
	c := t.allreduce[arKey{gpus, eager}]
	if c == nil {
		return 0, false
	}
	return math.Exp(c.at(math.Log(math.Max(bytes, 1)))), true
}

// ParseKernelTables reads a kernel table CSV (see KernelHeader).
func ParseKernelTables(r io.Reader, source string) (*KernelTables, error) {
	rows, err := ParseKernelRows(r)
	if err != nil {
		return nil, err
	}
	return NewKernelTables(rows, source)
}

// ParseKernelRows reads the rows of a kernel table CSV (see KernelHeader).
func ParseKernelRows(r io.Reader) ([]KernelRow, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = len(KernelHeader)
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("kernel table: empty")
		}
		return nil, fmt.Errorf("kernel table: %w", err)
	}
	for i, h := range KernelHeader {
		if !strings.EqualFold(strings.TrimSpace(head[i]), h) {
			return nil, fmt.Errorf("kernel table: header %q; want %q", strings.Join(head, ","), strings.Join(KernelHeader, ","))
		}
	}
	var rows []KernelRow
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("kernel table: %w", err)
		}
		line, _ := cr.FieldPos(0)
		var v [11]float64
		for i, f := range rec[2:] {
			f = strings.TrimSpace(f)
			if f == "" {
				continue
			}
			x, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 || x > 1e15 {
				return nil, fmt.Errorf("kernel table line %d: %s %q is not a number ≥ 0", line, KernelHeader[i+2], f)
			}
			v[i] = x
		}
		for _, j := range []int{5, 6, 7, 8} { // heads, kv_heads, head_dim, gpus
			if v[j] != math.Trunc(v[j]) || v[j] > 1<<20 {
				return nil, fmt.Errorf("kernel table line %d: %s must be a whole number", line, KernelHeader[j+2])
			}
		}
		rows = append(rows, KernelRow{Kernel: strings.ToLower(strings.TrimSpace(rec[0])), DType: rec[1],
			M: v[0], N: v[1], K: v[2], Batch: v[3], Len: v[4], Heads: int(v[5]), KVHeads: int(v[6]), HeadDim: int(v[7]),
			GPUs: int(v[8]), Bytes: v[9], TimeUs: v[10]})
		if _, err := NewKernelTables(rows[len(rows)-1:], ""); err != nil {
			return nil, fmt.Errorf("kernel table line %d: %w", line, errors.Unwrap(err))
		}
	}
	return rows, nil
}

// WriteKernelRows writes rows as a kernel table CSV, with comment lines
// (each prefixed "# ") first.
func WriteKernelRows(w io.Writer, comments []string, rows []KernelRow) error {
	for _, c := range comments {
		if _, err := fmt.Fprintf(w, "# %s\n", c); err != nil {
			return err
		}
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(KernelHeader); err != nil {
		return err
	}
	num := func(x float64) string {
		if x == 0 {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	for _, r := range rows {
		if err := cw.Write([]string{r.Kernel, normDType(r.DType), num(r.M), num(r.N), num(r.K), num(r.Batch), num(r.Len),
			num(float64(r.Heads)), num(float64(r.KVHeads)), num(float64(r.HeadDim)), num(float64(r.GPUs)), num(r.Bytes),
			strconv.FormatFloat(r.TimeUs, 'g', 5, 64)}); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

// LoadKernelTables reads kernel tables from path: a kernel table CSV, or
// a directory in aiconfigurator's CSV layout (see LoadAICTables).
func LoadKernelTables(path string) (*KernelTables, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return LoadAICTables(path, "")
	}
	if _, err := os.Stat(path + "_gemm.csv"); err == nil {
		return LoadAICTables(filepath.Dir(path), filepath.Base(path))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kernel table: %w", err)
	}
	defer f.Close()
	t, err := ParseKernelTables(f, path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// builtinKernels caches parsed built-in kernel tables by name (GPU
// profiles are decoded afresh on every lookup; their tables need not be).
var builtinKernels sync.Map // string → *KernelTables

// kernelTables resolves g's kernel tables: KernelTables if set, else
// Kernels loaded (a built-in name first, then a path); nil for none.
func (g *GPU) kernelTables() (*KernelTables, error) {
	if g.KernelTables != nil || g.Kernels == "" {
		return g.KernelTables, nil
	}
	name := g.Kernels
	if v, ok := builtinKernels.Load(name); ok {
		return v.(*KernelTables), nil
	}
	if b, err := builtin.ReadFile("profiles/kernels/" + name); err == nil && !strings.ContainsAny(name, `/\`) {
		t, err := ParseKernelTables(bytes.NewReader(b), "built-in "+name)
		if err != nil {
			return nil, fmt.Errorf("gpu %s: kernels %s: %w", g.Name, name, err)
		}
		builtinKernels.Store(name, t)
		return t, nil
	}
	t, err := LoadKernelTables(name)
	if err != nil {
		return nil, fmt.Errorf("gpu %s: kernels: %w", g.Name, err)
	}
	return t, nil
}
