package stats

import "slices"

// timeline counts output tokens per fixed-width time bucket so the fullest
// 1-second window can be found at the end, when the window origin (the first
// successful send) is finally known: records arrive in completion order, so
// the origin cannot be fixed while adding.
//
// Buckets start 1 ms wide, which places every window edge within 1 ms of
// where an exact computation would. Before the span would reach maxBuckets
// buckets (~70 min at 1 ms) the width grows tenfold (10 ms, 100 ms, 1 s) so
// memory stays bounded (≤ 16 MiB plus slack) on long runs, at the price of
// coarser window edges.
type timeline struct {
	width  int64 // bucket width in ns: 1e6, 1e7, 1e8 or 1e9
	base   int64 // absolute bucket index of counts[0]
	counts []int32
	// dropped counts chunks left out because they lay too far apart.
	dropped int
	// maxBins overrides maxBuckets when non-zero.
	maxBins int64
}

const maxBuckets = 1 << 22

func (tl *timeline) capacity() int64 {
	if tl.maxBins > 0 {
		return tl.maxBins
	}
	return maxBuckets
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// add counts tokens at time t (ns) and reports whether it did. It widens the
// buckets before growing past maxBuckets; at 1 s width a chunk that would
// still need more (times spread over ~48 days, i.e. corrupt input) is dropped
// and counted.
func (tl *timeline) add(t int64, tokens int32) bool {
	if tl.width == 0 {
		tl.width = 1e6
	}
	i := floorDiv(t, tl.width)
	if len(tl.counts) == 0 {
		tl.base = i
		tl.counts = append(tl.counts, 0)
	}
	for {
		lo, hi := min(tl.base, i), max(tl.base+int64(len(tl.counts))-1, i)
		if hi-lo < tl.capacity() {
			break
		}
		if tl.width >= 1e9 {
			tl.dropped++
			return false
		}
		tl.coarsen()
		i = floorDiv(t, tl.width)
	}
	if i < tl.base {
		// Grow to the left with slack, so a run of slightly earlier chunks
		// (records finishing out of send order) does not copy each time.
		grow := min(tl.base-i+int64(len(tl.counts)/2)+1024, tl.capacity()-int64(len(tl.counts)))
		nc := make([]int32, int64(len(tl.counts))+grow)
		copy(nc[grow:], tl.counts)
		tl.counts, tl.base = nc, tl.base-grow
	}
	if j := i - tl.base; j >= int64(len(tl.counts)) {
		tl.counts = slices.Grow(tl.counts, int(j)+1-len(tl.counts))[:j+1]
	}
	tl.counts[i-tl.base] += tokens
	return true
}

// at returns the count of the bucket with absolute index i (0 outside).
func (tl *timeline) at(i int64) int64 {
	if j := i - tl.base; j >= 0 && j < int64(len(tl.counts)) {
		return int64(tl.counts[j])
	}
	return 0
}

// end is one past the absolute index of the last bucket.
func (tl *timeline) end() int64 { return tl.base + int64(len(tl.counts)) }

// coarsen makes buckets ten times wider, merging their counts.
func (tl *timeline) coarsen() {
	nb := floorDiv(tl.base, 10)
	last := floorDiv(tl.base+int64(len(tl.counts))-1, 10)
	nc := make([]int32, last-nb+1)
	for j, c := range tl.counts {
		nc[floorDiv(tl.base+int64(j), 10)-nb] += c
	}
	tl.width *= 10
	tl.base, tl.counts = nb, nc
}

// peak returns the largest token count over 1-second windows starting at
// origin (ns), origin snapped down to the bucket grid. Buckets before the
// origin fall into the first window.
func (tl *timeline) peak(origin int64) int64 {
	if len(tl.counts) == 0 {
		return 0
	}
	perWindow := int64(1e9) / tl.width
	o := floorDiv(origin, tl.width)
	var best, cur int64
	curWin := int64(-1)
	for j, c := range tl.counts {
		if c == 0 {
			continue
		}
		w := max(floorDiv(tl.base+int64(j)-o, perWindow), 0)
		if w != curWin {
			curWin, cur = w, 0
		}
		cur += int64(c)
		best = max(best, cur)
	}
	return best
}

// flight finds the peak number of requests in flight. It keeps each
// request's [send, end) interval for an exact sweep (peakConcurrency) up to
// limit of them (0: no limit); past that it moves them, and every later
// one, into two timelines on one grid, sends and last in-flight instants
// (end − 1 ns), so memory stays bounded: 16 B a request up to the limit,
// then ≤ 8 MiB (2 × 2^20 int32 buckets, 1 ms wide for the first ~17 min of
// span, then 10 ms to ~2.9 h, 100 ms to ~29 h, 1 s to ~12 days).
//
// From the timelines the peak is the most requests in flight at any time
// within one bucket: never below the exact peak, above it by at most the
// sends and ends that share its bucket (at 1 ms, ~1 at 1,000 req/s).
type flight struct {
	limit        int
	spans        []int64 // send, end pairs while exact
	binned       bool
	starts, ends timeline
	// dropped counts intervals left out because they lay weeks apart from
	// the rest (corrupt times); only in the binned form.
	dropped int
}

// flightBins is the cap on each of flight's two timelines.
const flightBins = 1 << 20

func (f *flight) add(send, end int64) {
	if !f.binned {
		if f.limit <= 0 || len(f.spans) < 2*f.limit {
			f.spans = append(f.spans, send, end)
			return
		}
		f.binned = true
		f.starts.maxBins, f.ends.maxBins = flightBins, flightBins
		for i := 0; i < len(f.spans); i += 2 {
			f.addBinned(f.spans[i], f.spans[i+1])
		}
		f.spans = nil
	}
	f.addBinned(send, end)
}

// addBinned counts [send, end) in every bucket from send's to that of
// end − 1 ns (a request is in flight through the bucket of its last
// in-flight instant), keeping both timelines on the same width.
func (f *flight) addBinned(send, end int64) {
	if end <= send {
		return // never in flight
	}
	if !f.starts.add(send, 1) {
		f.dropped++
		return
	}
	if !f.ends.add(end-1, 1) {
		f.starts.add(send, -1) // same bucket as just counted: cannot fail
		f.dropped++
	}
	for f.starts.width < f.ends.width {
		f.starts.coarsen()
	}
	for f.ends.width < f.starts.width {
		f.ends.coarsen()
	}
}

// peak returns the peak concurrency and the bucket width it was found at,
// ns: 0 when it came from the exact sweep.
func (f *flight) peak() (int, int64) {
	if !f.binned {
		return peakConcurrency(f.spans), 0
	}
	if len(f.starts.counts) == 0 {
		return 0, f.starts.width
	}
	// In flight during bucket b: sent in b or before, minus those whose
	// last in-flight instant lay before b.
	var cur, best int64
	for b := min(f.starts.base, f.ends.base); b < max(f.starts.end(), f.ends.end()); b++ {
		cur += f.starts.at(b)
		best = max(best, cur)
		cur -= f.ends.at(b)
	}
	return int(best), f.starts.width
}
