package session_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/session"
	"github.com/goodput/goodput/internal/workload"
)

// step is one request of a walk as a driver sees it, and how it ends.
type step struct {
	id        string
	due, sent int64
	end       int64
	calls     bool
	wait      time.Duration
	ok        bool
}

func TestWalk(t *testing.T) {
	two := workload.Session{Turns: []workload.Turn{{ThinkTime: 5}, {ThinkTime: 100}}}
	fromSend := two
	fromSend.ThinkFromSend = true
	for _, tt := range []struct {
		name      string
		sess      workload.Session
		maxRounds int
		anchor    session.Anchor
		steps     []step
		failed    bool
	}{
		{"turns after their think time", two, 8, session.FromLastSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 40, ok: true},
			{id: "p-s3-t2", due: 140, sent: 150, end: 160, ok: true},
		}, false},
		{"tool rounds after their tools' wait", two, 8, session.FromLastSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 40, calls: true, wait: 7, ok: true},
			{id: "p-s3-t1-r1", due: 47, sent: 47, end: 60, ok: true},
			{id: "p-s3-t2", due: 160, sent: 160, end: 170, ok: true},
		}, false},
		{"calls past the cap end the turn", two, 1, session.FromLastSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 40, calls: true, wait: 7, ok: true},
			{id: "p-s3-t1-r1", due: 47, sent: 47, end: 60, calls: true, wait: 7, ok: true},
			{id: "p-s3-t2", due: 160, sent: 160, end: 170, ok: true},
		}, false},
		{"a failure ends the session", two, 8, session.FromLastSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 40},
		}, true},
		{"think from the last send", fromSend, 8, session.FromLastSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 20, calls: true, ok: true},
			{id: "p-s3-t1-r1", due: 20, sent: 30, end: 40, ok: true},
			{id: "p-s3-t2", due: 130, sent: 130, end: 140, ok: true},
		}, false},
		{"think from the turn's first send", fromSend, 8, session.FromTurnSend, []step{
			{id: "p-s3-t1", due: 15, sent: 15, end: 20, calls: true, ok: true},
			{id: "p-s3-t1-r1", due: 20, sent: 30, end: 40, ok: true},
			{id: "p-s3-t2", due: 115, sent: 115, end: 140, ok: true},
		}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := session.New(tt.sess, 3, 10, tt.maxRounds, tt.anchor)
			for i, s := range tt.steps {
				if w.Done() {
					t.Fatalf("step %d: Done before %s", i, s.id)
				}
				if id, due := w.ID("p-"), w.Due(); id != s.id || due != s.due {
					t.Fatalf("step %d = %s due %d; want %s due %d", i, id, due, s.id, s.due)
				}
				w.Sent(s.sent)
				w.Ended(s.ok, s.end, s.calls, s.wait)
			}
			if !w.Done() || w.Failed() != tt.failed {
				t.Errorf("after the steps Done = %v, Failed = %v; want true, %v", w.Done(), w.Failed(), tt.failed)
			}
		})
	}
	if w := session.New(workload.Session{}, 0, 0, 8, session.FromLastSend); !w.Done() {
		t.Error("a session without turns is not Done at once")
	}
}

// A driver's loop: send what is due, tell the walk how it ended.
func ExampleWalk() {
	s := workload.Session{Turns: []workload.Turn{{}, {ThinkTime: time.Second}}}
	w := session.New(s, 0, 0, 8, session.FromLastSend)
	end := int64(0)
	for !w.Done() {
		fmt.Println(w.ID(""), "due at", time.Duration(w.Due()))
		w.Sent(w.Due())
		end = w.Due() + int64(500*time.Millisecond)
		calls := w.Turn() == 0 && w.Round() == 0 // the first answer calls a tool
		w.Ended(true, end, calls, 200*time.Millisecond)
	}
	// Output:
	// s0-t1 due at 0s
	// s0-t1-r1 due at 700ms
	// s0-t2 due at 2.2s
}
