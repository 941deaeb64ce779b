// Package session walks a session's graph — its turns in order, each
// turn's tool rounds and then its answer — for every driver that plays
// sessions: run's over the wire on the wall clock and simrun's in virtual
// time. The walk says which request is next, what it is called and when
// it is due; the driver decides what the request carries (its history,
// its tools) and tells the walk how it ended. One walk, so that the
// agentic workloads extend one graph, not one per driver.
//
// A Walk is a synchronous state machine with no clock of its own: times
// are the driver's (ns from the run's start). It is not safe for
// concurrent use; each session's walk has one owner.
package session

import (
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/workload"
)

// Anchor is what a session's ThinkTime counts from when the session counts
// it from a send (workload.Session.ThinkFromSend) and the turn before had
// tool rounds: the two drivers have differed here, and each keeps its own
// until the agentic work settles it.
type Anchor int

const (
	// FromLastSend counts from the send of the previous turn's last
	// request (its answer): the wall-clock driver's.
	FromLastSend Anchor = iota
	// FromTurnSend counts from the send of the previous turn's first
	// request: the virtual-time driver's.
	FromTurnSend
)

// Walk is one session's place in its graph.
type Walk struct {
	sess      workload.Session
	idx       int
	maxRounds int
	anchor    Anchor

	turn, round int
	due         int64
	turnSend    int64 // the send of the turn's first request
	lastSend    int64 // the send of the latest request
	done        bool
	failed      bool
}

// New starts the walk of s, the run's session idx, at start: its first
// turn is due after that turn's ThinkTime. A turn's tool rounds end at
// maxRounds: an answer of tool calls past it ends the turn (its calls
// answered, no further request); maxRounds < 1 allows none.
func New(s workload.Session, idx int, start int64, maxRounds int, anchor Anchor) *Walk {
	w := &Walk{sess: s, idx: idx, maxRounds: maxRounds, anchor: anchor, done: len(s.Turns) == 0}
	if !w.done {
		w.due = start + int64(s.Turns[0].ThinkTime)
	}
	return w
}

// Turn is the index (into Session.Turns) of the turn of the request due
// next.
func (w *Walk) Turn() int { return w.turn }

// Round is the tool round of the request due next (0: its turn's first
// request).
func (w *Walk) Round() int { return w.round }

// Due is when the request due next is due (its intended send).
func (w *Walk) Due() int64 { return w.due }

// Done reports whether the session has no request left: every turn
// answered, or Failed.
func (w *Walk) Done() bool { return w.done }

// Failed reports whether a failed request ended the session.
func (w *Walk) Failed() bool { return w.failed }

// ID is the id of the request due next: prefix, then "s<idx>-t<turn>"
// (turns from 1), then "-r<round>" for a tool round's request.
func (w *Walk) ID(prefix string) string {
	id := prefix + "s" + strconv.Itoa(w.idx) + "-t" + strconv.Itoa(w.turn+1)
	if w.round > 0 {
		id += "-r" + strconv.Itoa(w.round)
	}
	return id
}

// Sent notes that the request due next was sent at `at`: the send a
// later turn's ThinkTime may count from (see Anchor). A driver that
// retries a request says which attempt's send counts by when it calls.
func (w *Walk) Sent(at int64) {
	if w.round == 0 {
		w.turnSend = at
	}
	w.lastSend = at
}

// Ended moves the walk on after the request due next ended at end: ok
// says it succeeded (a failure ends the session), calls that its answer
// was tool calls, wait how long their tools took. It reports whether the
// request ended its turn; the next request is then the next turn's, due
// after its ThinkTime, else the turn's next tool round, due after wait.
func (w *Walk) Ended(ok bool, end int64, calls bool, wait time.Duration) (turnEnded bool) {
	if !ok {
		w.done, w.failed = true, true
		return true
	}
	if calls && w.round < w.maxRounds {
		w.round++
		w.due = end + int64(wait)
		return false
	}
	w.turn, w.round = w.turn+1, 0
	if w.turn == len(w.sess.Turns) {
		w.done = true
		return true
	}
	think := int64(w.sess.Turns[w.turn].ThinkTime)
	w.due = end + think
	if w.sess.ThinkFromSend {
		from := w.lastSend
		if w.anchor == FromTurnSend {
			from = w.turnSend
		}
		w.due = max(end, from+think)
	}
	return true
}
