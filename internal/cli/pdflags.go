package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
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
	r, err := c.routerFlag()
	if err != nil {
		return nil, err
	}
	cfg := &cluster.Config{Router: r, Replicas: cluster.Copies(engine, p.prefill+p.decode),
		Disagg: &cluster.Disaggregation{Prefill: p.prefill, Link: p.link}}
	return cfg, nil
}

// runPDRatios runs the workload on the same replicas colocated and then
// split each way --pd-ratios gives, each run quiet and without files
// (run.CompareSplits), and prints each fleet's goodput at --request-rate
// and its per-GPU goodput, then the best split.
func runPDRatios(ctx context.Context, env Env, o *SimOptions) error {
	splits, err := cluster.ParseSplits(o.cluster.pd.ratios)
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
	// Each fleet's runs are quiet and write nothing; --save-result saves
	// the comparison itself, and nothing else is silently dropped.
	switch out := &o.out; {
	case out.HTML != "":
		return usagef("--html: --pd-ratios writes no HTML report (--save-result saves the comparison as JSON)")
	case out.Records != "" && out.Records != "none":
		return usagef("--records: --pd-ratios runs many fleets and keeps no records (run one split with --prefill-replicas and --decode-replicas)")
	}
	save := o.out.SaveResult
	o.out.Records, o.out.SaveResult, o.out.Quiet, o.out.HTML = "none", false, true, ""
	cfg, err := o.config(env, func() (*cluster.Config, error) { return o.colocated(splits[0].Prefill + splits[0].Decode) })
	if err != nil {
		return err
	}
	if cfg.Sessions != nil {
		return usagef("--pd-ratios searches the request rate of independent requests: sessions (--dataset-name %s) keep their own", o.work.o.DatasetName)
	}
	res, err := run.CompareSplits(ctx, cfg, splits, top)
	if err != nil {
		return o.runError(err)
	}
	if err := report.SplitsTerminal(env.Stdout, res); err != nil || !save {
		return err
	}
	return saveSplits(env, &o.out, res)
}

// saveSplits writes the comparison's JSON (report.SplitsJSON) to
// --result-filename in --result-dir, by default pd-ratios-DATE.json.
func saveSplits(env Env, out *outputFlags, res *report.Splits) error {
	b, err := json.MarshalIndent(report.SplitsJSON(res), "", "  ")
	if err != nil {
		return err
	}
	output := out.runOutput(env)
	name := output.ResultName
	if name == "" {
		name = "pd-ratios-" + env.Now().Format("20060102-150405") + ".json"
	}
	path, err := output.WriteResult(filepath.Join(output.Dir, name), append(b, '\n'))
	if err != nil {
		return fmt.Errorf("--save-result: %w", runError(err, nil, ""))
	}
	fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	return nil
}

// colocated is --pd-ratios' fleet colocated: n copies of the engine
// behind --router. The flags that shape a fleet otherwise are refused:
// the splits would not have them.
func (o *SimOptions) colocated(n int) (*cluster.Config, error) {
	c := &o.cluster
	as, err := c.autoscale.config()
	switch {
	case err != nil:
		return nil, err
	case as != nil || c.file != "":
		return nil, usagef("--pd-ratios sizes the fleet from its splits: drop --autoscale and --cluster")
	case o.gateway.set():
		return nil, usagef("--pd-ratios and gateway flags: a gateway in front of a prefill/decode split is not simulated yet")
	}
	r, err := c.routerFlag()
	if err != nil {
		return nil, err
	}
	return &cluster.Config{Router: r, Replicas: cluster.Copies(o.Engine, n)}, nil
}
