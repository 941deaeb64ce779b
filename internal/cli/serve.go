package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/simserve"
)

// ServeOptions configures "goodput serve".
type ServeOptions struct {
	Host            string
	Port            int
	ServedModelName string
	Engine          sim.Config
	// Slowdown is the factor every engine iteration is stretched by from
	// SlowdownAfter on (a vendor degraded on purpose); 0 means none.
	Slowdown float64
	// SlowdownAfter is how long after the start the slowdown begins; 0
	// means at once.
	SlowdownAfter time.Duration
	// cluster is --replicas/--router or --data-parallel-size: several
	// copies of Engine behind one port.
	cluster clusterFlags
	// gateway is the gateway flags: rate limits, priority pools,
	// degradation in front of the fleet (or the engine alone).
	gateway gatewayFlags
}

func newServeCmd(env Env) *cobra.Command {
	o := ServeOptions{Engine: sim.DefaultConfig()}
	cmd := &cobra.Command{
		Use:     "serve",
		Short:   "Serve a simulated LLM engine over an OpenAI-compatible HTTP API, in real time",
		Long:    helpText("serve"),
		Example: helpText("serve.examples"),
		Args:    noArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return runServe(cmd.Context(), env, &o) },
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Host, "host", "127.0.0.1", "address to listen on (0.0.0.0 for all interfaces)")
	fs.IntVar(&o.Port, "port", 8000, "port to listen on (0 picks a free one)")
	fs.StringVar(&o.Engine.Model, "model", o.Engine.Model, "simulated model: llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id, a .yaml profile or a Hugging Face config.json path")
	fs.StringVar(&o.ServedModelName, "served-model-name", "", "model id the server answers to (default: the model's HF id)")
	fs.Float64Var(&o.Slowdown, "slowdown", 0, "stretch every engine iteration by this factor (3: three times as slow), from --slowdown-after on; 0: none")
	fs.DurationVar(&o.SlowdownAfter, "slowdown-after", 0, "start --slowdown this long after the server starts (0: at once)")
	registerEngineFlags(fs, &o.Engine)
	o.cluster.register(fs)
	o.gateway.register(fs)
	return cmd
}

// runServe serves until ctx is done (Ctrl-C).
func runServe(ctx context.Context, env Env, o *ServeOptions) error {
	if o.Port < 0 || o.Port > 65535 {
		return usagef("--port %d: want 0-65535", o.Port)
	}
	switch {
	case math.IsNaN(o.Slowdown) || o.Slowdown < 0 || o.Slowdown > simserve.MaxSlowdown:
		return usagef("--slowdown %v: want a factor above 0 and at most %d (1 is full speed)", o.Slowdown, simserve.MaxSlowdown)
	case o.SlowdownAfter < 0:
		return usagef("--slowdown-after %v: want ≥ 0", o.SlowdownAfter)
	case o.SlowdownAfter > 0 && o.Slowdown == 0:
		return usagef("--slowdown-after %v: needs --slowdown FACTOR", o.SlowdownAfter)
	}
	if err := o.cluster.onlyFlags(serveClusterFlags, func(f string) error {
		return usagef("--%s: the search over prefill/decode splits runs in virtual time (goodput sim); goodput serve serves one fleet", f)
	}); err != nil {
		return err
	}
	if o.gateway.mix != "" {
		return usagef("--priority-mix: goodput serve takes each request's class from its body's priority field; the mix is a load generator's (goodput sim)")
	}
	fleet, err := o.cluster.config(o.Engine)
	if err != nil {
		return err
	}
	if err := o.gateway.apply(&fleet, o.Engine); err != nil {
		return err
	}
	if fleet != nil && o.Slowdown != 0 {
		return usagef("--slowdown %v: not supported with several replicas (each keeps its own schedule)", o.Slowdown)
	}
	log := slog.New(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opt := simserve.Options{ServedModelName: o.ServedModelName, Logger: log,
		Slowdown: o.Slowdown, SlowdownAfter: o.SlowdownAfter}
	var srv *simserve.Server
	if fleet == nil {
		srv, err = simserve.New(o.Engine, opt)
	} else {
		srv, err = simserve.NewFleet(*fleet, opt)
	}
	if err != nil {
		// A gateway setting names its flag as sim's do.
		wrapped := &run.ConfigError{Field: "Cluster", Err: err}
		if ge := o.gateway.flagError(wrapped); ge != error(wrapped) {
			return ge
		}
		return flagError(serveClusterError(err), "--model")
	}
	url, stop, err := srv.Start(ctx, net.JoinHostPort(o.Host, strconv.Itoa(o.Port)))
	if err != nil {
		return err
	}
	what := run.DescribeEngine(srv.Describe())
	if roles := srv.Roles(); roles != nil {
		p := 0
		for _, r := range roles {
			if r == cluster.RolePrefill {
				p++
			}
		}
		what = fmt.Sprintf("%d prefill + %d decode replicas of %s", p, len(roles)-p, what)
	} else if fleet != nil && fleet.Autoscale != nil {
		what = fmt.Sprintf("%d of at most %d autoscaled replicas of %s", len(fleet.Replicas), srv.Replicas(), what)
	} else if n := srv.Replicas(); n > 1 {
		what = fmt.Sprintf("%d replicas of %s", n, what)
	}
	fmt.Fprintf(env.Stderr, "goodput: serving %s as %q at %s (Ctrl-C to stop)\n", what, srv.Model(), url)
	if o.Slowdown != 0 && o.Slowdown != 1 {
		fmt.Fprintf(env.Stderr, "goodput: every engine iteration runs %v× as long from %v after the start (POST %s/goodput/slowdown?factor=1 restores full speed)\n",
			o.Slowdown, o.SlowdownAfter, url)
	}
	<-ctx.Done()
	return stop()
}

// serveClusterFlags are the cluster flags serve runs on the wall clock.
var serveClusterFlags = []string{"cluster", "replicas", "router", "data-parallel-size", "enable-expert-parallel",
	"prefill-replicas", "decode-replicas", "kv-link", "autoscale", "autoscale-min", "autoscale-max", "autoscale-up-step",
	"autoscale-down-step", "autoscale-interval", "autoscale-window", "autoscale-cooldown", "provision-delay"}

// serveClusterError names --replicas, --router or --enable-expert-parallel
// for a cluster setting NewFleet refused (a replica's engine setting is
// left to the engine flags' map: every replica has the same).
func serveClusterError(err error) error {
	var ce *cluster.ConfigError
	if !errors.As(err, &ce) {
		return err
	}
	if ce.Replica >= 0 {
		return ce.Err
	}
	return clusterFieldFlag(ce)
}
