package breakdown

import (
	"strconv"
	"strings"
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

// SetAutoscale adds the autoscaler's figures to r; a nil r stays nil.
func (r *Replicas) SetAutoscale(a *Autoscale) {
	if r != nil {
		r.Autoscale = a
	}
}

// ScaleSequence is the replicas' course, "2→7→3".
func (a *Autoscale) ScaleSequence() string {
	return strings.Join([]string{strconv.Itoa(a.Start), strconv.Itoa(a.Peak), strconv.Itoa(a.Final)}, "→")
}
