package simrun

import (
	"cmp"
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/session"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/workload"
)

// JobLoad is a run of agent jobs (package jobgraph) in virtual time: jobs
// arrive open-loop, and inside a job each request is sent when every
// request it waits for has ended and its recorded gap (tool latency,
// think time) has passed, with the prompt its graph says it carries.
type JobLoad struct {
	// Jobs are the jobs to run, each checked (jobgraph.Job.Check);
	// NumJobs of them run (0: len(Jobs)), job i being Jobs[i % len].
	Jobs    []jobgraph.Job
	NumJobs int
	// Rate is the jobs' arrival rate in jobs/s, Burstiness the gamma shape
	// of the gaps (0: 1, Poisson); Rate 0 starts each job at its recorded
	// Start (jobgraph.Job.Start; 0 when the trace has none), in order of
	// Start.
	Rate, Burstiness float64
	// MaxConcurrent caps the jobs in progress (0: none); a job the cap
	// holds back starts when one ends (it counts in
	// Result.DelayedArrivals, and its first requests' Intended keep the
	// arrival).
	MaxConcurrent int
	// Seed keys the arrival schedule and the prompts' identities.
	Seed int64
	// Index is copied into every Record (the sweep level index).
	Index int
	// Sample and SampleEvery sample the engine's state as Load's do.
	Sample      func(at int64, s sim.Snapshot)
	SampleEvery time.Duration
	// Timeout and KeepAbandoned are Load's; a request that timed out
	// fails its job.
	Timeout       time.Duration
	KeepAbandoned bool
}

// RunJobs runs load's jobs against eng in virtual time, as RunSessions
// does sessions, and calls emit with each request's Record the moment (in
// virtual time) it ends. A request's id is "j<i>-<node>" (i the job's
// index in the run, node its id in the job); its record carries SessionID
// (the job's ID, with "#2", "#3"… on later cycles through the jobs), Turn
// (its place in the job's topological order, from 1), JobNode, JobAfter,
// JobGapNs and, where the trace has KV block hash ids, JobImpliedCached:
// enough to rebuild the graph and its critical path from the records.
// A request asks for exactly the answer length the trace recorded. A
// failed request ends its job: what waits on anything is not sent. The
// result counts jobs as sessions.
//
// The prefix cache sees the sharing the trace recorded: a job whose trace
// has hash ids (Weka, TraceLab's minted ones) describes each prompt to
// the engine by those ids, Job.BlockSize tokens each, scoped to the job
// as the traces scope them, so two prompts share exactly the leading
// blocks their ids share; a job without them builds each prompt from its
// context rule (jobgraph.Job.Prompts: fork, spawn, last), each carried
// prompt and answer a segment hashed block by block as RunSessions does,
// so a fork finds its parent's prompt and answer cached.
//
// The walk of each job's graph is session.JobWalk's. The same inputs give
// identical records.
func RunJobs(ctx context.Context, eng *sim.Engine, load JobLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	return runJobs(ctx, &single{e: eng}, load, emit)
}

// RunJobsCluster is RunJobs over a cluster: each request is routed as it
// is sent, with its job's ID for session-affinity routing.
func RunJobsCluster(ctx context.Context, c cluster.Fleet, load JobLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	return runJobs(ctx, &replicas{c: c}, load, emit)
}

func runJobs(ctx context.Context, eng engine, load JobLoad, emit func(*runlog.Record) error) (SessionResult, error) {
	switch {
	case len(load.Jobs) == 0:
		return SessionResult{}, errors.New("simrun: no jobs")
	case load.NumJobs < 0:
		return SessionResult{}, checkErr("NumJobs", load.NumJobs, "want ≥ 0")
	case load.MaxConcurrent < 0:
		return SessionResult{}, checkErr("MaxConcurrent", load.MaxConcurrent, "want ≥ 0")
	case load.Timeout < 0:
		return SessionResult{}, checkErr("Timeout", load.Timeout, "want ≥ 0 (0: none)")
	case math.IsNaN(load.Rate) || math.IsInf(load.Rate, 0) || load.Rate < 0:
		return SessionResult{}, checkErr("Rate", load.Rate, "want ≥ 0 (0: as recorded)")
	}
	plans := make([]*jobPlan, len(load.Jobs))
	for i := range load.Jobs {
		p, err := newJobPlan(&load.Jobs[i])
		if err != nil {
			return SessionResult{}, err
		}
		plans[i] = p
	}
	r := &runner{eng: eng, load: Load{Seed: load.Seed, Index: load.Index, Sample: load.Sample, SampleEvery: load.SampleEvery,
		Timeout: load.Timeout, KeepAbandoned: load.KeepAbandoned},
		emit: emit, inflight: map[string]*flight{}}
	defer r.sampleEnd()
	f := &jobFeed{r: r, load: &load, plans: plans, n: load.NumJobs}
	r.jobs = f
	if f.n == 0 {
		f.n = len(load.Jobs)
	}
	if cfg := eng.config(); cfg.EnablePrefixCaching {
		f.block = cfg.BlockSize
	}
	// Without a rate the jobs start at their recorded times, so they are
	// taken in that order (the listed one on ties).
	f.order = make([]int, len(load.Jobs))
	for i := range f.order {
		f.order[i] = i
	}
	if load.Rate > 0 {
		f.arrivals = workload.NewArrivals(load.Rate, load.Burstiness, load.Seed)
	} else {
		slices.SortStableFunc(f.order, func(a, b int) int { return cmp.Compare(load.Jobs[a].Start, load.Jobs[b].Start) })
	}
	err := r.phase(ctx, f)
	res := f.res
	res.Result = r.result()
	return res, err
}

// jobPlan is what a job's graph implies once, for every run of it: each
// request's prompt length and place in the order, and the cache hits its
// hash ids imply.
type jobPlan struct {
	job    *jobgraph.Job
	prompt []int // tokens: In where recorded, else Prompts'
	pos    []int // place in Order, from 0
	// hashed says the trace has hash ids; implied is then each request's
	// implied hit tokens.
	hashed  bool
	implied []int
}

func newJobPlan(j *jobgraph.Job) (*jobPlan, error) {
	if err := j.Check(); err != nil {
		return nil, err
	}
	prompts, err := j.Prompts()
	if err != nil {
		return nil, err
	}
	p := &jobPlan{job: j, prompt: prompts, pos: make([]int, len(j.Nodes))}
	for k, x := range j.Order() {
		p.pos[x] = k
	}
	for i := range j.Nodes {
		if in := j.Nodes[i].In; in > 0 {
			p.prompt[i] = in
		}
		p.prompt[i] = max(p.prompt[i], 1) // the engine runs no empty prompt
		if len(j.Nodes[i].HashIDs) > 0 && j.BlockSize > 0 {
			p.hashed = true
		}
	}
	if p.hashed {
		per, _, err := j.CacheHits()
		if err != nil {
			return nil, err
		}
		p.implied = make([]int, len(per))
		for i, c := range per {
			p.implied[i] = min(c.HitTokens, p.prompt[i])
		}
	}
	return p, nil
}

// jobRun is one job in progress.
type jobRun struct {
	idx  int // the job's index in the run
	id   string
	plan *jobPlan
	w    *session.JobWalk
	// held is how long the MaxConcurrent cap held the job back: its roots'
	// Intended keep the arrival.
	held int64
	// key is the job's identity in block hashes: a trace's hash ids are
	// scoped to their job.
	key uint64
	// segs are each sent request's prompt as segments, for jobs without
	// hash ids: a later request's prompt carries them.
	segs [][]session.Seg
}

// jobFeed is RunJobs' feed: job starts in order under the MaxConcurrent
// cap, and the jobs' due requests, never held back.
type jobFeed struct {
	r        *runner
	load     *JobLoad
	plans    []*jobPlan
	order    []int // the jobs in the order they start
	n        int   // jobs to run
	block    int   // engine block size for hashes; 0: prefix caching off
	arrivals *workload.Arrivals

	started int
	peeked  bool
	nextDue int64
	active  int
	pending dueSends[jobNode]
	res     SessionResult
}

var _ feed = (*jobFeed)(nil)

// jobAt is the run's job i.
func (f *jobFeed) jobAt(i int) int { return f.order[i%len(f.order)] }

func (f *jobFeed) peekStart() (int64, bool) {
	if f.started >= f.n || f.load.MaxConcurrent > 0 && f.active >= f.load.MaxConcurrent {
		return 0, false
	}
	if !f.peeked {
		if f.arrivals != nil {
			f.nextDue = int64(f.arrivals.Next())
		} else {
			// A later cycle through the jobs starts after the last start
			// of the one before, keeping the recorded spacing.
			cycle := f.started / len(f.order)
			last := f.load.Jobs[f.order[len(f.order)-1]].Start
			f.nextDue = int64(f.load.Jobs[f.jobAt(f.started)].Start) + int64(cycle)*int64(last)
		}
		f.peeked = true
	}
	return f.nextDue, true
}

// jobNode is one request of a running job.
type jobNode struct {
	j    *jobRun
	node int
}

func (f *jobFeed) next() (int64, bool) {
	t, _, ok := f.pending.pick(f.peekStart)
	return t, ok
}

func (f *jobFeed) admit(by int64, inclusive bool, sendAt int64) error {
	return f.pending.admit(by, inclusive, sendAt, f.peekStart, f.start, func(n jobNode, at int64) error { return f.send(n.j, n.node, at) })
}

// schedule queues job j's request node at t.
func (f *jobFeed) schedule(j *jobRun, node int, t int64) { f.pending.push(t, jobNode{j, node}) }

// start begins the next job at `at` and queues its roots.
func (f *jobFeed) start(at int64) {
	due := f.nextDue
	f.peeked = false
	i := f.started
	f.started++
	plan := f.plans[f.jobAt(i)]
	f.res.Sessions++
	if len(plan.job.Nodes) == 0 {
		f.res.SessionsCompleted++
		return
	}
	j := &jobRun{idx: i, id: plan.job.ID, plan: plan, key: mix(mix(uint64(f.load.Seed), 0x6a6f62), uint64(i))}
	if k := i / len(f.order); k > 0 {
		j.id += "#" + strconv.Itoa(k+1)
	}
	if at > due && f.load.MaxConcurrent > 0 {
		j.held = at - due
		f.r.res.DelayedArrivals++
	}
	if !plan.hashed {
		j.segs = make([][]session.Seg, len(plan.job.Nodes))
	}
	f.active++
	w, roots, _ := session.NewJobWalk(plan.job, at) // checked by newJobPlan
	j.w = w
	for _, x := range roots {
		f.schedule(j, x, w.Due(x))
	}
}

// send adds node i of j to the engine at `at`.
func (f *jobFeed) send(j *jobRun, i int, at int64) error {
	p := j.plan
	nd := &p.job.Nodes[i]
	prompt, out := p.prompt[i], max(nd.Out, 1)
	rec := &runlog.Record{
		ID:                    "j" + strconv.Itoa(j.idx) + "-" + nd.ID,
		Level:                 f.load.Index,
		Intended:              j.w.Due(i),
		Sent:                  at,
		RequestedPromptTokens: prompt,
		MaxTokens:             out,
		FinishReason:          "length",
		SessionID:             j.id,
		Turn:                  p.pos[i] + 1,
		JobNode:               nd.ID,
		JobAfter:              nd.After,
		JobGapNs:              int64(nd.Gap),
	}
	if len(nd.After) == 0 {
		rec.Intended -= j.held
	}
	if p.hashed {
		v := p.implied[i]
		rec.JobImpliedCached = &v
	}
	f.r.res.Sent++
	q := sim.Request{ID: rec.ID, PromptTokens: prompt, OutputTokens: out}
	switch {
	case p.hashed:
		if f.block > 0 && len(nd.HashIDs) > 0 {
			b := p.job.BlockSize
			ids := nd.HashIDs[:min(len(nd.HashIDs), (prompt+b-1)/b)]
			hs := make([]uint64, len(ids))
			for k, id := range ids {
				hs[k] = mix(j.key, uint64(id))
			}
			q.BlockHashes, q.HashBlockTokens = hs, b
		}
	default:
		segs := f.promptSegs(j, i, prompt)
		j.segs[i] = segs
		if f.block > 0 {
			c := &convo{}
			for _, s := range segs {
				c.push(seg{key: s.Key, tokens: s.Tokens})
			}
			q.BlockHashes = c.blockHashes(f.block, j.answer(i))
			q.HashBlockTokens = f.block
		}
	}
	return f.r.add(&flight{rec: rec, out: out, job: j, node: i, attempt: 1}, q)
}

// answer is node i's answer as a segment: the tokens the engine generates
// for it, which a later prompt that carries it resends.
func (j *jobRun) answer(i int) seg {
	return seg{key: mix(mix(j.key, kindAnswer), uint64(i)), tokens: max(j.plan.job.Nodes[i].Out, 1)}
}

// promptSegs is node i's prompt, prompt tokens, as segments
// (session.JobPrompt): what it carries from the nodes before it, then its
// own new tokens.
func (f *jobFeed) promptSegs(j *jobRun, i int, prompt int) []session.Seg {
	answer := func(k int) session.Seg { a := j.answer(k); return session.Seg{Key: a.key, Tokens: a.tokens} }
	return session.JobPrompt(j.plan.job, i, prompt, func(k int) []session.Seg { return j.segs[k] }, answer,
		session.Seg{Key: mix(mix(j.key, kindUser), uint64(i))})
}

// ended moves j on after node i's request ended: the requests it
// released are queued at their due times; the job ends when nothing is
// left in flight or to send.
func (f *jobFeed) ended(j *jobRun, i int, rec *runlog.Record) {
	for _, x := range j.w.Ended(i, rec.End, rec.OK()) {
		f.schedule(j, x, j.w.Due(x))
	}
	if j.w.Done() {
		f.active--
		if j.w.Failed() {
			f.res.SessionsFailed++
		} else {
			f.res.SessionsCompleted++
		}
	}
}
