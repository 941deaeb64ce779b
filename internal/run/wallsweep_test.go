package run

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/wire"

	"github.com/goodput/goodput/internal/sweep"
	"github.com/goodput/goodput/internal/wire/openai"
)

// TestWallSweepCommonArrivals: a wall-clock sweep's levels share one
// arrival pattern scaled to each rate (common random numbers), so the
// offered load rises with the level's rate, and the sweep's points carry
// the offered rate its verdicts are keyed on. With a seed per level, a
// level named 3 req/s offered more than one named 4.
func TestWallSweepCommonArrivals(t *testing.T) {
	cfg := simConfig(t, 40)
	cfg.Virtual = false
	cfg.Workload.Options.RandomInputLen, cfg.Workload.Options.RandomOutputLen = 16, 2
	cfg.Target = Target{API: "openai", Endpoint: "/v1/completions", Open: func(base string, conns int, now func() int64) (Backend, error) {
		return openai.NewClient(wire.Config{BaseURL: base, Endpoint: "/v1/completions", MaxConns: conns, Now: now, AutoUsage: true})
	}}
	rates := []float64{300, 400}
	cfg.Sweep = &SweepConfig{Axis: sweep.AxisRate, Levels: sweep.Levels(sweep.AxisRate, rates, cfg.Load), Saturation: sweep.Saturation{Off: true}}
	res, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	pts := res.Sweep.Points
	if len(pts) != 2 || !(pts[0].Offered > 0) {
		t.Fatalf("points %+v; want two with an offered rate", pts)
	}
	// The same gaps scaled by 300/400: the offered rates keep that ratio.
	if got, want := pts[1].Offered/pts[0].Offered, rates[1]/rates[0]; math.Abs(got-want) > 1e-6 {
		t.Errorf("offered %g then %g req/s: ratio %g; want %g (one arrival pattern scaled)", pts[0].Offered, pts[1].Offered, got, want)
	}
	for i, p := range pts {
		if p.Load(sweep.AxisRate) != p.Offered {
			t.Errorf("level %d: Load = %g; want its offered %g", i, p.Load(sweep.AxisRate), p.Offered)
		}
		if got := res.Levels[i].OfferedRate; got != p.Offered {
			t.Errorf("level %d: OfferedRate = %g; want %g", i, got, p.Offered)
		}
	}
	b, err := res.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"offered_rate": `) {
		t.Errorf("result JSON has no offered_rate per level")
	}
}
