package cli

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// runPDRatios runs the workload on the same replicas colocated and then
// split each way --pd-ratios gives, each run quiet and without files
// (run.CompareSplits), and prints each fleet's goodput at --request-rate
// and its per-GPU goodput, then the best split.
func runPDRatios(ctx context.Context, env Env, o *SimOptions) error {
	c := &o.cluster
	splits, colocated, err := c.Splits(o.Engine, givenIn(c.fs, &c.Spec))
	if err != nil {
		return settingError(c.fs, &c.Spec, err)
	}
	if err := o.gateway.SplitError(); err != nil {
		return settingError(o.gateway.fs, &o.gateway.GatewaySpec, err)
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
	cfg, err := o.config(env, func() (*cluster.Config, error) { return colocated, nil })
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
	output := o.out.runOutput(env)
	path, err := run.SaveSplits(&output, res, env.Now())
	if err != nil {
		return fmt.Errorf("--save-result: %w", runError(err, nil, ""))
	}
	fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	return nil
}
