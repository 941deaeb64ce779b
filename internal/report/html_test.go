package report

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/perfgoal"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

func renderHTML(t *testing.T, in HTMLInput) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := HTML(&b, in); err != nil {
		t.Fatalf("HTML() = %v", err)
	}
	return b.Bytes()
}

// externalRefs parses page as HTML (encoding/xml in its lenient HTML mode)
// and returns every reference that would make a browser fetch something:
// a script or stylesheet link of any kind, an attribute naming a URL with a
// scheme or a network path, a CSS url() or @import.
func externalRefs(t *testing.T, page []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(page))
	dec.Strict = false
	dec.AutoClose = xml.HTMLAutoClose
	dec.Entity = xml.HTMLEntity
	var bad []string
	remote := func(v string) bool {
		v = strings.TrimSpace(strings.ToLower(v))
		return strings.Contains(v, "://") || strings.HasPrefix(v, "//")
	}
	cssBad := func(css string) bool {
		css = strings.ToLower(css)
		return strings.Contains(css, "url(") || strings.Contains(css, "@import")
	}
	inStyle := false
	elements := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("report does not parse: %v", err)
		}
		switch tk := tok.(type) {
		case xml.StartElement:
			elements++
			name := strings.ToLower(tk.Name.Local)
			switch name {
			case "script", "link", "iframe", "object", "embed", "img", "image", "use", "audio", "video", "source":
				bad = append(bad, "<"+name+">")
			}
			inStyle = name == "style"
			for _, a := range tk.Attr {
				an := strings.ToLower(a.Name.Local)
				switch {
				case an == "src" || an == "href" || an == "action" || an == "poster" || an == "data" || an == "srcset":
					bad = append(bad, an+"="+a.Value)
				case an == "style" && cssBad(a.Value):
					bad = append(bad, "style="+a.Value)
				case remote(a.Value) && a.Name.Space != "xmlns" && an != "xmlns":
					bad = append(bad, an+"="+a.Value)
				}
			}
		case xml.EndElement:
			inStyle = false
		case xml.CharData:
			if inStyle && cssBad(string(tk)) {
				bad = append(bad, "<style> with url() or @import")
			}
		}
	}
	if elements < 20 {
		t.Fatalf("report parsed into only %d elements; want a page", elements)
	}
	return bad
}

func sweepInput(t *testing.T, n, maxOut int) HTMLInput {
	t.Helper()
	meta, recs := synthRun(n, []float64{2, 4, 8}, true, maxOut)
	slo, err := stats.ParseSLO("ttft:300 tpot:30")
	if err != nil {
		t.Fatal(err)
	}
	levels := breakdown.SummarizeLevels(meta, recs, stats.Options{SLO: slo})
	return HTMLInput{
		Meta: meta, Levels: levels, Records: Records(recs),
		SLA:      "Up to 4 req/s keep 95 % of requests within ttft:300 tpot:30.",
		Findings: []findings.Finding{{ID: "queueing-dominates-ttft", Severity: findings.Warning, Message: "Queueing is <b>most</b> of TTFT at 8 req/s.", Evidence: map[string]any{"queue_share": 0.71, "level": 2}}},
		Sweep:    &SweepMarks{Knee: 1, GoodputPeak: 1, WithinSLO: -1},
	}
}

func TestHTMLSelfContained(t *testing.T) {
	hand := stats.Summarize(handRecords(), stats.Options{})
	tests := []struct {
		name string
		in   HTMLInput
		want []string
		not  []string
	}{
		{"single run", HTMLInput{Meta: handMeta(), Levels: []breakdown.LevelSummary{{Summary: *handSummary(t), Level: handMeta().Levels[0]}}, Records: Records(handRecords())},
			[]string{"CDF of TTFT", "CDF of TTP", "CDF of TPOT", "CDF of E2EL", "ITL histogram", "Per-request timeline", "Output throughput over time", "Requests in flight over time", "llama-3-8b", "SLO missed"},
			[]string{"Load sweep", "Findings"}},
		{"summary only", HTMLInput{Levels: []breakdown.LevelSummary{{Summary: hand}}},
			[]string{"No per-request records were given"},
			[]string{"<svg"}},
		{"sweep with findings", sweepInput(t, 300, 60),
			[]string{"Load sweep", "TTFT vs load", "TPOT vs load", "Throughput and goodput vs load", "knee (4 req/s)", "goodput peak (4 req/s)",
				"queueing-dominates-ttft", "Queueing is &lt;b&gt;most&lt;/b&gt; of TTFT", "queue_share = 0.71", "Up to 4 req/s keep 95 %", ">SLO met:<", ">SLO missed:<", ">queued<", ">decode<"},
			[]string{"<b>most</b>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := renderHTML(t, tt.in)
			if bad := externalRefs(t, page); len(bad) > 0 {
				t.Errorf("HTML(%s) references outside the file: %q", tt.name, bad)
			}
			for _, w := range tt.want {
				if !bytes.Contains(page, []byte(w)) {
					t.Errorf("HTML(%s) lacks %q", tt.name, w)
				}
			}
			for _, w := range tt.not {
				if bytes.Contains(page, []byte(w)) {
					t.Errorf("HTML(%s) contains %q; want it absent", tt.name, w)
				}
			}
		})
	}
}

// TestExternalRefsDetects makes sure the checker above can fail.
func TestExternalRefsDetects(t *testing.T) {
	base := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>x</title></head><body>` + strings.Repeat("<p>a</p>", 20)
	for _, bad := range []string{
		`<script src="https://cdn.example/x.js"></script>`,
		`<script>1</script>`,
		`<link rel="stylesheet" href="//cdn.example/x.css">`,
		`<div style="background:url(http://x/y.png)">a</div>`,
		`<style>@import "https://x/y.css";</style>`,
		`<svg><image href="http://x/y.png"/></svg>`,
		`<a href="https://example.com">x</a>`,
	} {
		if got := externalRefs(t, []byte(base+bad+"</body></html>")); len(got) == 0 {
			t.Errorf("externalRefs(%q) = none; want it flagged", bad)
		}
	}
}

// TestHTMLSize100k renders 100,000 requests and bounds the page size: the
// CDFs and the timeline are downsampled, the ITL histogram binned.
func TestHTMLSize100k(t *testing.T) {
	if testing.Short() {
		t.Skip("100,000 requests: skipped with -short")
	}
	meta, recs := synthRun(perfgoal.Size(100_000, 1000), []float64{50}, true, 8)
	levels := breakdown.SummarizeLevels(meta, recs, stats.Options{})
	page := renderHTML(t, HTMLInput{Meta: meta, Levels: levels, Records: Records(recs)})
	const limit = 1 << 20
	if len(page) > limit {
		t.Errorf("HTML(100,000 requests) is %d bytes; want at most %d", len(page), limit)
	}
	if !bytes.Contains(page, []byte("400 of 100000 requests (every 250th by send time)")) {
		t.Error("HTML(100,000 requests) does not say the timeline is downsampled to 400 rows")
	}
	t.Logf("100,000 requests: %d bytes of HTML", len(page))
}

func TestSLOMetAgreesWithStats(t *testing.T) {
	_, recs := synthRun(400, []float64{4}, false, 40)
	recs = append(recs, handRecords()...)
	for _, spec := range []string{"ttft:100", "tpot:12", "e2el:900 ttp:150", "ttft:200 tpot:15 e2el:2000 ttp:300", "ttp:1"} {
		slo, err := stats.ParseSLO(spec)
		if err != nil {
			t.Fatal(err)
		}
		s := stats.Summarize(recs, stats.Options{SLO: slo})
		got := 0
		for i := range recs {
			if !recs[i].Warmup && slo.Met(&recs[i]) {
				got++
			}
		}
		if got != s.SLO.Good {
			t.Errorf("SLO(%q).Met counts %d requests; stats.Summarize counts %d", spec, got, s.SLO.Good)
		}
	}
}

func TestTimelineRows(t *testing.T) {
	for _, n := range []int{1, 399, 400, 401, 1000} {
		_, recs := synthRun(n, []float64{10}, false, 3)
		cd := collect(Records(recs), stats.SLO{}, 1)
		svg, caption := timelineSVG(cd.spans, false)
		rows := strings.Count(string(svg), "<rect") - 1 /* background */ - 3 /* legend */
		stride := (n + maxTimelineRows - 1) / maxTimelineRows
		want := (n + stride - 1) / stride
		// Each drawn request has 1 or 2 bars.
		if rows < want || rows > 2*want {
			t.Errorf("timelineSVG(%d requests) drew %d bars; want %d to %d", n, rows, want, 2*want)
		}
		if (n > maxTimelineRows) != strings.Contains(caption, " of ") {
			t.Errorf("timelineSVG(%d requests) caption = %q", n, caption)
		}
	}
}

func TestTimeBins(t *testing.T) {
	var tb timeBins
	// 10 ms bins: 4096 of them cover 40.96 s; a token at 100 s forces two
	// doublings (20 ms: 81.92 s, 40 ms: 163.84 s).
	tb.add(5e6, 1)
	tb.add(15e6, 2)
	tb.add(100e9, 3)
	if tb.width != 40e6 {
		t.Errorf("width after a token at 100 s = %d ns; want 40e6", tb.width)
	}
	if tb.counts[0] != 3 || tb.counts[2500] != 3 {
		t.Errorf("bins 0 and 2500 = %v, %v; want 3, 3", tb.counts[0], tb.counts[2500])
	}
	total := 0.0
	for _, c := range tb.counts {
		total += c
	}
	if total != 6 {
		t.Errorf("total tokens = %v; want 6", total)
	}
}

func TestCDFPoints(t *testing.T) {
	// 5 values, at most 3 points: ranks 0, 2, 4 → (1, .2), (3, .6), (5, 1), after the (1, 0) start.
	got := cdfPoints([]float64{1, 2, 3, 4, 5}, 3)
	want := "[{1 0} {1 0.2} {3 0.6} {5 1}]"
	if s := strings.ReplaceAll(strings.TrimSpace(sprintXYs(got)), "  ", " "); s != want {
		t.Errorf("cdfPoints([1..5], 3) = %s; want %s", s, want)
	}
}

func sprintXYs(x interface{ Len() int }) string {
	var b strings.Builder
	b.WriteString("[")
	type xyer interface{ XY(int) (float64, float64) }
	for i := range x.Len() {
		if i > 0 {
			b.WriteString(" ")
		}
		xx, yy := x.(xyer).XY(i)
		b.WriteString("{" + trimFloat(xx) + " " + trimFloat(yy) + "}")
	}
	b.WriteString("]")
	return b.String()
}

// TestHTMLChromium renders the report in headless Chromium and checks the
// screenshot is not blank where the charts are: charts are the only
// coloured (saturated) pixels on the page.
func TestHTMLChromium(t *testing.T) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		t.Skip("chromium not installed (apt-get install -y chromium; .ci/run installs it): headless rendering not checked")
	}
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if err := os.WriteFile(page, renderHTML(t, sweepInput(t, 200, 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(dir, "shot.png")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--screenshot="+shot, "--window-size=1280,2000", "file://"+page)
	out, err := cmd.CombinedOutput()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("chromium did not finish within 90 s: %s", out)
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v\n%s", err, out)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	if b.Dx() != 1280 || b.Dy() != 2000 {
		t.Errorf("screenshot is %v; want 1280x2000", b.Size())
	}
	// The summary table sits at the top; charts start below it. Count
	// coloured pixels in the upper and lower halves of the chart area.
	colored := func(r image.Rectangle) int {
		n := 0
		for y := r.Min.Y; y < r.Max.Y; y += 2 {
			for x := r.Min.X; x < r.Max.X; x += 2 {
				c0, c1, c2, _ := img.At(x, y).RGBA()
				hi, lo := max(c0, c1, c2)>>8, min(c0, c1, c2)>>8
				if hi-lo > 60 {
					n++
				}
			}
		}
		return n
	}
	for _, r := range []image.Rectangle{image.Rect(0, 300, 1280, 1100), image.Rect(0, 1100, 1280, 2000)} {
		if n := colored(r); n < 500 {
			t.Errorf("screenshot region %v has %d coloured pixels (sampled every 2nd); want ≥ 500: charts blank?", r, n)
		}
	}
}

// BenchmarkHTML100k renders the report of 100,000 requests.
func BenchmarkHTML100k(b *testing.B) {
	meta, recs := synthRun(100_000, []float64{50}, true, 8)
	levels := breakdown.SummarizeLevels(meta, recs, stats.Options{})
	for b.Loop() {
		if err := HTML(io.Discard, HTMLInput{Meta: meta, Levels: levels, Records: Records(recs)}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestHTMLSLAVerdict: the headline box takes the verdict's colour, not
// green whatever happened.
func TestHTMLSLAVerdict(t *testing.T) {
	level := func(spec string) []breakdown.LevelSummary {
		o := stats.Options{}
		if spec != "" {
			slo, err := stats.ParseSLO(spec)
			if err != nil {
				t.Fatal(err)
			}
			o.SLO = slo
		}
		return []breakdown.LevelSummary{{Summary: stats.Summarize(handRecords(), o), Level: handMeta().Levels[0]}}
	}
	tests := []struct {
		name string
		in   HTMLInput
		want string
	}{
		// 1 of 4 requests met ttft:500 tpot:12 ttp:250 (25 %): missed.
		{"missed", HTMLInput{Levels: level("ttft:500 tpot:12 ttp:250"), SLA: "x"}, `<p class="sla missed">x</p>`},
		// r4 failed: 3 of 4 met ttft:5000 = 75 % < 99 %: still missed.
		{"failures miss", HTMLInput{Levels: level("ttft:5000"), SLA: "x"}, `<p class="sla missed">x</p>`},
		{"no SLO is neutral", HTMLInput{Levels: level(""), SLA: "x"}, `<p class="sla">x</p>`},
		{"caller's verdict", HTMLInput{Levels: level("ttft:500"), SLA: "x", SLAVerdict: "met"}, `<p class="sla met">x</p>`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page := string(renderHTML(t, tt.in))
			if !strings.Contains(page, tt.want) {
				t.Errorf("page lacks %s", tt.want)
			}
		})
	}
	// Met: all four requests of a run without its failure meet ttft:5000.
	recs := handRecords()[:4]
	slo, _ := stats.ParseSLO("ttft:5000")
	in := HTMLInput{Levels: []breakdown.LevelSummary{{Summary: stats.Summarize(recs, stats.Options{SLO: slo})}}, SLA: "x"}
	if page := string(renderHTML(t, in)); !strings.Contains(page, `<p class="sla met">x</p>`) {
		t.Errorf("all met: page lacks the met box")
	}
}

// TestHTMLFailures: the failures section counts each class and shows a
// few distinct messages, shortened.
func TestHTMLFailures(t *testing.T) {
	recs := handRecords()
	for i := range 6 {
		r := runlog.Record{ID: fmt.Sprintf("f%d", i), Intended: int64(200+i) * ms, Sent: int64(200+i) * ms, End: int64(210+i) * ms,
			Status: 429, ErrorClass: runlog.ErrHTTP429, Error: fmt.Sprintf("429 Too Many Requests: retry in %d s", i%4)}
		recs = append(recs, r)
	}
	recs = append(recs, runlog.Record{ID: "t", Sent: 300 * ms, End: 900 * ms, ErrorClass: runlog.ErrTimeout, Error: strings.Repeat("é", 200)})
	meta := handMeta()
	levels := breakdown.SummarizeLevels(meta, recs, stats.Options{})
	page := renderHTML(t, HTMLInput{Meta: meta, Levels: levels, Records: Records(recs)})
	golden(t, "html_failures.golden", section(t, page, "Failures"))

	// Without records the counts stay and the messages are said missing.
	page = renderHTML(t, HTMLInput{Meta: meta, Levels: levels})
	if sec := string(section(t, page, "Failures")); !strings.Contains(sec, "http_429") || !strings.Contains(sec, "(no records given)") {
		t.Errorf("failures without records:\n%s", sec)
	}
	// Nothing failed: no section.
	levels = breakdown.SummarizeLevels(meta, handRecords()[:4], stats.Options{})
	if page := string(renderHTML(t, HTMLInput{Levels: levels})); strings.Contains(page, "<h2>Failures</h2>") {
		t.Error("a run without failures has a failures section")
	}
}

// section returns the page from the heading <h2>name</h2> to the next
// heading.
func section(t *testing.T, page []byte, name string) []byte {
	t.Helper()
	head := []byte("<h2>" + name + "</h2>")
	i := bytes.Index(page, head)
	if i < 0 {
		t.Fatalf("page has no %s section", name)
	}
	rest := page[i+len(head):]
	if j := bytes.Index(rest, []byte("<h2>")); j >= 0 {
		rest = rest[:j]
	}
	return append(append([]byte{}, head...), rest...)
}

// TestHTMLReplicasAndShards: a cluster's replicas and a sharded run's
// shards get a section each, laid out as the terminal shows them; a run
// with neither has neither.
func TestHTMLReplicasAndShards(t *testing.T) {
	meta := handMeta()
	levels := breakdown.SummarizeLevels(meta, handRecords(), stats.Options{})
	reps := &breakdown.Replicas{Router: "prefix-aware", Rows: []breakdown.ReplicaRow{{Replica: 1, Requests: 3, TTFTN: 3, TTFTP50: 12.5, TTFTP99: 20, KVPeak: 0.5}, {Replica: 2, Requests: 1, KVPeak: -1}}}
	reps.Balance()
	shards := []breakdown.ShardRow{{ShardSummary: runlog.ShardSummary{Index: 0, Count: 2, Records: 3, Expected: 3, Sent: 3, Ended: true}},
		{ShardSummary: runlog.ShardSummary{Index: 1, Count: 2, Missing: true}}}
	page := string(renderHTML(t, HTMLInput{Meta: meta, Levels: levels, Replicas: reps, Shards: shards}))
	for _, want := range []string{"<h2>Replicas</h2>", "Replicas, router:", "prefix-aware", "12.50", "<h2>Shards</h2>", "Shards: 1 of 2 in these figures", "shard 1: missing"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if page := string(renderHTML(t, HTMLInput{Meta: meta, Levels: levels})); strings.Contains(page, "<h2>Replicas</h2>") || strings.Contains(page, "<h2>Shards</h2>") {
		t.Error("a run without a cluster or shards has their sections")
	}
}
