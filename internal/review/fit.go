package review

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/goodput/goodput/internal/report"
	"github.com/goodput/goodput/internal/run"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/fit"
)

// FitSpec is "goodput sim fit": the deployment the records were measured
// on (its GPU profile the base), the records files and where the fitted
// profile goes.
type FitSpec struct {
	Engine sim.Config
	// Files are the records files of bench runs against the server.
	Files []string
	// Output is the fitted profile's path ("" prints it only).
	Output string
	// Network is the share of a client-measured TTFT spent on the network
	// and HTTP, taken off where the server reported no timing.
	Network time.Duration
}

// Fit reads the records, fits the profile, prints it with a table of
// observed against fitted times, and writes it to Output if set. The
// engine's refusals come within "Engine"; an output not written is a
// *OutputError; every other error is of the input.
func Fit(s *FitSpec, f Files) error {
	switch {
	case len(s.Files) == 0:
		return setting.Errorf("", "", "no records file: give the records of one or more bench runs")
	case s.Network < 0:
		return setting.Errorf("Network", s.Network.String(), "want ≥ 0")
	}
	setup, err := run.FitSetup(s.Engine)
	if err != nil {
		return setting.Within("Engine", err)
	}
	files, err := ReadRecordsFiles(f.Open, s.Files, runlog.ReadOptions{Merge: true}, f.Warn)
	if err != nil {
		return err
	}
	res, err := run.FitFiles(setup, files, s.Network)
	if err != nil && !errors.Is(err, run.ErrNoFitData) {
		return fmt.Errorf("fit: %w", err)
	}
	if err != nil {
		return err
	}
	if !res.Identified() {
		// A "-fitted" profile equal to its base would pass for a fit.
		return fmt.Errorf("%w: the records identify no figure of %s's profile (no request ran alone, or decode at one concurrency only): fit records of bench --max-concurrency 1 with prompts of ≥ %d tokens and of bench at two or more --max-concurrency values",
			run.ErrNothingIdentified, setup.GPU.Name, fit.LongPrompt)
	}
	prof, err := fit.Profile(res, setup.GPU.Name)
	if err != nil {
		return err
	}
	if _, err := f.Stdout.Write(prof); err != nil {
		return &setting.OutputError{Field: "", Err: err}
	}
	if err := report.FitTable(f.Stdout, res); err != nil {
		return &setting.OutputError{Field: "", Err: err}
	}
	for _, e := range res.Estimates {
		if !e.Identified {
			f.Warn(fmt.Sprintf("%s not identified, kept from %s: %s", e.Param, setup.GPU.Name, e.Why))
		}
	}
	for _, w := range res.Warnings {
		f.Warn(w)
	}
	if s.Output != "" {
		if err := os.WriteFile(f.Path(s.Output), prof, 0o644); err != nil {
			return &setting.OutputError{Field: "Output", Err: err}
		}
	}
	return nil
}
