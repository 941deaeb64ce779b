package breakdown

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/runlog"
)

// ranked is a breakdown of a given rank, told apart by its name.
type ranked struct {
	name string
	rank int
}

func (r *ranked) Rank() int { return r.rank }

// other is a second type of breakdown.
type other struct{ rank int }

func (o *other) Rank() int { return o.rank }

// TestLevelPut: breakdowns keep rank order whatever order they come in;
// one of a type already there replaces it; a nil adds nothing.
func TestLevelPut(t *testing.T) {
	var l Level
	cost := &LevelCost{NumGPUs: 2}
	split := &TTFTSplit{N: 1}
	l.Put(cost)
	l.Put(split)
	l.Put(nil)
	l.Put(&Classes{})
	if got := []int{l[0].Rank(), l[1].Rank(), l[2].Rank()}; len(l) != 3 || got[0] != RankTTFTSplit || got[1] != RankClasses || got[2] != RankCost {
		t.Fatalf("ranks %v of %d breakdowns; want split, classes, cost", got, len(l))
	}
	l.Put(&LevelCost{NumGPUs: 4})
	if len(l) != 3 || Get[*LevelCost](l).NumGPUs != 4 {
		t.Errorf("after a second cost: %d breakdowns, cost %+v; want 3, the second", len(l), Get[*LevelCost](l))
	}
	if Get[*TTFTSplit](l) != split || Get[*Replicas](l) != nil {
		t.Errorf("Get split %p, replicas %p; want %p, nil", Get[*TTFTSplit](l), Get[*Replicas](l), split)
	}
	// Equal ranks keep their arrival order.
	var m Level
	m.Put(&ranked{"a", 5})
	m.Put(&other{5})
	m.Put(&ranked{"b", 1})
	if diff := cmp.Diff(Level{&ranked{"b", 1}, &other{5}}, m, cmp.AllowUnexported(ranked{}, other{})); diff != "" {
		t.Errorf("level (-want +got):\n%s", diff)
	}
}

// TestSetBuiltIns: a Set has the built-in kinds, each reading its own
// records: a record of replica 2 and one of priority class 1 make the
// replicas' and the gateway's blocks; without server timing, no split.
func TestSetBuiltIns(t *testing.T) {
	s := NewSet(Options{Percentiles: []float64{50, 99}})
	for _, r := range []runlog.Record{
		{ID: "a", Replica: 1, Status: 200},
		{ID: "b", Replica: 2, Priority: 1, Status: 200},
	} {
		s.Add(&r)
	}
	l := s.Level()
	if Get[*Replicas](l) == nil || Get[*Classes](l) == nil || Get[*TTFTSplit](l) != nil {
		t.Errorf("level %+v; want replicas and classes, no split", l)
	}
	if len(NewSet(Options{}).Level()) != 0 {
		t.Error("an empty level has breakdowns")
	}
}
