package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// Result is what a run found, the one thing every output renders: the
// run's conditions, each level's summary and findings, the run's findings
// and SLA sentence, and a sweep's verdict.
type Result struct {
	// Meta is the run's conditions, its levels as they ran.
	Meta *runlog.Meta
	// Levels are the levels in run order.
	Levels []LevelResult
	// Pareto is a Pareto sweep's points (its levels placed by per-GPU
	// throughput against interactivity, the frontier marked) over
	// ParetoGPUs GPUs; nil for any other run.
	Pareto     []breakdown.ParetoPoint
	ParetoGPUs int
	// Findings are the run's: a single level's, or a sweep's own followed
	// by those of the level they speak for (Focus, an index in Levels; -1
	// none).
	Findings []findings.Finding
	Focus    int
	// SLA is a single level's SLA sentence ("" for a sweep).
	SLA string
	// Server holds every scrape of each metrics endpoint, for the HTML
	// report's time series (none when nothing was scraped).
	Server []breakdown.ServerSeries
	// Repeats is the run-to-run spread of a repeated load's figures
	// (--repeats), beside each repeat's own intervals; nil otherwise.
	Repeats []stats.RepeatFigure
	// Sweep is the sweep's verdict; nil for a single level.
	Sweep *SweepResult
	// Records are every record, when Output.KeepRecords (else nil).
	Records []runlog.Record
	// RecordsPath is the records file ("" none), RecordsWritten the records
	// in it; ResultPath is where the result file goes.
	RecordsPath, ResultPath string
	RecordsWritten          int
	// TokenizerID names what sized the prompts (vLLM's tokenizer_id).
	TokenizerID string
	// Interrupted says the run was cut short (Ctrl-C); Sent counts the
	// requests sent.
	Interrupted bool
	Sent        int
	// Virtual is the virtual-time run's own figures (nil over HTTP).
	Virtual *VirtualStats
	// Sessions summarises the run's sessions (nil when it had none).
	Sessions *stats.SessionSummary
	// Shards are the shards of a run split over several processes: every
	// shard of a merge of their records, or a shard's own run; nil for a
	// whole run.
	Shards []breakdown.ShardRow
}

// LevelResult is one level measured.
type LevelResult struct {
	// Index is the level index the records carry; Level its load as run.
	Index int
	Level runlog.Level
	// Summary aggregates the level's measured requests.
	Summary stats.Summary
	// Findings are the level's own.
	Findings []findings.Finding
	// MedianQueueMs is the median wait before being served, from the
	// engine's own timing when the records carry it (QueueFromServer),
	// else bounded from outside (sweep.QueueEstimateMs).
	MedianQueueMs   float64
	QueueFromServer bool
	// Saturated says why a sweep counts the level saturated ("" if not).
	Saturated string
	// OfferedRate is the arrival rate the level's schedule delivered,
	// req/s (0 unknown): what a sweep's verdicts key on, not the label.
	OfferedRate float64
	// Server is what each scraped metrics endpoint saw during the level
	// (none when nothing was scraped, or too little: two scrapes at least).
	Server []ServerWindow
	// Breakdowns are the level's typed breakdowns, in the order their
	// blocks render: the TTFT split by the server's own timing, a
	// cluster's replicas, a gateway's classes, the cost per GPU, and any
	// other kind registered (package breakdown). Each is there only when
	// the level gave it something to say.
	Breakdowns breakdown.Level
}

// TTFTSplit is the level's TTFT split by the server's own timing (nil
// none), which the server's block also reads beside its own histograms.
func (l *LevelResult) TTFTSplit() *breakdown.TTFTSplit {
	return breakdown.Get[*breakdown.TTFTSplit](l.Breakdowns)
}

// Replicas is the level's spread over a cluster's replicas (nil none).
func (l *LevelResult) Replicas() *breakdown.Replicas {
	return breakdown.Get[*breakdown.Replicas](l.Breakdowns)
}

// Classes is a gateway's account of the level (nil none).
func (l *LevelResult) Classes() *breakdown.Classes {
	return breakdown.Get[*breakdown.Classes](l.Breakdowns)
}

// Jobs is the level's agent jobs (nil when it replayed none).
func (l *LevelResult) Jobs() *breakdown.Jobs {
	return breakdown.Get[*breakdown.Jobs](l.Breakdowns)
}

// Cost is the level per GPU and in money and energy (nil none).
func (l *LevelResult) Cost() *breakdown.LevelCost {
	return breakdown.Get[*breakdown.LevelCost](l.Breakdowns)
}

// SweepResult is a sweep's verdict.
type SweepResult struct {
	sweep.Result
	// Search is the bisection's outcome (nil for a plain sweep).
	Search   *sweep.SearchResult
	Criteria sweep.Criteria
	// Probe is what an automatic sweep's levels came from (nil if given).
	Probe *runlog.CapacityProbe
}

// operatingPoint is the level a capacity plan prices: the recommended
// load, else the goodput peak, with what to call it.
func (s *SweepResult) operatingPoint() (*sweep.Peak, string) {
	if s.Recommended != nil {
		return s.Recommended, "recommended operating point"
	}
	return s.GoodputPeak, "goodput peak"
}

// VirtualStats describe a virtual-time run: the virtual time simulated,
// the engine steps and the wall time it took.
type VirtualStats struct {
	Simulated, Wall time.Duration
	Steps           int64
	// Abandoned counts timed-out requests the engine ran on
	// (Config.KeepAbandoned) and AbandonedTokens the tokens it generated
	// for them after their client left: wasted work.
	Abandoned       int
	AbandonedTokens int64
}

// levelData is what one level leaves for the analysis.
type levelData struct {
	index    int
	level    runlog.Level
	summary  stats.Summary
	tracker  *findings.Tracker
	queue    *stats.Values // the engine's queue times, ns
	sessions []runlog.Record
	// start and end span the level's measured requests (first send, last
	// end, ns); spanned says there was one.
	start, end int64
	spanned    bool
	// longest is the longest request in flight and longestTTFT the
	// longest time to a first token, ns (collector's).
	longest, longestTTFT int64
	// offered is the arrival rate delivered, req/s (0 unknown).
	offered float64
	// breakdowns are the level's record-fed breakdowns.
	breakdowns breakdown.Level
}

// point is the level as the sweep logic sees it.
func (d *levelData) point() sweep.Point {
	p := sweep.Point{Index: d.index, Level: planned(d.level), Summary: d.summary, DelayedArrivals: d.level.DelayedArrivals,
		Stopped: d.level.Stopped, Requests: d.tracker, Offered: d.offered}
	if d.queue != nil && d.queue.Len() > 0 {
		p.MedianQueueMs, p.QueueFromServer = d.queue.Summarize("server_queue", []float64{50}).Median/1e6, true
	} else {
		p.MedianQueueMs = sweep.QueueEstimateMs(&p.Summary)
	}
	return p
}

// planned is a level's load as planned: what it did (delayed arrivals,
// client CPU, an early stop) removed.
func planned(l runlog.Level) runlog.Level {
	l.DelayedArrivals, l.ClientCPU, l.Stopped = 0, 0, ""
	return l
}

// analyze judges the levels of a run described by meta: each level's
// findings and, for a sweep (meta.Analysis.Sweep), the curve's verdict —
// replayed through the sweep logic as the run drove it, so the knee, the
// peaks, the search and an early stop come out as the run found them.
func analyze(meta *runlog.Meta, data []levelData, readingSpeedMs float64, so sessionOptions, srv serverData) *Result {
	res := &Result{Meta: meta, Focus: -1, Shards: ownShard(meta, data)}
	for _, t := range srv.order {
		res.Server = append(res.Server, breakdown.ServerSeries{Target: t, Snapshots: srv.snaps[t]})
	}
	points := make([]sweep.Point, len(data))
	for i := range data {
		d := &data[i]
		p := d.point()
		points[i] = p
		lr := LevelResult{Index: d.index, Level: d.level, Summary: d.summary,
			MedianQueueMs: p.MedianQueueMs, QueueFromServer: p.QueueFromServer, OfferedRate: p.Offered}
		if d.spanned {
			lr.Server = serverWindows(srv.order, srv.snaps, d.start, d.end)
			capDurations(lr.Server, d.longest, d.longestTTFT)
		}
		lr.Breakdowns = slices.Clone(d.breakdowns)
		if meta != nil {
			lr.Replicas().SetPools(replicaPools(metaPools(&meta.Simulated)))
			fleetBlock(&lr, &meta.Simulated)
		}
		if c := levelCost(meta, &d.summary, lr.Server); c != nil {
			lr.Breakdowns.Put(c)
		}
		res.Levels = append(res.Levels, lr)
	}
	var spec *runlog.SweepSpec
	if meta != nil && meta.Analysis != nil {
		spec = meta.Analysis.Sweep
	}
	var sessionRecs []runlog.Record
	res.Sessions, sessionRecs = sessionSummary(meta, data, so)
	for i := range data {
		d := &data[i]
		lv := d.level
		fs := findings.Analyze(findings.Input{
			Summary: &d.summary, Meta: meta, Level: &lv, Levels: len(data), Requests: d.tracker,
			ReadingSpeedMs: readingSpeedMs, ClientCPU: lv.ClientCPU,
		})
		if w := evidenceWindow(res.Levels[i].Server); w != nil {
			// The server's own account, before the closing SLA sentence.
			at := len(fs)
			if at > 0 && fs[at-1].ID == "sla" {
				at--
			}
			// Only prompts that share prefixes (sessions resending their
			// history) make a low hit rate worth saying.
			o := findings.ServerOptions{SharedPrefixes: len(d.sessions) > 0}
			if meta != nil && meta.Analysis != nil {
				o.SharedPrefixTokens = meta.Analysis.SharedPrefixTokens
			}
			fs = findings.Reconcile(slices.Insert(fs, at, findings.ServerEvidence(&d.summary, w, o)...))
		}
		res.Levels[i].Findings = fs
	}
	if spec == nil {
		res.Repeats = repeatSpread(res.Levels)
		if len(data) == 1 {
			res.Findings, res.Focus = withSessionFindings(res.Levels[0].Findings, res.Sessions, sessionRecs), 0
			lv := data[0].level
			res.SLA = findings.SLASentence(findings.Input{Summary: &data[0].summary, Meta: meta, Level: &lv})
		}
		return res
	}
	sr := replaySweep(spec, points)
	for i := range res.Levels {
		if i < len(sr.Saturated) {
			res.Levels[i].Saturated = sr.Saturated[i]
		}
	}
	res.Sweep = sr
	if spec.Pareto {
		// No one curve: the sweep's knee, peaks and recommendation would
		// mix workloads. The frontier is the verdict; each level keeps its
		// own findings.
		res.Pareto, res.ParetoGPUs = paretoPoints(res.Levels, meta, sr.Criteria.Attainment)
		return res
	}
	levelFs := make([][]findings.Finding, len(res.Levels))
	for i := range res.Levels {
		levelFs[i] = res.Levels[i].Findings
	}
	res.Findings, res.Focus = sweepFindings(&sr.Result, sr.Search, sr.Criteria, levelFs)
	return res
}

// sessionOptions say how sessions are summarised; nil fields take what the
// run stored.
type sessionOptions struct {
	percentiles []float64
	slo         *stats.SessionSLO
	confidence  *float64
}

// sessionSummary summarises the sessions of every level, and returns their
// records; nil without sessions.
func sessionSummary(meta *runlog.Meta, data []levelData, o sessionOptions) (*stats.SessionSummary, []runlog.Record) {
	var recs []runlog.Record
	for i := range data {
		recs = append(recs, data[i].sessions...)
	}
	if len(recs) == 0 {
		return nil, nil
	}
	ps := o.percentiles
	var slo stats.SessionSLO
	var level float64
	if meta != nil && meta.Analysis != nil {
		if ps == nil {
			ps = meta.Analysis.Percentiles
		}
		slo, _ = stats.ParseSessionSLO(meta.Analysis.SessionSLO) // checked when stored
		level = meta.Analysis.Confidence
	}
	if o.slo != nil {
		slo = *o.slo
	}
	if o.confidence != nil {
		level = *o.confidence
	}
	s := stats.SummarizeSessions(recs, ps, slo, level)
	return &s, recs
}

// withSessionFindings adds the session rules' findings on s and its records
// to fs (a copy), before the closing SLA sentence, and the sessions' own
// SLA sentence after it.
func withSessionFindings(fs []findings.Finding, s *stats.SessionSummary, recs []runlog.Record) []findings.Finding {
	more := findings.SessionsWithRecords(s, recs)
	sla := findings.SessionSLASentence(s)
	if len(more) == 0 && sla == "" {
		return fs
	}
	out := slices.Clone(fs)
	at := len(out)
	if at > 0 && out[at-1].ID == "sla" {
		at--
	}
	out = slices.Insert(out, at, more...)
	if sla != "" {
		out = append(out, findings.Finding{ID: "session-sla", Severity: findings.Info, Message: sla})
	}
	return out
}

// sweepConfig is the sweep logic's configuration from the stored spec.
func sweepConfig(spec *runlog.SweepSpec) sweep.Config {
	return sweep.Config{
		Axis: sweep.Axis(spec.Axis), Knee: sweep.KneeConfig{K: spec.KneeK},
		Criteria:   sweep.Criteria{Attainment: spec.Attainment, MaxMedianQueueMs: spec.MaxMedianQueueMs},
		Saturation: sweep.Saturation{MaxErrorRate: spec.MaxErrorRate, Off: !spec.SaturationStop},
	}
}

// errNotRun answers a replayed sweep's request for a level the run never
// reached (it was interrupted).
var errNotRun = errors.New("level not run")

// replaySweep drives the sweep logic over levels already measured: a
// Runner that hands back each level's point in turn stands in for the
// target, so Run's early stop and Search's bisection follow the path the
// run took.
func replaySweep(spec *runlog.SweepSpec, points []sweep.Point) *SweepResult {
	cfg := sweepConfig(spec)
	next := 0
	replay := sweep.RunnerFunc(func(_ context.Context, _ int, _ runlog.Level) (sweep.Point, error) {
		if next >= len(points) {
			return sweep.Point{}, errNotRun
		}
		next++
		return points[next-1], nil
	})
	out := &SweepResult{Criteria: cfg.Criteria, Probe: spec.Probe}
	if spec.Search && len(points) > 0 {
		s, _ := sweep.Search(context.Background(), replay, sweep.SearchConfig{
			Axis: cfg.Axis, Template: points[0].Level, Lo: spec.Lo, Hi: spec.Hi, Precision: spec.Precision, Criteria: cfg.Criteria,
			FirstIndex: points[0].Index,
		})
		out.Search = &s
		out.Result = sweep.Analyze(s.Points, cfg)
		return out
	}
	levels := make([]runlog.Level, max(spec.Planned, len(points)))
	for i := range levels {
		if i < len(points) {
			levels[i] = points[i].Level
		}
	}
	out.Result, _ = sweep.Run(context.Background(), replay, levels, cfg)
	if next < len(points) {
		// The run went on past where the logic would have stopped (its
		// saturation stop was off for a level the monitor stopped): keep
		// every level measured.
		out.Result = sweep.Analyze(points, cfg)
	}
	return out
}

// sweepFindings picks the level the findings speak for — the recommended
// load, else the goodput peak, else the throughput peak — and returns the sweep's own findings followed
// by that level's, plus the client-bound verdict of any other level (it
// poisons the whole curve). focus is the point index, or -1.
func sweepFindings(res *sweep.Result, search *sweep.SearchResult, crit sweep.Criteria, levelFs [][]findings.Finding) ([]findings.Finding, int) {
	top := sweep.Findings(res, search, crit)
	focus := -1
	switch {
	case res.Recommended != nil:
		focus = res.Recommended.Index
	case res.GoodputPeak != nil:
		focus = res.GoodputPeak.Index
	case res.ThroughputPeak != nil:
		focus = res.ThroughputPeak.Index
	}
	var clientBound []findings.Finding
	for i, fs := range levelFs {
		for _, f := range fs {
			if f.ID == "client-bound" && i != focus && len(clientBound) == 0 {
				f.Evidence = withLevel(f.Evidence, res.Points[i].Index)
				clientBound = append(clientBound, f)
			}
		}
	}
	if focus >= 0 && focus < len(levelFs) {
		for _, f := range levelFs[focus] {
			if f.ID == "client-bound" {
				clientBound = nil // the focus level states it already
			}
			f.Evidence = withLevel(f.Evidence, res.Points[focus].Index)
			top = append(top, f)
		}
	}
	return append(clientBound, top...), focus
}

// withLevel returns ev with the level index added (a copy: findings share
// no maps with their callers).
func withLevel(ev map[string]any, level int) map[string]any {
	out := make(map[string]any, len(ev)+1)
	for k, v := range ev {
		out[k] = v
	}
	out["level"] = level
	return out
}

// AnalyzeOptions say how a records file is judged again; zero fields take
// what the run stored (Meta.Analysis), then the defaults.
type AnalyzeOptions struct {
	// Stats summarises the levels; nil takes the run's stored options.
	Stats *stats.Options
	// ReadingSpeedMs is the findings' reading speed (0: the run's).
	ReadingSpeedMs float64
	// SessionSLO judges the sessions; nil takes the run's.
	SessionSLO *stats.SessionSLO
	// Scrapes are the run's scrapes of its server's metrics (the records
	// file's scrape lines), for the levels' server side.
	Scrapes []runlog.Scrape
	// Cost, when set, replaces the run's stored GPU price and count.
	Cost *Cost
}

// serverData is a run's scrapes, by endpoint in first-seen order.
type serverData struct {
	order []string
	snaps map[string][]servermetrics.Snapshot
}

// StoredOptions are the summary options and reading speed a run stored
// with its records (the zero Options and 0 when it stored none).
func StoredOptions(meta *runlog.Meta) (stats.Options, float64, error) {
	if meta == nil || meta.Analysis == nil {
		return stats.Options{}, 0, nil
	}
	a := meta.Analysis
	so := stats.Options{Percentiles: a.Percentiles, Metrics: a.Metrics, Buckets: a.Buckets, Confidence: a.Confidence}
	if a.SLO != "" {
		slo, err := stats.ParseSLO(a.SLO)
		if err != nil {
			return so, 0, fmt.Errorf("the run's stored SLO %q: %w", a.SLO, err)
		}
		so.SLO = slo
	}
	return so, a.ReadingSpeedMs, nil
}

// AnalyzeRecords judges a finished run again from its records, as the run
// judged itself: the same summaries, findings, SLA sentence and sweep
// verdict, for the same options.
func AnalyzeRecords(meta *runlog.Meta, recs []runlog.Record, o AnalyzeOptions) (*Result, error) {
	so, speed, err := StoredOptions(meta)
	if err != nil {
		return nil, err
	}
	if o.Stats != nil {
		so = *o.Stats
	}
	if o.ReadingSpeedMs > 0 {
		speed = o.ReadingSpeedMs
	}
	idx := levelIndexes(meta, recs)
	cols := map[int]*collector{}
	for _, i := range idx {
		cols[i] = newCollector(so, true, nil, nil)
		cols[i].trim = meta != nil && meta.Analysis != nil && meta.Analysis.SteadyTrim
	}
	for i := range recs {
		c := cols[max(recs[i].Level, -1)]
		if c != nil {
			_ = c.Record(&recs[i])
		}
	}
	data := make([]levelData, 0, len(idx))
	for _, i := range idx {
		var lv runlog.Level
		if meta != nil && i >= 0 && i < len(meta.Levels) {
			lv = meta.Levels[i]
		}
		d := cols[i].data(i, lv)
		if d.summary.Level < 0 {
			d.summary.Level = i // an empty level: still say which it is
		}
		data = append(data, d)
	}
	if o.Cost != nil && meta != nil {
		m := *meta
		a := runlog.Analysis{}
		if meta.Analysis != nil {
			a = *meta.Analysis
		}
		a.GPUCostPerHour, a.NumGPUs = o.Cost.GPUCostPerHour, o.Cost.NumGPUs
		m.Analysis = &a
		meta = &m
	}
	order, snaps := decodeScrapes(o.Scrapes)
	res := analyze(meta, data, speed, sessionOptions{percentiles: so.Percentiles, slo: o.SessionSLO, confidence: &so.Confidence}, serverData{order, snaps})
	if rows := mergedShards(meta, recs); rows != nil {
		res.Shards = rows
	}
	res.Records = recs
	return res, nil
}

// levelIndexes are the levels a run has, as breakdown.SummarizeLevels counts
// them: every level its meta describes (even one without records) and every
// other index its records carry, in order, then -1 for records of a
// negative level; a run without any still has level 0.
func levelIndexes(meta *runlog.Meta, recs []runlog.Record) []int {
	seen := map[int]bool{}
	if meta != nil {
		for i := range meta.Levels {
			seen[i] = true
		}
	}
	stray := false
	for i := range recs {
		if l := recs[i].Level; l < 0 {
			stray = true
		} else {
			seen[l] = true
		}
	}
	if len(seen) == 0 {
		seen[0] = true
	}
	idx := slices.Sorted(maps.Keys(seen))
	if stray {
		idx = append(idx, -1)
	}
	return idx
}

// repeatSpread is the spread over the levels when they are repeats of one
// load (each has Repeat set), at the summaries' confidence level (95 %
// when they had none); nil otherwise.
func repeatSpread(levels []LevelResult) []stats.RepeatFigure {
	if len(levels) < 2 {
		return nil
	}
	sums := make([]stats.Summary, len(levels))
	for i := range levels {
		if levels[i].Level.Repeat == 0 {
			return nil
		}
		sums[i] = levels[i].Summary
	}
	return stats.RepeatSpread(sums, cmp.Or(sums[0].Options.Confidence, stats.DefaultConfidence))
}
