package session

import (
	"github.com/goodput/goodput/internal/jobgraph"
)

// JobWalk is one agent job's place in its graph (package jobgraph): which
// requests are due and when. A request is due when every request it
// waits for (Node.After) has ended, plus its Gap (tool latency, think
// time); a root is due Gap after the job's start. It is the one walk of a
// job graph, for the virtual-time driver now and the wall-clock one
// later: the driver sends what the walk releases and tells it when each
// request ended.
//
// A failed request ends the job: the requests still in flight finish,
// but nothing waiting on anything is released any more. Times are the
// driver's (ns from the run's start). A JobWalk is not safe for
// concurrent use.
type JobWalk struct {
	job   *jobgraph.Job
	succ  [][]int32 // the nodes waiting for each node
	left  []int32   // predecessors of each node not yet ended
	ready []int64   // the latest end among a node's ended predecessors
	due   []int64
	// released counts the nodes made due, ended those ended; out is the
	// buffer of the nodes the last call released.
	released, ended int
	failed          bool
	out             []int
}

// NewJobWalk starts the walk of j, which must check (jobgraph.Job.Check),
// at start, and returns it with the job's roots, each due Gap after start
// (the slice is valid until the next call on the walk).
func NewJobWalk(j *jobgraph.Job, start int64) (*JobWalk, []int, error) {
	if err := j.Check(); err != nil {
		return nil, nil, err
	}
	n := len(j.Nodes)
	w := &JobWalk{job: j, succ: make([][]int32, n), left: make([]int32, n), ready: make([]int64, n), due: make([]int64, n)}
	for i := range j.Nodes {
		for _, a := range j.Nodes[i].After {
			p := j.Index(a)
			w.succ[p] = append(w.succ[p], int32(i))
			w.left[i]++
		}
		w.ready[i] = start
	}
	w.out = w.out[:0]
	for _, i := range j.Order() {
		if w.left[i] == 0 {
			w.release(int(i))
		}
	}
	return w, w.out, nil
}

// release makes node i due.
func (w *JobWalk) release(i int) {
	w.due[i] = w.ready[i] + int64(w.job.Nodes[i].Gap)
	w.released++
	w.out = append(w.out, i)
}

// Due is when node i is (or was) due: the latest end of what it waits
// for (the job's start for a root) plus its Gap. It is known once the
// walk has released i.
func (w *JobWalk) Due(i int) int64 { return w.due[i] }

// Ended notes that node i, sent earlier, ended at end, ok saying whether
// it succeeded, and returns the nodes that it released, each due at
// Due (the slice is valid until the next call on the walk). After a
// failure nothing more is released.
func (w *JobWalk) Ended(i int, end int64, ok bool) []int {
	w.ended++
	w.out = w.out[:0]
	if !ok {
		w.failed = true
	}
	if w.failed {
		return w.out
	}
	for _, s := range w.succ[i] {
		w.ready[s] = max(w.ready[s], end)
		if w.left[s]--; w.left[s] == 0 {
			w.release(int(s))
		}
	}
	return w.out
}

// InFlight is the number of released nodes not yet ended.
func (w *JobWalk) InFlight() int { return w.released - w.ended }

// Done reports whether the job has nothing left to send or wait for:
// every node ended, or a failure ended the job and what was in flight
// has ended too.
func (w *JobWalk) Done() bool {
	return w.InFlight() == 0 && (w.failed || w.ended == len(w.job.Nodes))
}

// Failed reports whether a failed request ended the job.
func (w *JobWalk) Failed() bool { return w.failed }
