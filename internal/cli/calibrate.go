package cli

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/goodput/goodput/internal/openai"
	"github.com/goodput/goodput/internal/tokenize"
	"github.com/goodput/goodput/internal/workload"
)

// Probe prompt sizes in written tokens: far enough apart to fit a line.
const probeShort, probeLong = 32, 544

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
