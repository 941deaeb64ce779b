package report

import (
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/runlog"
)

// TestJobTimeline: a job of three requests whose critical path is a › c,
// b failing: two bars in the path's colour, one red, none in the other
// requests' colour, each after the gap it waited; a job with no records
// is left out, and no job request at all draws nothing.
func TestJobTimeline(t *testing.T) {
	const ms = int64(1e6)
	j := &breakdown.Jobs{Completed: 1, Failed: 1, Requests: 3, Rows: []breakdown.JobRow{
		{ID: "j", Requests: 3, Whole: true, Critical: []string{"a", "c"}},
		{ID: "gone", Requests: 1},
	}}
	recs := []runlog.Record{
		{ID: "1", SessionID: "j", JobNode: "a", Intended: 0, Sent: 0, End: 100 * ms, Status: 200},
		{ID: "2", SessionID: "j", JobNode: "b", Intended: 150 * ms, Sent: 150 * ms, End: 160 * ms, Status: 500, ErrorClass: runlog.ErrHTTP5xx, JobGapNs: 50 * ms},
		{ID: "3", SessionID: "j", JobNode: "c", Intended: 300 * ms, Sent: 300 * ms, End: 400 * ms, Status: 200, JobGapNs: 200 * ms},
	}
	svg, caption := jobTimelineSVG(j, Records(recs))
	s := string(svg)
	// The legend draws each colour once.
	if got := strings.Count(s, `fill="#08306b"`) - 1; got != 2 {
		t.Errorf("%d bars on the critical path; want 2", got)
	}
	if got := strings.Count(s, `fill="#cb181d"`) - 1; got != 1 {
		t.Errorf("%d failed bars; want 1", got)
	}
	if got := strings.Count(s, `fill="#6baed6"`) - 1; got != 0 {
		t.Errorf("%d other bars; want 0", got)
	}
	if got := strings.Count(s, `fill="#e69f00"`) - 1; got != 2 {
		t.Errorf("%d gaps drawn; want 2 (b's and c's)", got)
	}
	if !strings.HasPrefix(caption, "3 requests of the first job,") || !strings.Contains(caption, "1 more job is left out") {
		t.Errorf("caption %q", caption)
	}
	if svg, _ := jobTimelineSVG(j, Records(nil)); svg != "" {
		t.Errorf("a timeline of no records: %q", svg)
	}
	if v := jobsHTML(nil, nil); v != nil {
		t.Errorf("jobsHTML(nil) = %+v", v)
	}
}
