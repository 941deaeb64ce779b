package runspec

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
)

func TestVirtualSpecErrors(t *testing.T) {
	for _, c := range []struct {
		spec VirtualSpec
		want string
	}{
		{VirtualSpec{IgnoreEOS: true, Timeout: time.Second, ServerIgnoresDisconnect: true, ScrapeInterval: time.Second}, ""},
		{VirtualSpec{IgnoreEOS: true, NaturalStop: true}, "IgnoreEOS and NaturalStop contradict each other: choose one"},
		{VirtualSpec{Timeout: -time.Second}, "Timeout -1s: want ≥ 0 (0: none)"},
		{VirtualSpec{ServerIgnoresDisconnect: true}, "ServerIgnoresDisconnect needs Timeout (without one no client leaves)"},
		{VirtualSpec{ScrapeInterval: -time.Second}, "ScrapeInterval -1s: want ≥ 0 (0: not sampled)"},
	} {
		var cfg run.Config
		err := c.spec.Apply(&cfg)
		settingErr(t, fmt.Sprintf("%+v.Apply", c.spec), err, c.want)
		if c.want == "" && (!cfg.IgnoreEOS || cfg.ClientTimeout != time.Second || !cfg.KeepAbandoned || cfg.Scrape == nil) {
			t.Errorf("Apply set %+v", cfg)
		}
	}
}

func TestVirtualLines(t *testing.T) {
	var gpuOnly runlog.Engine // as read back from a file that names only the GPU
	if err := json.Unmarshal([]byte(`{"gpu":"h100"}`), &gpuOnly); err != nil {
		t.Fatal(err)
	}
	r := &run.Result{Meta: &runlog.Meta{Simulated: gpuOnly}, Virtual: &run.VirtualStats{Simulated: 2 * time.Second, Steps: 3, Abandoned: 1, AbandonedTokens: 7}}
	if l := r.VirtualLines(); len(l) != 2 || l[0] != "simulated 2.0 s of simulated gpu=h100 in 0.00 s (3 engine steps)" || l[1] != "the engine ran on 1 timed-out requests whose clients had left (7 tokens wasted)" {
		t.Errorf("VirtualLines = %q", l)
	}
	if l := (&run.Result{}).VirtualLines(); l != nil {
		t.Errorf("a wall-clock run's VirtualLines = %q; want none", l)
	}
}
