package cli

import (
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// autoscaleFlags put an autoscaler on "goodput sim"'s replicas:
// --autoscale SIGNAL:THRESHOLD[,DOWN] and its bounds and timing.
type autoscaleFlags struct {
	// rule is --autoscale as given; "" for none.
	rule             string
	min, max         int
	upStep, downStep int
	interval, window time.Duration
	cooldown, delay  time.Duration
	fs               *pflag.FlagSet
}

// autoscaleTuning is the flags that need --autoscale.
var autoscaleTuning = []string{"autoscale-min", "autoscale-max", "autoscale-up-step", "autoscale-down-step",
	"autoscale-interval", "autoscale-window", "autoscale-cooldown", "provision-delay"}

func (a *autoscaleFlags) register(fs *pflag.FlagSet) {
	a.fs = fs
	fs.StringVar(&a.rule, "autoscale", "", "add and remove replicas on a signal: SIGNAL:THRESHOLD[,DOWN], one of "+strings.Join(cluster.Signals, ", ")+
		" (p95-ttft:2s, queue:8 waiting per replica, kv:0.8, util:0.7); scale up above THRESHOLD, down below DOWN (default half of it); --replicas is the fleet at time 0 (default --autoscale-min)")
	fs.IntVar(&a.min, "autoscale-min", 1, "autoscaling: fewest replicas (active and provisioning)")
	fs.IntVar(&a.max, "autoscale-max", 8, "autoscaling: most replicas (active and provisioning)")
	fs.IntVar(&a.upStep, "autoscale-up-step", 1, "autoscaling: replicas one scale-up adds")
	fs.IntVar(&a.downStep, "autoscale-down-step", 1, "autoscaling: replicas one scale-down removes (a provisioning one first, else the highest-numbered drains)")
	fs.DurationVar(&a.interval, "autoscale-interval", cluster.DefaultAutoscaleInterval, "autoscaling: how often the controller decides, in virtual time")
	fs.DurationVar(&a.window, "autoscale-window", cluster.DefaultAutoscaleWindow, "autoscaling: how far back p95-ttft and util look")
	fs.DurationVar(&a.cooldown, "autoscale-cooldown", time.Minute, "autoscaling: the least time between two scalings")
	fs.DurationVar(&a.delay, "provision-delay", 2*time.Minute, "autoscaling: how long a new replica takes to serve (model load time), paid for meanwhile")
}

// config is the autoscaler the flags describe, nil without --autoscale.
// A flag's bad value is a usage error naming it; the bounds against the
// fleet are checked by the cluster (clusterFlagError names the flag).
func (a *autoscaleFlags) config() (*cluster.Autoscale, error) {
	if a.rule == "" {
		for _, name := range autoscaleTuning {
			if a.fs != nil && a.fs.Changed(name) {
				return nil, usagef("--%s tunes the autoscaler: give --autoscale SIGNAL:THRESHOLD too", name)
			}
		}
		return nil, nil
	}
	r, err := cluster.ParseAutoscaleRule(a.rule)
	if err != nil {
		return nil, usagef("--autoscale %q: %v", a.rule, err)
	}
	switch {
	case a.min < 1:
		return nil, usagef("--autoscale-min %d: want ≥ 1", a.min)
	case a.upStep < 1:
		return nil, usagef("--autoscale-up-step %d: want ≥ 1", a.upStep)
	case a.downStep < 1:
		return nil, usagef("--autoscale-down-step %d: want ≥ 1", a.downStep)
	case a.interval <= 0:
		return nil, usagef("--autoscale-interval %v: want > 0", a.interval)
	case a.window <= 0:
		return nil, usagef("--autoscale-window %v: want > 0", a.window)
	case a.cooldown < 0:
		return nil, usagef("--autoscale-cooldown %v: want ≥ 0 (0: none)", a.cooldown)
	case a.delay < 0:
		return nil, usagef("--provision-delay %v: want ≥ 0 (0: at once)", a.delay)
	}
	r.Min, r.Max, r.UpStep, r.DownStep = a.min, a.max, a.upStep, a.downStep
	r.Interval, r.Window, r.Cooldown, r.ProvisionDelay = a.interval, a.window, a.cooldown, a.delay
	return &r, nil
}

// initial is the fleet at time 0: --replicas if given, else the minimum.
func (a *autoscaleFlags) initial(replicas int) int {
	if a.fs != nil && a.fs.Changed("replicas") {
		return replicas
	}
	return max(a.min, 1)
}

// autoscaleFlagError names the flag of an Autoscale field the cluster
// refused.
func autoscaleFlagError(field string, err error) error {
	flag := "--autoscale"
	switch strings.TrimPrefix(field, "Autoscale.") {
	case "Min":
		flag = "--autoscale-min"
	case "Max":
		flag = "--autoscale-max"
	case "ExpertParallel":
		flag = "--enable-expert-parallel"
	}
	return usagef("%s: %v", flag, err)
}

// scaledConfig is the cluster config of clusterFlags.config under the
// autoscaler as (or the flags' error err): the fleet at time 0 (a
// cluster even of one replica) behind --router; data-parallel ranks keep
// theirs, and the cluster refuses to scale lockstep ranks.
func (c *clusterFlags) scaledConfig(engine sim.Config, as *cluster.Autoscale, err error) (*cluster.Config, error) {
	if err != nil {
		return nil, err
	}
	if c.dataParallel != 1 || c.expertParallel {
		cfg, err := c.dpConfig(engine)
		if cfg != nil {
			cfg.Autoscale = as
		}
		return cfg, err
	}
	n := c.autoscale.initial(c.replicas)
	if n < 1 {
		return nil, usagef("--replicas %d: want ≥ 1", n)
	}
	r, err := c.routerFlag()
	if err != nil {
		return nil, err
	}
	return &cluster.Config{Router: r, Replicas: cluster.Copies(engine, n), Autoscale: as}, nil
}
