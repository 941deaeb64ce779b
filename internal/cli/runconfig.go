package cli

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/flagfield"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/runspec"
	"github.com/goodput/goodput/internal/target"
	"github.com/goodput/goodput/internal/wire/openai"
)

// This file turns the flags into a run.Config, and the run's typed errors
// back into lines that name the flags.

// readyPoll is how often a starting server is asked again.
var readyPoll = time.Second

// runFlags are the flag groups bench, sweep and sim share.
type runFlags struct {
	load     loadFlags
	work     workloadFlags
	out      outputFlags
	verdict  verdictFlags
	sessions sessionFlags
	args     []string // stray "name:ms" SLO words
	fs       *pflag.FlagSet
}

// config is the run.Config of the shared flags at the --request-rate text
// rate (a sweep's holds a list, so it passes "inf"); embedded is a bench
// run of the embedded simulator. The caller adds the target or engine.
func (r *runFlags) config(env Env, command, rate string, embedded bool) (run.Config, error) {
	so, err := r.out.Options(r.args)
	if err != nil {
		return run.Config{}, err
	}
	load := r.load.LoadSpec
	load.RequestRate = rate
	lv, err := load.LevelFor(r.work.o.DatasetName, embedded, flagfield.Given(r.fs, &r.load.LoadSpec))
	if err != nil {
		return run.Config{}, err
	}
	retry, err := r.load.Retry()
	if err != nil {
		return run.Config{}, err
	}
	meta, err := r.out.Meta()
	if err != nil {
		return run.Config{}, err
	}
	if err := r.out.Cost.Check(); err != nil {
		return run.Config{}, err
	}
	rules, err := load.Rules(so)
	if err != nil {
		return run.Config{}, err
	}
	prec := rules.Precision
	sessions, sessionSLO, err := r.sessions.sessionLoad(env, &r.work, &r.out, r.load.Seed)
	if err == nil && sessions != nil && prec != nil {
		err = usagef("--target-precision stops a level of requests; a session workload runs its sessions whole")
	}
	return run.Config{
		Command: command, Version: Version, Started: env.Now(), Workload: run.Workload{Options: r.work.o}, Retry: retry,
		Load: lv, Seed: r.load.Seed, Stats: so, Precision: prec, Repeats: rules.Repeats, SteadyTrim: rules.SteadyTrim, Output: r.out.runOutput(env), Metadata: meta, Cost: r.out.Cost,
		Hooks: terminalHooks(env, r.out.Quiet), ReadingSpeedMs: r.verdict.ReadingSpeedMs, Sessions: sessions, SessionSLO: sessionSLO,
	}, err
}

// runConfig is the run.Config of bench's flags (sweep's too): the shared
// flags' over the wire, to the target behind an wire.Client.
func (o *BenchOptions) runConfig(env Env, command string) (cfg run.Config, err error) {
	base := o.target.Base()
	seed, fresh := runSeed(o.fs, base, o.load.Seed, env.Now())
	o.load.Seed = seed
	if cfg, err = o.config(env, command, o.load.RequestRate, base == ""); err != nil {
		return cfg, err
	}
	// Agent jobs send prompts as text on the backend given; a session is a
	// conversation, whose history goes as chat messages.
	if s := cfg.Sessions; s != nil && s.Jobs == nil {
		chained := s.History == runlog.HistoryChained
		proto, err := o.target.ForSessions(chained, flagfield.Given(o.fs, &o.target.Spec))
		switch {
		case err != nil:
			return cfg, err
		case chained && proto != openai.Responses:
			return cfg, usagef("--history chained: only --backend openai-responses chains answers (previous_response_id); the others resend the history")
		}
	}
	if why := o.target.wholeAnswers(); why != "" {
		if err := wholeAnswersError(runspec.WholeAnswers(&cfg.Stats, o.fs.Changed("percentile-metrics")), why); err != nil {
			return cfg, err
		}
	}
	if cfg.Shard, cfg.StartAt, err = o.load.ShardOf(env.Getenv, env.Now()); err != nil {
		return cfg, err
	}
	// A session's later turns resend the server's answers: keep their text.
	if cfg.Target, err = o.target.runTarget(env, base, o.out.SaveDetailed || runspec.IsSessionDataset(o.work.o.DatasetName)); err != nil {
		return cfg, err
	}
	if cfg.Workload, err = o.work.Workload(o.work.o); err != nil {
		return cfg, err
	}
	cfg.Workload.Calibrate = cfg.Workload.Calibrate && cfg.Sessions == nil
	if cfg.Scrape, err = run.ScrapeFor(&o.target.Spec); err != nil {
		return cfg, err
	}
	if o.target.TrustRemoteCode {
		fmt.Fprintln(env.Stderr, "goodput: --trust-remote-code has no effect: goodput runs no model code")
	}
	if o.target.TokenizerMode != "" {
		fmt.Fprintf(env.Stderr, "goodput: --tokenizer-mode %s has no effect: prompt lengths come from --tokenizer and the server's own counts\n", o.target.TokenizerMode)
	}
	cfg.Engine = o.sim.Engine
	if fresh && !o.out.Quiet {
		fmt.Fprintf(env.Stderr, "goodput: seed %d, fresh for this run so that the server's prefix cache holds none of its prompts from an earlier run (--seed %d sends them again)\n", seed, seed)
	}
	return cfg, nil
}

// runSeed is the seed of a run against base: the one --seed gave; for a
// server over HTTP without --seed, a fresh one from now (fresh true),
// since the same prompts again would find the server's prefix cache warm
// from the last run and bias an A/B toward whichever ran second. The
// embedded simulator starts cold every run and keeps the default, so its
// runs repeat; shards keep it too, since they must share one schedule.
// The seed is in the run's meta, so report and reruns reproduce it.
func runSeed(fs *pflag.FlagSet, base string, seed int64, now time.Time) (int64, bool) {
	if base == "" || fs.Changed("seed") || fs.Changed("shard") || fs.Changed("shards") {
		return seed, false
	}
	s := now.UnixNano() % 1_000_000_000
	if s <= 0 {
		s += 1_000_000_000 // never the default's 0, nor negative
	}
	return s, true
}

// runTarget is the target the flags name, behind an wire.Client; base
// "" starts the embedded simulator.
func (t *targetFlags) runTarget(env Env, base string, keepText bool) (run.Target, error) {
	key := ""
	if k := t.KeyEnv(); k != "" && env.Getenv != nil {
		key = env.Getenv(k)
	}
	built, err := t.Build(base, target.Conn{APIKey: key, KeepText: keepText, ReadyPoll: readyPoll, Secrets: env.secrets})
	if err != nil {
		return run.Target{}, err
	}
	rt := run.NewTarget(built)
	rt.ModelName = modelFlag(t) // the notes about the model name its flag
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

// terminalHooks show a run on the terminal (run.TerminalHooks).
func terminalHooks(env Env, quiet bool) run.Hooks {
	return run.TerminalHooks(env.Stderr, consoleOf(env), env.TTY, quiet)
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

// wholeAnswersError makes a *runspec.NoStreamError a usage error naming the
// flag that asked for a streaming metric of whole answers (why: their
// cause); other errors pass as they are.
func wholeAnswersError(err error, why string) error {
	var ne *runspec.NoStreamError
	switch {
	case !errors.As(err, &ne):
		return err
	case ne.SLO:
		return usagef("--goodput %s: %s measures E2E only (use e2el)", ne.Metric, why)
	}
	return usagef("--percentile-metrics %s: %s measures E2E only (e2el, response)", ne.Metric, why)
}
