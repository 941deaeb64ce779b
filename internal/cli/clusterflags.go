package cli

import (
	"errors"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// clusterFlags put "goodput sim"'s engine behind a router as several
// replicas: --replicas and --router, or vLLM's data parallelism
// (--data-parallel-size, its DP load balancer) with or without
// --enable-expert-parallel.
type clusterFlags struct {
	replicas int
	// router is --router as given; "" when not given (round-robin).
	router string
	// dataParallel is --data-parallel-size (1: none).
	dataParallel   int
	expertParallel bool
	// file is --cluster, a cluster file ("": none); fs is the flag set,
	// to tell the flags given alongside it.
	file string
	fs   *pflag.FlagSet
	// names are the flags register declared, for the commands that take
	// only some (onlyFlags).
	names []string
	// autoscale is --autoscale and its tuning (autoscaleflags.go).
	autoscale autoscaleFlags
	// pd splits the replicas into prefill and decode pools (pdflags.go).
	pd pdFlags
}

func (c *clusterFlags) register(fs *pflag.FlagSet) {
	own := pflag.NewFlagSet("cluster", pflag.ContinueOnError)
	own.IntVar(&c.replicas, "replicas", 1, "replicas of the simulated engine behind a router, in one virtual time (1: the engine alone)")
	own.StringVar(&c.router, "router", "", "how requests are spread over --replicas: "+strings.Join(cluster.Policies, ", ")+
		"; prefix-aware takes :cap=N (load margin in requests, or none; default 8) and tokens=N (prefix tokens remembered per replica) (default round-robin)")
	own.IntVar(&c.dataParallel, "data-parallel-size", 1, "data-parallel ranks, each a full copy of the engine at --tensor-parallel-size, behind vLLM's DP load balancer (the dp-balance router: lowest 4 × waiting + running)")
	own.StringVar(&c.file, "cluster", "", clusterFileUsage)
	own.BoolVar(&c.expertParallel, "enable-expert-parallel", false, "shard an MoE model's experts over all data × tensor-parallel GPUs: the DP ranks step in lockstep and each MoE layer adds a dispatch and a combine all-to-all")
	c.autoscale.register(own)
	c.pd.register(own)
	own.VisitAll(func(f *pflag.Flag) { c.names = append(c.names, f.Name) })
	fs.AddFlagSet(own)
	c.fs = fs
}

// config is the cluster of --replicas copies of engine behind --router,
// or of --cluster's pools over engine, or nil for the engine alone.
func (c *clusterFlags) config(engine sim.Config) (*cluster.Config, error) {
	as, err := c.autoscale.config()
	switch {
	case c.file != "" && as != nil:
		// An added replica copies one engine; a file's pools differ.
		return nil, usagef("--autoscale and --cluster: an autoscaled fleet is copies of one engine; give --replicas, not a cluster file")
	case c.pd.set() && (as != nil || c.file != ""):
		return nil, usagef("--prefill-replicas/--decode-replicas size the split's pools themselves: drop --autoscale and --cluster")
	case c.file != "":
		return c.fileConfig(engine)
	case c.pd.set():
		return c.pd.config(engine, c)
	case err != nil || as != nil:
		return c.scaledConfig(engine, as, err)
	}
	if c.dataParallel != 1 || c.expertParallel {
		return c.dpConfig(engine)
	}
	if c.replicas < 1 {
		return nil, usagef("--replicas %d: want ≥ 1 (1: the engine alone)", c.replicas)
	}
	r, err := c.routerFlag()
	if err != nil {
		return nil, err
	}
	if c.replicas == 1 {
		if c.router != "" {
			return nil, usagef("--router %s spreads requests over replicas: give --replicas 2 or more", c.router)
		}
		return nil, nil
	}
	return &cluster.Config{Router: r, Replicas: cluster.Copies(engine, c.replicas)}, nil
}

// dpConfig is --data-parallel-size ranks of engine behind the dp-balance
// router, in lockstep with --enable-expert-parallel (one rank too: its
// experts are then sharded over its tensor-parallel GPUs only).
func (c *clusterFlags) dpConfig(engine sim.Config) (*cluster.Config, error) {
	switch {
	case c.dataParallel < 1:
		return nil, usagef("--data-parallel-size %d: want ≥ 1 (1: one rank)", c.dataParallel)
	case c.replicas != 1:
		return nil, usagef("--replicas %d and --data-parallel-size %d both copy the engine: give one", c.replicas, c.dataParallel)
	case c.router != "":
		return nil, usagef("--router %s: data-parallel ranks are balanced as vLLM does (%s); use --replicas for another router", c.router, cluster.PolicyDPBalance)
	}
	return &cluster.Config{Router: cluster.Router{Policy: cluster.PolicyDPBalance}, ExpertParallel: c.expertParallel, Replicas: cluster.Copies(engine, c.dataParallel)}, nil
}

// clusterFlagError names --replicas or --router for a cluster setting the
// run refused; a replica's engine setting is left to the engine flags'
// map (every replica has the same), anything else passes as it is.
func clusterFlagError(err error) error {
	var (
		re *run.ConfigError
		ce *cluster.ConfigError
	)
	if !errors.As(err, &re) || !strings.HasPrefix(re.Field, "Cluster.") || !errors.As(err, &ce) || ce.Replica >= 0 {
		return err
	}
	return clusterFieldFlag(ce)
}

// clusterFieldFlag is a cluster setting the cluster refused as the usage
// error of the flag that set it.
func clusterFieldFlag(ce *cluster.ConfigError) error {
	if strings.HasPrefix(ce.Field, "Autoscale.") {
		return autoscaleFlagError(ce.Field, ce.Err)
	}
	switch ce.Field {
	case "Replicas":
		return usagef("--replicas: %v", ce.Err)
	case "ExpertParallel":
		return usagef("--enable-expert-parallel: %v", ce.Err)
	case "Disagg", "Disagg.Prefill":
		return usagef("--prefill-replicas: %v", ce.Err)
	case "Disagg.Link":
		return usagef("--kv-link: %v", ce.Err)
	}
	return usagef("--router: %v", ce.Err)
}

// routerFlag is --router's router (the zero Router, round-robin, when not
// given).
func (c *clusterFlags) routerFlag() (cluster.Router, error) {
	if c.router == "" {
		return cluster.Router{}, nil
	}
	r, err := cluster.ParseRouter(c.router)
	if err != nil {
		return cluster.Router{}, usagef("--router %q: %v", c.router, err)
	}
	return r, nil
}
