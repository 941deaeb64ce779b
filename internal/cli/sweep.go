package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/gate"
	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// defaultSweepSLO is the SLO a sweep ranks goodput by when --goodput is
// not given: a goodput peak needs one.
const defaultSweepSLO = "ttft:2000 tpot:50"

// SweepOptions is everything "goodput sweep" needs: bench's flag groups
// plus the sweep's own.
type SweepOptions struct {
	BenchOptions
	Concurrency      string
	TargetRate       float64
	Levels           string
	Sim              bool
	KneeK            float64
	Search           bool
	SLOAttainment    float64
	MaxMedianQueueMs float64
	Precision        float64
	MaxErrorRate     float64
	SaturationStop   bool
	ReadingSpeedMs   float64
	FailIf           []string
	LevelReports     bool
}

func newSweepCmd(env Env) *cobra.Command {
	var o SweepOptions
	cmd := &cobra.Command{
		Use:   "sweep",
		Short: "Run bench (or the simulator) at a series of loads: the knee, the goodput peak, the max load within SLO",
		Long: `Run bench at a series of load levels — request rates, concurrencies, or
multiples of a target rate — and report one summary per level, the curve,
the knee (where P99 TTFT starts rising non-linearly), the throughput peak and
the goodput peak (the recommended operating point) and how far the
throughput peak sits inside SLO violation, then the findings.

With no levels given, it first measures the target's capacity (one level of
--num-prompts requests sent at once, not recorded) and sweeps request rates
of 20 %, 40 %, 60 %, 70 %, 80 %, 90 %, 100 % and 110 % of it.

--search bisects between the lowest and highest level for the highest load
whose SLO attainment holds. --sim runs every level on the simulated engine in
virtual time: no HTTP, no sleeping, seconds for thousands of requests.
A level that is clearly saturated (queue growing without bound, error rate
above --max-error-rate) stops early and ends the sweep, and says so.
--fail-if exits with code 3 when a bound on the result JSON fails.`,
		Example: `  goodput sweep --sim --goodput ttft:500 tpot:40
  goodput sweep --sim --request-rate 2,4,8,12,16,20,24,28 --goodput ttft:2000 tpot:50
  goodput sweep --base-url http://127.0.0.1:8000 --concurrency 1,8,16,32,64 --num-prompts 500
  goodput sweep --target-rate 10 --levels 0.5x,1x,1.5x,2x --save-result
  goodput sweep --sim --search --request-rate 1,64 --goodput ttft:2000 tpot:50 --slo-attainment 0.99 --precision 0.5
  goodput sweep --sim --request-rate 4,8,16 --fail-if 'sweep.goodput_peak.request_goodput<10'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.args = args
			o.load.numSet = cmd.Flags().Changed("num-prompts")
			if cmd.Flags().Changed("max-concurrency") && o.Concurrency != "" {
				return usagef("--max-concurrency and --concurrency: give one (--concurrency is the swept list)")
			}
			return runSweep(cmd.Context(), env, &o)
		},
	}
	fs := cmd.Flags()
	group(fs, "Target flags", o.target.register)
	group(fs, "Load flags", o.load.register)
	group(fs, "Workload flags", o.work.register)
	group(fs, "Output flags", o.out.register)
	group(fs, "Simulator flags (--sim, or no --base-url)", o.sim.register)
	groupedUsage(cmd, "Sweep flags", "Target flags", "Load flags", "Workload flags", "Output flags", "Simulator flags (--sim, or no --base-url)")
	fs.Lookup("request-rate").Usage = "arrival rates to sweep, requests/s, e.g. 1,2,4,8 (or one rate with --concurrency)"
	fs.StringVar(&o.Concurrency, "concurrency", "", "concurrencies to sweep, e.g. 1,8,16,32,64")
	fs.Float64Var(&o.TargetRate, "target-rate", 0, "target rate in requests/s that --levels multiplies")
	fs.StringVar(&o.Levels, "levels", "", "multiples of --target-rate, e.g. 0.5x,1x,1.5x,2x (default 0.25x,0.5x,0.75x,1x,1.25x,1.5x,2x)")
	fs.BoolVar(&o.Sim, "sim", false, "run every level on the simulated engine in virtual time (engine flags: --sim-model, --gpu, ...)")
	fs.Float64Var(&o.KneeK, "knee-k", sweep.DefaultKneeK, "knee: a level's P99 TTFT slope must exceed this multiple of the low-load slope")
	fs.BoolVar(&o.Search, "search", false, "bisect between the lowest and highest level for the highest load meeting --slo-attainment")
	fs.Float64Var(&o.SLOAttainment, "slo-attainment", sweep.DefaultAttainment, "share of requests that must meet the --goodput SLO for a load to be within SLO (0-1)")
	fs.Float64Var(&o.MaxMedianQueueMs, "max-median-queue-ms", 0, "also cap the median queueing delay within SLO, ms (Sarathi-Serve's capacity; 0: none)")
	fs.Float64Var(&o.Precision, "precision", 0, "--search stops when the bracket is this narrow, in the axis' unit (0: 1/32 of the range)")
	fs.Float64Var(&o.MaxErrorRate, "max-error-rate", sweep.DefaultMaxErrorRate, "a level whose failed share exceeds this is saturated (0-1)")
	fs.BoolVar(&o.SaturationStop, "saturation-stop", true, "stop a saturated level early and end the sweep there")
	fs.Float64Var(&o.ReadingSpeedMs, "reading-speed-ms", findings.DefaultReadingSpeedMs, "reading speed for the findings, ms per token")
	fs.StringArrayVar(&o.FailIf, "fail-if", nil, "exit 3 when this holds on the result JSON, e.g. 'sweep.goodput_peak.request_goodput<10' (repeatable; dotted keys reach nested values)")
	fs.BoolVar(&o.LevelReports, "level-reports", false, "print the full bench report of every level")
	return cmd
}

// errLevelSaturated cancels a wall-clock level the Monitor judged saturated.
var errLevelSaturated = errors.New("level saturated")

// sweepPlan is what to sweep, from the flags.
type sweepPlan struct {
	axis   sweep.Axis
	levels []sweep.Level
	// auto: no level flags were given; the levels are fractions of the
	// capacity a probe measures first (autoFractions).
	auto bool
}

// autoFractions are the rates an automatic sweep runs, as shares of the
// measured capacity: two low loads for the knee's baseline slope, dense
// steps where goodput usually peaks, and one beyond capacity to show the
// collapse (a saturated level ends the sweep there).
var autoFractions = []float64{0.2, 0.4, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1}

// plan reads the level flags.
func (o *SweepOptions) plan() (sweepPlan, error) {
	rateText := strings.TrimSpace(o.load.RequestRate)
	rateSet := rateText != "" && !strings.EqualFold(rateText, "inf")
	switch {
	case o.Concurrency != "":
		cs, err := sweep.ParseList(o.Concurrency)
		if err != nil {
			return sweepPlan{}, usagef("--concurrency: %v", err)
		}
		for _, c := range cs {
			if c != float64(int(c)) || c > 1<<20 {
				return sweepPlan{}, usagef("--concurrency %v: want whole numbers of requests", c)
			}
		}
		if o.TargetRate > 0 {
			return sweepPlan{}, usagef("--target-rate sweeps rates: not with --concurrency")
		}
		rate, err := o.load.rate()
		if err != nil {
			return sweepPlan{}, usagef("--request-rate %q: with --concurrency give one rate (or inf)", o.load.RequestRate)
		}
		return sweepPlan{axis: sweep.AxisConcurrency, levels: sweep.Levels(sweep.AxisConcurrency, cs, sweep.Level{Rate: rate})}, nil
	case o.TargetRate > 0:
		if rateSet {
			return sweepPlan{}, usagef("--target-rate and --request-rate: give one")
		}
		spec := o.Levels
		if spec == "" {
			spec = "0.25x,0.5x,0.75x,1x,1.25x,1.5x,2x"
		}
		ms, err := sweep.ParseMultiples(spec)
		if err != nil {
			return sweepPlan{}, usagef("--levels: %v", err)
		}
		rates := make([]float64, len(ms))
		for i, m := range ms {
			rates[i] = m * o.TargetRate
		}
		return sweepPlan{axis: sweep.AxisRate, levels: sweep.Levels(sweep.AxisRate, rates, sweep.Level{Concurrency: o.load.MaxConcurrency})}, nil
	case o.Levels != "":
		return sweepPlan{}, usagef("--levels needs --target-rate")
	case rateSet:
		rs, err := sweep.ParseList(rateText)
		if err != nil {
			return sweepPlan{}, usagef("--request-rate: %v", err)
		}
		return sweepPlan{axis: sweep.AxisRate, levels: sweep.Levels(sweep.AxisRate, rs, sweep.Level{Concurrency: o.load.MaxConcurrency})}, nil
	}
	return sweepPlan{axis: sweep.AxisRate, auto: true}, nil
}

// probeCapacity measures the target's capacity in requests/s: one level of
// --num-prompts requests sent at once (under --max-concurrency), its
// completed requests over its duration. It writes no files, and draws its
// prompts from another seed than the sweep's, so a prefix cache warmed by
// the probe serves none of the sweep's requests.
func probeCapacity(ctx context.Context, cancel context.CancelCauseFunc, env Env, o *SweepOptions) (*capacityProbe, error) {
	p := *o
	p.out.Records, p.out.SaveResult, p.out.SaveDetailed, p.out.HTML = "none", false, false, ""
	p.load.Seed = o.load.Seed + 1
	pl := sweepPlan{axis: sweep.AxisRate, levels: []sweep.Level{{Concurrency: o.load.MaxConcurrency, Label: "capacity probe"}}}
	sat := sweep.Saturation{Off: true}
	var sr *sweepRun
	var err error
	if p.Sim {
		sr, err = openSimSweep(env, &p, pl, sat)
	} else {
		sr, err = openWallSweep(ctx, cancel, env, &p, pl, sat)
	}
	if err != nil {
		return nil, err
	}
	defer sr.close()
	pt, err := sr.runner.RunLevel(ctx, 0, pl.levels[0])
	if err == nil {
		err = sr.finish()
	}
	if err != nil {
		return nil, fmt.Errorf("capacity probe: %w", err)
	}
	s := &pt.Summary
	if s.Completed == 0 || s.RequestThroughput <= 0 {
		return nil, fmt.Errorf("capacity probe: no request completed (%d failed); give the levels (--request-rate 1,2,4,8)", s.Failed)
	}
	fmt.Fprintf(env.Stdout, "goodput sweep: capacity probe: %d requests completed in %.1f s, %.3g requests/s\n",
		s.Completed, s.DurationS, s.RequestThroughput)
	return &capacityProbe{RequestThroughput: s.RequestThroughput, Completed: s.Completed, Failed: s.Failed,
		DurationS: s.DurationS, Fractions: autoFractions}, nil
}

// capacityProbe is what an automatic sweep measured before its levels; the
// result file keeps it as "capacity_probe" so the levels can be traced
// back to it.
type capacityProbe struct {
	RequestThroughput float64   `json:"request_throughput"`
	Completed         int       `json:"completed"`
	Failed            int       `json:"failed"`
	DurationS         float64   `json:"duration_s"`
	Fractions         []float64 `json:"fractions"`
}

// sweepRun is a resolved target the levels run against.
type sweepRun struct {
	runner                  sweep.Runner
	meta                    *runlog.Meta
	resultPath, recordsPath string
	so                      stats.Options // for re-summarising records (--html)
	virtual                 bool
	interrupted             bool // Ctrl-C cut the sweep short
	embedded                bool
	track                   bool // the runner fills Point.Requests
	finish                  func() error
	close                   func()
	count                   func() int
	probe                   *capacityProbe // automatic levels: what they came from
}

// runSweep runs the sweep (or the search) and reports it.
func runSweep(ctx context.Context, env Env, o *SweepOptions) error {
	pl, err := o.plan()
	if err != nil {
		return err
	}
	g, err := gate.Parse(o.FailIf)
	if err != nil {
		return usageError{err}
	}
	if err := validateSweepGate(g, o); err != nil {
		return err
	}
	if err := o.checkSweepFlags(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var probe *capacityProbe
	if pl.auto {
		fmt.Fprintf(env.Stdout, "goodput sweep: no levels given: measuring capacity first, then sweeping %s of it\n", fractionsText(autoFractions))
		probe, err = probeCapacity(ctx, cancel, env, o)
		if err != nil {
			return err
		}
		rates := make([]float64, len(autoFractions))
		for i, f := range autoFractions {
			rates[i] = roundRate(f * probe.RequestThroughput)
		}
		pl.levels = sweep.Levels(sweep.AxisRate, rates, sweep.Level{Concurrency: o.load.MaxConcurrency})
	}
	loads := make([]float64, len(pl.levels))
	for i, l := range pl.levels {
		loads[i] = l.Load(pl.axis)
	}
	if o.Search && slices.Min(loads) == slices.Max(loads) {
		return usagef("--search bisects between the lowest and highest level: give two different loads")
	}
	if len(o.out.Goodput) == 0 && len(o.args) == 0 {
		o.out.Goodput = []string{defaultSweepSLO}
		fmt.Fprintf(env.Stderr, "goodput: no --goodput: ranking goodput by the SLO %s\n", defaultSweepSLO)
	}
	if o.out.ResultFilename == "" {
		o.out.ResultFilename = fmt.Sprintf("sweep-%s-%s.json", pl.axis, env.Now().Format("20060102-150405"))
	}
	sat := sweep.Saturation{MaxErrorRate: o.MaxErrorRate, Off: !o.SaturationStop}

	var sr *sweepRun
	if o.Sim {
		sr, err = openSimSweep(env, o, pl, sat)
	} else {
		sr, err = openWallSweep(ctx, cancel, env, o, pl, sat)
	}
	if err != nil {
		return err
	}
	defer sr.close()
	sr.probe = probe

	crit := sweep.Criteria{Attainment: o.SLOAttainment, MaxMedianQueueMs: o.MaxMedianQueueMs}
	cfg := sweep.Config{
		Axis: pl.axis, Knee: sweep.KneeConfig{K: o.KneeK}, Criteria: crit, Saturation: sat,
		OnPoint: func(p sweep.Point) { fmt.Fprintln(env.Stdout, sweep.LevelLine(p, sat.Judge(p))) },
	}
	mode := "wall clock"
	if sr.virtual {
		mode = "virtual time"
	}
	cpu0, cpuOK0 := processCPU()
	wall0 := time.Now()
	var res sweep.Result
	var search *sweep.SearchResult
	var runErr error
	if o.Search {
		fmt.Fprintf(env.Stdout, "goodput sweep: bisecting %s (%s) in [%g, %g] for SLO attainment ≥ %g %% (%s)\n",
			pl.axis, pl.axis.Unit(), slices.Min(loads), slices.Max(loads), 100*o.SLOAttainment, mode)
		tmpl := pl.levels[0]
		sc := sweep.SearchConfig{
			Axis: pl.axis, Template: tmpl, Lo: slices.Min(loads), Hi: slices.Max(loads), Precision: o.Precision, Criteria: crit,
			OnPoint: func(p sweep.Point, ok bool, why string) {
				verdict := "within SLO"
				if !ok {
					verdict = "misses: " + why
				}
				fmt.Fprintf(env.Stdout, "%s | %s\n", sweep.LevelLine(p, sat.Judge(p)), verdict)
			},
		}
		s, err := sweep.Search(ctx, sr.runner, sc)
		search, runErr = &s, err
		res = sweep.Analyze(s.Points, cfg)
	} else {
		fmt.Fprintf(env.Stdout, "goodput sweep: %d levels of %s (%s), %s\n", len(pl.levels), pl.axis, pl.axis.Unit(), mode)
		res, runErr = sweep.Run(ctx, sr.runner, pl.levels, cfg)
	}
	clientCPU := 0.0
	if !sr.virtual && !sr.embedded {
		// With the embedded simulator the server shares the process, so
		// process CPU says nothing about the client.
		cpu1, cpuOK1 := processCPU()
		clientCPU = cpuShare(cpu0, cpu1, cpuOK0, cpuOK1, time.Since(wall0))
	}
	if err := sr.finish(); err != nil && runErr == nil {
		runErr = err
	}
	if len(res.Points) == 0 {
		if runErr == nil {
			runErr = errors.New("no level ran")
		}
		return runErr
	}

	// Findings per level; the wall-clock runner cannot see records as they
	// pass, so the timing rules read them back from the records file.
	trackers := make([]*findings.Tracker, len(res.Points))
	if sr.track {
		for i, p := range res.Points {
			trackers[i] = p.Requests
		}
	} else if sr.recordsPath != "" {
		if ts, err := trackRecords(sr.recordsPath); err != nil {
			fmt.Fprintf(env.Stderr, "goodput: findings without per-request timing: %v\n", err)
		} else {
			for i, p := range res.Points {
				trackers[i] = ts[p.Index]
			}
		}
	}
	levelFs := make([][]findings.Finding, len(res.Points))
	for i := range res.Points {
		p := &res.Points[i]
		var lv *runlog.Level
		if p.Index < len(sr.meta.Levels) {
			lv = &sr.meta.Levels[p.Index]
		}
		levelFs[i] = findings.Analyze(findings.Input{
			Summary: &p.Summary, Meta: sr.meta, Level: lv, Levels: len(res.Points), Requests: trackers[i],
			ReadingSpeedMs: o.ReadingSpeedMs, ClientCPU: clientCPU,
		})
	}
	top, focus := sweepFindings(&res, search, levelFs)

	topts := report.TermOptions{TTY: env.TTY, NoColor: env.Getenv("NO_COLOR") != ""}
	if o.LevelReports {
		for i := range res.Points {
			if err := report.Terminal(env.Stdout, &res.Points[i].Summary, sr.meta, topts); err != nil {
				return err
			}
		}
	}
	if err := sweep.Render(env.Stdout, &res, search, crit); err != nil {
		return err
	}
	if focus >= 0 {
		fmt.Fprintf(env.Stdout, "Findings for level %d (%s) and the sweep:\n", res.Points[focus].Index, res.Points[focus].Level.Label)
	}
	if err := findings.Render(env.Stdout, top); err != nil {
		return err
	}
	if sr.recordsPath != "" {
		fmt.Fprintf(env.Stderr, "goodput: %d records in %s\n", sr.count(), sr.recordsPath)
	}

	sr.interrupted = runErr != nil && errors.Is(runErr, context.Canceled)
	doc, err := sweepJSON(sr, &res, search, levelFs, top)
	if err != nil {
		return err
	}
	if o.out.HTML != "" {
		h := runHTML{path: o.out.HTML, run: &savedRun{path: sr.recordsPath}, title: "goodput sweep", meta: sr.meta, so: sr.so,
			findings: htmlFindings(top), marks: true, kneeLevel: -1, peakLevel: -1}
		if res.Knee != nil && res.Knee.Index < len(res.Points) {
			h.kneeLevel = res.Points[res.Knee.Index].Index
		}
		if res.GoodputPeak != nil && res.GoodputPeak.Index < len(res.Points) {
			h.peakLevel = res.Points[res.GoodputPeak.Index].Index
		}
		if err := h.write(env); err != nil {
			return err
		}
	}
	if o.out.SaveResult {
		path, err := writeResult(env, &o.out, sr.resultPath, doc)
		if err != nil {
			return fmt.Errorf("--save-result: %w", err)
		}
		fmt.Fprintf(env.Stderr, "goodput: result saved to %s\n", path)
	}
	if runErr != nil {
		if errors.Is(runErr, context.Canceled) {
			return interruptedError{fmt.Sprintf("after %d levels; the curve above covers them", len(res.Points))}
		}
		return runErr
	}
	if len(g.Conds) > 0 {
		var m map[string]any
		if err := json.Unmarshal(doc, &m); err != nil {
			return fmt.Errorf("--fail-if: %w", err)
		}
		if failed := g.Check(m); len(failed) > 0 {
			return &GateError{Failed: failed}
		}
	}
	allFail := true
	for _, p := range res.Points {
		allFail = allFail && p.Summary.Completed == 0
	}
	if allFail {
		return allFailed(&res.Points[0].Summary)
	}
	return nil
}

// checkSweepFlags validates the sweep's own numeric flags, before any
// request is sent.
func (o *SweepOptions) checkSweepFlags() error {
	switch {
	case o.SLOAttainment <= 0 || o.SLOAttainment > 1:
		return usagef("--slo-attainment %v: want a share in (0, 1]", o.SLOAttainment)
	case o.KneeK <= 0:
		return usagef("--knee-k %v: want > 0", o.KneeK)
	case o.Precision < 0 || o.MaxMedianQueueMs < 0:
		return usagef("--precision and --max-median-queue-ms: want ≥ 0")
	case o.MaxErrorRate <= 0 || o.MaxErrorRate > 1:
		return usagef("--max-error-rate %v: want a share in (0, 1]", o.MaxErrorRate)
	}
	return nil
}

// roundRate keeps three significant digits of a rate, so levels read as
// "rate=12.3", not "rate=12.345678".
func roundRate(r float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(r, 'g', 3, 64), 64)
	return v
}

// fractionsText writes shares as "20 %, 40 %, …, 110 %".
func fractionsText(fs []float64) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = strconv.FormatFloat(math.Round(1000*f)/10, 'f', -1, 64) + " %"
	}
	return strings.Join(parts, ", ")
}

// sweepFindings picks the level the findings speak for — the goodput peak,
// else the throughput peak — and returns the sweep's own findings followed
// by that level's, plus the client-bound verdict of any other level (it
// poisons the whole curve). focus is the point index, or -1.
func sweepFindings(res *sweep.Result, search *sweep.SearchResult, levelFs [][]findings.Finding) ([]findings.Finding, int) {
	top := sweep.Findings(res, search)
	focus := -1
	switch {
	case res.GoodputPeak != nil:
		focus = res.GoodputPeak.Index
	case res.ThroughputPeak != nil:
		focus = res.ThroughputPeak.Index
	}
	var clientBound []findings.Finding
	for i, fs := range levelFs {
		for _, f := range fs {
			if f.ID == "client-bound" && i != focus && len(clientBound) == 0 {
				f.Evidence["level"] = res.Points[i].Index
				clientBound = append(clientBound, f)
			}
		}
	}
	if focus >= 0 {
		for _, f := range levelFs[focus] {
			if f.ID == "client-bound" {
				clientBound = nil // the focus level states it already
			}
			f.Evidence["level"] = res.Points[focus].Index
			top = append(top, f)
		}
	}
	return append(clientBound, top...), focus
}

// sweepJSON is the --save-result document: run facts, "levels" (each level's
// vLLM-keyed result with its findings), "sweep" and "findings".
func sweepJSON(sr *sweepRun, res *sweep.Result, search *sweep.SearchResult, levelFs [][]findings.Finding, top []findings.Finding) ([]byte, error) {
	levels := make([]json.RawMessage, len(res.Points))
	for i := range res.Points {
		p := &res.Points[i]
		b, err := report.ResultJSON(&p.Summary, sr.meta, map[string]any{
			"findings": nonNil(levelFs[i]), "saturated": res.Saturated[i], "median_queue_ms": p.MedianQueueMs,
			"median_queue_from_server": p.QueueFromServer, "level_label": p.Level.Label,
		})
		if err != nil {
			return nil, err
		}
		levels[i] = b
	}
	m := sr.meta
	doc := map[string]any{
		"date": m.Started.Format(report.DateFormat), "command": "sweep", "target": m.Target, "backend": m.Backend,
		"model_id": m.Model, "dataset": m.Dataset, "seed": m.Seed, "levels": levels,
		"sweep": sweep.JSON(res, search), "findings": nonNil(top), "records_file": sr.recordsPath,
		"capacity_probe": sr.probe,
	}
	if len(res.Points) > 0 {
		doc["slo"] = res.Points[0].Summary.Options.SLO.String()
	}
	if sr.interrupted {
		doc["interrupted"] = true
	}
	for k, v := range m.Metadata {
		if _, taken := doc[k]; !taken {
			doc[k] = v
		}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("sweep result json: %w", err)
	}
	return append(b, '\n'), nil
}

func nonNil(fs []findings.Finding) []findings.Finding {
	if fs == nil {
		return []findings.Finding{}
	}
	return fs
}

// openWallSweep opens a bench session (the target, or the embedded
// simulator) whose levels run over HTTP in wall-clock time.
func openWallSweep(ctx context.Context, cancel context.CancelCauseFunc, env Env, o *SweepOptions, pl sweepPlan, sat sweep.Saturation) (*sweepRun, error) {
	// The session validates one level and sizes its connection pool from
	// the load flags: give it the first rate and the largest concurrency.
	first := pl.levels[0]
	o.load.RequestRate = "inf"
	if first.Rate > 0 {
		o.load.RequestRate = strconv.FormatFloat(first.Rate, 'g', -1, 64)
	}
	for _, l := range pl.levels {
		o.load.MaxConcurrency = max(o.load.MaxConcurrency, l.Concurrency)
	}
	// Size the dataset for every level, so a level never resends an earlier
	// level's prompts (a prefix cache would serve them): the session makes
	// NumPrompts + NumWarmups distinct requests and the levels use them in
	// turn.
	perLevel, n := o.load.NumPrompts, len(pl.levels)
	if perLevel > 0 && n > 1 {
		o.load.NumPrompts = (perLevel+o.load.NumWarmups)*n - o.load.NumWarmups
	}
	inflated := o.load.NumPrompts
	s, err := openSession(ctx, cancel, env, &o.BenchOptions, "sweep")
	if err != nil {
		return nil, err
	}
	if o.load.NumPrompts == inflated {
		o.load.NumPrompts = perLevel // else the session chose its own default
	}
	base, err := o.load.level()
	if err != nil {
		s.close()
		return nil, err
	}
	s.meta.Levels = nil
	runner := sweep.RunnerFunc(func(ctx context.Context, idx int, l sweep.Level) (sweep.Point, error) {
		spec := base
		spec.Rate, spec.MaxConcurrency, spec.Label = l.Rate, l.Concurrency, l.Label
		// Watch the level as its records arrive and stop it the moment it
		// is clearly saturated (queue growing without bound, errors),
		// rather than waiting for a level that will never drain.
		mon := sweep.NewMonitor(sat, spec.NumPrompts)
		lctx, lcancel := context.WithCancelCause(ctx)
		defer lcancel(nil)
		stopped := ""
		spec.observe = func(r *runlog.Record) {
			if why := mon.Observe(r); why != "" && stopped == "" {
				stopped = why
				lcancel(errLevelSaturated)
			}
		}
		out, err := s.runLevel(lctx, idx, spec)
		if err != nil {
			return sweep.Point{}, err
		}
		s.meta.Levels = append(s.meta.Levels, out.level)
		if out.load.Stopped == loadgen.StopCancelled && (stopped == "" || ctx.Err() != nil) {
			return sweep.Point{}, fmt.Errorf("level %d: %w", idx, context.Canceled)
		}
		p := sweep.Point{Index: idx, Level: l, Summary: out.summary, DelayedArrivals: out.load.Delayed, Stopped: stopped}
		p.MedianQueueMs = sweep.QueueEstimateMs(&p.Summary)
		return p, s.err()
	})
	return &sweepRun{
		runner: runner, meta: s.meta, resultPath: s.resultPath, recordsPath: s.recordsPath, so: s.so,
		embedded: s.meta.Target == "embedded-sim",
		finish:   s.finish, close: s.close,
		count: func() int {
			if s.rw == nil {
				return 0
			}
			return s.rw.Count()
		},
	}, nil
}

// openSimSweep prepares virtual-time levels on the simulated engine.
func openSimSweep(env Env, o *SweepOptions, pl sweepPlan, sat sweep.Saturation) (*sweepRun, error) {
	so, err := o.out.statsOptions(o.args)
	if err != nil {
		return nil, err
	}
	base, err := o.load.levelWith("inf")
	if err != nil {
		return nil, err
	}
	meta, err := parseKV("--metadata", o.out.Metadata)
	if err != nil {
		return nil, err
	}
	eng, err := sim.New(o.sim.cfg)
	if err != nil {
		return nil, simConfigError(err, "--sim-model")
	}
	desc := eng.Describe()
	ds, err := virtualDataset(&o.work, &o.load, &base)
	if err != nil {
		return nil, err
	}
	model := fmt.Sprint(desc["model"])
	m := &runlog.Meta{
		Tool: "goodput", Version: Version, Command: "sweep", Started: env.Now().UTC(),
		Target: "virtual-time", Backend: "sim", Model: model, Dataset: ds.Name(), Seed: o.load.Seed,
		Simulated: desc, Metadata: meta,
	}
	for _, l := range pl.levels {
		m.Levels = append(m.Levels, simLevel(base, l, 0)) // the plan, until the end line
	}
	resultPath, recordsPath := outputPaths(env, &o.out, "sim", model, 0, 0, env.Now().Format("20060102-150405"))
	f, rw, err := openRecords(env, &o.out, &resultPath, &recordsPath, m)
	if err != nil {
		return nil, err
	}
	m.Levels = nil
	sr := &sweepRun{meta: m, resultPath: resultPath, recordsPath: recordsPath, so: so, virtual: true, track: true,
		close: func() {
			if f != nil {
				_ = f.Close()
			}
		},
		count: func() int {
			if rw == nil {
				return 0
			}
			return rw.Count()
		},
	}
	sr.finish = func() error {
		if rw == nil {
			return nil
		}
		if err := rw.WriteEnd(m); err != nil {
			return fmt.Errorf("records file %s: %w", recordsPath, err)
		}
		return f.Sync()
	}
	runner := &sweep.SimRunner{
		Engine: o.sim.cfg, Dataset: ds, NumPrompts: base.NumPrompts, NumWarmups: base.NumWarmups, Duration: base.Duration,
		Burstiness: base.Burstiness, Seed: o.load.Seed, Stats: so, Saturation: sat, Track: true,
		NaturalStop: !o.target.IgnoreEOS,
	}
	if rw != nil {
		// Each level runs on a fresh engine from virtual time 0; in the file
		// the levels follow one another (a second apart), as a wall-clock
		// sweep's do, so timelines and over-time charts show them in turn.
		var off, lastEnd int64
		cur := -1
		var buf runlog.Record
		runner.Emit = func(r *runlog.Record) error {
			if r.Level != cur {
				if cur >= 0 {
					off = lastEnd + int64(time.Second)
				}
				cur = r.Level
			}
			shiftedRecord(&buf, r, off)
			lastEnd = max(lastEnd, buf.End)
			if err := rw.Write(&buf); err != nil {
				return fmt.Errorf("records file %s: %w", recordsPath, err)
			}
			return nil
		}
	}
	sr.runner = sweep.RunnerFunc(func(ctx context.Context, idx int, l sweep.Level) (sweep.Point, error) {
		p, err := runner.RunLevel(ctx, idx, l)
		if err != nil {
			return p, err
		}
		for len(m.Levels) < idx {
			m.Levels = append(m.Levels, runlog.Level{})
		}
		m.Levels = append(m.Levels[:idx], simLevel(base, l, p.DelayedArrivals))
		return p, nil
	})
	return sr, nil
}

// simLevel is level l of a sweep as records files describe it.
func simLevel(base levelSpec, l sweep.Level, delayed int) runlog.Level {
	spec := base
	spec.Rate, spec.MaxConcurrency, spec.Label = l.Rate, l.Concurrency, l.Label
	lv := spec.runlog()
	lv.DelayedArrivals = delayed
	return lv
}

// levelWith is level() with the rate flag replaced (the sweep's rate flag
// holds a list).
func (l *loadFlags) levelWith(rate string) (levelSpec, error) {
	c := *l
	c.RequestRate = rate
	return c.level()
}

// trackRecords reads a records file once and builds a findings tracker
// per level.
func trackRecords(path string) (map[int]*findings.Tracker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rd := runlog.NewReader(f, path)
	ts := map[int]*findings.Tracker{}
	var rec runlog.Record
	for {
		err := rd.Next(&rec)
		if err == io.EOF {
			return ts, nil
		}
		if err != nil {
			return nil, err
		}
		t := ts[rec.Level]
		if t == nil {
			t = findings.NewTracker()
			ts[rec.Level] = t
		}
		t.Add(&rec)
	}
}

// processCPU is the process' user plus system CPU time so far, from
// /proc/self/stat (Linux; USER_HZ is 100 there); ok is false elsewhere.
// The runtime's own /cpu/classes metrics only move at garbage collections,
// too coarse for a run.
func processCPU() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, false
	}
	// Fields after the command name (which may hold spaces) start at the
	// state, field 3; utime and stime are fields 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, false
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, true
}

// cpuShare is the share of the machine's CPU the process used over wall
// (0 when unknown or the interval is too short to say).
func cpuShare(a, b time.Duration, okA, okB bool, wall time.Duration) float64 {
	if !okA || !okB || wall < time.Second {
		return 0
	}
	return min(max(float64(b-a)/(float64(wall)*float64(runtime.NumCPU())), 0), 1)
}

// shiftedRecord copies r into dst (reusing dst's chunk storage) with every
// time moved d ns later.
func shiftedRecord(dst, r *runlog.Record, d int64) {
	chunks := append(dst.Chunks[:0], r.Chunks...)
	*dst = *r
	dst.Chunks = chunks
	dst.Intended += d
	dst.Sent += d
	dst.End += d
	for i := range dst.Chunks {
		dst.Chunks[i].T += d
	}
	if r.Server != nil {
		st := *r.Server
		st.ArrivalNs += d
		dst.Server = &st
	}
}
