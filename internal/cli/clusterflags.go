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
// replicas: --replicas and --router.
type clusterFlags struct {
	replicas int
	// router is --router as given; "" when not given (round-robin).
	router string
}

func (c *clusterFlags) register(fs *pflag.FlagSet) {
	fs.IntVar(&c.replicas, "replicas", 1, "replicas of the simulated engine behind a router, in one virtual time (1: the engine alone)")
	fs.StringVar(&c.router, "router", "", "how requests are spread over --replicas: "+strings.Join(cluster.Policies, ", ")+
		"; prefix-aware takes :cap=N (load margin in requests, or none; default 8) and tokens=N (prefix tokens remembered per replica) (default round-robin)")
}

// config is the cluster of --replicas copies of engine behind --router,
// or nil for the engine alone.
func (c *clusterFlags) config(engine sim.Config) (*cluster.Config, error) {
	if c.replicas < 1 {
		return nil, usagef("--replicas %d: want ≥ 1 (1: the engine alone)", c.replicas)
	}
	var r cluster.Router
	if c.router != "" {
		var err error
		if r, err = cluster.ParseRouter(c.router); err != nil {
			return nil, usagef("--router %q: %v", c.router, err)
		}
	}
	if c.replicas == 1 {
		if c.router != "" {
			return nil, usagef("--router %s spreads requests over replicas: give --replicas 2 or more", c.router)
		}
		return nil, nil
	}
	cfg := &cluster.Config{Router: r, Replicas: make([]sim.Config, c.replicas)}
	for i := range cfg.Replicas {
		cfg.Replicas[i] = engine
	}
	return cfg, nil
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
	if ce.Field == "Replicas" {
		return usagef("--replicas: %v", ce.Err)
	}
	return usagef("--router: %v", ce.Err)
}
