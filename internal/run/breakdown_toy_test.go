package run

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/goodput/goodput/internal/breakdown"
	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/runlog"
)

// A new per-level breakdown is two pieces: its type and accumulator
// (package breakdown, one file) and its section (package report, one
// file). The toy below is both, kept in this test; the run feeds it and
// renders it with no line of package run naming it.

// toyModel marks the records the toy counts, so no other test's level
// grows a toy block.
const toyModel = "breakdown-toy"

// toy is the finished breakdown: how many of the level's records named
// toyModel, and how many of those failed.
type toy struct{ Requests, Failed int }

func (*toy) Rank() int { return breakdown.RankCost + 1 }

// toyCounter is its accumulator.
type toyCounter struct{ toy }

func (c *toyCounter) Add(r *runlog.Record) {
	if r.Model != toyModel || r.Warmup {
		return
	}
	c.Requests++
	if !r.OK() {
		c.Failed++
	}
}

func (c *toyCounter) Breakdown() breakdown.Breakdown {
	if c.Requests == 0 {
		return nil
	}
	t := c.toy
	return &t
}

func init() {
	// The breakdown's file: one registration.
	breakdown.Register(func(breakdown.Options) breakdown.Accumulator { return new(toyCounter) })
	// Its section's file: one registration.
	report.RegisterSection("toy", func(w io.Writer, t *toy) error {
		_, err := fmt.Fprintf(w, "Toy requests, failed: %d, %d\n", t.Requests, t.Failed)
		return err
	}, func(t *toy) map[string]any {
		return map[string]any{"requests": t.Requests, "failed": t.Failed}
	}, func(breakdown.Options) *toy { return &toy{Requests: 1, Failed: 1} })
}

// TestToyBreakdownTwoFiles: a breakdown registered from outside package
// run reaches the terminal summary (after the built-in blocks) and the
// level's result JSON, for a single level and for each level of several.
func TestToyBreakdownTwoFiles(t *testing.T) {
	rec := func(level int, class runlog.ErrorClass) runlog.Record {
		return runlog.Record{ID: "r", Level: level, Model: toyModel, Status: 200, ErrorClass: class, End: 30e6, PromptTokens: 10,
			CompletionTokens: 2, Chunks: []runlog.Chunk{{T: 10e6, Tokens: 1, Visible: true}, {T: 30e6, Tokens: 1, Visible: true}}}
	}
	one := []runlog.Record{rec(0, ""), rec(0, ""), rec(0, runlog.ErrTimeout)}
	res, err := AnalyzeRecords(&runlog.Meta{Command: "bench", Levels: []runlog.Level{{RequestRate: 1}}}, one, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.Terminal(&b, TerminalOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Toy requests, failed: 3, 1\n") {
		t.Errorf("terminal lacks the toy's block:\n%s", b.String())
	}
	js, err := res.JSON(JSONOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Toy map[string]int `json:"toy"`
	}
	if err := json.Unmarshal(js, &doc); err != nil || doc.Toy["requests"] != 3 || doc.Toy["failed"] != 1 {
		t.Errorf("result JSON's toy = %v (%v); want 3 requests, 1 failed", doc.Toy, err)
	}

	// Two levels: each has its own.
	two := append(one, rec(1, ""))
	res, err = AnalyzeRecords(&runlog.Meta{Command: "bench", Levels: []runlog.Level{{RequestRate: 1}, {RequestRate: 2}}}, two, AnalyzeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := res.Terminal(&b, TerminalOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "Toy requests, failed: 3, 1\n") || !strings.Contains(b.String(), "Toy requests, failed: 1, 0\n") {
		t.Errorf("terminal lacks a level's toy block:\n%s", b.String())
	}
	if js, err = res.JSON(JSONOptions{}); err != nil {
		t.Fatal(err)
	}
	var levels struct {
		Levels []struct {
			Toy map[string]int `json:"toy"`
		} `json:"levels"`
	}
	if err := json.Unmarshal(js, &levels); err != nil || len(levels.Levels) != 2 || levels.Levels[1].Toy["requests"] != 1 {
		t.Errorf("levels' toys = %+v (%v); want level 1's with 1 request", levels.Levels, err)
	}
}
