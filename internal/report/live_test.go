package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := NewProgress(&buf, nil, false, false, 10, 0)
	p.started = time.Now().Add(-2 * time.Second)
	for range 3 {
		p.send()
	}
	// Two done: TTFT 100 and 300 ms, TPOT (500−100)/4 = 100 ms and
	// (700−300)/4 = 100 ms, 5 tokens each; one of three still in flight.
	for _, first := range []int64{100, 300} {
		r := &runlog.Record{Sent: 0, CompletionTokens: 5, Chunks: []runlog.Chunk{
			{T: first * 1e6, Tokens: 1, Visible: true}, {T: (first + 400) * 1e6, Tokens: 4, Visible: true}}}
		p.observe(r)
	}
	p.print(false)
	line := buf.String()
	for _, want := range []string{"2/10 done", "1 in flight", "0 failed", "TTFT p50 ", "TPOT p50 100.", "out tok/s"} {
		if !strings.Contains(line, want) {
			t.Errorf("progress line %q lacks %q", line, want)
		}
	}
	if !strings.HasPrefix(line, "goodput: ") || strings.Contains(line, "\r") {
		t.Errorf("off a terminal the line is plain and prefixed: %q", line)
	}
}

func TestProgressPercentAndETA(t *testing.T) {
	for _, tc := range []struct {
		name    string
		total   int
		dur     time.Duration
		done    int
		elapsed time.Duration
		want    []string
		notWant []string
	}{
		// 25 of 100 in 10 s: 25 %, 30 s to go at that pace.
		{"by requests", 100, 0, 25, 10 * time.Second, []string{"25/100 done (25%)", "ETA 30s"}, nil},
		// 15 s of a 60 s level: 25 %, 45 s left.
		{"by time", 0, time.Minute, 3, 15 * time.Second, []string{"3/? done (25%)", "ETA 45s"}, nil},
		// Nothing done yet: no ETA to tell.
		{"nothing done", 100, 0, 0, 5 * time.Second, []string{"0/100 done (0%)"}, []string{"ETA"}},
		// Neither bound known: no percentage.
		{"unbounded", 0, 0, 7, 5 * time.Second, []string{"7/? done,"}, []string{"%", "ETA"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			p := NewProgress(&buf, nil, false, false, tc.total, tc.dur)
			p.started = time.Now().Add(-tc.elapsed)
			for range tc.done {
				p.send()
				p.observe(&runlog.Record{Status: 200, CompletionTokens: 1, Chunks: []runlog.Chunk{{T: 1e6, Tokens: 1, Visible: true}}})
			}
			p.print(false)
			line := buf.String()
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("line %q lacks %q", line, w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(line, w) {
					t.Errorf("line %q has %q", line, w)
				}
			}
		})
	}
}

func TestConsoleNotesAboveTheLine(t *testing.T) {
	var buf bytes.Buffer
	c := NewConsole(&buf, true)
	c.Draw("10/20 done")
	if _, err := c.Write([]byte("WARN host is late\n")); err != nil {
		t.Fatal(err)
	}
	c.Draw("11/20 done")
	c.End()
	// The note clears the line, prints on its own line, and the line comes
	// back after it.
	want := "\r10/20 done" + "\r          \r" + "WARN host is late\n" + "10/20 done" + "\r11/20 done" + "\n"
	if got := buf.String(); got != want {
		t.Errorf("console wrote %q; want %q", got, want)
	}
}
