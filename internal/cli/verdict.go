package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// verdictFlags are the findings and CI-gate flags of bench and sim (sweep
// registers its own, with sweep-level keys).
type verdictFlags struct {
	FailIf         []string
	ReadingSpeedMs float64
	gate           gate.Gate
}

func (v *verdictFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&v.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'p99_ttft_ms>500' or 'request_goodput<10' (repeatable)")
	fs.Float64Var(&v.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
}

// parse checks the flags before anything runs.
func (v *verdictFlags) parse() error {
	g, err := gate.Parse(v.FailIf)
	if err != nil {
		return usageError{err}
	}
	if v.ReadingSpeedMs <= 0 {
		return usagef("--reading-speed-ms %v: want > 0", v.ReadingSpeedMs)
	}
	v.gate = g
	return nil
}

// analyze runs the findings rules over one finished level.
func (v *verdictFlags) analyze(sum *stats.Summary, meta *runlog.Meta, lv *runlog.Level, tr *findings.Tracker, clientCPU float64) []findings.Finding {
	return findings.Analyze(findings.Input{
		Summary: sum, Meta: meta, Level: lv, Levels: 1, Requests: tr,
		ReadingSpeedMs: v.ReadingSpeedMs, ClientCPU: clientCPU,
	})
}

// check applies --fail-if to the result JSON.
func (v *verdictFlags) check(result []byte) error {
	if len(v.gate.Conds) == 0 {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(result, &m); err != nil {
		return fmt.Errorf("--fail-if: %w", err)
	}
	if failed := v.gate.Check(m); len(failed) > 0 {
		return &GateError{Failed: failed}
	}
	return nil
}

// htmlFindings converts findings for the HTML report.
func htmlFindings(fs []findings.Finding) []report.Finding {
	out := make([]report.Finding, len(fs))
	for i, f := range fs {
		out[i] = report.Finding{ID: f.ID, Severity: string(f.Severity), Message: f.Message, Evidence: f.Evidence}
	}
	return out
}

// cpuMeter measures the process' CPU share over an interval; it reads 0
// when the process also hosts the server measured (the embedded simulator),
// whose CPU would be blamed on the client.
type cpuMeter struct {
	off  bool
	cpu0 time.Duration
	ok0  bool
	wall time.Time
}

func startCPU(off bool) cpuMeter {
	c, ok := processCPU()
	return cpuMeter{off: off, cpu0: c, ok0: ok, wall: time.Now()}
}

func (m cpuMeter) share() float64 {
	if m.off {
		return 0
	}
	c, ok := processCPU()
	return cpuShare(m.cpu0, c, m.ok0, ok, time.Since(m.wall))
}
