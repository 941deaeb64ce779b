package cluster

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/sim"
)

func burstTrace(seed uint64, segs [][2]float64) []arrival {
	rng := rand.New(rand.NewPCG(seed, seed^0xb005))
	var out []arrival
	var t, from float64
	for _, s := range segs {
		to := from + s[0]
		for {
			t += rng.ExpFloat64() / s[1]
			if t >= to {
				t = to
				break
			}
			out = append(out, arrival{at: int64(t * 1e9), req: Request{Request: sim.Request{ID: "r" + strconv.Itoa(len(out)), PromptTokens: 500 + rng.IntN(1500), OutputTokens: 50 + rng.IntN(300)}}})
		}
		from = to
	}
	return out
}

func runScaled(t *testing.T, a Autoscale, arrivals []arrival, slo time.Duration) (misses, n int, rep *AutoscaleReport) {
	cfg := sim.DefaultConfig()
	cfg.Model = expModel
	c, err := New(Config{Replicas: replicas(a.Min, cfg), Router: Router{Policy: PolicyLeastOutstanding}, Autoscale: &a})
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]int64{}
	for _, ar := range arrivals {
		sent[ar.req.ID] = ar.at
	}
	var now int64
	i := 0
	for {
		for i < len(arrivals) && arrivals[i].at <= now {
			if _, err := c.Add(arrivals[i].at, arrivals[i].req); err != nil {
				t.Fatal(err)
			}
			i++
		}
		until := int64(1<<63 - 1)
		if i < len(arrivals) {
			until = arrivals[i].at
		}
		end, evs := c.Step(now, until)
		for _, b := range evs {
			for _, ev := range b.Events {
				if at, ok := sent[ev.ID]; ok && ev.Kind == sim.EventTokens {
					n++
					if end-at > int64(slo) {
						misses++
					}
					delete(sent, ev.ID)
				}
			}
		}
		if end == now && len(evs) == 0 {
			if i == len(arrivals) {
				break
			}
			end = arrivals[i].at
		}
		now = end
	}
	return misses, n, c.Autoscaling(now)
}

var expModel = "qwen3-32b"

func TestAutoscaleExperiment(t *testing.T) {
	arr := burstTrace(1, [][2]float64{{600, 0.5}, {240, 5}, {600, 0.5}})
	t.Logf("%d requests", len(arr))
	base := Autoscale{Min: 1, Max: 8, Interval: 10 * time.Second, Window: 30 * time.Second, Cooldown: 20 * time.Second, ProvisionDelay: 30 * time.Second, UpStep: 2}
	for _, r := range []string{"p95-ttft:500ms", "p95-ttft:1s", "p95-ttft:2s", "queue:2", "queue:4", "kv:0.3", "kv:0.5", "util:0.5", "util:0.8", "util:0.9", "util:0.95", "util:0.99", "util:0.9/2", "util:0.9/3", "util:0.9/4"} {
		max := 8
		if k := strings.Index(r, "/"); k > 0 {
			max, _ = strconv.Atoi(r[k+1:])
			r = r[:k]
		}
		a, err := ParseAutoscaleRule(r)
		if err != nil {
			t.Fatal(err)
		}
		a.Min, a.Max, a.UpStep, a.Interval, a.Window, a.Cooldown, a.ProvisionDelay = base.Min, max, base.UpStep, base.Interval, base.Window, base.Cooldown, base.ProvisionDelay
		m, n, rep := runScaled(t, a, arr, time.Second)
		t.Logf("%-16s max %d misses %4d/%d  %.3f GPU-h  %d→%d→%d  decisions %d", r, max, m, n, rep.GPUHours, rep.Start, rep.Peak, rep.Final, len(rep.Decisions))
		if r == "p95-ttft:1s" {
			for _, d := range rep.Decisions {
				t.Logf("   %v %.3f %d→%d", time.Duration(d.At), d.Value, d.From, d.To)
			}
			t.Log(fmt.Sprint(rep.Timeline))
		}
	}
}
