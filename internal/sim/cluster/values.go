package cluster

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// The value syntax of a gateway's and a prefill/decode split's settings,
// as the command line gives them (beside ParseRouter and
// ParseAutoscaleRule). Errors say what is wrong with the value, never
// which flag gave it: the caller names that.

// ParseRate reads a rate limit RATE[/s|/min][,burst=N]: RATE requests
// (or tokens) per second or minute, burst the bucket's size (0: one
// second's worth). "" is no limit (nil).
func ParseRate(s string) (*Bucket, error) {
	if s == "" {
		return nil, nil
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
		return nil, fmt.Errorf("unit %q: want /s or /min", unit)
	}
	r, err := strconv.ParseFloat(rate, 64)
	if err != nil || !(r > 0) || math.IsInf(r, 0) {
		return nil, fmt.Errorf("rate %q: want a number > 0, per /s or /min", rate)
	}
	b := &Bucket{Rate: r / per}
	if opts != "" {
		v, ok := strings.CutPrefix(opts, "burst=")
		if !ok {
			return nil, fmt.Errorf("%q: want burst=N after the rate", opts)
		}
		if b.Burst, err = strconv.ParseFloat(v, 64); err != nil || !(b.Burst >= 1) || math.IsInf(b.Burst, 0) {
			return nil, fmt.Errorf("burst %q: want a number ≥ 1", v)
		}
	}
	return b, nil
}

// ParseMix reads priority classes' shares of the requests, class 0 first,
// separated by commas: at least two, each ≥ 0, not all 0.
func ParseMix(s string) ([]float64, error) {
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

// ParsePools reads a pool per priority class, class 0 first, as
// [NAME=]RANGE separated by commas (RANGE as ParseReplicaRange over n
// replicas); a pool without a name is "class K".
func ParsePools(s string, n int) ([]Pool, error) {
	var out []Pool
	for k, f := range strings.Split(s, ",") {
		name, rng, ok := strings.Cut(f, "=")
		if !ok {
			name, rng = "class "+strconv.Itoa(k), f
		}
		reps, err := ParseReplicaRange(rng, n)
		if err != nil {
			return nil, fmt.Errorf("class %d: %v", k, err)
		}
		out = append(out, Pool{Name: name, Replicas: reps})
	}
	if len(out) < 2 {
		return nil, errors.New("want a pool per class, at least two (interactive=1-6,batch=7-8)")
	}
	return out, nil
}

// ParseReplicaRange reads A-B or A, replicas numbered from 1 (of n), to
// their indexes from 0.
func ParseReplicaRange(s string, n int) ([]int, error) {
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

// ParseDegradeAbove reads Degrade's threshold, N or N/replica (Above,
// PerReplica); "" is 0.
func ParseDegradeAbove(s string) (int, bool, error) {
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

// ParseDegrade reads an overload degradation ACTION:VALUE — max_tokens:N,
// reasoning:N or small-model:RANGE (RANGE as ParseReplicaRange over n
// replicas) — and for small-model also returns those replicas (indexes
// from 0), for the caller to make a pool (GatewayConfig.AddSmallPool).
func ParseDegrade(s string, n int) (*Degrade, []int, error) {
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
		return &Degrade{Action: DegradeMaxTokens, Value: k}, nil, nil
	case "reasoning":
		k, err := strconv.Atoi(v)
		if err != nil || k < 0 {
			return nil, nil, fmt.Errorf("budget %q: want reasoning tokens ≥ 0", v)
		}
		return &Degrade{Action: DegradeReasoning, Value: k}, nil, nil
	case "small-model", "small_model":
		reps, err := ParseReplicaRange(v, n)
		if err != nil {
			return nil, nil, err
		}
		return &Degrade{Action: DegradeSmallModel}, reps, nil
	}
	return nil, nil, fmt.Errorf("action %q: want max_tokens, reasoning or small-model", action)
}

// AddSmallPool adds the small-model replicas (indexes from 0, of n) as a
// pool of their own and returns its index, for Degrade.Pool. Without
// class pools the other replicas become pool 0, where every request goes
// first; a small pool of every replica is refused.
func (gc *GatewayConfig) AddSmallPool(small []int, n int) (int, error) {
	if len(gc.Pools) > 0 {
		gc.Pools = append(gc.Pools, Pool{Name: "small", Replicas: small})
		return len(gc.Pools) - 1, nil
	}
	var rest []int
	for i := range n {
		if !slices.Contains(small, i) {
			rest = append(rest, i)
		}
	}
	if len(rest) == 0 {
		return 0, fmt.Errorf("the small-model pool takes every replica: leave some for the full model (more replicas)")
	}
	gc.Pools = []Pool{{Name: "default", Replicas: rest}, {Name: "small", Replicas: small}}
	return 1, nil
}

// Copies is n replicas of one engine, a fleet's Config.Replicas (nil for
// n < 1, which New refuses).
func Copies(engine sim.Config, n int) []sim.Config {
	if n < 1 {
		return nil
	}
	out := make([]sim.Config, n)
	for i := range out {
		out[i] = engine
	}
	return out
}

// Split is one prefill/decode split of a fleet: Prefill replicas that
// only prefill, Decode that decode (Disaggregation over Prefill+Decode
// replicas).
type Split struct{ Prefill, Decode int }

// String is the split as ParseSplits reads it, P:D.
func (s Split) String() string { return fmt.Sprintf("%d:%d", s.Prefill, s.Decode) }

// MaxSplits bounds ParseSplits: each split is a whole run to compare.
const MaxSplits = 16

// ParseSplits reads prefill/decode splits "P:D" separated by commas: each
// pool ≥ 1, every split of the same total (they compare one fleet), at
// most MaxSplits.
func ParseSplits(s string) ([]Split, error) {
	var out []Split
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		ps, ds, ok := strings.Cut(part, ":")
		if !ok {
			return nil, fmt.Errorf("%q: want P:D (prefill:decode replicas, e.g. 1:3)", part)
		}
		p, err1 := strconv.Atoi(strings.TrimSpace(ps))
		d, err2 := strconv.Atoi(strings.TrimSpace(ds))
		switch {
		case err1 != nil || err2 != nil:
			return nil, fmt.Errorf("%q: want P:D of whole numbers (e.g. 1:3)", part)
		case p < 1 || d < 1:
			return nil, fmt.Errorf("%q: each pool needs ≥ 1 replica", part)
		case p+d > runlog.MaxReplica:
			return nil, fmt.Errorf("%q: %d replicas are too many (at most %d)", part, p+d, runlog.MaxReplica)
		case len(out) > 0 && p+d != out[0].Prefill+out[0].Decode:
			return nil, fmt.Errorf("%q: %d replicas, but %d:%d has %d: the splits compare one fleet, so give one total", part, p+d, out[0].Prefill, out[0].Decode, out[0].Prefill+out[0].Decode)
		}
		out = append(out, Split{p, d})
		if len(out) > MaxSplits {
			return nil, fmt.Errorf("more than %d splits", MaxSplits)
		}
	}
	return out, nil
}
