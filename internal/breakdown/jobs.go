package breakdown

import (
	"slices"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// RankJobs places the agent jobs' block after the built-in ones.
const RankJobs = 50

// Jobs is a level's agent jobs replayed from their graphs (records with
// JobNode; SessionID names the job): each job's end-to-end time, split
// along its critical path into model time and waiting (the recorded gaps:
// tool latency, think time), the critical path itself, and the prefix
// cache's hit share measured against the share the trace's hash ids
// imply. The graph is rebuilt from the records (JobNode, JobAfter,
// JobGapNs) and the critical path found by jobgraph.Job.Plan over each
// request's measured duration (send to end), so a report of the records
// gives the same block.
type Jobs struct {
	// Completed counts the jobs whose every request succeeded; Failed
	// those with a failed request, or whose records do not make a whole
	// graph (a run cut short). Requests counts their requests.
	Completed, Failed, Requests int
	// Percentiles are the percentiles E2E, Model and Waiting give.
	Percentiles []float64
	// E2E is the completed jobs' end-to-end time: the job's start (its
	// first requests' sends less their gaps) to its last request's end.
	// Model is the model time along each job's critical path (the
	// durations of the requests on it), Waiting the rest of its E2E (the
	// gaps on the path). All in ms.
	E2E, Model, Waiting JobDist
	// PromptTokens and CachedTokens sum the jobs' successful requests'
	// prompts and the prefix cache's hits on them (measured); Implied is
	// the hits the traces' hash ids imply for those prompts
	// (jobgraph.Job.CacheHits), known only when HasImplied (a trace with
	// hash ids).
	PromptTokens, CachedTokens, ImpliedTokens int
	HasImplied                                bool
	// Rows are the jobs in the order they started.
	Rows []JobRow
}

// JobDist is a spread over jobs, ms: the mean and the value at each of
// Jobs.Percentiles.
type JobDist struct {
	Mean float64
	P    []float64
}

// JobRow is one job.
type JobRow struct {
	// ID is the job's (the records' SessionID).
	ID string
	// Requests counts its requests, Failed those that failed.
	Requests, Failed int
	// Whole says the job completed and its graph is whole: the times and
	// the critical path are known.
	Whole bool
	// E2EMs, ModelMs and WaitingMs are as in Jobs, for this job.
	E2EMs, ModelMs, WaitingMs float64
	// Critical is the critical path, request ids from a root to the
	// request that ended last.
	Critical []string
	// PromptTokens, CachedTokens and ImpliedTokens are as in Jobs, for
	// this job; HasImplied says its trace had hash ids.
	PromptTokens, CachedTokens, ImpliedTokens int
	HasImplied                                bool
}

// MeasuredShare is the share of the prompt tokens the prefix cache
// served; 0 with no tokens.
func (r *JobRow) MeasuredShare() float64 { return share(r.CachedTokens, r.PromptTokens) }

// ImpliedShare is the share the trace's hash ids imply.
func (r *JobRow) ImpliedShare() float64 { return share(r.ImpliedTokens, r.PromptTokens) }

// MeasuredShare is the share of the jobs' prompt tokens the prefix cache
// served.
func (j *Jobs) MeasuredShare() float64 { return share(j.CachedTokens, j.PromptTokens) }

// ImpliedShare is the share the traces' hash ids imply.
func (j *Jobs) ImpliedShare() float64 { return share(j.ImpliedTokens, j.PromptTokens) }

func share(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Rank is the block's place among a level's breakdowns.
func (*Jobs) Rank() int { return RankJobs }

func init() {
	Register(func(o Options) Accumulator { return &JobCounter{Percentiles: o.Percentiles} })
}

// JobCounter collects a level's agent-job records for the Jobs block.
// Set Percentiles before the first Add (nil: stats.DefaultPercentiles);
// the zero value is otherwise ready. It keeps a few fields of every job
// record.
type JobCounter struct {
	Percentiles []float64
	byID        map[string]int
	jobs        []jobAcc
}

type jobAcc struct {
	id    string
	nodes []jobRec
}

// jobRec is what a job's record says of its request.
type jobRec struct {
	node       string
	after      []string
	gap        int64
	sent, end  int64
	ok         bool
	prompt     int
	cached     int
	implied    int
	hasImplied bool
}

// Add keeps r if it is a measured request of an agent job (a retried
// attempt counts in its last).
func (c *JobCounter) Add(r *runlog.Record) {
	if r.JobNode == "" || r.Warmup || r.Retried {
		return
	}
	if c.byID == nil {
		c.byID = map[string]int{}
	}
	k, ok := c.byID[r.SessionID]
	if !ok {
		k = len(c.jobs)
		c.byID[r.SessionID] = k
		c.jobs = append(c.jobs, jobAcc{id: r.SessionID})
	}
	n := jobRec{node: r.JobNode, after: slices.Clone(r.JobAfter), gap: r.JobGapNs, sent: r.Sent, end: r.End, ok: r.OK(),
		prompt: r.PromptTokens, cached: r.CachedTokens}
	if r.JobImpliedCached != nil {
		n.implied, n.hasImplied = *r.JobImpliedCached, true
	}
	c.jobs[k].nodes = append(c.jobs[k].nodes, n)
}

// Breakdown is the Jobs block; nil without job records.
func (c *JobCounter) Breakdown() Breakdown {
	if len(c.jobs) == 0 {
		return nil
	}
	ps := c.Percentiles
	if ps == nil {
		ps = stats.DefaultPercentiles
	}
	out := &Jobs{Percentiles: slices.Clone(ps)}
	var e2e, model, waiting []float64
	for i := range c.jobs {
		row := c.jobs[i].row()
		out.Requests += row.Requests
		out.PromptTokens += row.PromptTokens
		out.CachedTokens += row.CachedTokens
		out.ImpliedTokens += row.ImpliedTokens
		out.HasImplied = out.HasImplied || row.HasImplied
		if row.Whole {
			out.Completed++
			e2e = append(e2e, row.E2EMs)
			model = append(model, row.ModelMs)
			waiting = append(waiting, row.WaitingMs)
		} else {
			out.Failed++
		}
		out.Rows = append(out.Rows, row)
	}
	out.E2E, out.Model, out.Waiting = jobDist(e2e, ps), jobDist(model, ps), jobDist(waiting, ps)
	return out
}

// row is the job's figures: the graph rebuilt from its records, planned
// over the measured durations.
func (a *jobAcc) row() JobRow {
	row := JobRow{ID: a.id, Requests: len(a.nodes)}
	job := jobgraph.Job{ID: a.id, Nodes: make([]jobgraph.Node, len(a.nodes))}
	var start, end int64
	started := false
	for i, n := range a.nodes {
		if !n.ok {
			row.Failed++
			continue
		}
		row.PromptTokens += n.prompt
		row.CachedTokens += n.cached
		row.ImpliedTokens += n.implied
		row.HasImplied = row.HasImplied || n.hasImplied
		job.Nodes[i] = jobgraph.Node{ID: n.node, After: n.after, Gap: time.Duration(n.gap)}
		if len(n.after) == 0 && (!started || n.sent-n.gap < start) {
			start, started = n.sent-n.gap, true
		}
		end = max(end, n.end)
	}
	if row.Failed > 0 || job.Check() != nil {
		return row // a failed job, or one cut short: its graph is not whole
	}
	s, err := job.Plan(func(i int) time.Duration { return time.Duration(a.nodes[i].end - a.nodes[i].sent) })
	if err != nil {
		return row
	}
	var modelNs int64
	for _, i := range s.Critical {
		row.Critical = append(row.Critical, a.nodes[i].node)
		modelNs += a.nodes[i].end - a.nodes[i].sent
	}
	row.Whole = true
	row.E2EMs = float64(end-start) / 1e6
	row.ModelMs = float64(modelNs) / 1e6
	row.WaitingMs = row.E2EMs - row.ModelMs
	return row
}

// jobDist is the mean and percentiles of vs.
func jobDist(vs []float64, ps []float64) JobDist {
	if len(vs) == 0 {
		return JobDist{}
	}
	slices.Sort(vs)
	d := JobDist{P: make([]float64, len(ps))}
	for _, v := range vs {
		d.Mean += v
	}
	d.Mean /= float64(len(vs))
	for k, p := range ps {
		d.P[k] = stats.Percentile(vs, p)
	}
	return d
}
