package run

import (
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim/cluster"
)

// fleetBlock completes level l's Replicas block (built from its records)
// with what only the simulation knew, as the level stored it
// (runlog.Level.Fleet) and eng, the fleet its meta describes: the router,
// each replica's KV peak, a prefill/decode split's roles, the autoscaler.
// A live run and a report of its records both come here, so they show
// the same block.
func fleetBlock(l *LevelResult, eng *runlog.Engine) {
	f := l.Level.Fleet
	if f == nil {
		return
	}
	reps := l.Replicas()
	if f.Autoscale != nil && reps == nil {
		// The autoscaler never served from a second replica: the records
		// alone make no block, so the run's counts do.
		reps = &breakdown.Replicas{}
		for k, n := range f.Routed {
			reps.Rows = append(reps.Rows, breakdown.ReplicaRow{Replica: k + 1, Requests: int(n), KVPeak: -1})
		}
		l.Breakdowns.Put(reps)
	}
	reps.SetReplicas(eng.Router, f.KVPeak)
	if a := f.Autoscale; a != nil {
		reps.SetAutoscale(autoscaleBlock(a))
	}
	if np := eng.PrefillReplicas; np > 0 {
		roles := make([]string, len(f.KVPeak))
		for k := range roles {
			roles[k] = cluster.RolePrefill
			if k >= np {
				roles[k] = cluster.RoleDecode
			}
		}
		reps.SetRoles(roles)
	}
}

// autoscaleBlock is the report's view of what the autoscaler did.
func autoscaleBlock(a *runlog.LevelAutoscale) *breakdown.Autoscale {
	out := &breakdown.Autoscale{Rule: a.Rule, Spec: a.Spec, Signal: a.Signal, Threshold: a.Threshold, DownThreshold: a.DownThreshold,
		Min: a.Min, Max: a.Max, ProvisionDelay: time.Duration(a.ProvisionDelayNs), Cooldown: time.Duration(a.CooldownNs),
		Start: a.Start, Peak: a.Peak, Final: a.Final, Decisions: a.Decisions, GPUHours: a.GPUHours}
	for _, p := range a.Timeline {
		out.Timeline = append(out.Timeline, breakdown.ScalePoint{At: time.Duration(p.AtNs), Active: p.Active, Provisioning: p.Provisioning, Draining: p.Draining})
	}
	return out
}
