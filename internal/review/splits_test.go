package review

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/workload"
)

// splitsConfig is simConfig's workload, n requests, on two replicas.
func splitsConfig(t *testing.T, n int, slo string) run.Config {
	cfg := simConfig(t, n)
	cfg.Command = "sim"
	s, err := stats.ParseSLO(slo)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Stats.SLO = s
	cfg.Cluster = &cluster.Config{Replicas: []sim.Config{cfg.Engine, cfg.Engine}}
	return cfg
}

// TestCompareSplitsAtTop: at 0.5 req/s two replicas meet a 60 s TTFT for
// every request, colocated or split 1:1, so neither is searched: max
// rate 0.5, per GPU 0.5 / 2 = 0.25, and the search cannot tell them.
func TestCompareSplitsAtTop(t *testing.T) {
	res, err := CompareSplits(context.Background(), splitsConfig(t, 20, "ttft:60000"), []cluster.Split{{Prefill: 1, Decode: 1}}, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if res.Replicas != 2 || res.TP != 1 || res.SearchedTo != 0.5/64 || len(res.Fleets) != 2 || res.Best != 1 || res.Verdict != report.SplitUntold {
		t.Fatalf("CompareSplits = %+v", res)
	}
	for _, f := range res.Fleets {
		if !f.AtTop || f.MaxRate != 0.5 || f.PerGPU != 0.25 || f.Attainment != 1 {
			t.Errorf("%s: %+v; want every request meeting the SLO at 0.5 req/s", f.Name, f)
		}
	}
	if res.Fleets[0].TransferP50 != -1 || !(res.Fleets[1].TransferP50 > 0) {
		t.Errorf("KV transfer P50s %v, %v; want none colocated, some split", res.Fleets[0].TransferP50, res.Fleets[1].TransferP50)
	}
}

// TestCompareSplitsNoneMeets: a 1 µs TTFT no request meets, at any rate:
// every bisection step halves the top, so the max rate stays 0 and the
// best split ties the colocated fleet at 0.
func TestCompareSplitsNoneMeets(t *testing.T) {
	res, err := CompareSplits(context.Background(), splitsConfig(t, 3, "ttft:0.001"), []cluster.Split{{Prefill: 1, Decode: 1}}, 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range res.Fleets {
		if f.AtTop || f.MaxRate != 0 || f.Attainment != 0 {
			t.Errorf("%s: %+v; want max rate 0", f.Name, f)
		}
	}
	if res.Verdict != report.SplitTies {
		t.Errorf("verdict %v; want ties", res.Verdict)
	}
}

// TestCompareSplitsRefuses: what is not one plain fleet of the splits'
// size, an SLO and a finite rate is a ConfigError naming the field.
func TestCompareSplitsRefuses(t *testing.T) {
	one := []cluster.Split{{Prefill: 1, Decode: 1}}
	for _, tt := range []struct {
		name   string
		edit   func(*run.Config)
		splits []cluster.Split
		top    float64
		field  string
	}{
		{"no splits", func(*run.Config) {}, nil, 1, "Cluster.Disagg"},
		{"no fleet", func(c *run.Config) { c.Cluster = nil }, one, 1, "Cluster"},
		{"a split already", func(c *run.Config) { c.Cluster.Disagg = &cluster.Disaggregation{Prefill: 1} }, one, 1, "Cluster"},
		{"no SLO", func(c *run.Config) { c.Stats.SLO = stats.SLO{} }, one, 1, "SLO"},
		{"infinite rate", func(*run.Config) {}, one, math.Inf(1), "RequestRate"},
		{"other total", func(*run.Config) {}, []cluster.Split{{Prefill: 1, Decode: 2}}, 1, "Cluster.Disagg"},
	} {
		cfg := splitsConfig(t, 5, "ttft:1000")
		tt.edit(&cfg)
		_, err := CompareSplits(context.Background(), cfg, tt.splits, tt.top)
		var ce *run.ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Errorf("%s: %v; want a ConfigError of %s", tt.name, err, tt.field)
		}
	}
}

// The comparison is saved as JSON under the result name, by default
// pd-ratios-DATE.json.
func TestSaveSplits(t *testing.T) {
	res := &report.Splits{Replicas: 2, TP: 1, Fleets: []report.SplitFleet{{Name: "colocated"}}, Best: -1}
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tt := range []struct{ name, want string }{{"", "pd-ratios-20260102-030405.json"}, {"mine.json", "mine.json"}} {
		path, err := SaveSplits(&run.Output{Dir: dir, ResultName: tt.name}, res, now)
		if err != nil || path != filepath.Join(dir, tt.want) {
			t.Fatalf("SaveSplits = %q, %v; want %s", path, err, tt.want)
		}
		b, err := os.ReadFile(path)
		var v map[string]any
		if err != nil || json.Unmarshal(b, &v) != nil || v["replicas"] == nil {
			t.Errorf("%s: %s, %v; want the comparison's JSON", path, b, err)
		}
	}
}

// TestSplitsOfErrors: what a comparison of splits cannot run on, by the
// settings at fault; a run it can leaves the outputs quiet and fileless.
func TestSplitsOfErrors(t *testing.T) {
	slo := stats.Options{SLO: stats.SLO{TTFT: time.Second}}
	cases := []struct {
		name    string
		rate    string
		so      stats.Options
		out     runspec.OutputSpec
		dataset string
		want    string
	}{
		{"unpaced", "inf", slo, runspec.OutputSpec{}, "", "Ratios searches request rates up to RequestRate: give a finite rate (it is inf)"},
		{"bad rate", "x", slo, runspec.OutputSpec{}, "", `RequestRate "x": want a positive number of requests/s or inf`},
		{"no slo", "8", stats.Options{}, runspec.OutputSpec{}, "", "Ratios compares goodput per GPU: give Goodput (e.g. ttft:1000 tpot:50)"},
		{"html", "8", slo, runspec.OutputSpec{HTML: "a.html"}, "", "HTML: Ratios writes no HTML report (the result saves the comparison as JSON)"},
		{"records", "8", slo, runspec.OutputSpec{Records: "r.jsonl"}, "", "Records: Ratios runs many fleets and keeps no records (run one split)"},
		{"sessions", "8", slo, runspec.OutputSpec{}, "conversations", "Ratios searches the request rate of independent requests: sessions (DatasetName conversations) keep their own"},
	}
	for _, c := range cases {
		_, _, err := SplitsOf(runspec.LoadSpec{RequestRate: c.rate}, c.so, &c.out, c.dataset)
		if err == nil || err.Error() != c.want {
			t.Errorf("%s: SplitsOf = %v; want %q", c.name, err, c.want)
		}
	}
	out := runspec.OutputSpec{SaveResult: true, Records: "none"}
	top, save, err := SplitsOf(runspec.LoadSpec{RequestRate: "8"}, slo, &out, "random")
	if err != nil || top != 8 || !save || out.SaveResult || out.Records != "none" {
		t.Errorf("SplitsOf(8) = %v, %v, %v, out %+v; want 8, saved, and no result file of each run", top, save, err, out)
	}
}

// simConfig is a quiet virtual-time run of n random requests (run's tests
// have its twin).
func simConfig(t testing.TB, n int) run.Config {
	t.Helper()
	slo, err := stats.ParseSLO("ttft:2000 tpot:50")
	if err != nil {
		t.Fatal(err)
	}
	return run.Config{
		Command: "sweep", Virtual: true, Engine: sim.DefaultConfig(), Seed: 7,
		Workload: run.Workload{Options: workload.Options{DatasetName: "random", RandomInputLen: 1024, RandomOutputLen: 128, RandomRangeRatio: 0.5}},
		Load:     runlog.Level{NumPrompts: n, Burstiness: 1}, Stats: stats.Options{SLO: slo},
		Output: run.Output{Dir: t.TempDir(), ResultName: "r.json", Records: "none"},
	}
}
