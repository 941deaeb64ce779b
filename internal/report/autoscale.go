package report

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
)

// maxScaleRows bounds the terminal's timeline table; the JSON has every
// change.
const maxScaleRows = 24

// autoscaleTerminal writes the autoscaler's lines and timeline into t.
func autoscaleTerminal(t *term, a *breakdown.Autoscale) {
	t.line("Autoscaler:", fmt.Sprintf("%s, %s replicas, %s GPU-hours", a.Rule, a.ScaleSequence(), f2(a.GPUHours)))
	t.line("Autoscaler bounds, delay, cooldown:", fmt.Sprintf("%d–%d replicas, %v, %v; %d scalings", a.Min, a.Max, a.ProvisionDelay, a.Cooldown, a.Decisions))
	tw := tabwriter.NewWriter(&t.b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "Time\tActive\tProvisioning\tDraining")
	for _, p := range a.Timeline[:min(len(a.Timeline), maxScaleRows)] {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", p.At.Round(time.Millisecond), p.Active, p.Provisioning, p.Draining)
	}
	// Flush only fails if its writer does, and that is a bytes.Buffer.
	_ = tw.Flush()
	if n := len(a.Timeline) - maxScaleRows; n > 0 {
		fmt.Fprintf(&t.b, "… %d more changes (the JSON has them all)\n", n)
	}
}

// autoscaleJSON is the autoscaler's object in the Replicas block.
func autoscaleJSON(a *breakdown.Autoscale) map[string]any {
	tl := make([]map[string]any, len(a.Timeline))
	for i, p := range a.Timeline {
		tl[i] = map[string]any{"t_s": p.At.Seconds(), "active": p.Active, "provisioning": p.Provisioning, "draining": p.Draining}
	}
	return map[string]any{
		"rule": a.Spec, "signal": a.Signal, "threshold": a.Threshold, "down_threshold": a.DownThreshold,
		"min": a.Min, "max": a.Max, "provision_delay_s": a.ProvisionDelay.Seconds(), "cooldown_s": a.Cooldown.Seconds(),
		"start": a.Start, "peak": a.Peak, "final": a.Final, "decisions": a.Decisions, "gpu_hours": a.GPUHours,
		"timeline": tl,
	}
}
