package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/sim/costmodel"
)

// pdFlags split "goodput sim"'s fleet into a prefill pool and a decode
// pool with a KV link between them (--prefill-replicas, --decode-replicas,
// --kv-link), or sweep the split of a fixed number of replicas
// (--pd-ratios).
type pdFlags struct {
	prefill, decode int
	link            string
	ratios          string
}

func (p *pdFlags) register(fs *pflag.FlagSet) {
	names := make([]string, 0, 8)
	for _, l := range costmodel.Links() {
		names = append(names, l.Name)
	}
	fs.IntVar(&p.prefill, "prefill-replicas", 0, "disaggregate: replicas of the engine that only prefill (each prompt's first token comes from one), with --decode-replicas")
	fs.IntVar(&p.decode, "decode-replicas", 0, "disaggregate: replicas of the engine that decode what the prefill replicas sent, with --prefill-replicas")
	fs.StringVar(&p.link, "kv-link", "", "the link a prompt's KV crosses from its prefill replica to a decode replica (α + bytes/β, transfers queueing per prefill replica): "+
		strings.Join(names, ", ")+" (default the GPU's own tensor-parallel link)")
	fs.StringVar(&p.ratios, "pd-ratios", "", "run every prefill:decode split given (e.g. 1:3,2:2,3:1; one total of replicas) and the same replicas colocated, and report each one's per-GPU goodput under --goodput and the best split")
}

// set reports whether a split was asked for.
func (p *pdFlags) set() bool { return p.prefill != 0 || p.decode != 0 || p.link != "" }

// config is the split of --prefill-replicas and --decode-replicas copies
// of engine over --kv-link, each pool behind c's router.
func (p *pdFlags) config(engine sim.Config, c *clusterFlags) (*cluster.Config, error) {
	switch {
	case c.replicas != 1:
		return nil, usagef("--replicas %d and --prefill-replicas/--decode-replicas both size the fleet: give one", c.replicas)
	case c.dataParallel != 1 || c.expertParallel:
		return nil, usagef("--prefill-replicas/--decode-replicas: a prefill/decode split with --data-parallel-size or --enable-expert-parallel is not simulated")
	case p.prefill < 1:
		return nil, usagef("--prefill-replicas %d: want ≥ 1 (a split needs both pools)", p.prefill)
	case p.decode < 1:
		return nil, usagef("--decode-replicas %d: want ≥ 1 (a split needs both pools)", p.decode)
	}
	if p.link != "" {
		if _, err := cluster.LinkByName(p.link); err != nil {
			return nil, usagef("--kv-link: %v", err)
		}
	}
	var r cluster.Router
	if c.router != "" {
		var err error
		if r, err = cluster.ParseRouter(c.router); err != nil {
			return nil, usagef("--router %q: %v", c.router, err)
		}
	}
	cfg := &cluster.Config{Router: r, Replicas: make([]sim.Config, p.prefill+p.decode),
		Disagg: &cluster.Disaggregation{Prefill: p.prefill, Link: p.link}}
	for i := range cfg.Replicas {
		cfg.Replicas[i] = engine
	}
	return cfg, nil
}

// pdRow is one fleet's figures in the --pd-ratios table: at the rate
// given, and its per-GPU goodput found by the search.
type pdRow struct {
	name                string
	goodput, attainment float64
	transferP50         float64
	// maxRate is the highest rate found meeting the SLO for pdAttainment
	// of the requests; atTop says the rate given already does.
	maxRate float64
	atTop   bool
}

// pdAttainment is the share of requests meeting the SLO that DistServe's
// goodput asks for; pdSearchSteps the bisection's steps below the rate
// given (its resolution: the rate / 2^steps).
const (
	pdAttainment  = 0.9
	pdSearchSteps = 6
)

// runPDRatios runs the workload on the same replicas colocated and then
// split each way --pd-ratios gives, each run quiet and without files, and
// prints for each fleet its goodput and SLO attainment at --request-rate
// and its per-GPU goodput as DistServe defines it: the highest request
// rate, per GPU, at which 90 % of the requests meet the SLO, found by
// bisection between 0 and --request-rate. Then the best split.
func runPDRatios(ctx context.Context, env Env, o *SimOptions) error {
	ratios, err := cluster.ParseSplits(o.cluster.pd.ratios)
	if err != nil {
		return usagef("--pd-ratios %q: %v", o.cluster.pd.ratios, err)
	}
	switch c := &o.cluster; {
	case c.pd.set():
		return usagef("--pd-ratios sweeps the split: drop --prefill-replicas, --decode-replicas and --kv-link (the GPU's own link is used)")
	case c.replicas != 1 || c.dataParallel != 1 || c.expertParallel:
		return usagef("--pd-ratios sizes the fleet from its splits: drop --replicas, --data-parallel-size and --enable-expert-parallel")
	}
	top, err := strconv.ParseFloat(strings.TrimSpace(o.load.RequestRate), 64)
	if err != nil || !(top > 0) || math.IsInf(top, 0) {
		return usagef("--pd-ratios searches request rates up to --request-rate: give a finite rate (it is %s)", o.load.RequestRate)
	}
	so, err := o.out.statsOptions(o.args)
	if err != nil {
		return err
	}
	if so.SLO.IsZero() {
		return usagef("--pd-ratios compares goodput per GPU: give --goodput (e.g. --goodput ttft:1000 tpot:50)")
	}
	o.out.Records, o.out.SaveResult, o.out.Quiet, o.out.HTML = "none", false, true, ""
	tp := max(o.Engine.TP, 1)
	n := ratios[0].Prefill + ratios[0].Decode
	gpus := float64(n * tp)
	// at runs the fleet (prefill > 0: split) at rate.
	at := func(prefill int, rate float64) (attain, goodput, transfer float64, err error) {
		o.cluster.replicas, o.cluster.pd.prefill, o.cluster.pd.decode = n, 0, 0
		if prefill > 0 {
			o.cluster.replicas, o.cluster.pd.prefill, o.cluster.pd.decode = 1, prefill, n-prefill
		}
		o.load.RequestRate = strconv.FormatFloat(rate, 'g', -1, 64)
		res, err := o.Run(ctx, env)
		if err != nil {
			return 0, 0, 0, err
		}
		l := res.Levels[0]
		transfer = -1
		if l.Replicas != nil && l.Replicas.Transfer != nil {
			transfer = l.Replicas.Transfer.P50
		}
		return l.Summary.SLO.Attainment, l.Summary.SLO.Goodput, transfer, nil
	}
	run1 := func(name string, prefill int) (pdRow, error) {
		row := pdRow{name: name}
		var err error
		if row.attainment, row.goodput, row.transferP50, err = at(prefill, top); err != nil {
			return row, err
		}
		if row.attainment >= pdAttainment {
			row.maxRate, row.atTop = top, true
			return row, nil
		}
		lo, hi := 0.0, top
		for range pdSearchSteps {
			mid := (lo + hi) / 2
			a, _, _, err := at(prefill, mid)
			if err != nil {
				return row, err
			}
			if a >= pdAttainment {
				lo = mid
			} else {
				hi = mid
			}
		}
		row.maxRate = lo
		return row, nil
	}
	rows := make([]pdRow, 0, len(ratios)+1)
	best := -1
	for i := -1; i < len(ratios); i++ {
		name, prefill := "colocated", 0
		if i >= 0 {
			name, prefill = fmt.Sprintf("%d:%d", ratios[i].Prefill, ratios[i].Decode), ratios[i].Prefill
		}
		r, err := run1(name, prefill)
		if err != nil {
			return err
		}
		rows = append(rows, r)
		if i >= 0 && (best < 0 || r.maxRate > rows[best].maxRate) {
			best = len(rows) - 1
		}
	}
	w := env.Stdout
	fmt.Fprintf(w, "%s\n", center(" Prefill/decode splits ", '='))
	fmt.Fprintf(w, "%-40s %d × TP %d = %d GPUs\n", "Replicas:", n, tp, n*tp)
	fmt.Fprintf(w, "%-40s %s, for %.0f %% of requests\n", "SLO:", so.SLO, 100*pdAttainment)
	fmt.Fprintf(w, "%-40s %g (searched below it to %g)\n", "Request rate (req/s):", top, top/(1<<pdSearchSteps))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Split\tGoodput at rate\tSLO met (%)\tMax rate (req/s)\tPer GPU\tKV transfer P50 (ms)")
	for _, r := range rows {
		tr := "-"
		if r.transferP50 >= 0 {
			tr = strconv.FormatFloat(r.transferP50, 'f', 3, 64)
		}
		ge := ""
		if r.atTop {
			ge = "≥ "
		}
		fmt.Fprintf(tw, "%s\t%.2f\t%.1f\t%s%.3g\t%s%.3g\t%s\n", r.name, r.goodput, 100*r.attainment, ge, r.maxRate, ge, r.maxRate/gpus, tr)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b, c := rows[best], rows[0]
	verdict := "beats"
	switch {
	case b.atTop && c.atTop:
		verdict = "cannot be told from (both meet the SLO at the rate given: raise it)"
	case b.maxRate < c.maxRate:
		verdict = "loses to"
	case b.maxRate == c.maxRate:
		verdict = "ties"
	}
	ge := ""
	if b.atTop {
		ge = "≥ "
	}
	fmt.Fprintf(w, "%-40s %s (%s%.3g req/s per GPU; %s colocated, %.3g)\n", "Best split:", b.name, ge, b.maxRate/gpus, verdict, c.maxRate/gpus)
	fmt.Fprintln(w, strings.Repeat("=", 50))
	return nil
}

// center pads title with fill to the report's 50 columns.
func center(title string, fill byte) string {
	n := max(50-len([]rune(title)), 0)
	return strings.Repeat(string(fill), n/2) + title + strings.Repeat(string(fill), n-n/2)
}
