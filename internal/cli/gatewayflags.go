package cli

import (
	"errors"
	"slices"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// gatewayFlags put a gateway in front of "goodput sim"'s engine or
// replicas: rate limits, priority classes and their pools, overload
// degradation. Separate queues per class are the engine's --priority.
type gatewayFlags struct {
	rateLimit, tokenRateLimit string
	perClass                  bool
	mix                       string
	pools                     string
	degradeAbove              string
	degrade                   string
	smallModel                string
	// small are the small-model replicas apply set up (indexes from 0).
	small []int
}

func (g *gatewayFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&g.rateLimit, "rate-limit", "", "admit at most RATE requests per second or minute (RATE/s, RATE/min), a token bucket of burst=N (default one second's worth); a request finding it empty is refused at once, 429 with the exact Retry-After")
	fs.StringVar(&g.tokenRateLimit, "token-rate-limit", "", "admit at most RATE tokens (prompt + output) per second or minute, as --rate-limit (e.g. 50000/s,burst=100000)")
	fs.BoolVar(&g.perClass, "rate-limit-per-class", false, "give every priority class rate-limit buckets of its own (default: the classes share them)")
	fs.StringVar(&g.mix, "priority-mix", "", "priority classes' shares of the requests, class 0 (interactive) first: 0.8,0.2 (each request's class drawn by a hash of its index); with --priority each replica schedules a lower class first")
	fs.StringVar(&g.pools, "priority-pools", "", "a pool of replicas per priority class, class 0 first, as [NAME=]RANGE of replicas numbered from 1: interactive=1-6,batch=7-8")
	fs.StringVar(&g.degradeAbove, "degrade-above", "", "apply --degrade to requests arriving while more than N requests wait in their pool's queues (summed over its replicas), or with N/replica in every replica's own queue (default 0)")
	fs.StringVar(&g.degrade, "degrade", "", "overload degradation above --degrade-above: max_tokens:N (cap the output), reasoning:N (cut hidden reasoning to N tokens) or small-model:RANGE (route to those replicas, numbered from 1)")
	fs.StringVar(&g.smallModel, "small-model", "", "the model the small-model:RANGE replicas of --degrade run (default: the engine's --model)")
}

// set reports whether any gateway flag was given.
func (g *gatewayFlags) set() bool {
	return g.rateLimit != "" || g.tokenRateLimit != "" || g.perClass || g.mix != "" || g.pools != "" || g.degrade != "" ||
		g.degradeAbove != "" || g.smallModel != ""
}

// apply puts the gateway the flags describe in front of *cc, the
// cluster of --replicas (nil: the engine alone, then a cluster of one).
func (g *gatewayFlags) apply(cc **cluster.Config, engine sim.Config) error {
	if !g.set() {
		return nil
	}
	gc := &cluster.GatewayConfig{PerClass: g.perClass}
	var err error
	if gc.Requests, err = parseRate("--rate-limit", g.rateLimit); err != nil {
		return err
	}
	if gc.Tokens, err = parseRate("--token-rate-limit", g.tokenRateLimit); err != nil {
		return err
	}
	if g.perClass && gc.Requests == nil && gc.Tokens == nil {
		return usagef("--rate-limit-per-class: give --rate-limit or --token-rate-limit")
	}
	if g.mix != "" {
		if gc.Mix, err = cluster.ParseMix(g.mix); err != nil {
			return usagef("--priority-mix %q: %v", g.mix, err)
		}
	}
	if *cc == nil {
		*cc = &cluster.Config{Replicas: []sim.Config{engine}}
	}
	c := *cc
	if c.Disagg != nil {
		return usagef("gateway flags and --prefill-replicas/--decode-replicas: a gateway in front of a prefill/decode split is not simulated yet")
	}
	n := len(c.Replicas)
	if g.pools != "" {
		if gc.Pools, err = cluster.ParsePools(g.pools, n); err != nil {
			return usagef("--priority-pools %q: %v", g.pools, err)
		}
		for k := range gc.Pools {
			gc.ClassPools = append(gc.ClassPools, k)
		}
	}
	above, perReplica, err := cluster.ParseDegradeAbove(g.degradeAbove)
	switch {
	case err != nil:
		return usagef("--degrade-above %q: %v", g.degradeAbove, err)
	case g.degrade == "" && g.degradeAbove != "":
		return usagef("--degrade-above %s: give --degrade, the action", g.degradeAbove)
	case g.degrade != "":
		d, small, err := cluster.ParseDegrade(g.degrade, n)
		if err != nil {
			return usagef("--degrade %q: %v", g.degrade, err)
		}
		d.Above, d.PerReplica = above, perReplica
		if small != nil {
			if d.Pool, err = gc.AddSmallPool(small, n); err != nil {
				return usagef("--degrade %q: %v", g.degrade, err)
			}
			g.small = small
			if g.smallModel != "" {
				for _, i := range small {
					c.Replicas[i].Model = g.smallModel
				}
			}
		}
		gc.Degrade = d
	}
	if g.smallModel != "" && (gc.Degrade == nil || gc.Degrade.Action != cluster.DegradeSmallModel) {
		return usagef("--small-model %s: give --degrade small-model:RANGE, the replicas that run it", g.smallModel)
	}
	c.Gateway = gc
	return nil
}

// parseRate parses --rate-limit or --token-rate-limit (flag), naming it
// in the error.
func parseRate(flag, s string) (*cluster.Bucket, error) {
	b, err := cluster.ParseRate(s)
	if err != nil {
		return nil, usagef("%s %q: %v", flag, s, err)
	}
	return b, nil
}

// flagError names the flag of a gateway setting the run refused (the
// parsers catch most; a pool not covering the replicas, or an engine
// refusing --small-model, gets here); any other err passes as it is.
func (g *gatewayFlags) flagError(err error) error {
	var (
		re *run.ConfigError
		ce *cluster.ConfigError
		se *sim.ConfigError
	)
	if !errors.As(err, &re) || !errors.As(err, &ce) {
		return err
	}
	if ce.Replica >= 0 && g.smallModel != "" && slices.Contains(g.small, ce.Replica) && errors.As(err, &se) && se.Field == "model" {
		return usagef("--small-model: %v", se.Err)
	}
	flag, ok := map[string]string{"Gateway.Requests": "--rate-limit", "Gateway.Tokens": "--token-rate-limit",
		"Gateway.Pools": "--priority-pools", "Gateway.ClassPools": "--priority-pools", "Gateway.Degrade": "--degrade",
		"Gateway.Mix": "--priority-mix"}[ce.Field]
	if !ok {
		return err
	}
	return usagef("%s: %v", flag, ce.Err)
}
