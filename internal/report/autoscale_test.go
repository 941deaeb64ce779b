package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
)

// handAutoscale is an autoscaler that went 2→3→1 over 200 s: up at 10 s
// (ready at 35 s), down at 80 s and 110 s.
func handAutoscale() *breakdown.Autoscale {
	return &breakdown.Autoscale{Rule: "p95-ttft > 2s", Spec: "p95-ttft:2s,1s", Signal: "p95-ttft", Threshold: 2, DownThreshold: 1, Min: 1, Max: 4,
		ProvisionDelay: 25 * time.Second, Cooldown: 30 * time.Second, Start: 2, Peak: 3, Final: 1, Decisions: 3,
		GPUHours: 0.1, Timeline: []breakdown.ScalePoint{{At: 0, Active: 2, Provisioning: 0, Draining: 0}, {At: 10 * time.Second, Active: 2, Provisioning: 1, Draining: 0}, {At: 35 * time.Second, Active: 3, Provisioning: 0, Draining: 0},
			{At: 80 * time.Second, Active: 2, Provisioning: 0, Draining: 1}, {At: 82500 * time.Millisecond, Active: 2, Provisioning: 0, Draining: 0}, {At: 110 * time.Second, Active: 1, Provisioning: 0, Draining: 0}}}
}

// The Replicas block of an autoscaled cluster: the rule, the course of
// the replicas and the GPU-hours, then the timeline.
func TestReplicasAutoscaleGolden(t *testing.T) {
	r := &breakdown.Replicas{Router: "least-outstanding", Rows: []breakdown.ReplicaRow{
		{Replica: 1, Requests: 3, KVPeak: 0.5}, {Replica: 2, Requests: 2, KVPeak: 0.25}, {Replica: 3, Requests: 1, KVPeak: 0.1}}}
	r.Balance()
	r.SetAutoscale(handAutoscale())
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "p95-ttft > 2s, 2→3→1 replicas, 0.10 GPU-hours") {
		t.Errorf("block lacks the rule line:\n%s", b.String())
	}
	golden(t, "replicas_autoscale.golden", b.Bytes())
	js, err := json.MarshalIndent(ReplicasJSON(r), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "replicas_autoscale.golden.json", append(js, '\n'))
}

// A long timeline is cut in the terminal, not in the JSON.
func TestAutoscaleTimelineCut(t *testing.T) {
	a := handAutoscale()
	for i := range 30 {
		a.Timeline = append(a.Timeline, breakdown.ScalePoint{At: time.Duration(200+i) * time.Second, Active: 1 + i%2})
	}
	r := &breakdown.Replicas{Rows: []breakdown.ReplicaRow{{Replica: 1}, {Replica: 2}}}
	r.SetAutoscale(a)
	var b bytes.Buffer
	if err := ReplicasTerminal(&b, r); err != nil {
		t.Fatal(err)
	}
	// 36 changes, 24 shown.
	if !strings.Contains(b.String(), "… 12 more changes (the JSON has them all)") {
		t.Errorf("block does not say what it cut:\n%s", b.String())
	}
	if tl := ReplicasJSON(r)["autoscale"].(map[string]any)["timeline"].([]map[string]any); len(tl) != 36 {
		t.Errorf("JSON timeline has %d changes; want 36", len(tl))
	}
	var none *breakdown.Replicas
	none.SetAutoscale(a) // no panic
}
