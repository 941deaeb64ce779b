package fit_test

import (
	"bytes"
	"math"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim/fit"
)

// FuzzObserve feeds arbitrary records files through Observe and Fit: they
// must not panic, and every observation and estimate must be finite.
func FuzzObserve(f *testing.F) {
	f.Add([]byte(`{"id":"a","sent_ns":0,"chunks":[{"T":5000000,"Tokens":1,"Visible":true},{"T":6000000,"Tokens":1,"Visible":true},{"T":7000000,"Tokens":1,"Visible":true},{"T":8000000,"Tokens":1,"Visible":true},{"T":9000000,"Tokens":1,"Visible":true}],"end_ns":9000000,"prompt_tokens":1024,"completion_tokens":5,"status":200}`))
	f.Add([]byte(`{"id":"b","sent_ns":10,"chunks":[{"T":5,"Tokens":2,"Visible":true}],"end_ns":4,"prompt_tokens":3,"completion_tokens":1,"status":200,"server":{"prefill_ns":-5}}`))
	s := setup(f)
	f.Fuzz(func(t *testing.T, b []byte) {
		_, recs, _, err := runlog.ReadAll(bytes.NewReader(b), "fuzz.jsonl")
		if err != nil {
			return
		}
		obs, err := fit.Observe(recs, fit.ObserveOptions{})
		if err != nil {
			return
		}
		for _, o := range obs {
			if !(o.Seconds > 0) || math.IsInf(o.Seconds, 0) || math.IsNaN(o.Prompt) || math.IsNaN(o.Context) || o.Batch < 1 {
				t.Fatalf("Observe gave %+v; want a positive finite time and batch ≥ 1", o)
			}
		}
		res, err := fit.Fit(s, obs)
		if err != nil {
			return
		}
		for _, e := range res.Estimates {
			if !(e.Value > 0) || math.IsInf(e.Value, 0) {
				t.Fatalf("Fit estimate %+v; want positive and finite", e)
			}
		}
	})
}
