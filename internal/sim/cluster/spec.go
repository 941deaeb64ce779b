package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
)

// Spec is a fleet as a user gives it (the command line's cluster flags):
// copies of one engine behind a router, data-parallel ranks, a cluster
// file, an autoscaler or a prefill/decode split. Config checks it and
// builds the Config; its errors are *setting.Error naming Spec's fields.
type Spec struct {
	// Replicas copies the engine (1: the engine alone).
	Replicas int
	// Router is the router as ParseRouter reads it; "" for round-robin.
	Router string
	// DataParallel is vLLM's data-parallel ranks behind its DP balancer
	// (1: none); ExpertParallel steps them in lockstep.
	DataParallel   int
	ExpertParallel bool
	// File is a cluster file (ParseFile); "" for none.
	File string
	// Autoscale adds and removes copies on a signal.
	Autoscale AutoscaleSpec
	// Prefill and Decode split the fleet into pools over Link (a
	// LinkByName; "" for the GPU's own).
	Prefill, Decode int
	Link            string
	// Ratios are splits to compare (ParseSplits), for Splits.
	Ratios string
}

// AutoscaleSpec is an autoscaler as a user gives it: the rule
// (ParseAutoscaleRule; "" for none), then the Autoscale fields.
type AutoscaleSpec struct {
	Rule                                       string
	Min, Max, UpStep, DownStep                 int
	Interval, Window, Cooldown, ProvisionDelay time.Duration
}

// DefaultSpec is the engine alone, with the autoscaler's defaults should
// a rule be given.
func DefaultSpec() Spec {
	return Spec{Replicas: 1, DataParallel: 1, Autoscale: AutoscaleSpec{Min: 1, Max: 8, UpStep: 1, DownStep: 1,
		Interval: DefaultAutoscaleInterval, Window: DefaultAutoscaleWindow, Cooldown: time.Minute, ProvisionDelay: 2 * time.Minute}}
}

// Config is the fleet over engine (the engine settings given, a file's
// pools' defaults), nil for the engine alone. given tells the settings
// given explicitly: Replicas given is the autoscaled fleet at time 0 (else
// Autoscale.Min), and a setting a cluster file says itself is refused.
// It checks what New and NewDisagg would refuse short of running, so
// every setting's error names it.
func (s Spec) Config(engine sim.Config, given setting.Given) (*Config, error) {
	as, err := s.Autoscale.config(func(f string) bool { return given.Has("Autoscale." + f) })
	if err != nil {
		return nil, setting.Within("Autoscale", err)
	}
	var cfg *Config
	switch {
	case s.File != "" && as != nil:
		// An added replica copies one engine; a file's pools differ.
		return nil, setting.Errorf("", "", "%v and %v: an autoscaled fleet is copies of one engine; give %v, not a cluster file",
			setting.Name("Autoscale.Rule"), setting.Name("File"), setting.Name("Replicas"))
	case s.split() && (as != nil || s.File != ""):
		return nil, setting.Errorf("", "", "%v/%v size the split's pools themselves: drop %v and %v",
			setting.Name("Prefill"), setting.Name("Decode"), setting.Name("Autoscale.Rule"), setting.Name("File"))
	case s.File != "":
		return s.fileConfig(engine, given)
	case s.split():
		cfg, err = s.splitConfig(engine)
	case s.DataParallel != 1 || s.ExpertParallel:
		cfg, err = s.dpConfig(engine)
	default:
		n := s.Replicas
		if as != nil && !given.Has("Replicas") {
			n = s.Autoscale.Min
		}
		if n < 1 {
			hint := " (1: the engine alone)"
			if as != nil {
				hint = ""
			}
			return nil, setting.Errorf("Replicas", strconv.Itoa(n), "want ≥ 1%s", hint)
		}
		r, err := s.router()
		switch {
		case err != nil:
			return nil, err
		case n == 1 && as == nil && s.Router != "":
			return nil, setting.Errorf("", "", "%v %s spreads requests over replicas: give %v 2 or more", setting.Name("Router"), s.Router, setting.Name("Replicas"))
		case n == 1 && as == nil:
			return nil, nil
		}
		cfg = &Config{Router: r, Replicas: Copies(engine, n)}
	}
	if err != nil {
		return nil, err
	}
	cfg.Autoscale = as
	return cfg, s.check(*cfg)
}

// split reports whether a prefill/decode split is asked for.
func (s Spec) split() bool { return s.Prefill != 0 || s.Decode != 0 || s.Link != "" }

// router is Router's router (round-robin when "").
func (s Spec) router() (Router, error) {
	if s.Router == "" {
		return Router{}, nil
	}
	r, err := ParseRouter(s.Router)
	if err != nil {
		return Router{}, setting.Errorf("Router", strconv.Quote(s.Router), "%v", err)
	}
	return r, nil
}

// dpConfig is DataParallel ranks of engine behind the dp-balance router,
// in lockstep with ExpertParallel (one rank too: its experts are then
// sharded over its tensor-parallel GPUs only).
func (s Spec) dpConfig(engine sim.Config) (*Config, error) {
	switch {
	case s.DataParallel < 1:
		return nil, setting.Errorf("DataParallel", strconv.Itoa(s.DataParallel), "want ≥ 1 (1: one rank)")
	case s.Replicas != 1:
		return nil, setting.Errorf("", "", "%v %d and %v %d both copy the engine: give one",
			setting.Name("Replicas"), s.Replicas, setting.Name("DataParallel"), s.DataParallel)
	case s.Router != "":
		return nil, setting.Errorf("Router", s.Router, "data-parallel ranks are balanced as vLLM does (%s); use %v for another router",
			PolicyDPBalance, setting.Name("Replicas"))
	}
	return &Config{Router: Router{Policy: PolicyDPBalance}, ExpertParallel: s.ExpertParallel, Replicas: Copies(engine, s.DataParallel)}, nil
}

// splitConfig is Prefill and Decode copies of engine over Link, each pool
// behind Router.
func (s Spec) splitConfig(engine sim.Config) (*Config, error) {
	switch {
	case s.Replicas != 1:
		return nil, setting.Errorf("", "", "%v %d and %v/%v both size the fleet: give one",
			setting.Name("Replicas"), s.Replicas, setting.Name("Prefill"), setting.Name("Decode"))
	case s.DataParallel != 1 || s.ExpertParallel:
		return nil, setting.Errorf("", "", "%v/%v: a prefill/decode split with %v or %v is not simulated",
			setting.Name("Prefill"), setting.Name("Decode"), setting.Name("DataParallel"), setting.Name("ExpertParallel"))
	case s.Prefill < 1:
		return nil, setting.Errorf("Prefill", strconv.Itoa(s.Prefill), "want ≥ 1 (a split needs both pools)")
	case s.Decode < 1:
		return nil, setting.Errorf("Decode", strconv.Itoa(s.Decode), "want ≥ 1 (a split needs both pools)")
	}
	if s.Link != "" {
		if _, err := LinkByName(s.Link); err != nil {
			return nil, setting.Errorf("Link", "", "%v", err)
		}
	}
	r, err := s.router()
	return &Config{Router: r, Replicas: Copies(engine, s.Prefill+s.Decode),
		Disagg: &Disaggregation{Prefill: s.Prefill, Link: s.Link}}, err
}

// fileConfig is File's cluster, its pools' engine settings over engine.
// The settings that copy the engine or route over the copies say what the
// file does: giving one with it is refused, so that none is silently
// ignored. The file's own errors are a *setting.Error of no field, their
// message naming file, line and key.
func (s Spec) fileConfig(engine sim.Config, given setting.Given) (*Config, error) {
	for _, f := range []struct{ field, key string }{
		{"Replicas", "a pool's replicas:"},
		{"DataParallel", "a pool's replicas: and router: dp-balance"},
		{"Router", "router:"},
		{"ExpertParallel", "enable_expert_parallel: true"},
	} {
		if given.Has(f.field) {
			return nil, setting.Errorf("", "", "%v and %v: the cluster file says it (%s); give one", setting.Name(f.field), setting.Name("File"), f.key)
		}
	}
	cfg, err := ParseFile(s.File, engine)
	if err != nil {
		// The message names the file, the line, the pool and the key.
		return nil, setting.Errorf("", "", "%v", err)
	}
	return &cfg, nil
}

// config is the autoscaler, nil without a rule; given tells the fields
// given, which need a rule.
func (a AutoscaleSpec) config(given setting.Given) (*Autoscale, error) {
	if a.Rule == "" {
		for _, f := range []string{"Min", "Max", "UpStep", "DownStep", "Interval", "Window", "Cooldown", "ProvisionDelay"} {
			if given.Has(f) {
				return nil, setting.Errorf("", "", "%v tunes the autoscaler: give %v SIGNAL:THRESHOLD too", setting.Name(f), setting.Name("Rule"))
			}
		}
		return nil, nil
	}
	r, err := ParseAutoscaleRule(a.Rule)
	if err != nil {
		return nil, setting.Errorf("Rule", strconv.Quote(a.Rule), "%v", err)
	}
	for _, c := range []struct {
		field string
		bad   bool
		value any
		want  string
	}{
		{"Min", a.Min < 1, a.Min, "want ≥ 1"},
		{"UpStep", a.UpStep < 1, a.UpStep, "want ≥ 1"},
		{"DownStep", a.DownStep < 1, a.DownStep, "want ≥ 1"},
		{"Interval", a.Interval <= 0, a.Interval, "want > 0"},
		{"Window", a.Window <= 0, a.Window, "want > 0"},
		{"Cooldown", a.Cooldown < 0, a.Cooldown, "want ≥ 0 (0: none)"},
		{"ProvisionDelay", a.ProvisionDelay < 0, a.ProvisionDelay, "want ≥ 0 (0: at once)"},
	} {
		if c.bad {
			return nil, setting.Errorf(c.field, fmt.Sprint(c.value), "%s", c.want)
		}
	}
	r.Min, r.Max, r.UpStep, r.DownStep = a.Min, a.Max, a.UpStep, a.DownStep
	r.Interval, r.Window, r.Cooldown, r.ProvisionDelay = a.Interval, a.Window, a.Cooldown, a.ProvisionDelay
	return &r, nil
}

// check is what New (and NewDisagg, NewGateway) refuse of cfg's own
// settings, short of building its engines, with a Spec field's name; a
// dense model under ExpertParallel too, from one engine built (all are
// copies; an engine that fails is left to the run, which names its
// setting).
func (s Spec) check(cfg Config) error {
	err := error(nil)
	switch {
	case len(cfg.Replicas) > runlog.MaxReplica:
		err = &ConfigError{Field: "Replicas", Replica: -1, Err: errTooMany(len(cfg.Replicas))}
	case cfg.Autoscale != nil:
		err = cfg.Autoscale.check(len(cfg.Replicas), cfg.ExpertParallel)
	case cfg.ExpertParallel:
		if e, nerr := sim.New(cfg.Replicas[0]); nerr == nil && !e.Deployment().MoE() {
			err = &ConfigError{Field: "ExpertParallel", Replica: -1, Err: errDense(1, e.Config().Model)}
		}
	}
	return s.specError(err)
}

// specFields are the Spec fields of the Config fields a *ConfigError
// names ("" for the field's own name).
var specFields = map[string]string{
	"Policy": "Router", "LoadCap": "Router", "PrefixTokens": "Router", "Replicas": "", "ExpertParallel": "",
	"Autoscale.Min": "", "Autoscale.Max": "", "Autoscale.ExpertParallel": "ExpertParallel",
}

// specError is a *ConfigError about the fleet's own settings (not a
// replica's engine) as the *setting.Error of the Spec field that set it:
// the rest of Autoscale is its Rule, replicas copied as data-parallel
// ranks their DataParallel. Any other error passes as it is.
func (s Spec) specError(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Replica >= 0 {
		return err
	}
	f, ok := specFields[ce.Field]
	switch {
	case !ok && strings.HasPrefix(ce.Field, "Autoscale."):
		f = "Autoscale.Rule"
	case f == "":
		f = ce.Field
	}
	if f == "Replicas" && s.DataParallel != 1 {
		f = "DataParallel"
	}
	return setting.Errorf(f, "", "%v", ce.Err)
}

// Splits are Ratios' splits of one fleet and that fleet colocated: as
// many copies of engine behind Router. The settings that shape a fleet
// otherwise are refused: the splits would not have them.
func (s Spec) Splits(engine sim.Config, given setting.Given) ([]Split, *Config, error) {
	splits, err := ParseSplits(s.Ratios)
	switch {
	case err != nil:
		return nil, nil, setting.Errorf("Ratios", strconv.Quote(s.Ratios), "%v", err)
	case s.split():
		return nil, nil, setting.Errorf("", "", "%v sweeps the split: drop %v, %v and %v (the GPU's own link is used)",
			setting.Name("Ratios"), setting.Name("Prefill"), setting.Name("Decode"), setting.Name("Link"))
	case s.Replicas != 1 || s.DataParallel != 1 || s.ExpertParallel:
		return nil, nil, setting.Errorf("", "", "%v sizes the fleet from its splits: drop %v, %v and %v",
			setting.Name("Ratios"), setting.Name("Replicas"), setting.Name("DataParallel"), setting.Name("ExpertParallel"))
	}
	as, err := s.Autoscale.config(func(f string) bool { return given.Has("Autoscale." + f) })
	switch {
	case err != nil:
		return nil, nil, setting.Within("Autoscale", err)
	case as != nil || s.File != "":
		return nil, nil, setting.Errorf("", "", "%v sizes the fleet from its splits: drop %v and %v",
			setting.Name("Ratios"), setting.Name("Autoscale.Rule"), setting.Name("File"))
	}
	r, err := s.router()
	if err != nil {
		return nil, nil, err
	}
	return splits, &Config{Router: r, Replicas: Copies(engine, splits[0].Prefill+splits[0].Decode)}, nil
}

// GatewaySpec is a gateway as a user gives it, each setting in the
// syntax of its parser: RateLimit and TokenRateLimit (ParseRate), Mix
// (ParseMix), Pools (ParsePools), DegradeAbove (ParseDegradeAbove),
// Degrade (ParseDegrade); PerClass gives each class buckets of its own,
// SmallModel is the model of Degrade's small-model replicas ("": the
// engine's).
type GatewaySpec struct {
	RateLimit, TokenRateLimit string
	PerClass                  bool
	Mix, Pools                string
	DegradeAbove, Degrade     string
	SmallModel                string
}

// fields are GatewaySpec's fields in order, with their values as
// given ("" when not).
func (g GatewaySpec) fields() [][2]string {
	per := ""
	if g.PerClass {
		per = "true"
	}
	return [][2]string{{"RateLimit", g.RateLimit}, {"TokenRateLimit", g.TokenRateLimit}, {"PerClass", per}, {"Mix", g.Mix},
		{"Pools", g.Pools}, {"DegradeAbove", g.DegradeAbove}, {"Degrade", g.Degrade}, {"SmallModel", g.SmallModel}}
}

// SplitError refuses the gateway in front of a prefill/decode split,
// naming its first setting given; nil when none is.
func (g GatewaySpec) SplitError() error {
	for _, f := range g.fields() {
		if f[1] != "" {
			if f[0] == "PerClass" {
				f[1] = ""
			}
			return setting.Errorf(f[0], f[1], "a gateway in front of a prefill/decode split is not simulated yet")
		}
	}
	return nil
}

// Apply puts the gateway in front of c, the fleet (nil: the engine alone,
// then a fleet of one), and returns it; c unchanged when no setting is
// given. A setting's error is a *setting.Error naming GatewaySpec's
// field, a small model the engine refuses included.
func (g GatewaySpec) Apply(c *Config, engine sim.Config) (*Config, error) {
	if g == (GatewaySpec{}) {
		return c, nil
	}
	gc := &GatewayConfig{PerClass: g.PerClass}
	var err error
	if gc.Requests, err = ParseRate(g.RateLimit); err != nil {
		return nil, setting.Errorf("RateLimit", strconv.Quote(g.RateLimit), "%v", err)
	}
	if gc.Tokens, err = ParseRate(g.TokenRateLimit); err != nil {
		return nil, setting.Errorf("TokenRateLimit", strconv.Quote(g.TokenRateLimit), "%v", err)
	}
	if g.PerClass && gc.Requests == nil && gc.Tokens == nil {
		return nil, setting.Errorf("PerClass", "", "give %v or %v", setting.Name("RateLimit"), setting.Name("TokenRateLimit"))
	}
	if g.Mix != "" {
		if gc.Mix, err = ParseMix(g.Mix); err != nil {
			return nil, setting.Errorf("Mix", strconv.Quote(g.Mix), "%v", err)
		}
	}
	if c == nil {
		c = &Config{Replicas: []sim.Config{engine}}
	}
	if c.Disagg != nil {
		return nil, g.SplitError()
	}
	n := len(c.Replicas)
	if g.Pools != "" {
		if gc.Pools, err = ParsePools(g.Pools, n); err != nil {
			return nil, setting.Errorf("Pools", strconv.Quote(g.Pools), "%v", err)
		}
		for k := range gc.Pools {
			gc.ClassPools = append(gc.ClassPools, k)
		}
	}
	above, perReplica, err := ParseDegradeAbove(g.DegradeAbove)
	var small []int
	switch {
	case err != nil:
		return nil, setting.Errorf("DegradeAbove", strconv.Quote(g.DegradeAbove), "%v", err)
	case g.Degrade == "" && g.DegradeAbove != "":
		return nil, setting.Errorf("DegradeAbove", g.DegradeAbove, "give %v, the action", setting.Name("Degrade"))
	case g.Degrade != "":
		if gc.Degrade, small, err = ParseDegrade(g.Degrade, n); err == nil && small != nil {
			gc.Degrade.Pool, err = gc.AddSmallPool(small, n)
		}
		if err != nil {
			return nil, setting.Errorf("Degrade", strconv.Quote(g.Degrade), "%v", err)
		}
		gc.Degrade.Above, gc.Degrade.PerReplica = above, perReplica
	}
	if g.SmallModel != "" {
		if small == nil {
			return nil, setting.Errorf("SmallModel", g.SmallModel, "give %v small-model:RANGE, the replicas that run it", setting.Name("Degrade"))
		}
		// The caller's replicas are not the fleet's to change.
		c.Replicas = slices.Clone(c.Replicas)
		for _, i := range small {
			c.Replicas[i].Model = g.SmallModel
		}
		var se *sim.ConfigError
		if _, err := sim.New(c.Replicas[small[0]]); errors.As(err, &se) && se.Field == "Model" {
			return nil, setting.Errorf("SmallModel", "", "%v", se.Err)
		}
	}
	c.Gateway = gc
	return c, g.specError(gc.check(n, c.ExpertParallel, c.Autoscale != nil))
}

// specError is a *ConfigError about the gateway's settings as the
// *setting.Error of the GatewaySpec field that set it.
func (g GatewaySpec) specError(err error) error {
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.HasPrefix(ce.Field, "Gateway.") {
		return err
	}
	f := strings.TrimPrefix(ce.Field, "Gateway.")
	if s, ok := map[string]string{"Requests": "RateLimit", "Tokens": "TokenRateLimit", "ClassPools": "Pools"}[f]; ok {
		f = s
	}
	return setting.Errorf(f, "", "%v", ce.Err)
}
