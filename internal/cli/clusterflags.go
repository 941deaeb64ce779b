package cli

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/review"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// clusterFlags put the engine behind a router as a fleet (cluster.Spec):
// replicas, data parallelism, a cluster file, an autoscaler, a
// prefill/decode split, or splits to compare (--pd-ratios).
type clusterFlags struct {
	cluster.Spec
	fs *pflag.FlagSet
}

func (c *clusterFlags) register(fs *pflag.FlagSet) {
	c.Spec, c.fs = cluster.DefaultSpec(), fs
	s, a := &c.Spec, &c.Spec.Autoscale
	fs.IntVar(&s.Replicas, "replicas", s.Replicas, "replicas of the simulated engine behind a router, in one virtual time (1: the engine alone)")
	fs.StringVar(&s.Router, "router", "", "how requests are spread over --replicas: "+strings.Join(cluster.Policies, ", ")+
		"; prefix-aware takes :cap=N (load margin in requests, or none; default 8) and tokens=N (prefix tokens remembered per replica) (default round-robin)")
	fs.IntVar(&s.DataParallel, "data-parallel-size", s.DataParallel, "data-parallel ranks, each a full copy of the engine at --tensor-parallel-size, behind vLLM's DP load balancer (the dp-balance router: lowest 4 × waiting + running)")
	fs.StringVar(&s.File, "cluster", "", "a cluster file (YAML, see docs/simulator.md): pools of replicas, each with its own engine settings (gpu, model, tensor_parallel_size, max_num_seqs, ...), "+
		"behind the file's router; the engine flags given are every pool's defaults (instead of --replicas, --data-parallel-size, --router)")
	fs.BoolVar(&s.ExpertParallel, "enable-expert-parallel", false, "shard an MoE model's experts over all data × tensor-parallel GPUs: the DP ranks step in lockstep and each MoE layer adds a dispatch and a combine all-to-all")
	fs.StringVar(&a.Rule, "autoscale", "", "add and remove replicas on a signal: SIGNAL:THRESHOLD[,DOWN], one of "+strings.Join(cluster.Signals, ", ")+
		" (p95-ttft:2s, queue:8 waiting per replica, kv:0.8, util:0.7); scale up above THRESHOLD, down below DOWN (default half of it); --replicas is the fleet at time 0 (default --autoscale-min)")
	fs.IntVar(&a.Min, "autoscale-min", a.Min, "autoscaling: fewest replicas (active and provisioning)")
	fs.IntVar(&a.Max, "autoscale-max", a.Max, "autoscaling: most replicas (active and provisioning)")
	fs.IntVar(&a.UpStep, "autoscale-up-step", a.UpStep, "autoscaling: replicas one scale-up adds")
	fs.IntVar(&a.DownStep, "autoscale-down-step", a.DownStep, "autoscaling: replicas one scale-down removes (a provisioning one first, else the highest-numbered drains)")
	fs.DurationVar(&a.Interval, "autoscale-interval", a.Interval, "autoscaling: how often the controller decides, in virtual time")
	fs.DurationVar(&a.Window, "autoscale-window", a.Window, "autoscaling: how far back p95-ttft and util look")
	fs.DurationVar(&a.Cooldown, "autoscale-cooldown", a.Cooldown, "autoscaling: the least time between two scalings")
	fs.DurationVar(&a.ProvisionDelay, "provision-delay", a.ProvisionDelay, "autoscaling: how long a new replica takes to serve (model load time), paid for meanwhile")
	fs.IntVar(&s.Prefill, "prefill-replicas", 0, "disaggregate: replicas of the engine that only prefill (each prompt's first token comes from one), with --decode-replicas")
	fs.IntVar(&s.Decode, "decode-replicas", 0, "disaggregate: replicas of the engine that decode what the prefill replicas sent, with --prefill-replicas")
	fs.StringVar(&s.Link, "kv-link", "", "the link a prompt's KV crosses from its prefill replica to a decode replica (α + bytes/β, transfers queueing per prefill replica): "+
		strings.Join(cluster.LinkNames(), ", ")+" (default the GPU's own tensor-parallel link)")
	fs.StringVar(&s.Ratios, "pd-ratios", "", "run every prefill:decode split given (e.g. 1:3,2:2,3:1; one total of replicas) and the same replicas colocated, and report each one's per-GPU goodput under --goodput and the best split")
}

// config is the fleet over engine (nil: the engine alone).
func (c *clusterFlags) config(engine sim.Config) (*cluster.Config, error) {
	return c.Spec.Config(engine, flagfield.Given(c.fs, &c.Spec))
}

// onlySim refuses the cluster flags given where the run is not a
// virtual-time one (sweep without --sim): only that driver runs a fleet.
func (c *clusterFlags) onlySim() (err error) {
	lo := reflect.ValueOf(&c.Spec).Pointer()
	hi := lo + reflect.TypeOf(c.Spec).Size()
	c.fs.VisitAll(func(f *pflag.Flag) {
		if a := flagfield.Addr(f.Value); err == nil && f.Changed && a >= lo && a < hi {
			err = usagef("--%s simulates a cluster in virtual time: give --sim", f.Name)
		}
	})
	return err
}

// gatewayFlags put a gateway in front of the fleet or the engine alone
// (cluster.GatewaySpec). Separate queues per class are the engine's
// --priority.
type gatewayFlags struct {
	cluster.GatewaySpec
	fs *pflag.FlagSet
}

func (g *gatewayFlags) register(fs *pflag.FlagSet) {
	g.fs = fs
	fs.StringVar(&g.RateLimit, "rate-limit", "", "admit at most RATE requests per second or minute (RATE/s, RATE/min), a token bucket of burst=N (default one second's worth); a request finding it empty is refused at once, 429 with the exact Retry-After")
	fs.StringVar(&g.TokenRateLimit, "token-rate-limit", "", "admit at most RATE tokens (prompt + output) per second or minute, as --rate-limit (e.g. 50000/s,burst=100000)")
	fs.BoolVar(&g.PerClass, "rate-limit-per-class", false, "give every priority class rate-limit buckets of its own (default: the classes share them)")
	fs.StringVar(&g.Mix, "priority-mix", "", "priority classes' shares of the requests, class 0 (interactive) first: 0.8,0.2 (each request's class drawn by a hash of its index); with --priority each replica schedules a lower class first")
	fs.StringVar(&g.Pools, "priority-pools", "", "a pool of replicas per priority class, class 0 first, as [NAME=]RANGE of replicas numbered from 1: interactive=1-6,batch=7-8")
	fs.StringVar(&g.DegradeAbove, "degrade-above", "", "apply --degrade to requests arriving while more than N requests wait in their pool's queues (summed over its replicas), or with N/replica in every replica's own queue (default 0)")
	fs.StringVar(&g.Degrade, "degrade", "", "overload degradation above --degrade-above: max_tokens:N (cap the output), reasoning:N (cut hidden reasoning to N tokens) or small-model:RANGE (route to those replicas, numbered from 1)")
	fs.StringVar(&g.SmallModel, "small-model", "", "the model the small-model:RANGE replicas of --degrade run (default: the engine's --model)")
}

// runPDRatios runs the workload on the same replicas colocated and then
// split each way --pd-ratios gives, each run quiet and without files
// (review.CompareSplits), and prints each fleet's goodput at --request-rate
// and its per-GPU goodput, then the best split.
func runPDRatios(ctx context.Context, env Env, o *SimOptions) error {
	return settingError(o.fs, o, pdRatios(ctx, env, o))
}

func pdRatios(ctx context.Context, env Env, o *SimOptions) error {
	c := &o.cluster
	splits, colocated, err := c.Splits(o.Engine, flagfield.Given(c.fs, &c.Spec))
	if err != nil {
		return err
	}
	if err := o.gateway.SplitError(); err != nil {
		return err
	}
	so, err := o.out.Options(o.args)
	if err != nil {
		return err
	}
	top, save, err := review.SplitsOf(o.load.LoadSpec, so, &o.out.OutputSpec, o.work.o.DatasetName)
	if err != nil {
		return err
	}
	o.out.Quiet = true
	cfg, err := o.config(env, func() (*cluster.Config, error) { return colocated, nil })
	if err != nil {
		return err
	}
	res, err := review.CompareSplits(ctx, cfg, splits, top)
	if err != nil {
		return err
	}
	if err := report.SplitsTerminal(env.Stdout, res); err != nil || !save {
		return err
	}
	output := o.out.runOutput(env)
	path, err := review.SaveSplits(&output, res, env.Now())
	if err != nil {
		return &setting.OutputError{Field: "SaveResult", Err: err}
	}
	fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	return nil
}
