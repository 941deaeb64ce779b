package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/goodput/goodput/internal/runlog"
)

func TestProgressLine(t *testing.T) {
	var buf bytes.Buffer
	p := newProgress(Env{Stderr: &buf}, false, 10, 0)
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
