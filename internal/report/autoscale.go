package report

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Autoscale is what a simulated cluster's autoscaler did over a level:
// its rule and bounds, the fleet's size over time and the GPU-hours paid.
type Autoscale struct {
	// Rule is the scale-up rule, "p95-ttft > 2s"; Spec the rule as
	// --autoscale reads it, "p95-ttft:2s,1s".
	Rule, Spec string
	// Signal and Threshold are the rule's parts, DownThreshold the level
	// it scales down below (p95-ttft in seconds).
	Signal                   string
	Threshold, DownThreshold float64
	// Min and Max bound the replicas; ProvisionDelay is a new one's load
	// time, Cooldown the least time between scalings.
	Min, Max                 int
	ProvisionDelay, Cooldown time.Duration
	// Start, Peak and Final are the active replicas at time 0, the most at
	// once and at the end; Decisions counts the scalings.
	Start, Peak, Final, Decisions int
	// GPUHours is Σ replica lifetime × its GPUs, provisioning and
	// draining included.
	GPUHours float64
	// Timeline is the fleet's size at time 0 and at each change.
	Timeline []ScalePoint
}

// ScalePoint is the fleet's size from At (since the level's start).
type ScalePoint struct {
	At                             time.Duration
	Active, Provisioning, Draining int
}

// maxScaleRows bounds the terminal's timeline table; the JSON has every
// change.
const maxScaleRows = 24

// SetAutoscale adds the autoscaler's figures to r; a nil r stays nil.
func (r *Replicas) SetAutoscale(a *Autoscale) {
	if r != nil {
		r.Autoscale = a
	}
}

// autoscaleTerminal writes the autoscaler's lines and timeline into t.
func autoscaleTerminal(t *term, a *Autoscale) {
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
func autoscaleJSON(a *Autoscale) map[string]any {
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

// ScaleSequence is the replicas' course, "2→7→3".
func (a *Autoscale) ScaleSequence() string {
	return strings.Join([]string{strconv.Itoa(a.Start), strconv.Itoa(a.Peak), strconv.Itoa(a.Final)}, "→")
}
