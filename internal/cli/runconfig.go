package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
)

// This file turns the flags into a run.Config, and the run's typed errors
// back into lines that name the flags.

// readyPoll is how often a starting server is asked again.
var readyPoll = time.Second

// runConfig is the run.Config of bench's flags (sweep and the embedded
// target share it): the workload, the target behind an openai.Client, the
// level, the outputs, and the hooks that show the run on the terminal.
func (o *BenchOptions) runConfig(env Env, command string) (run.Config, error) {
	so, err := o.out.statsOptions(o.args)
	if err != nil {
		return run.Config{}, err
	}
	if why := o.target.wholeAnswers(); why != "" {
		if err := wholeAnswersError(run.WholeAnswers(&so, o.out.metricsSet), why); err != nil {
			return run.Config{}, err
		}
	}
	base := o.target.Base()
	lv, err := o.load.LevelFor(o.work.o.DatasetName, base == "", givenIn(o.load.fs, &o.load.LoadSpec))
	if err != nil {
		return run.Config{}, err
	}
	shard, startAt, err := o.load.shardFlags(env)
	if err != nil {
		return run.Config{}, err
	}
	retry, err := o.load.Retry()
	if err != nil {
		return run.Config{}, err
	}
	meta, err := o.out.Meta()
	if err != nil {
		return run.Config{}, err
	}
	// A session's later turns resend the server's answers: keep their text.
	target, err := o.target.runTarget(env, base, o.out.SaveDetailed || isSessionDataset(o.work.o.DatasetName))
	if err != nil {
		return run.Config{}, err
	}
	work, err := o.work.Workload(o.work.o)
	if err != nil {
		return run.Config{}, err
	}
	scrapes, err := o.target.Scrape()
	if err != nil {
		return run.Config{}, err
	}
	cost, err := o.out.cost()
	if err != nil {
		return run.Config{}, err
	}
	if o.target.TrustRemoteCode {
		fmt.Fprintln(env.Stderr, "goodput: --trust-remote-code has no effect: goodput runs no model code")
	}
	if o.target.TokenizerMode != "" {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer-mode %s has no effect: prompt lengths come from --tokenizer and the server's own counts\n", o.target.TokenizerMode)
	}
	return run.Config{
		Command: command, Version: Version, Started: env.Now(), Target: target,
		Workload: work,
		Load:     lv, Seed: o.load.Seed, Engine: o.sim.Engine, Stats: so, ReadingSpeedMs: o.verdict.ReadingSpeedMs,
		Output: o.out.runOutput(env), Metadata: meta, Hooks: terminalHooks(env, o.out.Quiet), Scrape: scrapes, Cost: cost,
		Shard: shard, StartAt: startAt, Retry: retry,
	}, nil
}

// runTarget is the target the flags name, behind an openai.Client; base
// "" starts the embedded simulator. The key and every header value are
// secrets: goodput cannot tell which headers are credentials.
func (t *targetFlags) runTarget(env Env, base string, keepText bool) (run.Target, error) {
	key := ""
	if k := t.KeyEnv(); k != "" && env.Getenv != nil {
		key = env.Getenv(k)
	}
	rt, err := t.Build(base, run.Conn{APIKey: key, KeepText: keepText, ReadyPoll: readyPoll})
	if err != nil {
		return run.Target{}, err
	}
	rt.ModelName = modelFlag(t)
	if env.secrets != nil {
		if u, err := url.Parse(base); err == nil {
			env.secrets.AddURL(u)
		}
		hdr, _ := t.Header()
		env.secrets.Add(key)
		env.secrets.AddHeader(hdr, true)
	}
	return rt, nil
}

// modelFlag names the flag that gave the request's model id.
func modelFlag(t *targetFlags) string {
	if t.ServedModelName != "" {
		return "--served-model-name"
	}
	return "--model"
}

// runOutput is where the run writes.
func (o *outputFlags) runOutput(env Env) run.Output {
	out := o.Output(env.Dir)
	if env.secrets != nil {
		out.Filter = env.secrets.Writer
	}
	return out
}

// terminalHooks show a run on the terminal: notes and the embedded
// simulator's warnings above the live progress line.
func terminalHooks(env Env, quiet bool) run.Hooks {
	con := consoleOf(env)
	return run.Hooks{
		Note: func(s string) { fmt.Fprintln(con, "goodput: "+s) },
		// The server's warnings (e.g. a host too loaded to keep the
		// engine's schedule) go to the user's stderr, not the process
		// default logger.
		Log: slog.New(slog.NewTextHandler(con, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Level: func(ctx context.Context, total int, limit time.Duration) run.Watch {
			p := report.NewProgress(env.Stderr, con, env.TTY, quiet, total, limit)
			p.Start(ctx)
			return p
		},
	}
}

// wholeAnswers names what makes the run's answers whole, not streamed
// (--no-stream, or a backend that never streams); "" when they stream.
func (t *targetFlags) wholeAnswers() string {
	if t.NoStream {
		return "--no-stream"
	}
	if _, proto, err := t.Protocol(); err == nil && !proto.Streams() {
		return "--backend " + proto.Name()
	}
	return ""
}

// wholeAnswersError makes a *run.NoStreamError a usage error naming the
// flag that asked for a streaming metric of whole answers (why: their
// cause); other errors pass as they are.
func wholeAnswersError(err error, why string) error {
	var ne *run.NoStreamError
	switch {
	case !errors.As(err, &ne):
		return err
	case ne.SLO:
		return usagef("--goodput %s: %s measures E2E only (use e2el)", ne.Metric, why)
	}
	return usagef("--percentile-metrics %s: %s measures E2E only (e2el, response)", ne.Metric, why)
}
