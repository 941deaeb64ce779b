package compare

import (
	"math"
	"strconv"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
)

// repeatedRun is n repeats of 200 requests whose TTFT is base plus the
// repeat's offset plus i mod 7 ms: within a repeat the requests vary a
// little; between repeats by offsets[r].
func repeatedRun(name string, base float64, offsets []float64) Run {
	meta := &runlog.Meta{}
	var recs []runlog.Record
	const ms = 1e6
	for r, off := range offsets {
		meta.Levels = append(meta.Levels, runlog.Level{Repeat: r + 1})
		for i := range 200 {
			sent := int64(i) * 50 * ms
			ttft := int64((base + off + float64(i%7)) * ms)
			recs = append(recs, runlog.Record{ID: strconv.Itoa(r) + "-" + strconv.Itoa(i), Level: r, Sent: sent, Intended: sent,
				End: sent + ttft + 10*ms, Status: 200, CompletionTokens: 2, PromptTokens: 10,
				Chunks: []runlog.Chunk{{T: sent + ttft, Tokens: 1, Visible: true}, {T: sent + ttft + 10*ms, Tokens: 1, Visible: true}}})
		}
	}
	return Run{Name: name, Records: recs, Meta: meta}
}

// TestRepeatsWelchByHand: A's four repeats put TTFT's mean at 100, 110,
// 90, 100 (+3 within each, the i mod 7 term's mean for 200 requests:
// 2.985), B's at 130, 140, 120, 130. The difference of the means is 30,
// each side's variance 200/3, so SE = √(2·(200/3)/4) = 5.7735, Welch's df
// = 6, t(6, 0.975) = 2.4469: 30 ± 14.127, worse. Between repeats of A
// alone against A shifted by 5 (inside the spread): no significant
// difference, and the per-request verdict, worse on 800 requests each,
// is overruled.
func TestRepeatsWelchByHand(t *testing.T) {
	a := repeatedRun("a", 100, []float64{0, 10, -10, 0})
	b := repeatedRun("b", 130, []float64{0, 10, -10, 0})
	o := Options{Metrics: []string{"ttft"}, Percentiles: []float64{50}}
	c, err := Compare(a, b, o)
	if err != nil {
		t.Fatal(err)
	}
	if c.Repeats == nil || c.Repeats.NA != 4 || c.Repeats.NB != 4 {
		t.Fatalf("repeats %+v; want 4 and 4", c.Repeats)
	}
	d := c.Repeats.Deltas[0]
	if d.Stat != "mean" || math.Abs(d.Diff-30) > 1e-9 || math.Abs(d.Hi-d.Diff-14.127) > 0.01 || d.Verdict != Worse {
		t.Errorf("mean: %+v; want +30 ± 14.127, worse", d)
	}

	shifted := repeatedRun("a5", 105, []float64{0, 10, -10, 0})
	c, err = Compare(a, shifted, o)
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Repeats.Deltas[0]; d.Verdict != NoSignificant {
		t.Errorf("between repeats: %+v; want no significant difference for +5 inside a spread of ±10", d)
	}
	for _, d := range c.Deltas {
		if d.Verdict == Worse || d.Verdict == Better {
			t.Errorf("per-request %s %s: %s although the repeats' spread covers it", d.Metric, d.Stat, d.Verdict)
		}
	}
	// One run of repeats, one plain: no between-run comparison.
	plain := repeatedRun("p", 100, []float64{0})
	plain.Meta.Levels[0].Repeat = 0
	if c, _ := Compare(a, plain, o); c.Repeats != nil {
		t.Errorf("repeats compared against a plain run: %+v", c.Repeats)
	}
}
