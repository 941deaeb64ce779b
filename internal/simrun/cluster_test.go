package simrun

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/workload"
)

func newCluster(t testing.TB, n int, router cluster.Router, change func(*sim.Config)) *cluster.Cluster {
	t.Helper()
	cfg := sim.DefaultConfig()
	if change != nil {
		change(&cfg)
	}
	cc := cluster.Config{Router: router}
	for range n {
		cc.Replicas = append(cc.Replicas, cfg)
	}
	c, err := cluster.New(cc)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func collectCluster(t testing.TB, c *cluster.Cluster, ds workload.Dataset, load Load) ([]*runlog.Record, Result) {
	t.Helper()
	var recs []*runlog.Record
	res, err := RunCluster(context.Background(), c, ds, load, func(r *runlog.Record) error {
		recs = append(recs, r)
		return nil
	})
	if err != nil {
		t.Fatalf("RunCluster: %v", err)
	}
	return recs, res
}

// sharedPrefixes is n random requests (input ~in, output out tokens) each
// behind one of prefixes shared system prompts of prefixLen tokens.
func sharedPrefixes(t testing.TB, n, in, out, prefixLen, prefixes int) workload.Dataset {
	t.Helper()
	ds, err := workload.FromOptions(workload.Options{DatasetName: "random", NumPrompts: n, Seed: 1,
		RandomInputLen: in, RandomOutputLen: out, RandomRangeRatio: 0.5, SharedPrefixLen: prefixLen, NumPrefixes: prefixes})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// One replica behind a router is the engine alone: the same records, but
// for the replica they name.
func TestClusterOfOneIsTheEngine(t *testing.T) {
	ds := sharedPrefixes(t, 300, 400, 60, 512, 4)
	load := Load{Level: runlog.Level{RequestRate: 30, Burstiness: 0.7, NumPrompts: 250, NumWarmups: 10, MaxConcurrency: 24}, Seed: 9, NaturalStop: true}
	want, wres := collect(t, newEngine(t, nil), ds, load)
	got, gres := collectCluster(t, newCluster(t, 1, cluster.Router{Policy: cluster.PolicyPrefixAware}, nil), ds, load)
	for _, r := range got {
		if r.Replica != 1 {
			t.Fatalf("record %s: replica %d; want 1", r.ID, r.Replica)
		}
		r.Replica = 0
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records of one replica vs the engine (-engine +cluster):\n%s", diff)
	}
	if wres.Completed != gres.Completed || wres.DelayedArrivals != gres.DelayedArrivals || wres.End != gres.End || wres.Engine != gres.Engine {
		t.Errorf("cluster result %+v; want the engine's %+v (steps aside)", gres, wres)
	}
	if len(gres.Replicas) != 1 || gres.Replicas[0].Routed != int64(len(got)) || gres.Steps != gres.Replicas[0].Steps {
		t.Errorf("replica stats %+v, steps %d; want one replica that took all %d requests", gres.Replicas, gres.Steps, len(got))
	}
}

// Records name their replica, every request is served once, and the
// same seed gives the same records.
func TestClusterRecords(t *testing.T) {
	ds := sharedPrefixes(t, 200, 300, 40, 256, 8)
	load := Load{Level: runlog.Level{RequestRate: 60, Burstiness: 1, NumPrompts: 200}, Seed: 2}
	for _, p := range cluster.Policies {
		t.Run(p, func(t *testing.T) {
			a, res := collectCluster(t, newCluster(t, 4, cluster.Router{Policy: p}, nil), ds, load)
			b, _ := collectCluster(t, newCluster(t, 4, cluster.Router{Policy: p}, nil), ds, load)
			if diff := cmp.Diff(a, b); diff != "" {
				t.Fatalf("two runs differ (-first +second):\n%s", diff)
			}
			per := make([]int64, 4)
			for _, r := range a {
				if r.Replica < 1 || r.Replica > 4 || !r.OK() {
					t.Fatalf("record %s: replica %d, error %q; want a replica 1..4 and success", r.ID, r.Replica, r.Error)
				}
				per[r.Replica-1]++
			}
			for i, st := range res.Replicas {
				if st.Routed != per[i] || st.Outstanding != 0 || st.KVPeak <= 0 {
					t.Errorf("replica %d: %+v; want %d routed (as the records say), none outstanding, a KV peak", i+1, st, per[i])
				}
			}
			if res.Completed != 200 {
				t.Errorf("completed %d; want 200", res.Completed)
			}
		})
	}
}

// hitShare is the share of prompt tokens served from the replicas' prefix
// caches, and the mean TTFT in ms.
func hitShare(t testing.TB, recs []*runlog.Record) (share, meanTTFTms float64) {
	var cached, prompt int64
	var sum time.Duration
	for _, r := range recs {
		cached += int64(r.CachedTokens)
		prompt += int64(r.PromptTokens)
		d, _ := r.TTFT()
		sum += d
	}
	return float64(cached) / float64(prompt), float64(sum) / float64(len(recs)) / 1e6
}

// The figure: 8 replicas, 64 shared 2,048-token system prompts, each
// replica's KV cache holding about half of them. Round-robin sends every
// prompt everywhere, so each replica's cache churns through all 64;
// prefix-aware routing keeps each prompt on the replica that has it, so
// the cluster's caches together hold them all.
func TestPrefixAwareRaisesHitShare(t *testing.T) {
	if testing.Short() {
		t.Skip("a 4,000-request cluster run")
	}
	ds := sharedPrefixes(t, 4000, 256, 64, 2048, 64)
	load := Load{Level: runlog.Level{RequestRate: 40, Burstiness: 1, NumPrompts: 4000}, Seed: 1}
	small := func(c *sim.Config) { c.NumGPUBlocksOverride = 4096 } // 65,536 tokens a replica
	share := map[string]float64{}
	for _, p := range []string{cluster.PolicyRoundRobin, cluster.PolicyLeastOutstanding, cluster.PolicyPrefixAware} {
		recs, res := collectCluster(t, newCluster(t, 8, cluster.Router{Policy: p}, small), ds, load)
		s, ttft := hitShare(t, recs)
		share[p] = s
		lo, hi := res.Replicas[0].Routed, res.Replicas[0].Routed
		for _, st := range res.Replicas {
			lo, hi = min(lo, st.Routed), max(hi, st.Routed)
		}
		t.Logf("%-17s hit share %.3f, mean TTFT %6.1f ms, requests per replica %d..%d", p, s, ttft, lo, hi)
	}
	if share[cluster.PolicyPrefixAware] < share[cluster.PolicyRoundRobin]+0.25 {
		t.Errorf("hit share prefix-aware %.3f, round-robin %.3f; want prefix-aware ahead by at least 0.25",
			share[cluster.PolicyPrefixAware], share[cluster.PolicyRoundRobin])
	}
}

// Sessions route too: under session-affinity every turn of a session goes
// to its first turn's replica, so each turn finds the history it resends
// in that replica's cache; round-robin scatters them.
func TestSessionAffinity(t *testing.T) {
	var ss []workload.Session
	for i := range 24 {
		ss = append(ss, workload.Session{ID: "c" + strconv.Itoa(i), SystemTokens: 300, Turns: turns([2]int{200, 80}, [2]int{120, 80}, [2]int{150, 60}, [2]int{100, 40})})
	}
	load := SessionLoad{Sessions: sessionSet(t, ss...), Rate: 6, Seed: 4, NaturalStop: false}
	run := func(p string) ([]*runlog.Record, SessionResult) {
		var recs []*runlog.Record
		res, err := RunSessionsCluster(context.Background(), newCluster(t, 4, cluster.Router{Policy: p}, nil), load, func(r *runlog.Record) error {
			recs = append(recs, r)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return recs, res
	}
	recs, res := run(cluster.PolicySessionAffinity)
	where := map[string]int{}
	for _, r := range recs {
		if w, ok := where[r.SessionID]; ok && w != r.Replica {
			t.Errorf("session %s: turn %d on replica %d, an earlier one on %d", r.SessionID, r.Turn, r.Replica, w)
		}
		where[r.SessionID] = r.Replica
	}
	if res.SessionsCompleted != 24 || len(where) != 24 {
		t.Fatalf("%d sessions completed over %d replicas' records; want 24", res.SessionsCompleted, len(where))
	}
	rrRecs, _ := run(cluster.PolicyRoundRobin)
	aff, _ := hitShare(t, recs)
	rr, _ := hitShare(t, rrRecs)
	t.Logf("hit share session-affinity %.3f, round-robin %.3f", aff, rr)
	if aff < rr+0.2 {
		t.Errorf("hit share session-affinity %.3f, round-robin %.3f; want affinity ahead by at least 0.2", aff, rr)
	}
}

// BenchmarkCluster1M is the cluster's speed check: 1,000,000
// ShareGPT-length requests over 16 replicas of Llama-3.1-8B / H100 behind
// a least-outstanding router, Poisson arrivals at 80 req/s (5 a replica,
// well below the ~6 one serves, so the queues stay short), in virtual
// time. It reports the
// wall time per run (goal < 60 s on one core: run with -cpu 1), the
// virtual time, the iterations over every replica, and the live heap,
// which must not grow with the request count (records are dropped as
// emitted).
func BenchmarkCluster1M(b *testing.B) {
	n := perfgoal.Size(1_000_000, 2000)
	path := filepath.Join(dataDir(b), "sharegpt-lengths", "sharegpt_8k_filtered_stats_llama2_tokenizer.csv")
	ds, err := workload.LoadLengths(path, workload.LengthsConfig{NumPrompts: n, Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		c := newCluster(b, 16, cluster.Router{Policy: cluster.PolicyLeastOutstanding}, nil)
		var live []float64
		res, err := RunCluster(context.Background(), c, ds, Load{Level: runlog.Level{RequestRate: 80, Burstiness: 1, NumPrompts: n}, Seed: 1}, liveHeap(b, 200_000, &live))
		if err != nil {
			b.Fatal(err)
		}
		if res.Completed != n {
			b.Fatalf("completed %d of %d (failed %d)", res.Completed, n, res.Failed)
		}
		b.ReportMetric(res.Duration().Seconds(), "virtual-s")
		b.ReportMetric(float64(res.Steps), "steps")
		if len(live) > 0 { // none under -short: too few requests to sample
			b.ReportMetric(live[0], "live-MiB@200k")
			b.ReportMetric(live[len(live)-1], "live-MiB@1M")
		}
		lo, hi := res.Replicas[0].Routed, res.Replicas[0].Routed
		for _, st := range res.Replicas {
			lo, hi = min(lo, st.Routed), max(hi, st.Routed)
		}
		b.Logf("requests per replica %d..%d", lo, hi)
	}
}

// Cancelling a cluster run aborts what is in flight on every replica and
// records it as cancelled; the replicas hold nothing after.
func TestClusterCancel(t *testing.T) {
	ds := randomDataset(t, 400)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c := newCluster(t, 4, cluster.Router{Policy: cluster.PolicyLeastKV}, nil)
	var recs []*runlog.Record
	res, err := RunCluster(ctx, c, ds, Load{Level: runlog.Level{MaxConcurrency: 80}}, func(r *runlog.Record) error {
		recs = append(recs, r)
		if len(recs) == 10 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunCluster error %v; want context.Canceled", err)
	}
	cancelled := 0
	for _, r := range recs {
		if r.ErrorClass == runlog.ErrCancelled {
			cancelled++
		}
	}
	if cancelled == 0 || res.Sent != len(recs) || res.Completed+res.Failed != res.Sent || res.Failed != cancelled {
		t.Errorf("records %d (cancelled %d), result %+v; want every sent request recorded", len(recs), cancelled, res)
	}
	for i, st := range c.Stats() {
		if st.Outstanding != 0 || st.Engine.Running+st.Engine.Waiting != 0 {
			t.Errorf("replica %d after the cancel: %+v; want nothing in flight", i+1, st)
		}
	}
}
