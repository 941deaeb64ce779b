//go:build !race

package cluster

import (
	"testing"
	"time"

	"github.com/goodput/goodput/internal/sim"
)

// The must-show's utilisation autoscaler given room to grow (maximum 8):
// it misses no SLO but, reading above its threshold at any load, climbs
// to 8 and pays 2.015 GPU-hours, 2.75× p95-ttft's 0.731. Eight busy
// replicas for 24 simulated minutes are too slow for the race detector's
// time budget, so this runs without it.
func TestAutoscaleUtilUnbounded(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Model = "qwen3-32b"
	arrivals := burstTrace(1, [][2]float64{{600, 0.5}, {240, 5}, {600, 0.5}}, 1)
	a := Autoscale{Signal: SignalUtil, Threshold: 0.9, Min: 1, Max: 8, UpStep: 2, Interval: 10 * time.Second, Window: 30 * time.Second, Cooldown: 20 * time.Second, ProvisionDelay: 30 * time.Second}
	m, rep := scaledRun(t, cfg, a, arrivals, time.Second)
	t.Logf("util:0.9 max 8: %d misses, %.3f GPU-h (%d→%d→%d)", m, rep.GPUHours, rep.Start, rep.Peak, rep.Final)
	if m != 0 || rep.Peak != 8 || rep.GPUHours < 2*0.731 {
		t.Errorf("util:0.9 max 8: %d misses, peak %d, %.3f GPU-h; want none, 8, over twice p95-ttft's 0.731", m, rep.Peak, rep.GPUHours)
	}
}
