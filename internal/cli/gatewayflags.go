package cli

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
		if gc.Mix, err = parseMix(g.mix); err != nil {
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
		if gc.Pools, err = parsePools(g.pools, n); err != nil {
			return usagef("--priority-pools %q: %v", g.pools, err)
		}
		for k := range gc.Pools {
			gc.ClassPools = append(gc.ClassPools, k)
		}
	}
	above, perReplica, err := parseDegradeAbove(g.degradeAbove)
	switch {
	case err != nil:
		return usagef("--degrade-above %q: %v", g.degradeAbove, err)
	case g.degrade == "" && g.degradeAbove != "":
		return usagef("--degrade-above %s: give --degrade, the action", g.degradeAbove)
	case g.degrade != "":
		d, small, err := parseDegrade(g.degrade, n)
		if err != nil {
			return usagef("--degrade %q: %v", g.degrade, err)
		}
		d.Above, d.PerReplica = above, perReplica
		if small != nil {
			if d.Pool, err = addSmallPool(gc, small, n); err != nil {
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

// addSmallPool adds the small-model replicas as a pool of their own and
// returns its index. Without class pools the other replicas become pool
// 0, where every request goes first.
func addSmallPool(gc *cluster.GatewayConfig, small []int, n int) (int, error) {
	if len(gc.Pools) > 0 {
		gc.Pools = append(gc.Pools, cluster.Pool{Name: "small", Replicas: small})
		return len(gc.Pools) - 1, nil
	}
	var rest []int
	for i := range n {
		if !slices.Contains(small, i) {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return 0, fmt.Errorf("the small-model pool takes every replica: leave some for the full model (--replicas)")
	}
	gc.Pools = []cluster.Pool{{Name: "default", Replicas: rest}, {Name: "small", Replicas: small}}
	return 1, nil
}

// parseRate parses --rate-limit's RATE[/s|/min][,burst=N]; "" is no
// limit.
func parseRate(flag, s string) (*cluster.Bucket, error) {
	if s == "" {
		return nil, nil
	}
	bad := func(format string, args ...any) error {
		return usagef("%s %q: %s", flag, s, fmt.Sprintf(format, args...))
	}
	rate, opts, _ := strings.Cut(s, ",")
	per := 1.0
	switch num, unit, ok := strings.Cut(rate, "/"); {
	case !ok:
	case unit == "s":
		rate = num
	case unit == "min" || unit == "m":
		rate, per = num, 60
	default:
		return nil, bad("unit %q: want /s or /min", unit)
	}
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil || !(r > 0) || math.IsInf(r, 0) {
		return nil, bad("rate %q: want a number > 0, per /s or /min", rate)
	}
	b := &cluster.Bucket{Rate: r / per}
	if opts != "" {
		v, ok := strings.CutPrefix(opts, "burst=")
		if !ok {
			return nil, bad("%q: want burst=N after the rate", opts)
		}
		if b.Burst, err = strconv.ParseFloat(v, 64); err != nil || !(b.Burst >= 1) || math.IsInf(b.Burst, 0) {
			return nil, bad("burst %q: want a number ≥ 1", v)
		}
	}
	return b, nil
}

// parseMix parses --priority-mix's shares, class 0 first.
func parseMix(s string) ([]float64, error) {
	var out []float64
	var total float64
	for i, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(v >= 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("class %d's share %q: want a number ≥ 0", i, f)
		}
		out = append(out, v)
		total += v
	}
	if len(out) < 2 {
		return nil, errors.New("want a share per class, at least two (0.8,0.2)")
	}
	if !(total > 0) {
		return nil, errors.New("the shares sum to 0")
	}
	return out, nil
}

// parsePools parses --priority-pools' [NAME=]RANGE list over n replicas.
func parsePools(s string, n int) ([]cluster.Pool, error) {
	var out []cluster.Pool
	for k, f := range strings.Split(s, ",") {
		name, rng, ok := strings.Cut(f, "=")
		if !ok {
			name, rng = "class "+strconv.Itoa(k), f
		}
		reps, err := parseReplicaRange(rng, n)
		if err != nil {
			return nil, fmt.Errorf("class %d: %v", k, err)
		}
		out = append(out, cluster.Pool{Name: name, Replicas: reps})
	}
	if len(out) < 2 {
		return nil, errors.New("want a pool per class, at least two (interactive=1-6,batch=7-8)")
	}
	return out, nil
}

// parseReplicaRange parses A-B or A, replicas numbered from 1 (of n), to
// indexes from 0.
func parseReplicaRange(s string, n int) ([]int, error) {
	a, b, isRange := strings.Cut(s, "-")
	lo, err1 := strconv.Atoi(a)
	hi := lo
	var err2 error
	if isRange {
		hi, err2 = strconv.Atoi(b)
	}
	switch {
	case err1 != nil || err2 != nil:
		return nil, fmt.Errorf("replicas %q: want N or A-B, numbered from 1", s)
	case lo < 1 || hi > n || lo > hi:
		return nil, fmt.Errorf("replicas %q: want 1 ≤ A ≤ B ≤ %d (the replicas)", s, n)
	}
	out := make([]int, 0, hi-lo+1)
	for i := lo; i <= hi; i++ {
		out = append(out, i-1)
	}
	return out, nil
}

// parseDegradeAbove parses --degrade-above's N or N/replica ("" is 0).
func parseDegradeAbove(s string) (int, bool, error) {
	if s == "" {
		return 0, false, nil
	}
	num, per := strings.CutSuffix(s, "/replica")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return 0, false, errors.New("want N or N/replica, waiting requests N ≥ 0")
	}
	return n, per, nil
}

// parseDegrade parses --degrade's ACTION:VALUE; for small-model it also
// returns the replicas (indexes from 0).
func parseDegrade(s string, n int) (*cluster.Degrade, []int, error) {
	action, v, ok := strings.Cut(s, ":")
	if !ok {
		return nil, nil, errors.New("want max_tokens:N, reasoning:N or small-model:RANGE")
	}
	switch action {
	case "max_tokens", "max-tokens":
		k, err := strconv.Atoi(v)
		if err != nil || k < 1 {
			return nil, nil, fmt.Errorf("cap %q: want max_tokens ≥ 1", v)
		}
		return &cluster.Degrade{Action: cluster.DegradeMaxTokens, Value: k}, nil, nil
	case "reasoning":
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			return nil, nil, fmt.Errorf("budget %q: want reasoning tokens ≥ 0", v)
		}
		return &cluster.Degrade{Action: cluster.DegradeReasoning, Value: k}, nil, nil
	case "small-model", "small_model":
		reps, err := parseReplicaRange(v, n)
		if err != nil {
			return nil, nil, err
		}
		return &cluster.Degrade{Action: cluster.DegradeSmallModel}, reps, nil
	}
	return nil, nil, fmt.Errorf("action %q: want max_tokens, reasoning or small-model", action)
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
