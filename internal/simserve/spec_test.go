package simserve

import (
	"errors"
	"io"
	"math"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
)

func TestSpecOptions(t *testing.T) {
	for _, tt := range []struct {
		s     Spec
		fleet bool
		want  string
	}{
		{Spec{Port: -1}, false, "Port -1: want 0-65535"},
		{Spec{Port: 65536}, false, "Port 65536: want 0-65535"},
		{Spec{Slowdown: -1}, false, "Slowdown -1: want a factor above 0 and at most 1000 (1 is full speed)"},
		{Spec{Slowdown: 1001}, false, "Slowdown 1001: want a factor above 0 and at most 1000 (1 is full speed)"},
		{Spec{Slowdown: math.NaN()}, false, "Slowdown NaN: want a factor above 0"},
		{Spec{Slowdown: 2, SlowdownAfter: -time.Second}, false, "SlowdownAfter -1s: want ≥ 0"},
		{Spec{SlowdownAfter: time.Minute}, false, "SlowdownAfter 1m0s: needs Slowdown FACTOR"},
		{Spec{Slowdown: 2}, true, "Slowdown 2: not supported with several replicas (each keeps its own schedule)"},
	} {
		_, err := tt.s.Options(tt.fleet, nil)
		var se *setting.Error
		if !errors.As(err, &se) || len(se.Error()) < len(tt.want) || se.Error()[:len(tt.want)] != tt.want {
			t.Errorf("%+v: Options = %v; want %q", tt.s, err, tt.want)
		}
	}
	s := Spec{Host: "::1", Port: 80, ServedModelName: "m", Slowdown: 3, SlowdownAfter: time.Second}
	o, err := s.Options(false, nil)
	if err != nil || o.ServedModelName != "m" || o.Slowdown != 3 || o.SlowdownAfter != time.Second || s.Addr() != "[::1]:80" {
		t.Errorf("Options = %+v, %v; Addr = %q", o, err, s.Addr())
	}
}

func TestServerFleet(t *testing.T) {
	eng := sim.DefaultConfig()
	two := cluster.Copies(eng, 2)
	for _, tt := range []struct {
		cfg  *cluster.Config
		want string
	}{
		{nil, "E"},
		{&cluster.Config{Replicas: two}, "2 replicas of E"},
		{&cluster.Config{Replicas: cluster.Copies(eng, 3), Disagg: &cluster.Disaggregation{Prefill: 1}}, "1 prefill + 2 decode replicas of E"},
		{&cluster.Config{Replicas: two[:1], Autoscale: &cluster.Autoscale{Signal: cluster.SignalQueue, Threshold: 4, Max: 3}}, "1 of at most 3 autoscaled replicas of E"},
	} {
		var s *Server
		var err error
		if tt.cfg == nil {
			s, err = New(eng, Options{})
		} else {
			s, err = NewFleet(*tt.cfg, Options{})
		}
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Fleet("E"); got != tt.want {
			t.Errorf("Fleet = %q; want %q", got, tt.want)
		}
	}
}

// The engine's errors name its field within Engine, a replica's too.
func TestSpecServerEngineError(t *testing.T) {
	s := Spec{Engine: sim.DefaultConfig()}
	s.Engine.MaxNumSeqs = -1
	for _, fleet := range []*cluster.Config{nil, {Replicas: cluster.Copies(s.Engine, 2)}} {
		_, err := s.Server(fleet, nil)
		var se *setting.Error
		if !errors.As(err, &se) || se.Error() != "Engine.MaxNumSeqs: -1 must be ≥ 1 (0 for the default)" {
			t.Errorf("Server(%v) = %v; want Engine.MaxNumSeqs's error", fleet, err)
		}
	}
	if _, err := (Spec{Engine: sim.DefaultConfig(), Port: -1}).Server(nil, nil); err == nil || err.Error() != "Port -1: want 0-65535" {
		t.Errorf("Server = %v; want Port's error", err)
	}
	if srv, err := (Spec{Engine: sim.DefaultConfig()}).Server(nil, nil); err != nil || srv == nil {
		t.Errorf("Server = %v, %v", srv, err)
	}
}

func TestServeRefusesWhatOnlySimRuns(t *testing.T) {
	s := Spec{Engine: sim.DefaultConfig()}
	for field, c := range map[string]struct {
		c cluster.Spec
		g cluster.GatewaySpec
	}{"Ratios": {c: cluster.Spec{Ratios: "1:1"}}, "Mix": {g: cluster.GatewaySpec{Mix: "1,1"}}} {
		var se *setting.Error
		if err := s.Serve(t.Context(), c.c, c.g, nil, io.Discard, nil); !errors.As(err, &se) || se.Field != field {
			t.Errorf("Serve with %s = %v; want a setting error of it", field, err)
		}
	}
}
