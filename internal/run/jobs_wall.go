package run

import (
	"cmp"
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goodput/goodput/internal/jobgraph"
	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/session"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/workload"
)

// jobs runs the agent jobs of s over the wall target as level 0: each
// job's graph walked as its requests end (session.JobWalk), a request
// sent once what it waits for has ended and its gap has passed. A
// request's prompt is synthetic text of the trace's length, made so that
// requests share what the trace says they share — the blocks of common
// hash ids, or the history a fork carries and the answers it resends
// (session.JobPrompt) — so the server's prefix cache meets the trace's
// reuse. The answers resent are the trace's lengths in synthetic text,
// not the server's own answers: a server that caches what it generated
// finds a resent answer cold the first time.
func (w *wall) jobs(ctx context.Context, r *runner, s *SessionLoad) (levelData, error) {
	c := r.cfg
	sr, err := w.newSessionsRun(c)
	if err != nil {
		return levelData{}, err
	}
	col := newCollector(c.Stats, false, nil, nil)
	r.fan.setLevel(col)
	defer r.fan.setLevel()
	n := s.NumSessions
	if n <= 0 {
		n = len(s.Jobs)
	}
	arrivals, slots := s.schedule(c.Seed, func(n int) int { return n })
	// Without a rate the jobs start at their recorded times, in that order.
	order := make([]int, len(s.Jobs))
	for i := range order {
		order[i] = i
	}
	if arrivals == nil {
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(s.Jobs[a].Start, s.Jobs[b].Start) })
	}
	if c.Hooks.Level != nil {
		watch := c.Hooks.Level(ctx, 0, 0)
		sr.watch = watch
		defer watch.Stop()
	}
	w.warm(ctx, min(max(s.MaxConcurrent, 1), defaultWarm))
	t0 := w.now()
	cpu := startCPU(w.embedded)
	last := s.Jobs[order[len(order)-1]].Start
	sent, delayed := w.dispatch(ctx, n, t0, slots, func(i int) (time.Duration, bool, bool) {
		if arrivals != nil {
			return arrivals.Next(), false, false
		}
		// A later cycle through the jobs starts after the last start of
		// the one before, keeping the recorded spacing.
		return s.Jobs[order[i%len(order)]].Start + time.Duration(i/len(order))*last, false, false
	}, func(i int, start int64) int {
		return r.job(ctx, i, i/len(order), &s.Jobs[order[i%len(order)]], start, sr)
	})
	return r.sessionsLevel(ctx, col, s, cpu, sent, delayed), nil
}

// job walks one job, the run's idx-th (in its cycle-th pass through the
// jobs, from 0), from start: each request is sent when the walk releases
// it and its due time comes, its record stamped with the job and node
// (Turn its place in the job's order, as in virtual time), and the walk
// is told when it ends. It returns the requests sent; a failed request
// ends the job (those in flight finish).
func (r *runner) job(ctx context.Context, idx, cycle int, job *jobgraph.Job, start int64, sr *sessionsRun) int {
	prompts, err := job.Prompts()
	if err != nil {
		return 0 // checked when the trace was read
	}
	walk, roots, err := session.NewJobWalk(job, start)
	if err != nil {
		return 0
	}
	// The hits the trace's hash ids imply, for the records to carry
	// beside the server's measured ones, as the virtual-time driver's do.
	var implied []int
	if job.BlockSize > 0 {
		hashed := false
		for k := range job.Nodes {
			hashed = hashed || len(job.Nodes[k].HashIDs) > 0
		}
		if per, _, err := job.CacheHits(); hashed && err == nil {
			implied = make([]int, len(per))
			for k, c := range per {
				implied[k] = min(c.HitTokens, max(prompts[k], 1))
			}
		}
	}
	pos := make([]int, len(job.Nodes))
	for k, x := range job.Order() {
		pos[x] = k
	}
	id := job.ID
	if cycle > 0 {
		id += "#" + strconv.Itoa(cycle+1) // as the virtual-time driver names a later cycle
	}
	jr := &wallJob{job: job, key: sim.Mix64(uint64(r.cfg.Seed) ^ 0x6a6f62 ^ uint64(idx)*0x9e3779b97f4a7c15), sr: sr,
		segs: make([][]session.Seg, len(job.Nodes)), text: map[uint64]storedText{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sent := 0
	var send func(i int)
	send = func(i int) {
		defer wg.Done()
		mu.Lock()
		due := walk.Due(i)
		prompt := jr.prompt(i, max(prompts[i], 1))
		mu.Unlock()
		if !loadgen.SleepUntil(ctx, sr.w.now, due) {
			mu.Lock()
			walk.Ended(i, sr.w.now(), false)
			mu.Unlock()
			return
		}
		nd := &job.Nodes[i]
		rid := sr.w.prefix + "j" + strconv.Itoa(idx) + "-" + nd.ID
		req := workload.Request{Prompt: prompt, OutputTokens: max(nd.Out, 1), PromptTokens: max(prompts[i], 1), Session: id}
		rec := r.sessionRequest(ctx, rid, req, due, sr)
		rec.SessionID, rec.Turn, rec.JobNode, rec.JobAfter, rec.JobGapNs = id, pos[i]+1, nd.ID, nd.After, int64(nd.Gap)
		if implied != nil {
			v := implied[i]
			rec.JobImpliedCached = &v
		}
		if !r.cfg.Output.KeepText {
			rec.GeneratedText = ""
		}
		_ = r.fan.Record(rec)
		if sr.watch != nil {
			_ = sr.watch.Record(rec)
		}
		mu.Lock()
		sent++
		next := append([]int(nil), walk.Ended(i, rec.End, rec.OK())...)
		mu.Unlock()
		for _, x := range next {
			wg.Add(1)
			go send(x)
		}
	}
	for _, x := range append([]int(nil), roots...) {
		wg.Add(1)
		go send(x)
	}
	wg.Wait()
	return sent
}

// wallJob is one job in progress over the wall clock: its prompts as
// segments and the text each segment stands for.
type wallJob struct {
	job  *jobgraph.Job
	key  uint64
	sr   *sessionsRun
	segs [][]session.Seg
	text map[uint64]storedText
}

// storedText is a segment's text and the tokens it was made for.
type storedText struct {
	text   string
	tokens int
}

// Segment kinds, mixed into a segment's key.
const (
	wallUser uint64 = iota + 1
	wallAnswer
	wallBlock
)

func (j *wallJob) mix(kind, x uint64) uint64 {
	return sim.Mix64(j.key ^ kind*0xbf58476d1ce4e5b9 ^ x*0x94d049bb133111eb)
}

// prompt is node i's prompt of n tokens as text: the blocks of its hash
// ids (each the job's block size), or its segments under its context rule.
func (j *wallJob) prompt(i, n int) string {
	nd := &j.job.Nodes[i]
	var segs []session.Seg
	if b := j.job.BlockSize; b > 0 && len(nd.HashIDs) > 0 {
		left := n
		for _, h := range nd.HashIDs {
			if left <= 0 {
				break
			}
			segs = append(segs, session.Seg{Key: j.mix(wallBlock, uint64(h)), Tokens: min(b, left)})
			left -= b
		}
		if left > 0 {
			segs = append(segs, session.Seg{Key: j.mix(wallUser, uint64(i)), Tokens: left})
		}
	} else {
		answer := func(k int) session.Seg {
			return session.Seg{Key: j.mix(wallAnswer, uint64(k)), Tokens: max(j.job.Nodes[k].Out, 1)}
		}
		segs = session.JobPrompt(j.job, i, n, func(k int) []session.Seg { return j.segs[k] }, answer, session.Seg{Key: j.mix(wallUser, uint64(i))})
		j.segs[i] = segs
	}
	var b strings.Builder
	for _, s := range segs {
		b.WriteString(j.segText(s))
	}
	return b.String()
}

// segText is the text of segment s: the same for every prompt of the job
// that carries it whole. A segment cut short (a prompt shorter than the
// context it carries) gets text of its own length, which shares nothing.
func (j *wallJob) segText(s session.Seg) string {
	if t, ok := j.text[s.Key]; ok && t.tokens == s.Tokens {
		return t.text
	}
	t := j.sr.synth.Text(s.Tokens, rand.New(rand.NewPCG(s.Key, uint64(s.Tokens))))
	if _, ok := j.text[s.Key]; !ok {
		j.text[s.Key] = storedText{t, s.Tokens}
	}
	return t
}
