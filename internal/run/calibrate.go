package run

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/wire"

	"golang.org/x/sync/errgroup"

	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// probeLadder is the probe prompts' lengths in written tokens, short first:
// a server with a short context truncates or refuses the long ones, and
// the short ones still fit a line.
var probeLadder = []int{64, 256, 1024, 2048}

// How long each step of a calibration may take. Each runs on its own
// deadline from the caller's context, so a /tokenize that never answers
// leaves the probe requests their full time; together they bound the
// calibration. Variables so that tests can shorten them.
var (
	contextWait  = 10 * time.Second // reading the server's context length
	tokenizeWait = 30 * time.Second // counting the probes with /tokenize
	probeWait    = 2 * time.Minute  // the probe requests, when /tokenize is unusable
)

// calMethod is how the server's counts were obtained.
type calMethod int

const (
	calNotRun   calMethod = iota // no calibration was tried
	calNone                      // the server could be calibrated neither way (why says why)
	calTokenize                  // the server's /tokenize
	calProbes                    // the usage of probe requests
)

func (m calMethod) String() string {
	switch m {
	case calTokenize:
		return "/tokenize"
	case calProbes:
		return "usage of probe requests"
	}
	return "none"
}

// calibration is what the probe found.
type calibration struct {
	cal    tokenize.Calibration
	method calMethod
	// why says why there is no calibration (method calNone).
	why string
	// counter counts prompts with the /tokenize form that worked (method
	// calTokenize), for exactPrompts.
	counter Counting
	// notes say what happened on the way: a form of /tokenize other than
	// vLLM's, a /tokenize that could not be used, probes not used.
	notes []string
	// contextLen is the server's context in tokens, 0 if it does not say;
	// contextFrom is where it was read.
	contextLen  int
	contextFrom string
	// parallel is how many counts may be in flight at once (see
	// countParallel).
	parallel int
}

// maxCountParallel bounds calibration's counts in flight at once.
const maxCountParallel = 16

// countParallel is how many counts calibration keeps in flight against a
// server with slots generating slots (0 unknown): no more than its slots.
// llama-server has slots+2 HTTP threads, each held by one connection for
// as long as it stays open, so more connections than that wait for one
// (seconds, for a thread another idle connection holds); at most slots
// leaves threads free for the scraper and a health check.
func countParallel(slots int) int {
	if slots <= 0 {
		return maxCountParallel
	}
	return min(slots, maxCountParallel)
}

// point is one probe: its written length and the server's count, tokens.
type point struct{ written, server int }

// calibrate measures how the server counts the prompts this run writes, so
// that a prompt asked to be N tokens is N tokens for the server's tokenizer
// (its BOS and chat template included). It writes probe prompts of growing
// length, asks the server for their length — its /tokenize endpoint in
// whichever body form it reads, else the usage of one-token requests — and
// fits server = a + r × written through the shortest and the longest probe
// the server counted whole. Probes are sized to the server's context where
// it says what that is (llama.cpp's /props, vLLM's max_model_len); a probe
// the server truncates (its count falls short of the line the shorter ones
// draw) or refuses is left out, and the description says so.
//
// A zero calibration (the server already counts like the synthesizer) is
// the common case against the embedded simulator. A server that can be
// calibrated neither way leaves the run uncalibrated (the method says why)
// rather than stopping it; only the caller's cancellation is an error.
func calibrate(ctx context.Context, c Counting, tokName string) (calibration, error) {
	tok, err := tokenize.Load(tokName)
	if err != nil {
		return calibration{}, &ConfigError{Field: "Tokenizer", Err: err}
	}
	synth, err := tokenize.NewSynthesizer(tok)
	if err != nil {
		return calibration{}, &ConfigError{Field: "Tokenizer", Err: err}
	}
	interrupted := func() error {
		return fmt.Errorf("interrupted while calibrating prompt lengths: %w", context.Cause(ctx))
	}
	var out calibration
	dctx, cancel := context.WithTimeout(ctx, contextWait)
	out.contextLen, out.contextFrom = c.ContextLength(dctx)
	cancel()
	out.parallel = countParallel(c.Slots())
	if ctx.Err() != nil {
		return calibration{}, interrupted()
	}
	lengths := probeLengths(out.contextLen)
	if out.contextLen > 0 && lengths[len(lengths)-1] < probeLadder[len(probeLadder)-1] {
		out.notes = append(out.notes, fmt.Sprintf("probes up to %d written tokens for the server's context of %d (%s)",
			lengths[len(lengths)-1], out.contextLen, out.contextFrom))
	}
	// The same probe texts for both ways of counting.
	rng := rand.New(rand.NewPCG(1, 2))
	texts := make([]string, len(lengths))
	for i, n := range lengths {
		texts[i] = synth.Text(n, rng)
	}
	written := func(text string) int { return tok.Count(text) }
	grow := func(a, b int) string { return synth.Text((a+b)/2, rng) }

	tctx, cancel := context.WithTimeout(ctx, tokenizeWait)
	cal, notes, terr := fitLine(tctx, texts, written, grow, 0, func(ctx context.Context, _ int, text string) (int, error) {
		return c.CountPrompt(ctx, text)
	})
	cancel()
	if ctx.Err() != nil {
		return calibration{}, interrupted()
	}
	if terr == nil {
		out.cal, out.method, out.counter = cal, calTokenize, c
		if f := c.CountForm(); f != `{"prompt"}` && f != `{"messages"}` {
			out.notes = append(out.notes, "/tokenize read as "+f)
		}
		out.notes = append(out.notes, notes...)
		return out, nil
	}
	// Probe requests, on a deadline of their own: a /tokenize that never
	// answered has spent its own.
	pctx, cancel := context.WithTimeout(ctx, probeWait)
	defer cancel()
	cal, notes, err = fitLine(pctx, texts, written, grow, out.contextLen, func(ctx context.Context, i int, text string) (int, error) {
		n, err := c.ProbePrompt(ctx, fmt.Sprintf("goodput-probe-%d", i), text)
		if err == nil && n == 0 {
			err = errNoUsage
		}
		return n, err
	})
	if ctx.Err() != nil {
		return calibration{}, interrupted()
	}
	if err != nil {
		why := err.Error()
		if errors.Is(err, errNoUsage) {
			why = "the server reports no usage"
		}
		out.method, out.why = calNone, why+"; /tokenize: "+terr.Error()
		return out, nil
	}
	out.cal, out.method = cal, calProbes
	switch {
	case errors.Is(terr, wire.ErrNoTokenize):
	case errors.Is(terr, context.DeadlineExceeded):
		out.notes = append(out.notes, fmt.Sprintf("/tokenize not used: no answer within %v", tokenizeWait))
	default:
		out.notes = append(out.notes, "/tokenize not used: "+terr.Error())
	}
	out.notes = append(out.notes, notes...)
	return out, nil
}

// errNoUsage is a probe request answered without usage.
var errNoUsage = errors.New("no usage in the answer")

// probeLengths is the probe ladder for a server whose context is ctxLen
// tokens (0 unknown): every probe, counted at up to 2 server tokens per
// written one with room for a template and the output token, fits.
func probeLengths(ctxLen int) []int {
	limit := (ctxLen - 16) / 2
	if ctxLen <= 0 || limit < 8 {
		return probeLadder
	}
	var ls []int
	for _, n := range probeLadder {
		if n <= limit {
			ls = append(ls, n)
		}
	}
	if len(ls) < len(probeLadder) && (len(ls) == 0 || limit >= ls[len(ls)-1]*3/2) {
		ls = append(ls, limit)
	}
	if len(ls) < 2 {
		ls = []int{max(limit/4, 2), limit}
	}
	return ls
}

// Probe counting: how far a probe's count may fall short of the line the
// shorter probes draw before it counts as truncated, and how many times a
// probe that failed is retried halfway to the last good one while fewer
// than two are good.
const (
	truncatedShortfall = 0.85
	maxProbeRetries    = 3
)

// fitLine counts texts (short first) with count and fits the server's
// count against the written one through the shortest and the longest
// point counted whole. A count that does not grow with the text as the
// shorter ones did — or, where ctxLen is known, leaves no room for an
// output token — is a truncated probe, and one the server fails a refused
// one: neither is used, nor any longer one; while fewer than two points are
// good, a text halfway (from grow) is tried instead. notes say which probes
// were left out. An error means no line could be fitted.
func fitLine(ctx context.Context, texts []string, written func(string) int, grow func(a, b int) string, ctxLen int,
	count func(ctx context.Context, i int, text string) (int, error)) (tokenize.Calibration, []string, error) {
	var pts []point
	var notes []string
	retries := 0
	for i := 0; i < len(texts); i++ {
		w := written(texts[i])
		n, err := count(ctx, i, texts[i])
		why := ""
		switch {
		case ctx.Err() != nil:
			return tokenize.Calibration{}, notes, err
		case err != nil && len(pts) == 0:
			return tokenize.Calibration{}, notes, err
		case err != nil:
			why = fmt.Sprintf("failed (%v)", err)
		default:
			why = truncated(pts, point{w, n}, ctxLen)
		}
		if why == "" {
			pts = append(pts, point{w, n})
			continue
		}
		notes = append(notes, fmt.Sprintf("the %d-token probe %s: not used", w, why))
		if len(pts) >= 2 {
			break
		}
		last := 0
		if len(pts) > 0 {
			last = pts[0].written
		}
		if len(pts) == 0 || retries == maxProbeRetries || w-last < 16 {
			return tokenize.Calibration{}, notes, fmt.Errorf("fewer than two probes counted whole (%s)", notes[len(notes)-1])
		}
		retries++
		texts = append(texts[:i+1:i+1], grow(last, w))
	}
	if len(pts) < 2 {
		return tokenize.Calibration{}, notes, errors.New("fewer than two probes counted")
	}
	lo, hi := pts[0], pts[len(pts)-1]
	r := float64(hi.server-lo.server) / float64(hi.written-lo.written)
	if r < 0.2 || r > 5 {
		return tokenize.Calibration{}, notes, fmt.Errorf("an implausible %.2f server tokens per written token", r)
	}
	a := float64(lo.server) - r*float64(lo.written)
	cal := tokenize.Calibration{Overhead: a, PerToken: r}
	if roundTo(a, 0.5) == 0 && roundTo(r, 0.005) == 1 {
		cal = tokenize.Calibration{}
	}
	return cal, notes, nil
}

// truncated says why p is not a whole count after the points before it
// ("" if it is one): it does not grow, or grows clearly less than the
// shorter probes did, or leaves no room for an output token in a context of
// ctxLen tokens (0 unknown).
func truncated(pts []point, p point, ctxLen int) string {
	if ctxLen > 0 && p.server >= ctxLen {
		return fmt.Sprintf("was counted %d tokens, the server's whole context", p.server)
	}
	if len(pts) == 0 {
		return ""
	}
	last := pts[len(pts)-1]
	if p.server <= last.server {
		return fmt.Sprintf("was counted %d tokens, no more than the %d-token one (%d): truncated", p.server, last.written, last.server)
	}
	if len(pts) < 2 {
		return ""
	}
	prev := pts[len(pts)-2]
	slope := float64(last.server-prev.server) / float64(last.written-prev.written)
	want := float64(last.server) + slope*float64(p.written-last.written)
	if float64(p.server-last.server) < truncatedShortfall*(want-float64(last.server)) {
		return fmt.Sprintf("was counted %d tokens where the shorter ones predict %.0f: truncated", p.server, want)
	}
	return ""
}

func roundTo(x, step float64) float64 {
	if x < 0 {
		return -roundTo(-x, step)
	}
	return float64(int(x/step+0.5)) * step
}

// describe is the calibration as one line for the run's conditions.
func (c calibration) describe(tokName string) string {
	name := tokName
	if name == "" {
		name = "approx"
	}
	var s string
	switch {
	case c.method == calNotRun:
		return name + ", not calibrated"
	case c.method == calNone:
		s = name + ", calibration none (" + c.why + ")"
	case c.cal.IsZero():
		s = fmt.Sprintf("%s, exact for the server (checked with %s)", name, c.method)
	default:
		s = fmt.Sprintf("%s, calibrated with %s: server tokens = %.1f + %.3f × written", name, c.method, c.cal.Overhead, c.cal.PerToken)
	}
	for _, n := range c.notes {
		s += "; " + n
	}
	return s
}

// synthesizes reports whether the dataset writes its own prompt text (so a
// calibration applies); custom and ShareGPT prompts are the user's text.
func synthesizes(o workload.Options) bool {
	switch strings.ToLower(o.DatasetName) {
	case "custom", "sharegpt":
		return false
	}
	return true
}

// maxExactPrompts bounds the prompts fixed one by one against /tokenize
// before a run (they are held in memory); beyond it the calibration alone
// sizes them.
const maxExactPrompts = 20000

// exactDataset serves prompts fixed against the server's tokenizer in place
// of the synthesized ones.
type exactDataset struct {
	workload.Dataset
	prompts map[int]string
}

// Request returns request i with its fixed prompt, if it has one (then
// from Shape, so the synthesized text is not written only to be dropped).
func (d *exactDataset) Request(i int) workload.Request {
	if p, ok := d.prompts[i]; ok {
		r := d.Dataset.Shape(i)
		r.Prompt = p
		return r
	}
	return d.Dataset.Request(i)
}

// exactPrompts checks the first n prompts of ds against the server's
// /tokenize (in the form c found), parallel at a time, and pads or trims
// each until the server counts exactly what was asked (a calibrated
// approximation is within a few tokens; this closes the gap). It reports how many prompts it checked and how many stayed off.
func exactPrompts(ctx context.Context, c Counting, ds workload.Dataset, n, parallel int) (workload.Dataset, int, int, error) {
	n = min(n, ds.Len())
	type fixed struct {
		i    int
		text string
		off  bool
	}
	out := make(chan fixed, 64)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(parallel, 1))
	go func() {
		defer close(out)
		for i := range n {
			g.Go(func() error {
				r := ds.Request(i)
				if r.PromptTokens <= 0 || len(r.Messages) > 0 || r.Prompt == "" {
					return nil
				}
				text, ok, err := fitPrompt(gctx, c, r.Prompt, r.PromptTokens)
				if err != nil {
					return err
				}
				if text != r.Prompt || !ok {
					out <- fixed{i, text, !ok}
				}
				return nil
			})
		}
		_ = g.Wait()
	}()
	prompts := map[int]string{}
	off := 0
	for f := range out {
		prompts[f.i] = f.text
		if f.off {
			off++
		}
	}
	if err := g.Wait(); err != nil {
		return ds, 0, 0, fmt.Errorf("fitting prompts to the server's /tokenize: %w", err)
	}
	return &exactDataset{Dataset: ds, prompts: prompts}, n, off, nil
}

// fitPrompt pads text with " a" (one token in common BPE vocabularies) or
// trims trailing words until the server counts want tokens; ok is false if
// a few rounds did not get there (the closest text is returned).
func fitPrompt(ctx context.Context, c Counting, text string, want int) (string, bool, error) {
	for range 6 {
		got, err := c.CountPrompt(ctx, text)
		if err != nil {
			return text, false, err
		}
		switch d := want - got; {
		case d == 0:
			return text, true, nil
		case d > 0:
			text += strings.Repeat(" a", d)
		default:
			// Each word is at least one token: cutting -d words cannot cut
			// too little, and padding fixes any overshoot next round.
			for range -d {
				i := strings.LastIndexByte(text, ' ')
				if i <= 0 {
					break
				}
				text = text[:i]
			}
		}
	}
	return text, false, nil
}

// maxContextChecks bounds the requests contextWarning looks at.
const maxContextChecks = 100000

// contextWarning says how many of the first n requests of ds ask for more
// than the server's context of ctxLen tokens (read from from), prompt and
// output cap together; "" if none do or the context is unknown (0).
func contextWarning(ds workload.Dataset, n, ctxLen int, from string) string {
	if ctxLen <= 0 {
		return ""
	}
	n = min(n, ds.Len(), maxContextChecks)
	over, most := 0, 0
	for i := range n {
		r := ds.Shape(i)
		if t := r.PromptTokens + r.OutputTokens; t > ctxLen {
			over++
			most = max(most, t)
		}
	}
	if over == 0 {
		return ""
	}
	return fmt.Sprintf("%d of %d requests ask for more than the server's context of %d tokens (%s): prompt + output up to %d; the server will refuse or truncate them",
		over, n, ctxLen, from, most)
}
