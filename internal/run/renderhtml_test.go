package run

import (
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/servermetrics"
	"github.com/goodput/goodput/internal/sweep"
)

// TestResultHTMLSweepAndServer: the HTML input carries the sweep's
// highest level within SLO for its mark, and the focus level's server
// windows and TTFT split for the page's server block.
func TestResultHTMLSweepAndServer(t *testing.T) {
	split := &breakdown.TTFTSplit{N: 3}
	r := &Result{Focus: 1, Levels: []LevelResult{
		{Index: 0},
		{Index: 1, Breakdowns: breakdown.Level{split}, Server: []ServerWindow{{Target: "server", Window: servermetrics.Window{Scrapes: 4}}}},
		{Index: 2},
	}, Sweep: &SweepResult{Result: sweep.Result{MaxWithinSLO: &sweep.Peak{Index: 1}, GoodputPeak: &sweep.Peak{Index: 2}}}}
	in := r.HTML("t", time.Time{})
	if in.Sweep == nil || in.Sweep.WithinSLO != 1 || in.Sweep.GoodputPeak != 2 || in.Sweep.Knee != -1 {
		t.Errorf("HTML marks = %+v; want within SLO 1, goodput peak 2, no knee", in.Sweep)
	}
	if len(in.ServerWindows) != 1 || in.ServerWindows[0].Target != "server" || in.ServerWindows[0].Window.Scrapes != 4 || in.TTFTSplit != split {
		t.Errorf("HTML server windows %+v, split %p; want the focus level's", in.ServerWindows, in.TTFTSplit)
	}
	r.Sweep.MaxWithinSLO = nil
	if in := r.HTML("t", time.Time{}); in.Sweep.WithinSLO != -1 {
		t.Errorf("HTML marks without a level within SLO = %+v; want WithinSLO -1", in.Sweep)
	}
}
