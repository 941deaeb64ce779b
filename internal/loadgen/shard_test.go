package loadgen

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// randomSchedule is a seeded schedule of random gaps (up to 20 ms).
type randomSchedule struct {
	rng *rand.Rand
	t   time.Duration
}

func newRandomSchedule(seed uint64) *randomSchedule {
	return &randomSchedule{rng: rand.New(rand.NewPCG(seed, 1))}
}

func (s *randomSchedule) Next() time.Duration {
	s.t += time.Duration(s.rng.Int64N(int64(20 * time.Millisecond)))
	return s.t
}

// sent is what a record says of its request's place in the schedule.
type sent struct {
	ID       string
	Intended int64
	Warmup   bool
}

// runShard runs one shard (shards 0: the whole level) of 3 warm-ups and
// 50 measured requests whose schedule starts at 1 s, and returns what it
// sent, sorted by id.
func runShard(t *testing.T, shard, shards int) ([]sent, Result) {
	var out []sent
	var res Result
	synctest.Test(t, func(t *testing.T) {
		now := clock()
		var c collector
		var err error
		res, err = Run(t.Context(), Config{
			Schedule: newRandomSchedule(7), NumPrompts: 50, NumWarmups: 3, FirstIndex: 100,
			Shard: shard, Shards: shards, StartAt: int64(time.Second), Synced: true,
			Now: now, OnRecord: c.add, IDPrefix: "r-",
		}, sleepTarget(now, 35*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range c.recs {
			out = append(out, sent{ID: r.ID, Intended: r.Intended, Warmup: r.Warmup})
		}
	})
	slices.SortFunc(out, byID)
	return out, res
}

// The shards of a level together send exactly what one process sends: the
// same request indexes (so ids and prompts), warm-ups included, at the same
// intended times, each once; and the measured phase starts at StartAt.
func TestShardsUnionIsTheWholeSchedule(t *testing.T) {
	whole, wres := runShard(t, 0, 0)
	if len(whole) != 53 || wres.Next != 153 {
		t.Fatalf("whole: %d records, next index %d; want 53, 153", len(whole), wres.Next)
	}
	for _, s := range whole {
		if !s.Warmup && s.Intended < int64(time.Second) {
			t.Fatalf("%s intended at %d, before the start (1 s)", s.ID, s.Intended)
		}
	}
	for _, n := range []int{1, 2, 3, 4} {
		var union []sent
		for i := range n {
			part, res := runShard(t, i, n)
			if res.Next != 153 {
				t.Errorf("shard %d/%d: next index %d; want 153 (the other shards' indexes pass too)", i, n, res.Next)
			}
			if want := share(50, i, n) + share(3, i, n); len(part) != want {
				t.Errorf("shard %d/%d sent %d; want %d", i, n, len(part), want)
			}
			union = append(union, part...)
		}
		slices.SortFunc(union, byID)
		// Warm-ups run closed-loop: their times are when each shard got to
		// them, not a schedule's.
		strip := func(ss []sent) []sent {
			out := slices.Clone(ss)
			for i := range out {
				if out[i].Warmup {
					out[i].Intended = 0
				}
			}
			return out
		}
		if d := cmp.Diff(strip(whole), strip(union)); d != "" {
			t.Errorf("%d shards: the union differs from the whole level (-whole +union):\n%s", n, d)
		}
	}
}

func byID(a, b sent) int { return strings.Compare(a.ID, b.ID) }

// share is runlog.ShareOf, restated so the test does not lean on it.
func share(n, i, count int) int {
	s := 0
	for k := range n {
		if k%count == i {
			s++
		}
	}
	return s
}
