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
}

const maxBuckets = 1 << 22

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// add counts tokens at time t (ns). It widens the buckets before growing
// past maxBuckets; at 1 s width a chunk that would still need more (times
// spread over ~48 days, i.e. corrupt input) is dropped and counted.
func (tl *timeline) add(t int64, tokens int32) {
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
		if hi-lo < maxBuckets {
			break
		}
		if tl.width >= 1e9 {
			tl.dropped++
			return
		}
		tl.coarsen()
		i = floorDiv(t, tl.width)
	}
	if i < tl.base {
		// Grow to the left with slack, so a run of slightly earlier chunks
		// (records finishing out of send order) does not copy each time.
		grow := min(tl.base-i+int64(len(tl.counts)/2)+1024, maxBuckets-int64(len(tl.counts)))
		nc := make([]int32, int64(len(tl.counts))+grow)
		copy(nc[grow:], tl.counts)
		tl.counts, tl.base = nc, tl.base-grow
	}
	if j := i - tl.base; j >= int64(len(tl.counts)) {
		tl.counts = slices.Grow(tl.counts, int(j)+1-len(tl.counts))[:j+1]
	}
	tl.counts[i-tl.base] += tokens
}

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
