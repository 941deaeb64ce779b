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

// The honest opposite: halve the outputs (25–175 tokens) and shorten the
// quiet spells to 5 min around a 3 min burst, and two replicas carry the
// burst. util:0.9 (maximum 2) reads high already in the quiet spell, so
// it holds the second replica when the burst comes and misses 1 for
// 0.401 GPU-hours; p95-ttft:1s only reacts once TTFTs rise and, in the
// ~40 s before new replicas serve, misses 160 for 0.443. A reactive
// signal pays the provisioning delay at every burst's onset; spare
// capacity already there does not.
func TestAutoscaleBurstOpposite(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Model = "qwen3-32b"
	arrivals := burstTrace(1, [][2]float64{{300, 0.5}, {180, 5}, {300, 0.5}}, 2)
	base := Autoscale{Min: 1, Max: 8, UpStep: 2, Interval: 10 * time.Second, Window: 30 * time.Second, Cooldown: 20 * time.Second, ProvisionDelay: 30 * time.Second}
	p95, util := base, base
	p95.Signal, p95.Threshold = SignalP95TTFT, 1
	util.Signal, util.Threshold, util.Max = SignalUtil, 0.9, 2
	mp, rp := scaledRun(t, cfg, p95, arrivals, time.Second)
	mu, ru := scaledRun(t, cfg, util, arrivals, time.Second)
	t.Logf("%d requests; p95-ttft:1s %d misses, %.3f GPU-h (%d→%d→%d); util:0.9 max 2 %d misses, %.3f GPU-h (%d→%d→%d)",
		len(arrivals), mp, rp.GPUHours, rp.Start, rp.Peak, rp.Final, mu, ru.GPUHours, ru.Start, ru.Peak, ru.Final)
	if mu*10 > mp || ru.GPUHours > rp.GPUHours {
		t.Errorf("util %d misses / %.3f GPU-h vs p95-ttft %d / %.3f; want util ahead on both here", mu, ru.GPUHours, mp, rp.GPUHours)
	}
}
