package run

import (
	"errors"
	"testing"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/sim"
)

// TestFitSetupErrors: an unknown GPU is the engine's gpu field at fault,
// and records with nothing streamed successfully say so.
func TestFitSetupErrors(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.GPU = "no-such-gpu"
	var ce *sim.ConfigError
	if _, err := FitSetup(cfg); !errors.As(err, &ce) || ce.Field != "GPU" {
		t.Fatalf("FitSetup(gpu %q) = %v; want a *sim.ConfigError on gpu", cfg.GPU, err)
	}
	setup, err := FitSetup(sim.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if setup.TP != 1 || setup.MaxBatchedTokens <= 0 {
		t.Errorf("setup TP %d, budget %d: want 1 and the engine's default budget", setup.TP, setup.MaxBatchedTokens)
	}
	files := []runlog.RecordsFile{{Records: []runlog.Record{{ID: "a", Status: 500, ErrorClass: "http_5xx"}}}}
	_, err = FitFiles(setup, files, 0)
	if !errors.Is(err, ErrNoFitData) || err.Error() != "1 records in 1 file(s) hold no successful streamed request to fit to" {
		t.Errorf("FitFiles(one failure) = %v", err)
	}
}
