package run

import (
	"context"
	"testing"

	"github.com/goodput/goodput/internal/publish"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// The publish path worked by hand against the same run unbuffered: with
// --publish sentence --moderation-delay fixed:80 and 60 visible tokens a
// request (three sentences of publish.SentenceTokens: 20, 14, 26), each
// request's releases are at its 20th, 34th and 60th token's time, each 80 ms later
// and no earlier than the previous release plus 80 ms; so its TTP is its
// 20th token's time + 80 ms. The server's timing is the same, and a TTP
// SLO of 150 ms that every unbuffered request meets no request meets.
func TestPublishShiftsTTP(t *testing.T) {
	runOnce := func(p publish.Policy) *Result {
		cfg := simConfig(t, 12)
		cfg.Command = "sim"
		cfg.IgnoreEOS = true
		cfg.Workload.Options.RandomOutputLen, cfg.Workload.Options.RandomRangeRatio = 60, 0
		cfg.Load.RequestRate = 2
		slo, err := stats.ParseSLO("ttp:150")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Stats.SLO, cfg.Output.KeepRecords, cfg.Publish = slo, true, p
		res, err := Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	p, err := publish.Parse("sentence", "fixed:80")
	if err != nil {
		t.Fatal(err)
	}
	base, pub := runOnce(publish.Policy{}), runOnce(p)
	byID := map[string]*runlog.Record{}
	for i := range base.Records {
		byID[base.Records[i].ID] = &base.Records[i]
	}
	const ms = int64(1e6)
	checked := 0
	for i := range pub.Records {
		r := &pub.Records[i]
		b := byID[r.ID]
		if b == nil || r.Warmup {
			continue
		}
		// The unbuffered record's k-th token time.
		at := func(k int) int64 {
			n := 0
			for _, c := range b.Chunks {
				if n += int(c.Tokens); n >= k {
					return c.T
				}
			}
			t.Fatalf("%s: fewer than %d tokens", b.ID, k)
			return 0
		}
		r1 := at(20) + 80*ms
		r2 := max(at(34), r1) + 80*ms
		r3 := max(at(60), r2) + 80*ms
		want := []runlog.Chunk{{T: r1, Tokens: 20, Visible: true}, {T: r2, Tokens: 14, Visible: true}, {T: r3, Tokens: 26, Visible: true}}
		if len(r.Chunks) != 3 || r.Chunks[0] != want[0] || r.Chunks[1] != want[1] || r.Chunks[2] != want[2] {
			t.Fatalf("%s: chunks %v, want %v", r.ID, r.Chunks, want)
		}
		checked++
		if ttp, _ := r.TTP(); int64(ttp) != r1-r.Sent {
			t.Errorf("%s: TTP %v, want %v", r.ID, ttp, r1-r.Sent)
		}
		if *r.Server != *b.Server || r.End != r3 {
			t.Errorf("%s: server timing %+v (want %+v), end %d (want %d)", r.ID, *r.Server, *b.Server, r.End, r3)
		}
	}
	if checked != 12 {
		t.Fatalf("checked %d records, want 12", checked)
	}
	bs, ps := base.Levels[0].Summary, pub.Levels[0].Summary
	if bs.SLO.Attainment != 1 || ps.SLO.Good != 0 {
		t.Errorf("TTP SLO 150 ms met by %.2f of unbuffered, %d buffered; want all, none", bs.SLO.Attainment, ps.SLO.Good)
	}
}
