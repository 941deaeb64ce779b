package cluster

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
)

// givenOf says the fields listed were given.
func givenOf(fields ...string) setting.Given {
	return func(f string) bool { return slices.Contains(fields, f) }
}

// Every setting's error names its Spec field (and the settings it is
// about), the value as given, and what is wrong.
func TestSpecErrors(t *testing.T) {
	eng := sim.DefaultConfig()
	for _, tt := range []struct {
		name  string
		edit  func(*Spec)
		given []string
		want  string // the error with field paths
	}{
		{"replicas", func(s *Spec) { s.Replicas = 0 }, nil, "Replicas 0: want ≥ 1 (1: the engine alone)"},
		{"too many", func(s *Spec) { s.Replicas = 70000 }, nil, "Replicas: 70000 replicas are too many (at most 65535)"},
		{"router", func(s *Spec) { s.Replicas, s.Router = 2, "random" }, nil, `Router "random": unknown router policy "random"`},
		{"router alone", func(s *Spec) { s.Router = "least-kv" }, nil, "Router least-kv spreads requests over replicas: give Replicas 2 or more"},
		{"dp", func(s *Spec) { s.DataParallel = 0 }, nil, "DataParallel 0: want ≥ 1 (1: one rank)"},
		{"dp and replicas", func(s *Spec) { s.DataParallel, s.Replicas = 2, 2 }, nil, "Replicas 2 and DataParallel 2 both copy the engine: give one"},
		{"dp router", func(s *Spec) { s.DataParallel, s.Router = 2, "round-robin" }, nil, "Router round-robin: data-parallel ranks"},
		{"ep dense", func(s *Spec) { s.ExpertParallel = true }, nil, "ExpertParallel: expert parallelism needs an MoE model; replica 1's llama-3.1-8b is dense"},
		{"dp too many", func(s *Spec) { s.DataParallel = 70000 }, nil, "DataParallel: 70000 replicas are too many"},
		{"rule", func(s *Spec) { s.Autoscale.Rule = "gpu:0.5" }, nil, `Autoscale.Rule "gpu:0.5": unknown autoscaling signal "gpu"`},
		{"tuning alone", func(s *Spec) {}, []string{"Autoscale.ProvisionDelay"}, "Autoscale.ProvisionDelay tunes the autoscaler: give Autoscale.Rule SIGNAL:THRESHOLD too"},
		{"min", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.Min = "queue:4", 0 }, nil, "Autoscale.Min 0: want ≥ 1"},
		{"up step", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.UpStep = "queue:4", 0 }, nil, "Autoscale.UpStep 0: want ≥ 1"},
		{"interval", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.Interval = "queue:4", 0 }, nil, "Autoscale.Interval 0s: want > 0"},
		{"cooldown", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.Cooldown = "queue:4", -time.Second }, nil, "Autoscale.Cooldown -1s: want ≥ 0 (0: none)"},
		{"delay", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.ProvisionDelay = "queue:4", -time.Second }, nil, "Autoscale.ProvisionDelay -1s: want ≥ 0 (0: at once)"},
		{"max below min", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.Min, s.Autoscale.Max = "queue:4", 5, 2 }, nil, "Autoscale.Max: maximum 2 replicas is below the minimum 5"},
		{"start above max", func(s *Spec) { s.Autoscale.Rule, s.Autoscale.Max, s.Replicas = "queue:4", 4, 6 }, []string{"Replicas"}, "Autoscale.Max: the cluster starts with 6 replicas, above the maximum 4"},
		{"start given 0", func(s *Spec) { s.Autoscale.Rule, s.Replicas = "queue:4", 0 }, []string{"Replicas"}, "Replicas 0: want ≥ 1"},
		{"autoscaled ranks", func(s *Spec) { s.Autoscale.Rule, s.DataParallel, s.ExpertParallel = "queue:4", 2, true }, nil, "ExpertParallel: autoscaling applies to independent replicas"},
		{"autoscale and file", func(s *Spec) { s.Autoscale.Rule, s.File = "queue:4", "f.yaml" }, nil, "Autoscale.Rule and File: an autoscaled fleet is copies of one engine; give Replicas, not a cluster file"},
		{"file and replicas", func(s *Spec) { s.File, s.Replicas = "f.yaml", 2 }, []string{"Replicas"}, "Replicas and File: the cluster file says it (a pool's replicas:); give one"},
		{"file and router", func(s *Spec) { s.File, s.Router = "f.yaml", "least-kv" }, []string{"Router"}, "Router and File: the cluster file says it (router:); give one"},
		{"split and file", func(s *Spec) { s.Prefill, s.Decode, s.File = 1, 1, "f.yaml" }, nil, "Prefill/Decode size the split's pools themselves: drop Autoscale.Rule and File"},
		{"split and replicas", func(s *Spec) { s.Prefill, s.Decode, s.Replicas = 1, 1, 2 }, nil, "Replicas 2 and Prefill/Decode both size the fleet: give one"},
		{"split and dp", func(s *Spec) { s.Prefill, s.Decode, s.DataParallel = 1, 1, 2 }, nil, "Prefill/Decode: a prefill/decode split with DataParallel or ExpertParallel is not simulated"},
		{"no decode", func(s *Spec) { s.Prefill = 1 }, nil, "Decode 0: want ≥ 1 (a split needs both pools)"},
		{"no prefill", func(s *Spec) { s.Decode = 1 }, nil, "Prefill 0: want ≥ 1 (a split needs both pools)"},
		{"link", func(s *Spec) { s.Prefill, s.Decode, s.Link = 1, 1, "pigeon" }, nil, `Link: unknown link "pigeon"`},
		{"split router", func(s *Spec) { s.Prefill, s.Decode, s.Router = 1, 1, "random" }, nil, `Router "random": unknown router policy`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := DefaultSpec()
			tt.edit(&s)
			_, err := s.Config(eng, givenOf(tt.given...))
			var se *setting.Error
			if !errors.As(err, &se) || !strings.HasPrefix(se.Error(), tt.want) {
				t.Errorf("Config = %v; want a *setting.Error %q", err, tt.want)
			}
		})
	}
}

// A cluster file's own errors name file and line, no setting.
func TestSpecFileError(t *testing.T) {
	s := DefaultSpec()
	s.File = "testdata/nosuch.yaml"
	_, err := s.Config(sim.DefaultConfig(), nil)
	var se *setting.Error
	if !errors.As(err, &se) || se.Field != "" || !strings.HasPrefix(se.Error(), "testdata/nosuch.yaml: ") {
		t.Errorf("Config = %v; want the file's error", err)
	}
}

// --data-parallel-size N without expert parallelism is exactly
// --replicas N --router dp-balance; the engine alone is no fleet.
func TestSpecDataParallelIsDPBalance(t *testing.T) {
	engine := sim.DefaultConfig()
	engine.Model = "qwen3-30b-a3b"
	dp, rep := DefaultSpec(), DefaultSpec()
	dp.DataParallel = 3
	rep.Replicas, rep.Router = 3, "dp-balance"
	got, err := dp.Config(engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := rep.Config(engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DataParallel 3 differs from Replicas 3, Router dp-balance (-want +got):\n%s", diff)
	}
	ep := DefaultSpec()
	ep.DataParallel, ep.ExpertParallel = 2, true
	if cfg, err := ep.Config(engine, nil); err != nil || !cfg.ExpertParallel || len(cfg.Replicas) != 2 {
		t.Errorf("DataParallel 2, ExpertParallel: config = %+v, %v; want 2 replicas, ExpertParallel", cfg, err)
	}
	if cfg, err := DefaultSpec().Config(engine, nil); cfg != nil || err != nil {
		t.Errorf("DefaultSpec().Config = %+v, %v; want nil, nil", cfg, err)
	}
}

// The autoscaled fleet starts at Autoscale.Min unless Replicas is given.
func TestSpecAutoscaleStart(t *testing.T) {
	s := DefaultSpec()
	s.Autoscale.Rule, s.Autoscale.Min, s.Replicas = "queue:4", 2, 5
	for _, tt := range []struct {
		given []string
		n     int
	}{{nil, 2}, {[]string{"Replicas"}, 5}} {
		cfg, err := s.Config(sim.DefaultConfig(), givenOf(tt.given...))
		if err != nil || len(cfg.Replicas) != tt.n || cfg.Autoscale == nil || cfg.Autoscale.Min != 2 {
			t.Errorf("given %v: %+v, %v; want %d replicas autoscaled", tt.given, cfg, err, tt.n)
		}
	}
}

func TestSpecSplits(t *testing.T) {
	for _, tt := range []struct {
		name  string
		edit  func(*Spec)
		given []string
		want  string
	}{
		{"parse", func(s *Spec) { s.Ratios = "2-2" }, nil, `Ratios "2-2": "2-2": want P:D`},
		{"split", func(s *Spec) { s.Prefill = 1 }, nil, "Ratios sweeps the split: drop Prefill, Decode and Link"},
		{"replicas", func(s *Spec) { s.Replicas = 4 }, nil, "Ratios sizes the fleet from its splits: drop Replicas, DataParallel and ExpertParallel"},
		{"autoscale", func(s *Spec) { s.Autoscale.Rule = "queue:4" }, nil, "Ratios sizes the fleet from its splits: drop Autoscale.Rule and File"},
		{"tuning", func(s *Spec) {}, []string{"Autoscale.Min"}, "Autoscale.Min tunes the autoscaler"},
		{"router", func(s *Spec) { s.Router = "random" }, nil, `Router "random": unknown router policy`},
	} {
		s := DefaultSpec()
		s.Ratios = "1:3,2:2"
		tt.edit(&s)
		_, _, err := s.Splits(sim.DefaultConfig(), givenOf(tt.given...))
		var se *setting.Error
		if !errors.As(err, &se) || !strings.HasPrefix(se.Error(), tt.want) {
			t.Errorf("%s: Splits = %v; want %q", tt.name, err, tt.want)
		}
	}
	s := DefaultSpec()
	s.Ratios, s.Router = "1:3,2:2", "least-kv"
	splits, cfg, err := s.Splits(sim.DefaultConfig(), nil)
	if err != nil || len(splits) != 2 || len(cfg.Replicas) != 4 || cfg.Policy != PolicyLeastKV {
		t.Errorf("Splits = %v, %+v, %v; want 2 splits and 4 replicas colocated behind least-kv", splits, cfg, err)
	}
}

// The gateway settings build the gateway: class pools in order, the
// small-model replicas a pool after them running SmallModel, the rest
// of the replicas pool 0 when there are no class pools.
func TestGatewaySpecApply(t *testing.T) {
	eng := sim.DefaultConfig()
	cc := &Config{Replicas: []sim.Config{eng, eng, eng, eng}}
	g := GatewaySpec{Pools: "interactive=1-2,batch=3", Degrade: "small-model:4", DegradeAbove: "3/replica", SmallModel: "qwen2.5-7b"}
	cc, err := g.Apply(cc, eng)
	if err != nil {
		t.Fatal(err)
	}
	gc := cc.Gateway
	names := []string{}
	for _, p := range gc.Pools {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"interactive", "batch", "small"}) || !slices.Equal(gc.Pools[0].Replicas, []int{0, 1}) ||
		!slices.Equal(gc.ClassPools, []int{0, 1}) || gc.Degrade.Pool != 2 || gc.Degrade.Above != 3 || !gc.Degrade.PerReplica || cc.Replicas[3].Model != "qwen2.5-7b" || cc.Replicas[2].Model != eng.Model {
		t.Errorf("gateway %+v, degrade %+v", gc, gc.Degrade)
	}
	one, err := GatewaySpec{RateLimit: "5/s"}.Apply(nil, eng)
	if err != nil || one == nil || len(one.Replicas) != 1 || one.Gateway.Requests.Rate != 5 {
		t.Errorf("a gateway in front of one engine: %+v, %v", one, err)
	}
	if c, err := (GatewaySpec{}).Apply(nil, eng); c != nil || err != nil {
		t.Errorf("no gateway: %+v, %v; want nil, nil", c, err)
	}
}

func TestGatewaySpecErrors(t *testing.T) {
	eng := sim.DefaultConfig()
	two := &Config{Replicas: []sim.Config{eng, eng}}
	for _, tt := range []struct {
		g    GatewaySpec
		c    *Config
		want string
	}{
		{GatewaySpec{RateLimit: "0/s"}, nil, `RateLimit "0/s": rate "0": want a number > 0`},
		{GatewaySpec{TokenRateLimit: "10/s,burst=x"}, nil, `TokenRateLimit "10/s,burst=x": burst "x"`},
		{GatewaySpec{PerClass: true}, nil, "PerClass: give RateLimit or TokenRateLimit"},
		{GatewaySpec{Mix: "1"}, nil, `Mix "1": want a share per class`},
		{GatewaySpec{Pools: "1-3,3"}, two, `Pools "1-3,3": class 0: replicas "1-3"`},
		{GatewaySpec{Pools: "1,2"}, &Config{Replicas: []sim.Config{eng, eng, eng}}, "Pools: replica 3 is in no pool"},
		{GatewaySpec{Pools: "1-2,2"}, two, "Pools: pool class 1: replica 2 is in another pool too"},
		{GatewaySpec{Pools: "1,2"}, &Config{Replicas: two.Replicas, Autoscale: &Autoscale{}}, "Pools: an autoscaled fleet grows and shrinks as one"},
		{GatewaySpec{DegradeAbove: "3"}, nil, "DegradeAbove 3: give Degrade, the action"},
		{GatewaySpec{DegradeAbove: "-1", Degrade: "reasoning:0"}, nil, `DegradeAbove "-1": want N or N/replica`},
		{GatewaySpec{Degrade: "shed:3"}, nil, `Degrade "shed:3": action "shed"`},
		{GatewaySpec{Degrade: "small-model:1"}, nil, `Degrade "small-model:1": the small-model pool takes every replica`},
		{GatewaySpec{SmallModel: "qwen2.5-7b"}, nil, "SmallModel qwen2.5-7b: give Degrade small-model:RANGE"},
		{GatewaySpec{Degrade: "small-model:2", SmallModel: "nosuch"}, two, `SmallModel: unknown model "nosuch"`},
		{GatewaySpec{RateLimit: "5/s"}, &Config{Replicas: two.Replicas, Disagg: &Disaggregation{Prefill: 1}}, "RateLimit 5/s: a gateway in front of a prefill/decode split is not simulated yet"},
	} {
		_, err := tt.g.Apply(tt.c, eng)
		var se *setting.Error
		if !errors.As(err, &se) || !strings.HasPrefix(se.Error(), tt.want) {
			t.Errorf("%+v: Apply = %v; want %q", tt.g, err, tt.want)
		}
	}
	if err := (GatewaySpec{PerClass: true, Pools: "1"}).SplitError(); err == nil || err.Error() != "PerClass: a gateway in front of a prefill/decode split is not simulated yet" {
		t.Errorf("SplitError = %v", err)
	}
	if err := (GatewaySpec{}).SplitError(); err != nil {
		t.Errorf("SplitError of no gateway = %v", err)
	}
}
