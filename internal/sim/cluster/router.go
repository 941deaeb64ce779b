package cluster

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Router policies, the values of Router.Policy.
const (
	// PolicyRoundRobin sends request k to replica k mod N, whatever their
	// load.
	PolicyRoundRobin = "round-robin"
	// PolicyLeastOutstanding sends a request to the replica with the fewest
	// requests in flight (routed there and not yet finished, rejected or
	// aborted); ties go to the lowest index.
	PolicyLeastOutstanding = "least-outstanding"
	// PolicyLeastKV sends a request to the replica whose KV cache is least
	// used (sim.Snapshot.KVUsage); ties go to the fewest outstanding, then
	// the lowest index.
	PolicyLeastKV = "least-kv"
	// PolicyPrefixAware sends a request to the replica that holds the
	// longest prefix of its block hashes, among those whose outstanding
	// requests exceed the least-loaded replica's by at most LoadCap; ties
	// (no replica holding any, say) go to the fewest outstanding, then the
	// lowest index.
	PolicyPrefixAware = "prefix-aware"
	// PolicySessionAffinity sends every turn of a session (Request.Session)
	// to the replica its first turn went to, chosen as least-outstanding
	// does; a request of no session is routed as least-outstanding. The
	// cluster remembers each session's replica for its life (a name and
	// an index per session).
	PolicySessionAffinity = "session-affinity"
	// PolicyDPBalance is vLLM's data-parallel load balancer: a request goes
	// to the rank (replica) with the lowest score 4 × waiting + running
	// (its engine's queue and batch, sim.Snapshot, counting the requests
	// already routed to it at the same moment); ties go to the lowest
	// index. The data-parallel front end uses it.
	PolicyDPBalance = "dp-balance"
)

// Policies lists the router policies, the default first.
var Policies = []string{PolicyRoundRobin, PolicyLeastOutstanding, PolicyLeastKV, PolicyPrefixAware, PolicySessionAffinity, PolicyDPBalance}

// DefaultLoadCap is prefix-aware's load margin when Router.LoadCap is 0:
// a cached prefix is worth a few requests of queue, not an unbounded one.
const DefaultLoadCap = 8

// NoLoadCap as Router.LoadCap lets prefix-aware routing follow the cache
// whatever the load.
const NoLoadCap = -1

// Router says how requests are spread over the replicas. The zero value
// is round-robin.
type Router struct {
	// Policy is one of Policies ("" means PolicyRoundRobin).
	Policy string
	// LoadCap is, for prefix-aware, how many more requests in flight than
	// the least-loaded replica a replica may have and still be chosen for
	// its cached prefix; 0 means DefaultLoadCap, NoLoadCap none. Other
	// policies take none.
	LoadCap int
	// PrefixTokens bounds, for prefix-aware, how many tokens of block
	// hashes the router remembers per replica (least recently routed
	// forgotten first), in tokens; 0 means the replica's KV capacity, so
	// the router forgets about as fast as the replica's prefix cache
	// evicts. Other policies take none.
	PrefixTokens int
}

// policy is a Router.Policy decoded.
type policy uint8

const (
	roundRobin policy = iota
	leastOutstanding
	leastKV
	prefixAware
	sessionAffinity
	dpBalance
)

// policyOf decodes name; false for an unknown one.
func policyOf(name string) (policy, bool) {
	switch name {
	case "", PolicyRoundRobin:
		return roundRobin, true
	case PolicyLeastOutstanding:
		return leastOutstanding, true
	case PolicyLeastKV:
		return leastKV, true
	case PolicyPrefixAware:
		return prefixAware, true
	case PolicySessionAffinity:
		return sessionAffinity, true
	case PolicyDPBalance:
		return dpBalance, true
	}
	return 0, false
}

// check validates r: a known policy, parameters only where the policy
// takes them.
func (r Router) check() error {
	p, ok := policyOf(r.Policy)
	switch {
	case !ok:
		return &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("unknown router policy %q (want %s)", r.Policy, strings.Join(Policies, ", "))}
	case r.LoadCap < NoLoadCap:
		return &ConfigError{Field: "LoadCap", Replica: -1, Err: fmt.Errorf("load cap %d must be ≥ 1 (0 for the default %d, %d for none)", r.LoadCap, DefaultLoadCap, NoLoadCap)}
	case r.PrefixTokens < 0:
		return &ConfigError{Field: "PrefixTokens", Replica: -1, Err: fmt.Errorf("prefix tokens %d must be ≥ 1 (0 for the replica's KV capacity)", r.PrefixTokens)}
	case p != prefixAware && r.LoadCap != 0:
		return &ConfigError{Field: "LoadCap", Replica: -1, Err: fmt.Errorf("a load cap applies to %s routing only, not %s", PolicyPrefixAware, r.name())}
	case p != prefixAware && r.PrefixTokens != 0:
		return &ConfigError{Field: "PrefixTokens", Replica: -1, Err: fmt.Errorf("prefix tokens apply to %s routing only, not %s", PolicyPrefixAware, r.name())}
	}
	return nil
}

func (r Router) name() string {
	if r.Policy == "" {
		return PolicyRoundRobin
	}
	return r.Policy
}

// String writes r as ParseRouter reads it: the policy, then any parameter
// set, "prefix-aware:cap=4,tokens=100000".
func (r Router) String() string {
	var params []string
	switch {
	case r.LoadCap == NoLoadCap:
		params = append(params, "cap=none")
	case r.LoadCap != 0:
		params = append(params, "cap="+strconv.Itoa(r.LoadCap))
	}
	if r.PrefixTokens != 0 {
		params = append(params, "tokens="+strconv.Itoa(r.PrefixTokens))
	}
	if len(params) == 0 {
		return r.name()
	}
	return r.name() + ":" + strings.Join(params, ",")
}

// ParseRouter reads a router as "POLICY[:KEY=VALUE[,KEY=VALUE]]": a policy
// of Policies (any case), and for prefix-aware the parameters cap (the
// load margin, a count ≥ 1 or "none") and tokens (the prefix tokens
// remembered per replica, ≥ 1). A bad value is a *ConfigError naming the
// Router field.
func ParseRouter(s string) (Router, error) {
	name, params, hasParams := strings.Cut(s, ":")
	r := Router{Policy: strings.ToLower(name)}
	if _, ok := policyOf(r.Policy); !ok || r.Policy == "" {
		return Router{}, &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("unknown router policy %q (want %s)", name, strings.Join(Policies, ", "))}
	}
	if !hasParams {
		return r, nil
	}
	if r.Policy != PolicyPrefixAware {
		return Router{}, &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("%s takes no parameters (only %s takes cap and tokens)", r.Policy, PolicyPrefixAware)}
	}
	seen := map[string]bool{}
	for _, kv := range strings.Split(params, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return Router{}, &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("parameter %q: want KEY=VALUE (cap=N, tokens=N)", kv)}
		}
		if seen[k] {
			return Router{}, &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("parameter %q given twice", k)}
		}
		seen[k] = true
		switch k {
		case "cap":
			if v == "none" {
				r.LoadCap = NoLoadCap
				continue
			}
			n, err := positive(v)
			if err != nil {
				return Router{}, &ConfigError{Field: "LoadCap", Replica: -1, Err: fmt.Errorf("cap %q: %w (or none)", v, err)}
			}
			r.LoadCap = n
		case "tokens":
			n, err := positive(v)
			if err != nil {
				return Router{}, &ConfigError{Field: "PrefixTokens", Replica: -1, Err: fmt.Errorf("tokens %q: %w", v, err)}
			}
			r.PrefixTokens = n
		default:
			return Router{}, &ConfigError{Field: "Policy", Replica: -1, Err: fmt.Errorf("unknown parameter %q of %s (want cap, tokens)", k, PolicyPrefixAware)}
		}
	}
	return r, nil
}

// positive parses a decimal count ≥ 1 that fits an int32 (a larger margin
// or memory means nothing for a simulated cluster and only risks overflow).
func positive(s string) (int, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 || n > math.MaxInt32 {
		return 0, errors.New("want a whole number from 1 to 2147483647")
	}
	return int(n), nil
}
