package sweep_test

import (
	"context"
	"fmt"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
)

// FindKnee locates where P99 TTFT turns up: here the slope into 16 req/s is
// (900−170)/8 = 91.25 ms per req/s, over 3× the low-load 10.
func ExampleFindKnee() {
	k, ok, _ := sweep.FindKnee([]float64{1, 2, 4, 8, 16}, []float64{100, 110, 130, 170, 900}, sweep.KneeConfig{})
	fmt.Println(ok, k.Load, k.P99TTFTMs, k.Slope)
	// Output: true 16 900 91.25
}

// Search bisects for the highest rate whose SLO attainment holds; this
// runner's attainment drops above 7.3 req/s.
func ExampleSearch() {
	r := sweep.RunnerFunc(func(_ context.Context, _ int, l runlog.Level) (sweep.Point, error) {
		att := 1.0
		if l.RequestRate > 7.3 {
			att = 0.8
		}
		return sweep.Point{Summary: stats.Summary{Requests: 100, SLO: stats.SLOSummary{Set: true, Attainment: att}}}, nil
	})
	res, err := sweep.Search(context.Background(), r, sweep.SearchConfig{Axis: sweep.AxisRate, Lo: 1, Hi: 17, Precision: 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("capacity %g req/s, bracket [%g, %g], %d runs\n", res.Capacity, res.Lo, res.Hi, len(res.Points))
	// Output: capacity 7 req/s, bracket [7, 7.5], 7 runs
}
