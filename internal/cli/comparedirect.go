package cli

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/stats"
)

// hopReport is what bench --compare-direct found a hop (a gateway, a
// proxy, a relay) adds: each request's TTFT and TTP through the target
// minus the same request's sent direct, their percentiles (ms), and the
// visible tokens a chunk each way (chunks within 1 ms joined: one burst).
type hopReport struct {
	Pairs                 int
	AddedTTFT, AddedTTP   [3]float64 // P50, P90, P99
	ThroughTPC, DirectTPC float64
}

// hopPercentiles are the percentiles a hopReport gives.
var hopPercentiles = [3]float64{50, 90, 99}

// Rechunked says the hop changed how the stream is cut: a chunk carries a
// fifth more (or fewer) visible tokens through it than direct.
func (h hopReport) Rechunked() bool {
	return h.DirectTPC > 0 && (h.ThroughTPC > 1.2*h.DirectTPC || h.ThroughTPC < h.DirectTPC/1.2)
}

// Lines are the report's lines for the terminal.
func (h hopReport) Lines(through, direct string) []string {
	if h.Pairs == 0 {
		return []string{"compare-direct: no request succeeded both ways: nothing to compare"}
	}
	f := func(a [3]float64) string {
		return fmt.Sprintf("P50 %s, P90 %s, P99 %s ms", num2(a[0]), num2(a[1]), num2(a[2]))
	}
	re := "no"
	if h.Rechunked() {
		re = "yes"
	}
	return []string{
		fmt.Sprintf("compare-direct: %d requests sent both through %s and direct to %s, interleaved", h.Pairs, through, direct),
		"compare-direct: the hop adds to TTFT " + f(h.AddedTTFT),
		"compare-direct: the hop adds to TTP " + f(h.AddedTTP),
		fmt.Sprintf("compare-direct: visible tokens a chunk %s through it, %s direct: re-chunked: %s", num2(h.ThroughTPC), num2(h.DirectTPC), re),
	}
}

func num2(x float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.2f", x), "0"), ".")
}

// compareHop pairs the requests of the two runs by their index (the same
// seed sends the same requests: ids PREFIX-INDEX, prefixes apart) and
// measures the hop.
func compareHop(through, direct []runlog.Record) hopReport {
	byID := map[string]*runlog.Record{}
	for i := range direct {
		if r := &direct[i]; r.OK() && !r.Warmup {
			byID[requestIndex(r.ID)] = r
		}
	}
	var h hopReport
	var ttft, ttp []float64
	var tTok, tChunks, dTok, dChunks int
	for i := range through {
		r := &through[i]
		d := byID[requestIndex(r.ID)]
		if d == nil || !r.OK() || r.Warmup {
			continue
		}
		a, ok1 := r.TTFT()
		b, ok2 := d.TTFT()
		if !ok1 || !ok2 {
			continue
		}
		h.Pairs++
		ttft = append(ttft, float64(a-b)/1e6)
		if a, ok := r.TTP(); ok {
			if b, ok := d.TTP(); ok {
				ttp = append(ttp, float64(a-b)/1e6)
			}
		}
		n, c := bursts(r)
		tTok, tChunks = tTok+n, tChunks+c
		n, c = bursts(d)
		dTok, dChunks = dTok+n, dChunks+c
	}
	slices.Sort(ttft)
	slices.Sort(ttp)
	for i, p := range hopPercentiles {
		if len(ttft) > 0 {
			h.AddedTTFT[i] = stats.Percentile(ttft, p)
		}
		if len(ttp) > 0 {
			h.AddedTTP[i] = stats.Percentile(ttp, p)
		}
	}
	if tChunks > 0 && dChunks > 0 {
		h.ThroughTPC, h.DirectTPC = float64(tTok)/float64(tChunks), float64(dTok)/float64(dChunks)
	}
	return h
}

// requestIndex is the index part of a request id, after its prefix.
func requestIndex(id string) string { return id[strings.LastIndexByte(id, '-')+1:] }

// bursts counts r's visible tokens and its visible chunks, chunks within
// 1 ms of the previous one joined (a buffer flushed as many events).
func bursts(r *runlog.Record) (tokens, chunks int) {
	last := int64(-1 << 62)
	for _, c := range r.Chunks {
		if !c.Visible || c.Tokens <= 0 {
			continue
		}
		tokens += int(c.Tokens)
		if c.T-last >= 1e6 {
			chunks++
		}
		last = c.T
	}
	return tokens, chunks
}

// runCompared runs cfg through its target and, at the same time, the
// same requests (same seed, same schedule) direct to direct, so the two
// streams interleave and see the same server load; it returns the
// target's result and what the hop added.
func runCompared(ctx context.Context, cfg run.Config, direct string) (*run.Result, hopReport, error) {
	cfg.Output.KeepRecords = true
	d := cfg
	d.Target.BaseURL, d.Target.RequestIDPrefix = direct, "direct-"
	d.Output = run.Output{Dir: cfg.Output.Dir, Records: "none", KeepRecords: true}
	d.Hooks = run.Hooks{}
	var wg sync.WaitGroup
	var dres *run.Result
	var derr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		dres, derr = run.Run(ctx, d)
	}()
	res, err := run.Run(ctx, cfg)
	wg.Wait()
	if err == nil && derr != nil {
		err = fmt.Errorf("--compare-direct %s: %w", direct, derr)
	}
	if res == nil || dres == nil {
		return res, hopReport{}, err
	}
	return res, compareHop(res.Records, dres.Records), err
}
