package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/simserve"
)

// simFlags configure the simulated engine (the embedded bench target, serve
// and sim). In bench the engine's model is --sim-model, because --model is
// the id sent in requests.
type simFlags struct {
	cfg sim.Config
}

func (s *simFlags) register(fs *pflag.FlagSet) {
	s.cfg = sim.DefaultConfig()
	fs.StringVar(&s.cfg.Model, "sim-model", s.cfg.Model, "embedded simulator's model (no --base-url): llama-3.1-8b, llama-3.1-70b, mistral-7b, qwen2.5-7b, qwen3-32b, qwen3-30b-a3b, a HF id or a .yaml profile")
	s.cfg.RegisterFlags(fs)
}

// embedded is a running in-process simulated server.
type embedded struct {
	url     string
	desc    map[string]any
	summary string
	stop    func()
}

// startEmbedded starts the simulated engine on an ephemeral loopback port.
func startEmbedded(ctx context.Context, f *simFlags, env Env) (*embedded, error) {
	// The server's warnings (e.g. a host too loaded to keep the engine's
	// schedule) go to the user's stderr, not the process default logger.
	// Through the console, so a warning prints above the live line.
	log := slog.New(slog.NewTextHandler(consoleOf(env), &slog.HandlerOptions{Level: slog.LevelWarn}))
	srv, err := simserve.New(f.cfg, simserve.Options{Logger: log})
	if err != nil {
		return nil, simConfigError(err, "--sim-model")
	}
	url, stop, err := srv.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("embedded simulator: %w", err)
	}
	desc := srv.Describe()
	return &embedded{
		url: url, desc: desc, summary: describeSim(desc),
		stop: func() {
			if err := stop(); err != nil && ctx.Err() == nil {
				fmt.Fprintf(env.Stderr, "goodput: embedded simulator: %v\n", err)
			}
		},
	}, nil
}

// simConfigError makes an engine configuration error a usage error naming
// the flag: the engine's field name as a flag, except its model, which is
// modelFlag (--sim-model where --model is the id sent in requests).
func simConfigError(err error, modelFlag string) error {
	var ce *sim.ConfigError
	if errors.As(err, &ce) {
		flag := "--" + ce.Field
		if ce.Field == "model" {
			flag = modelFlag
		}
		return usagef("%s: %v", flag, ce.Err)
	}
	return fmt.Errorf("embedded simulator: %w", err)
}

// describeSim is a one-line "model on GPU" for humans.
func describeSim(d map[string]any) string {
	var parts []string
	for _, k := range []string{"model", "gpu", "tensor_parallel_size", "dtype", "scheduler"} {
		if v, ok := d[k]; ok && fmt.Sprint(v) != "" {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if len(parts) == 0 {
		return "simulated engine"
	}
	return "simulated " + strings.Join(parts, " ")
}
