package breakdown

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// ShardRow is one shard of a run split over several processes, as the
// report shows it: what the merge found of it (runlog.ShardSummary), how
// late its requests left and whether its client was the bottleneck.
type ShardRow struct {
	runlog.ShardSummary
	// SendLag is Sent − Intended over the shard's measured requests, ms
	// (N 0: none in the merge).
	SendLag stats.MetricSummary
	// ClientBound says the shard's client was a bottleneck (the
	// client-bound rule on its own requests and CPU).
	ClientBound bool
}
