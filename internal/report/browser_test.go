package report

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/compare"
	"github.com/goodput/goodput/internal/findings"
	"github.com/goodput/goodput/internal/stats"
)

// probeJS measures a laid-out report in the browser and writes what it
// found, as JSON, into <pre id="probe">: --dump-dom then prints it. Only
// the test's copy of a page gets it; reports carry no script.
const probeJS = `<script>
(function(){
  var r = {pageWidth: document.documentElement.scrollWidth, clipped: [], warnBorders: [], legendsOverData: [], zeroPadTicks: [], mapEvidence: [], h2: {}};
  document.querySelectorAll("table").forEach(function(t){
    if (t.scrollWidth > t.clientWidth + 1) {
      var th = t.querySelector("th,caption");
      r.clipped.push((th ? th.textContent : "?") + ": " + t.scrollWidth + " > " + t.clientWidth);
    }
  });
  document.querySelectorAll("li.sev-warning").forEach(function(li){
    r.warnBorders.push(getComputedStyle(li).borderLeftColor);
  });
  document.querySelectorAll(".ev").forEach(function(e){
    if (e.textContent.indexOf("map[") >= 0) r.mapEvidence.push(e.textContent);
  });
  document.querySelectorAll("h2").forEach(function(h){
    r.h2[h.textContent] = Math.round(h.getBoundingClientRect().top + window.scrollY);
  });
  document.querySelectorAll("svg.chart").forEach(function(svg){
    // Data lines are the coloured strokes; legend entries the 9px text.
    var right = -1, legLeft = 1e9, name = svg.getAttribute("aria-label");
    svg.querySelectorAll("path").forEach(function(p){
      var s = (p.getAttribute("style") || "").match(/stroke:#([0-9A-Fa-f]{6})/);
      if (!s) return;
      var c = s[1].toUpperCase(), rr = parseInt(c.substr(0,2),16), gg = parseInt(c.substr(2,2),16), bb = parseInt(c.substr(4,2),16);
      if (Math.max(rr,gg,bb) - Math.min(rr,gg,bb) < 40) return; // black, grey, white: axes and grid
      var b = p.getBoundingClientRect();
      if (b.width > 0 || b.height > 0) right = Math.max(right, b.right);
    });
    svg.querySelectorAll("text").forEach(function(t){
      if ((t.getAttribute("style") || "").indexOf("font-size:9px") < 0) return;
      legLeft = Math.min(legLeft, t.getBoundingClientRect().left);
      if (/^-?\d+\.\d*0$/.test(t.textContent)) r.zeroPadTicks.push(name + ": " + t.textContent);
    });
    svg.querySelectorAll("text").forEach(function(t){
      if (/^-?\d+\.0+$/.test(t.textContent.trim())) r.zeroPadTicks.push(name + ": " + t.textContent);
    });
    if (right >= 0 && legLeft < 1e9 && legLeft < right - 1) r.legendsOverData.push(name + ": legend at " + Math.round(legLeft) + " < data to " + Math.round(right));
  });
  var pre = document.createElement("pre"); pre.id = "probe"; pre.textContent = JSON.stringify(r);
  document.body.appendChild(pre);
})();
</script>`

// layout is what probeJS reports.
type layout struct {
	PageWidth       int            `json:"pageWidth"`
	Clipped         []string       `json:"clipped"`
	WarnBorders     []string       `json:"warnBorders"`
	LegendsOverData []string       `json:"legendsOverData"`
	ZeroPadTicks    []string       `json:"zeroPadTicks"`
	MapEvidence     []string       `json:"mapEvidence"`
	H2              map[string]int `json:"h2"`
}

func chromiumBin(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed (apt-get install -y chromium): the reports' layout in a browser is not checked")
	return ""
}

var probeOut = regexp.MustCompile(`(?s)<pre id="probe">(.*?)</pre>`)

// measure lays page out in headless Chromium 1400 px wide and returns
// probeJS's account of it.
func measure(t *testing.T, bin string, page []byte) layout {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	page = bytes.Replace(page, []byte("</body>"), []byte(probeJS+"</body>"), 1)
	if err := os.WriteFile(file, page, 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout []byte
	// On a busy machine Chromium's zygote sometimes fails to fork and the
	// browser crashes; that says nothing of the page, so it gets another go.
	for try := 1; ; try++ {
		out, stderr, err := dumpDOM(bin, dir, file)
		if err == nil {
			stdout = out
			break
		}
		var exit *exec.ExitError
		if try < 3 && errors.As(err, &exit) && !exit.Exited() {
			continue
		}
		t.Fatalf("chromium: %v\n%s", err, stderr)
	}
	m := probeOut.FindSubmatch(stdout)
	if m == nil {
		t.Fatalf("chromium's DOM has no probe result:\n%.2000s", stdout)
	}
	var l layout
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &l); err != nil {
		t.Fatalf("probe result %q: %v", m[1], err)
	}
	return l
}

// TestHTMLBrowserLayout lays the reports out in headless Chromium at
// 1,400 px and checks what a reader sees: no table clipped behind a
// horizontal scroll (the compare and sessions tables' P99 and max were),
// no page wider than the window, warnings drawn in the warning colour (not
// the default grey), no legend over a chart's data, no tick labels padded
// with zeros ("250.00"), no evidence in Go's map syntax, and a sweep's
// curves before its findings and summary.
func TestHTMLBrowserLayout(t *testing.T) {
	bin := chromiumBin(t)

	sweep := sweepInput(t, 200, 40)
	sweep.Findings = append(sweep.Findings, findings.Finding{ID: "server-queueing", Severity: findings.Warning, Message: "The server confirms queueing.",
		Evidence: map[string]any{"server_metrics": map[string]any{"kv_usage": "vllm:kv_cache_usage_perc", "waiting": "vllm:num_requests_waiting"}}})
	sweep.ServerWindows = []ServerWindow{{Target: "server", Window: vllmWindow()}}
	sweep.Server = []breakdown.ServerSeries{{Target: "server", Snapshots: vllmSnapshots()}}

	s := threeTurnsSummary()
	sessions := sessionsInput(t, threeTurns(), &s)

	c, a, b := compareFixture(t)
	so := stats.Options{}
	var cmpPage bytes.Buffer
	if err := CompareHTML(&cmpPage, CompareHTMLInput{Comparison: c,
		A: CompareSide{Records: a, Levels: breakdown.SummarizeLevels(nil, a, so)}, B: CompareSide{Records: b, Levels: breakdown.SummarizeLevels(nil, b, so)}}); err != nil {
		t.Fatal(err)
	}
	sa, sb := threeTurns(), threeTurns()
	for i := range sb {
		sb[i].End += 100 * ms
	}
	cs, err := compare.Compare(compare.Run{Name: "a.jsonl", Records: sa}, compare.Run{Name: "b.jsonl", Records: sb},
		compare.Options{SessionSLO: stats.SessionSLO{TTP: 450 * time.Millisecond}, Resamples: 100})
	if err != nil {
		t.Fatal(err)
	}
	var cmpSessions bytes.Buffer
	if err := CompareHTML(&cmpSessions, CompareHTMLInput{Comparison: cs,
		A: CompareSide{Records: sa, Levels: breakdown.SummarizeLevels(nil, sa, so)}, B: CompareSide{Records: sb, Levels: breakdown.SummarizeLevels(nil, sb, so)}}); err != nil {
		t.Fatal(err)
	}

	pages := []struct {
		name string
		page []byte
	}{
		{"sweep", renderHTML(t, sweep)},
		{"sessions", renderHTML(t, sessions)},
		{"compare", cmpPage.Bytes()},
		{"compare sessions", cmpSessions.Bytes()},
	}
	seen := map[string]layout{}
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			l := measure(t, bin, p.page)
			seen[p.name] = l
			if l.PageWidth > 1400 {
				t.Errorf("page is %d px wide; want ≤ 1400 (the window)", l.PageWidth)
			}
			for _, c := range l.Clipped {
				t.Errorf("table clipped behind a scroll bar at 1400 px: %s", c)
			}
			for _, c := range l.WarnBorders {
				if c == "rgb(153, 153, 153)" {
					t.Errorf("a warning's border is the default grey %s; want the warning colour", c)
				}
			}
			for _, o := range l.LegendsOverData {
				t.Errorf("legend over the data: %s", o)
			}
			for _, z := range l.ZeroPadTicks {
				t.Errorf("tick label padded with zeros: %s", z)
			}
			for _, e := range l.MapEvidence {
				t.Errorf("evidence in Go map syntax: %s", e)
			}
		})
	}
	t.Run("sweep order", func(t *testing.T) {
		l, ok := seen["sweep"]
		if !ok {
			t.Skip("the sweep page was not laid out")
		}
		if len(l.WarnBorders) == 0 {
			t.Error("no warning finding rendered with class sev-warning")
		}
		sw, ok := l.H2["Load sweep"]
		if !ok {
			t.Fatalf("no Load sweep heading; headings %v", l.H2)
		}
		if sw > 600 {
			t.Errorf("Load sweep starts at %d px; want it on the first screen (≤ 600)", sw)
		}
		for _, h := range []string{"Findings", "Summary"} {
			if y, ok := l.H2[h]; !ok || y < sw {
				t.Errorf("%s at %d px (present %v), Load sweep at %d; want the sweep first", h, y, ok, sw)
			}
		}
	})
}

// dumpDOM runs Chromium on file and returns the DOM it printed and its
// error output.
func dumpDOM(bin, dir, file string) (dom, stderr []byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
		"--disable-component-update", "--disable-sync", "--no-first-run", "--user-data-dir="+filepath.Join(dir, "profile"),
		"--window-size=1400,2000", "--dump-dom", "file://"+file)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("did not finish within 90 s: %w", err)
	}
	return out.Bytes(), errOut.Bytes(), err
}
