package simrun

import "container/heap"

// dueSends are the requests of sessions or jobs in progress, each due at a
// time: a session workload's feed and an agent-job feed both hold one and
// admit from it and from their next start alike (admit).
type dueSends[T any] struct {
	h   dueHeap[T]
	seq int64
}

// dueItem is one request due at t; seq orders ties by when it was queued.
type dueItem[T any] struct {
	t, seq int64
	v      T
}

// dueHeap is a min-heap of dueItem by (t, seq).
type dueHeap[T any] []dueItem[T]

func (h dueHeap[T]) Len() int { return len(h) }
func (h dueHeap[T]) Less(i, j int) bool {
	return h[i].t < h[j].t || h[i].t == h[j].t && h[i].seq < h[j].seq
}
func (h dueHeap[T]) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *dueHeap[T]) Push(x any)   { *h = append(*h, x.(dueItem[T])) }
func (h *dueHeap[T]) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// push queues v due at t.
func (q *dueSends[T]) push(t int64, v T) {
	q.seq++
	heap.Push(&q.h, dueItem[T]{t: t, seq: q.seq, v: v})
}

// pick returns the earliest send that may go — the earliest queued
// request or the next start peekStart allows — and whether it is a queued
// request; requests in progress go first on ties.
func (q *dueSends[T]) pick(peekStart func() (int64, bool)) (t int64, queued, ok bool) {
	if len(q.h) > 0 {
		t, queued, ok = q.h[0].t, true, true
	}
	if a, can := peekStart(); can && (!ok || a < t) {
		return a, false, true
	}
	return t, queued, ok
}

// admit sends, in time order, every queued request and start due by `by`
// (at it too when inclusive), none before sendAt: start begins the next
// session or job, send sends a queued request.
func (q *dueSends[T]) admit(by int64, inclusive bool, sendAt int64, peekStart func() (int64, bool), start func(at int64), send func(v T, at int64) error) error {
	for {
		t, queued, ok := q.pick(peekStart)
		if !ok || t > by || (!inclusive && t == by) {
			return nil
		}
		at := max(t, sendAt)
		if !queued {
			start(at)
			continue
		}
		if err := send(heap.Pop(&q.h).(dueItem[T]).v, at); err != nil {
			return err
		}
	}
}
