package report

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// threeTurns is two sessions of three turns each, worked by hand (ms):
//
//	s1 turn 1: sent 0, visible at 100 and 150, ends 150 (prompt 1000).
//	s1 turn 2: after 500 ms of think time sent 650, a hidden tool-call
//	           token at 750, ends 800 (prompt 2000, 1000 cached); the tool
//	           takes 200 ms; round 1 sent 1000, visible at 1150 and 1200,
//	           ends 1200 (prompt 2100, 2000 cached).
//	s1 turn 3: after 800 ms sent 2000, visible at 2300, ends 2400 (prompt
//	           3000, 2100 cached).
//	s2 turn 1: sent 100, visible at 300, ends 350 (prompt 1000).
//	s2 turn 2: after 500 ms sent 850, visible at 1100, ends 1200 (prompt
//	           2000, 1000 cached).
//	s2 turn 3: after 500 ms sent 1700, visible at 2100, ends 2200 (prompt
//	           3000, 2000 cached).
//
// s1: turn TTFTs 100, 100, 300 (P95 280); TTPs 100, 500 (1150 − 650), 300;
// model 150 + 150 + 200 + 400 = 900, tool 200, think 1300; duration 2400.
// s2: TTFTs = TTPs 200, 250, 400 (P95 385); model 1100, tool 0, think
// 1000; duration 2100. Under ttp:450, s1 (max TTP 500) misses, s2 (400)
// meets: attainment 0.5, goodput 1 / 2.4 s.
func threeTurns() []runlog.Record {
	c := func(t int64, visible bool) runlog.Chunk { return runlog.Chunk{T: t * ms, Tokens: 1, Visible: visible} }
	r := func(id, sess string, turn, round int, sent, end int64, prompt, cached int, chunks ...runlog.Chunk) runlog.Record {
		return runlog.Record{ID: id, SessionID: sess, Turn: turn, ToolRound: round, Intended: sent * ms, Sent: sent * ms, End: end * ms,
			Chunks: chunks, PromptTokens: prompt, CachedTokens: cached, CompletionTokens: len(chunks), Status: 200}
	}
	tool := r("a2", "s1", 2, 0, 650, 800, 2000, 1000, c(750, false))
	tool.ToolCalls = []runlog.ToolCall{{ID: "call_1", Name: "search"}}
	tool.ToolLatencyNs = 200 * ms
	return []runlog.Record{
		r("a1", "s1", 1, 0, 0, 150, 1000, 0, c(100, true), c(150, true)),
		r("b1", "s2", 1, 0, 100, 350, 1000, 0, c(300, true)),
		tool,
		r("b2", "s2", 2, 0, 850, 1200, 2000, 1000, c(1100, true)),
		r("a3", "s1", 2, 1, 1000, 1200, 2100, 2000, c(1150, true), c(1200, true)),
		r("b3", "s2", 3, 0, 1700, 2200, 3000, 2000, c(2100, true)),
		r("a4", "s1", 3, 0, 2000, 2400, 3000, 2100, c(2300, true)),
		{ID: "w", Warmup: true, SessionID: "s0", Turn: 1, Sent: -500 * ms, End: -400 * ms, Status: 200},
	}
}

func threeTurnsSummary() stats.SessionSummary {
	return stats.SummarizeSessions(threeTurns(), nil, stats.SessionSLO{TTP: 450 * time.Millisecond}, 0)
}

func readCSV(t *testing.T, b []byte) [][]string {
	t.Helper()
	rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v\n%s", err, b)
	}
	return rows
}

// column returns the cells of column name, header left out.
func column(t *testing.T, rows [][]string, name string) []string {
	t.Helper()
	for i, h := range rows[0] {
		if h == name {
			var out []string
			for _, r := range rows[1:] {
				out = append(out, r[i])
			}
			return out
		}
	}
	t.Fatalf("no column %q in %q", name, rows[0])
	return nil
}

func TestTurnsCSV(t *testing.T) {
	s := threeTurnsSummary()
	var b bytes.Buffer
	if err := WriteTurnsCSV(&b, &s); err != nil {
		t.Fatal(err)
	}
	golden(t, "turns.golden.csv", b.Bytes())
	rows := readCSV(t, b.Bytes())
	// Per turn over the two sessions: TTFT [100, 200], [100, 250], [300,
	// 400]; TTP [100, 200], [250, 500], [300, 400]; P95 of two values a < b
	// is a + 0.95 (b − a). Cached share: turn 2 2000 of 4000, turn 3 4100
	// of 6000 (the first requests' prompts only).
	for _, tc := range []struct {
		col  string
		want []string
	}{
		{"turn", []string{"1", "2", "3"}},
		{"sessions", []string{"2", "2", "2"}},
		{"ttft_p50_ms", []string{"150", "175", "350"}},
		{"ttft_p95_ms", []string{"195", "242.5", "395"}},
		{"ttp_p50_ms", []string{"150", "375", "350"}},
		{"ttp_p99_ms", []string{"199", "497.5", "399"}},
		{"prompt_tokens_p50", []string{"1000", "2000", "3000"}},
		{"cached_share", []string{"0", "0.5", fcell(4100.0 / 6000)}},
	} {
		if diff := cmp.Diff(tc.want, column(t, rows, tc.col)); diff != "" {
			t.Errorf("turns CSV %s (-want +got):\n%s", tc.col, diff)
		}
	}
	// Percentiles the run did not ask for are empty, not made up.
	few := stats.SummarizeSessions(threeTurns(), []float64{50}, stats.SessionSLO{}, 0)
	b.Reset()
	if err := WriteTurnsCSV(&b, &few); err != nil {
		t.Fatal(err)
	}
	rows = readCSV(t, b.Bytes())
	if got := column(t, rows, "ttft_p95_ms"); got[0] != "" {
		t.Errorf("ttft_p95_ms without P95 asked = %q; want empty", got)
	}
	if got := column(t, rows, "ttft_p50_ms"); got[0] != "150" {
		t.Errorf("ttft_p50_ms with only P50 asked = %q; want 150", got[0])
	}
}

func TestSessionsCSV(t *testing.T) {
	s := threeTurnsSummary()
	var b bytes.Buffer
	if err := WriteSessionsCSV(&b, &s); err != nil {
		t.Fatal(err)
	}
	golden(t, "sessions.golden.csv", b.Bytes())
	want := [][]string{
		SessionsColumns,
		{"s1", "0", "3", "1", "false", "2400", "900", "200", "1300", "500", "280", "false"},
		{"s2", "100", "3", "0", "false", "2100", "1100", "0", "1000", "400", "385", "true"},
	}
	if diff := cmp.Diff(want, readCSV(t, b.Bytes())); diff != "" {
		t.Errorf("sessions CSV (-want +got):\n%s", diff)
	}
	// Without a session SLO met_slo is empty; a failed session without a
	// visible answer has no TTP.
	recs := threeTurns()
	recs[1].ErrorClass, recs[1].Status, recs[1].Chunks = runlog.ErrHTTP5xx, 500, nil
	ns := stats.SummarizeSessions(recs, nil, stats.SessionSLO{}, 0)
	b.Reset()
	if err := WriteSessionsCSV(&b, &ns); err != nil {
		t.Fatal(err)
	}
	rows := readCSV(t, b.Bytes())
	if got := column(t, rows, "met_slo"); got[0] != "" || got[1] != "" {
		t.Errorf("met_slo without an SLO = %q; want empty", got)
	}
	if got := column(t, rows, "failed"); got[1] != "true" {
		t.Errorf("failed of s2 with a 500 = %q; want true", got[1])
	}
	// s2's turn 1 has no TTP now, but turns 2 and 3 do: the max is 400.
	if got := column(t, rows, "max_turn_ttp_ms"); got[1] != "400" {
		t.Errorf("max_turn_ttp_ms of s2 = %q; want 400", got[1])
	}
}

func TestSessionCSVDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	s := threeTurnsSummary()
	paths, err := WriteSessionCSVDir(dir, &s)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{filepath.Join(dir, TurnsCSVName), filepath.Join(dir, SessionsCSVName)}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("WriteSessionCSVDir paths (-want +got):\n%s", diff)
	}
	for i, n := range []int{1 + 3, 1 + 2} { // header + turns, header + sessions
		b, err := os.ReadFile(want[i])
		if err != nil {
			t.Fatal(err)
		}
		if rows := readCSV(t, b); len(rows) != n {
			t.Errorf("%s has %d rows; want %d", want[i], len(rows), n)
		}
	}
	if paths, err := WriteSessionCSVDir(filepath.Join(t.TempDir(), "none"), &stats.SessionSummary{}); err != nil || paths != nil {
		t.Errorf("WriteSessionCSVDir(no sessions) = %q, %v; want nothing written", paths, err)
	}
}

func TestSessionRows(t *testing.T) {
	rows := sessionRows(threeTurns())
	seg := func(k segKind, a, b int64) segment { return segment{k, a * ms, b * ms} }
	want := []sessionRow{
		{id: "s1", start: 0, end: 2400 * ms, segs: []segment{
			seg(segModel, 0, 150), seg(segThink, 150, 650), seg(segModel, 650, 800), seg(segTool, 800, 1000),
			seg(segModel, 1000, 1200), seg(segThink, 1200, 2000), seg(segModel, 2000, 2400)}},
		{id: "s2", start: 100 * ms, end: 2200 * ms, segs: []segment{
			seg(segModel, 100, 350), seg(segThink, 350, 850), seg(segModel, 850, 1200), seg(segThink, 1200, 1700),
			seg(segModel, 1700, 2200)}},
	}
	if diff := cmp.Diff(want, rows, cmp.AllowUnexported(sessionRow{}, segment{})); diff != "" {
		t.Errorf("sessionRows (-want +got):\n%s", diff)
	}
	// The segments add up to the split stats makes.
	s := threeTurnsSummary()
	for i, r := range rows {
		var sum [4]int64
		for _, g := range r.segs {
			sum[g.kind] += g.t1 - g.t0
		}
		p := s.PerSession[i]
		if got := [3]time.Duration{time.Duration(sum[segModel]), time.Duration(sum[segTool]), time.Duration(sum[segThink])}; got != [3]time.Duration{p.Model, p.Tool, p.Think} {
			t.Errorf("session %s timeline model/tool/think = %v; stats says %v %v %v", r.id, got, p.Model, p.Tool, p.Think)
		}
	}
	// A failed request is its own colour.
	recs := threeTurns()
	recs[1].ErrorClass = runlog.ErrTimeout
	if got := sessionRows(recs)[1].segs[0].kind; got != segFailed {
		t.Errorf("failed request's segment = %v; want segFailed", got)
	}
}

func sessionsInput(t *testing.T, recs []runlog.Record, s *stats.SessionSummary) HTMLInput {
	t.Helper()
	meta := handMeta()
	return HTMLInput{Meta: meta, Levels: breakdown.SummarizeLevels(meta, recs, stats.Options{}), Records: Records(recs), Sessions: s}
}

func TestHTMLSessionsGolden(t *testing.T) {
	s := threeTurnsSummary()
	page := renderHTML(t, sessionsInput(t, threeTurns(), &s))
	if bad := externalRefs(t, page); len(bad) > 0 {
		t.Errorf("HTML with sessions references outside the file: %q", bad)
	}
	sec := section(t, page, "Sessions")
	golden(t, "html_sessions.golden", sec)
	for _, w := range []string{
		"Turn TTFT and TTP by turn", "TTFT P50–P99", "TTP P50–P99", "Prompt tokens by turn", "Cached share by turn",
		"Session timeline", "All 2 sessions, by start.", ">model (request in flight)<", ">tool (after a tool call)<", ">think (between turns)<",
		"<td>ttp:450</td><td>50.0 %</td><td>0.42</td>", // session SLO, attainment, goodput 1/2.4 s
		"<td>2</td><td>2</td><td>175.00</td><td>242.50</td><td>248.50</td><td>375.00</td><td>487.50</td><td>497.50</td><td>2000</td><td>50.0 %</td>",
	} {
		if !bytes.Contains(sec, []byte(w)) {
			t.Errorf("sessions section lacks %q", w)
		}
	}
	// s1's tool wait: 800 → 1000 ms of a 0 → 2400 ms axis, 884 px wide
	// from x = 104: x = 104 + 884·800/2400 = 398.7, width 73.7.
	if w := `<rect x="398.7" y="35.0" width="73.7" height="10.0" fill="#e69f00"/>`; !bytes.Contains(sec, []byte(w)) {
		t.Errorf("sessions timeline lacks s1's tool wait %s", w)
	}

	// Without a summary given, it is computed from the records (no SLO).
	page = renderHTML(t, sessionsInput(t, threeTurns(), nil))
	sec = section(t, page, "Sessions")
	if !bytes.Contains(sec, []byte("Session timeline")) || !bytes.Contains(sec, []byte("<td>–</td><td>–</td><td>–</td></tr>")) {
		t.Errorf("sessions section from records alone:\n%.2000s", sec)
	}
	// Without records, the by-turn part stays and the timeline is said
	// missing.
	in := sessionsInput(t, threeTurns(), &s)
	in.Records = nil
	sec = section(t, renderHTML(t, in), "Sessions")
	if bytes.Contains(sec, []byte("Session timeline")) || !bytes.Contains(sec, []byte("the session timeline is left out")) {
		t.Errorf("sessions section without records:\n%.2000s", sec)
	}
	// No sessions: no section.
	if page := renderHTML(t, sessionsInput(t, handRecords(), nil)); bytes.Contains(page, []byte("<h2>Sessions</h2>")) {
		t.Error("a run without sessions has a sessions section")
	}
}

// TestHTMLSessionTimelineCap: 120 sessions draw 50 rows, and the caption
// says so.
func TestHTMLSessionTimelineCap(t *testing.T) {
	var recs []runlog.Record
	for i := range 120 {
		sent := int64(i) * 10 * ms
		recs = append(recs, runlog.Record{ID: fmt.Sprint(i), SessionID: fmt.Sprintf("sess-%03d-with-a-long-name", i), Turn: 1,
			Sent: sent, End: sent + 50*ms, Chunks: []runlog.Chunk{{T: sent + 20*ms, Tokens: 1, Visible: true}}, Status: 200})
	}
	sec := section(t, renderHTML(t, sessionsInput(t, recs, nil)), "Sessions")
	if w := "The first 50 of 120 sessions by start; the other 70 are left out"; !bytes.Contains(sec, []byte(w)) {
		t.Errorf("capped timeline caption lacks %q", w)
	}
	tl := sec[bytes.Index(sec, []byte(`aria-label="session timeline"`)):]
	if n := bytes.Count(tl, []byte(`fill="#0072b2"`)); n != 50+1 { // rows + the legend's swatch
		t.Errorf("capped timeline draws %d model bars; want 50 (+1 in the legend)", n-1)
	}
	if !bytes.Contains(tl, []byte("sess-049-with…")) || bytes.Contains(tl, []byte("sess-050")) {
		t.Error("capped timeline does not show exactly the first 50 sessions by start, names cut to 14 runes")
	}
	if strings.Count(string(sec), "<svg") != 4 {
		t.Errorf("sessions section has %d charts; want 4", strings.Count(string(sec), "<svg"))
	}
}

// TestCompareSessionsGolden renders a comparison of the hand-made sessions
// with themselves 100 ms slower (every token and end; compare's tests work
// the figures out by hand): the terminal's Sessions block and the HTML's
// Sessions table.
func TestCompareSessionsGolden(t *testing.T) {
	a := threeTurns()
	b := threeTurns()
	for i := range b {
		for k := range b[i].Chunks {
			b[i].Chunks[k].T += 100 * ms
		}
		b[i].End += 100 * ms
	}
	c, err := compare.Compare(compare.Run{Name: "a.jsonl", Records: a}, compare.Run{Name: "b.jsonl", Records: b},
		compare.Options{SessionSLO: stats.SessionSLO{TTP: 450 * time.Millisecond}, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CompareTerminal(&out, c); err != nil {
		t.Fatal(err)
	}
	golden(t, "compare_sessions.golden", out.Bytes())
	text := strings.Join(strings.Fields(out.String()), " ") // the columns' widths aside
	for _, w := range []string{
		"Sessions: 2 → 2; session SLO (ms) ttp:450: 1 → 0 met",
		"Session goodput (sessions/s) – 0.42 0.00 −0.42",
		"Session SLO attainment – 50.00 % 0.00 % −50.0 pp",
		"Session duration (ms) P95 2385 2485 +100",
		"Turn TTFT (ms) P95 375 475 +100",
		"Session TTP (ms) P95 495 595 +100",
		"TTFT per 1K history tokens (ms) – 100 100 +0.00",
		"Cached share – 50.83 % 50.83 % +0.00 pp",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("compare terminal lacks %q", w)
		}
	}
	var page bytes.Buffer
	if err := CompareHTML(&page, CompareHTMLInput{Comparison: c}); err != nil {
		t.Fatal(err)
	}
	sec := section(t, page.Bytes(), "Sessions")
	for _, w := range []string{"<caption>2 → 2 sessions; session SLO (ms) ttp:450: 1 → 0 met</caption>",
		"<td>Turn TTFT (ms)</td><td>P95</td><td>375</td><td>475</td><td>&#43;100</td>"} {
		if !bytes.Contains(sec, []byte(w)) {
			t.Errorf("compare HTML sessions lacks %q:\n%s", w, sec)
		}
	}
	// Without sessions on both sides, no block.
	c, _ = compare.Compare(compare.Run{Records: a}, compare.Run{Records: handRecords()}, compare.Options{Resamples: 100})
	out.Reset()
	_ = CompareTerminal(&out, c)
	if strings.Contains(out.String(), "-Sessions-") || !strings.Contains(out.String(), "only A has sessions (2)") {
		t.Errorf("one-sided sessions compare:\n%s", out.String())
	}
}
