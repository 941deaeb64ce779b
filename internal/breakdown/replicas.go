package breakdown

import (
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// Replicas is how a simulated cluster's requests spread over its replicas
// (records' Replica): each replica's requests, TTFT and cache hits, and
// the routing imbalance.
type Replicas struct {
	// Router is the routing policy ("" when not known, as in a report of
	// records).
	Router string
	// Rows are the replicas in order, replica i+1 at i.
	Rows []ReplicaRow
	// MaxRequests is the most requests one replica served, MeanRequests
	// the mean over the replicas and Imbalance their ratio (1: even).
	MaxRequests  int
	MeanRequests float64
	Imbalance    float64
	// Pools subtotals the rows by pool (ReplicaRow.Pool), in the order of
	// their first replicas; nil unless the replicas are of two pools or
	// more (see SetPools).
	Pools []PoolRow
	// acc keeps the rows' records' figures, for the pools' percentiles.
	acc []replicaAcc
	// Autoscale is what the cluster's autoscaler did (nil: none, or a
	// report of records, which do not carry it).
	Autoscale *Autoscale
	// Transfer is, on a prefill/decode split, the KV transfer times of
	// its successful requests (runlog.ServerTiming.KVTransferNs); nil
	// elsewhere.
	Transfer *KVTransfer
}

// Rank is the block's place among a level's breakdowns.
func (*Replicas) Rank() int { return RankReplicas }

func init() {
	Register(func(Options) Accumulator { return new(ReplicaCounter) })
}

// PoolRow is one pool's share of a level: its replicas' rows together.
type PoolRow struct {
	// Pool is its name; Replicas the number of its replicas.
	Pool     string
	Replicas int
	// Requests, Failed, TTFTN, TTFTP50, TTFTP99 and CachedShare are as a
	// ReplicaRow's, over all the pool's requests.
	Requests, Failed int
	TTFTN            int
	TTFTP50, TTFTP99 float64
	CachedShare      float64
	// KVPeak is the highest of its replicas' KV peaks, -1 when not known.
	KVPeak float64
}

// KVTransfer is a prefill/decode split's KV transfer times: N requests,
// their P50 and P99, ms (the link's queue included).
type KVTransfer struct {
	N        int
	P50, P99 float64
}

// ReplicaRow is one replica's share of a level.
type ReplicaRow struct {
	// Replica is its number, from 1.
	Replica int
	// Requests counts the measured requests it served (warm-ups aside);
	// Failed those that failed.
	Requests, Failed int
	// TTFTN counts its requests with a TTFT; TTFTP50 and TTFTP99 are their
	// percentiles, ms.
	TTFTN            int
	TTFTP50, TTFTP99 float64
	// CachedShare is the share of its successful requests' prompt tokens
	// served from its prefix cache.
	CachedShare float64
	// KVPeak is the highest KV cache usage it reached (0..1), or -1 when
	// not known: a report of records, which do not carry it.
	KVPeak float64
	// Pool is the name of the pool the replica is of ("" when of none,
	// as in a report of records: see SetPools).
	Pool string
	// Role is, on a prefill/decode split, the replica's pool ("prefill"
	// or "decode"; "" elsewhere). A decode replica's Requests are those
	// it decoded (their records name it as ServerTiming.DecodeReplica;
	// Record.Replica is their prefill replica), so each request counts on
	// both its replicas and it has no TTFT of its own.
	Role string
}

// ReplicaCounter collects a level's records by replica, for the Replicas
// block. The zero value is ready; it keeps one TTFT per record up to
// stats.ExactRequests of them, then a sketch (stats.Values).
type ReplicaCounter struct {
	rows     []replicaAcc
	transfer stats.Values // ms
	decoders bool         // a record named a decode replica
}

type replicaAcc struct {
	requests, failed int
	decoded          int          // successful requests it decoded (a split's decode replica)
	ttft             stats.Values // ms
	prompt, cached   int64
}

// Add counts r if a replica served it (Replica > 0) and it was measured.
func (c *ReplicaCounter) Add(r *runlog.Record) {
	if r.Replica <= 0 || r.Warmup {
		return
	}
	for len(c.rows) < r.Replica {
		c.rows = append(c.rows, replicaAcc{})
	}
	a := &c.rows[r.Replica-1]
	a.requests++
	if !r.OK() {
		a.failed++
		return
	}
	if d, ok := r.TTFT(); ok {
		a.ttft.Add(float64(d) / 1e6)
	}
	a.prompt += int64(r.PromptTokens)
	a.cached += int64(r.CachedTokens)
	if s := r.Server; s != nil && s.DecodeReplica > 0 {
		c.decoders = true
		for len(c.rows) < s.DecodeReplica {
			c.rows = append(c.rows, replicaAcc{})
		}
		c.rows[s.DecodeReplica-1].decoded++
		c.transfer.Add(float64(s.KVTransferNs) / 1e6)
	}
}

// Summary is the block's figures over replicas 1 to the highest seen
// (replicas given nothing after it are not known from records: see
// SetReplicas); nil unless a record named a replica above 1.
func (c *ReplicaCounter) Summary() *Replicas {
	if len(c.rows) < 2 {
		return nil
	}
	out := &Replicas{Rows: make([]ReplicaRow, len(c.rows)), acc: c.rows}
	for i := range c.rows {
		a := &c.rows[i]
		row := ReplicaRow{Replica: i + 1, Requests: a.requests + a.decoded, Failed: a.failed, TTFTN: a.ttft.Len(), KVPeak: -1}
		if c.decoders {
			row.Role = "prefill"
			if a.decoded > 0 {
				row.Role = "decode"
			}
		}
		if a.ttft.Len() > 0 {
			row.TTFTP50, row.TTFTP99 = p50P99(&a.ttft)
		}
		if a.prompt > 0 {
			row.CachedShare = float64(a.cached) / float64(a.prompt)
		}
		out.Rows[i] = row
	}
	if c.transfer.Len() > 0 {
		out.Transfer = &KVTransfer{N: c.transfer.Len()}
		out.Transfer.P50, out.Transfer.P99 = p50P99(&c.transfer)
	}
	out.Balance()
	return out
}

// Breakdown is Summary as a Breakdown (nil for one engine).
func (c *ReplicaCounter) Breakdown() Breakdown {
	if out := c.Summary(); out != nil {
		return out
	}
	return nil
}

// SetRoles names each replica's pool on a prefill/decode split (roles[i]
// for replica i+1), which records alone know only for replicas that
// served something. A nil r stays nil.
func (r *Replicas) SetRoles(roles []string) {
	r.name(roles, func(row *ReplicaRow, v string) { row.Role = v })
}

// name sets v[i] on replica i+1's row with set, adding the rows of
// replicas that served nothing (as many as v says there were).
func (r *Replicas) name(v []string, set func(row *ReplicaRow, v string)) {
	if r == nil {
		return
	}
	for len(r.Rows) < len(v) {
		r.Rows = append(r.Rows, ReplicaRow{Replica: len(r.Rows) + 1, KVPeak: -1})
	}
	for i := range v {
		set(&r.Rows[i], v[i])
	}
	r.Balance()
}

// SetReplicas completes r with what the run itself knew: the router, and
// each replica's KV peak (kvPeaks[i] for replica i+1), which also says
// how many replicas there were, so replicas that served nothing count in
// the mean. A nil r stays nil.
func (r *Replicas) SetReplicas(router string, kvPeaks []float64) {
	if r == nil {
		return
	}
	r.Router = router
	for len(r.Rows) < len(kvPeaks) {
		r.Rows = append(r.Rows, ReplicaRow{Replica: len(r.Rows) + 1, KVPeak: -1})
	}
	for i, p := range kvPeaks {
		r.Rows[i].KVPeak = p
	}
	r.Balance()
}

// Balance sets the imbalance figures from the rows (again, after a change
// to them by hand): on a prefill/decode split, those of the pool spread
// the least evenly (each pool has its own router).
func (r *Replicas) Balance() {
	r.MaxRequests, r.MeanRequests, r.Imbalance = 0, 0, 0
	first := true
	for _, role := range []string{"", "prefill", "decode"} {
		total, most, n := 0, 0, 0
		for _, row := range r.Rows {
			if row.Role == role {
				total += row.Requests
				most = max(most, row.Requests)
				n++
			}
		}
		if n == 0 {
			continue
		}
		mean := float64(total) / float64(n)
		imb := 0.0
		if total > 0 {
			imb = float64(most) / mean
		}
		if first || imb > r.Imbalance {
			r.MaxRequests, r.MeanRequests, r.Imbalance = most, mean, imb
			first = false
		}
	}
	r.subtotal()
}

// SetPools names each replica's pool (pools[i] for replica i+1, as a
// cluster file's cluster.Config.Pools has them), which also says how
// many replicas there were, and subtotals the rows by pool when there are
// two pools or more. A nil r stays nil.
func (r *Replicas) SetPools(pools []string) {
	r.name(pools, func(row *ReplicaRow, v string) { row.Pool = v })
}

// subtotal sets Pools from the rows (and the records' figures kept).
func (r *Replicas) subtotal() {
	r.Pools = nil
	index := map[string]int{}
	for _, row := range r.Rows {
		if _, ok := index[row.Pool]; !ok && row.Pool != "" {
			index[row.Pool] = len(r.Pools)
			r.Pools = append(r.Pools, PoolRow{Pool: row.Pool})
		}
	}
	if len(r.Pools) < 2 {
		r.Pools = nil
		return
	}
	accs := make([]replicaAcc, len(r.Pools))
	for i, row := range r.Rows {
		k, ok := index[row.Pool]
		if !ok {
			continue
		}
		p, a := &r.Pools[k], &accs[k]
		if p.Replicas == 0 || row.KVPeak < 0 || p.KVPeak >= 0 && row.KVPeak > p.KVPeak {
			p.KVPeak = row.KVPeak
		}
		p.Replicas++
		p.Requests += row.Requests
		p.Failed += row.Failed
		if i < len(r.acc) {
			a.ttft.Merge(&r.acc[i].ttft)
			a.prompt += r.acc[i].prompt
			a.cached += r.acc[i].cached
		}
	}
	for k := range r.Pools {
		p, a := &r.Pools[k], &accs[k]
		p.TTFTN = a.ttft.Len()
		if a.ttft.Len() > 0 {
			p.TTFTP50, p.TTFTP99 = p50P99(&a.ttft)
		}
		if a.prompt > 0 {
			p.CachedShare = float64(a.cached) / float64(a.prompt)
		}
	}
}

// p50P99 are the median and the 99th percentile of v (ms), as the
// summaries compute them.
func p50P99(v *stats.Values) (p50, p99 float64) {
	m := v.Summarize(stats.MetricTTFT, []float64{50, 99})
	p50, _ = m.P(50)
	p99, _ = m.P(99)
	return p50, p99
}
