package sweep

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
)

func okSpec() Spec {
	return Spec{KneeK: DefaultKneeK, SLOAttainment: DefaultAttainment, MaxErrorRate: DefaultMaxErrorRate, SaturationStop: true}
}

func TestSpecErrorsBySetting(t *testing.T) {
	maxConc := func(f string) bool { return f == "MaxConcurrency" }
	cases := []struct {
		name   string
		edit   func(*Spec)
		rates  string
		given  setting.Given
		fields []string
	}{
		{"both concurrencies", func(s *Spec) { s.Concurrency = "1,2" }, "", maxConc, []string{"MaxConcurrency", "Concurrency", "Concurrency"}},
		{"bad concurrency", func(s *Spec) { s.Concurrency = "1,x" }, "", nil, []string{"Concurrency"}},
		{"fractional concurrency", func(s *Spec) { s.Concurrency = "1,2.5" }, "", nil, []string{"Concurrency"}},
		{"target with concurrency", func(s *Spec) { s.Concurrency, s.TargetRate = "1", 2 }, "", nil, []string{"TargetRate", "Concurrency"}},
		{"rates with concurrency", func(s *Spec) { s.Concurrency = "1" }, "1,2", nil, []string{"RequestRate", "Concurrency"}},
		{"target and rates", func(s *Spec) { s.TargetRate = 2 }, "4", nil, []string{"TargetRate", "RequestRate"}},
		{"bad multiple", func(s *Spec) { s.TargetRate, s.Levels = 2, "1x,zz" }, "", nil, []string{"Levels"}},
		{"levels alone", func(s *Spec) { s.Levels = "1x" }, "", nil, []string{"Levels", "TargetRate"}},
		{"bad rate", nil, "1,-2", nil, []string{"RequestRate"}},
		{"attainment", func(s *Spec) { s.SLOAttainment = 1.5 }, "", nil, []string{"SLOAttainment"}},
		{"knee", func(s *Spec) { s.KneeK = 0 }, "", nil, []string{"KneeK"}},
		{"precision", func(s *Spec) { s.Precision = -1 }, "", nil, []string{"Precision", "MaxMedianQueueMs"}},
		{"error rate", func(s *Spec) { s.MaxErrorRate = math.NaN() }, "", nil, []string{"MaxErrorRate"}},
		{"pareto alone", func(s *Spec) { s.Pareto = "1:1" }, "1,2", nil, []string{"Pareto", "Concurrency", "Concurrency"}},
		{"bad pair", func(s *Spec) { s.Concurrency, s.Pareto = "1", "512x64" }, "", nil, []string{"Pareto"}},
		{"pareto search", func(s *Spec) { s.Concurrency, s.Pareto, s.Search = "1,2", "1:1", true }, "", nil, []string{"Pareto", "Search"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := okSpec()
			if c.edit != nil {
				c.edit(&s)
			}
			_, err := s.Plan(runlog.Level{}, c.rates, c.given)
			var se *setting.Error
			if !errors.As(err, &se) {
				t.Fatalf("Plan(%q) = %v; want a setting error", c.rates, err)
			}
			if got := se.Fields(); !slices.Equal(got, c.fields) {
				t.Errorf("Plan(%q) = %v naming %v; want %v", c.rates, err, got, c.fields)
			}
		})
	}
}

func TestSpecPlans(t *testing.T) {
	s := okSpec()
	s.Concurrency, s.Pareto = "1,4", "128:16,256:32"
	p, err := s.Plan(runlog.Level{Label: "c"}, "8", nil)
	if err != nil || p.Axis != AxisConcurrency || len(p.Levels) != 4 || !p.Pareto || !p.Saturation.Off {
		t.Fatalf("pareto plan %+v, %v", p, err)
	}
	if l := p.Levels[3]; l.MaxConcurrency != 4 || l.RequestRate != 8 || l.InputLen != 256 || l.OutputLen != 32 {
		t.Errorf("last pareto level %+v", l)
	}
	s = okSpec()
	s.TargetRate = 10
	if p, err = s.Plan(runlog.Level{}, "inf", nil); err != nil || len(p.Levels) != 7 || p.Levels[6].RequestRate != 20 {
		t.Errorf("target plan %+v, %v", p, err)
	}
	if p, err = okSpec().Plan(runlog.Level{}, "", nil); err != nil || !p.Auto || p.Criteria.Attainment != DefaultAttainment {
		t.Errorf("auto plan %+v, %v", p, err)
	}
}
