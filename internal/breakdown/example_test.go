package breakdown_test

import (
	"fmt"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
)

// A level's records go through a Set; its Level holds the breakdowns they
// made, each taken by type.
func Example() {
	set := breakdown.NewSet(breakdown.Options{Percentiles: []float64{50, 99}})
	for i := range 4 {
		r := runlog.Record{ID: fmt.Sprint(i), Replica: 1 + i%2, Status: 200, PromptTokens: 100, CachedTokens: 50 * (i % 2),
			End: 40e6, Chunks: []runlog.Chunk{{T: int64(10+i) * 1e6, Tokens: 1, Visible: true}}}
		set.Add(&r)
	}
	level := set.Level()
	reps := breakdown.Get[*breakdown.Replicas](level)
	for _, row := range reps.Rows {
		fmt.Printf("replica %d: %d requests, TTFT P50 %.0f ms, %.0f%% cached\n", row.Replica, row.Requests, row.TTFTP50, 100*row.CachedShare)
	}
	fmt.Println("gateway:", breakdown.Get[*breakdown.Classes](level) != nil)
	// Output:
	// replica 1: 2 requests, TTFT P50 11 ms, 0% cached
	// replica 2: 2 requests, TTFT P50 12 ms, 50% cached
	// gateway: false
}
