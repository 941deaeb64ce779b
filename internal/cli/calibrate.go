package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// Probe prompt sizes in written tokens: far enough apart to fit a line.
const probeShort, probeLong = 64, 2048

// calibration is what the probe found.
type calibration struct {
	cal    tokenize.Calibration
	method string // how the server's counts were obtained
}

// calibrate measures how the server counts the prompts this run writes, so
// that a prompt asked to be N tokens is N tokens for the server's tokenizer
// (its BOS and chat template included). It writes two probe prompts, asks
// the server for their length — its /tokenize endpoint where it has one, else
// the usage of a one-token request — and fits server = a + r × written.
// A zero calibration (the server already counts like the synthesizer) is
// the common case against the embedded simulator. A probe the server fails
// leaves the run uncalibrated (the description says why) rather than
// stopping it.
func calibrate(ctx context.Context, c *openai.Client, tokName string) (calibration, error) {
	tok, err := tokenize.Load(tokName)
	if err != nil {
		return calibration{}, usagef("--tokenizer: %v", err)
	}
	synth, err := tokenize.NewSynthesizer(tok)
	if err != nil {
		return calibration{}, usagef("--tokenizer: %v", err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	texts := []string{synth.Text(probeShort, rng), synth.Text(probeLong, rng)}
	written := []int{tok.Count(texts[0]), tok.Count(texts[1])}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	server := make([]int, 2)
	method := "/tokenize"
	for i, t := range texts {
		n, err := c.CountPrompt(pctx, t)
		if err != nil {
			method = ""
			break
		}
		server[i] = n
	}
	if method == "" {
		method = "usage of probe requests"
		for i, t := range texts {
			n, err := c.ProbePrompt(pctx, fmt.Sprintf("goodput-probe-%d", i), t)
			if ctx.Err() != nil {
				return calibration{}, fmt.Errorf("interrupted while calibrating prompt lengths: %w", context.Cause(ctx))
			}
			if err != nil {
				// Not fatal: the run itself will show what the server does.
				return calibration{method: "none (" + err.Error() + ")"}, nil
			}
			if n == 0 {
				return calibration{method: "none (the server reports no usage)"}, nil
			}
			server[i] = n
		}
	}
	r := float64(server[1]-server[0]) / float64(written[1]-written[0])
	if r < 0.2 || r > 5 {
		return calibration{method: fmt.Sprintf("none (%s gave an implausible %.2f server tokens per written token)", method, r)}, nil
	}
	a := float64(server[0]) - r*float64(written[0])
	cal := tokenize.Calibration{Overhead: a, PerToken: r}
	if roundTo(a, 0.5) == 0 && roundTo(r, 0.005) == 1 {
		cal = tokenize.Calibration{}
	}
	return calibration{cal: cal, method: method}, nil
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
	switch {
	case c.method == "":
		return name + ", not calibrated"
	case strings.HasPrefix(c.method, "none"):
		return name + ", calibration " + c.method
	case c.cal.IsZero():
		return fmt.Sprintf("%s, exact for the server (checked with %s)", name, c.method)
	}
	return fmt.Sprintf("%s, calibrated with %s: server tokens = %.1f + %.3f × written", name, c.method, c.cal.Overhead, c.cal.PerToken)
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
// /tokenize and pads or trims each until the server counts exactly what was
// asked (a calibrated approximation is within a few tokens; this closes the
// gap). It reports how many prompts it checked and how many stayed off.
func exactPrompts(ctx context.Context, c *openai.Client, ds workload.Dataset, n int) (workload.Dataset, int, int, error) {
	n = min(n, ds.Len())
	type fixed struct {
		i    int
		text string
		off  bool
	}
	out := make(chan fixed, 64)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(16)
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
func fitPrompt(ctx context.Context, c *openai.Client, text string, want int) (string, bool, error) {
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
