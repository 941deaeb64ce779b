// Package simvalidate replays real runs through the simulator and builds
// the accuracy matrix (package sim/validate) of what it predicted against
// what the real server measured.
//
// The truth comes in the forms users and papers have it (ReadTruth):
// goodput records of a real server, LLMServingSim's per-request vLLM
// timestamps, a CSV of aggregate points (closed-loop or rate sweeps), or
// LLMServingSim 2.0's per-scenario means beside the workload they ran.
// Each is replayed in virtual time (package simrun) with its recorded
// lengths and arrivals — for a closed-loop point, its concurrency — on the
// deployment it names: a cluster file, or a CSV row's engine columns, over
// the caller's engine configuration.
//
// It measures error and fits nothing. Validate is synchronous and safe to
// call concurrently on different Specs.
package simvalidate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/sim/validate"
	"github.com/goodput/goodput/internal/simrun"
)

// Spec is what to validate.
type Spec struct {
	// Inputs are the truth files, each with its deployment.
	Inputs []Input
	// Dir resolves relative paths (inputs, deployments, workloads, the
	// profile); "" is the working directory.
	Dir string
	// Base is the engine configuration a deployment's keys override (the
	// command line's engine flags); a truth file without a deployment runs
	// on it alone.
	Base sim.Config
	// Deployment is the cluster file of inputs that name none ("": Base,
	// one engine).
	Deployment string
	// Profile, when set, is a GPU profile (.yaml) `sim fit` fitted: every
	// run is replayed a second time with it as every replica's GPU, and
	// reported in a section of its own named "calibrated".
	Profile string
	// Workload is the trace a means file (LLMServingSim 2.0's TSV) ran
	// ("": requests.jsonl in the means file's folder).
	Workload string
	// TruthRow is the means file's row of the real measurement ("":
	// "vLLM").
	TruthRow string
	// NumPrompts is the number of requests of an aggregate point that
	// gives no num_prompts column (0: DefaultNumPrompts).
	NumPrompts int
	// Seed seeds a rate point's Poisson arrivals.
	Seed int64
}

// DefaultNumPrompts is the requests replayed per aggregate point when
// neither the row nor the Spec says.
const DefaultNumPrompts = 500

// Input is one truth file and its deployment.
type Input struct {
	// Truth is the file of the real run(s).
	Truth string
	// Deployment is its cluster file ("": Spec.Deployment).
	Deployment string
}

// InputError is a mistake in an input: the file, the line (0: the file
// as a whole), the column or key at fault ("" none), then what is wrong,
// on one line.
type InputError struct {
	File   string
	Line   int
	Column string
	Err    error
}

// Error reads "FILE:LINE: column COLUMN: problem".
func (e *InputError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if c := e.Column; c != "" {
		if strings.ContainsFunc(c, func(r rune) bool { return r <= ' ' || r == '"' || r == 0x7f }) {
			c = strconv.Quote(c) // a header cell with a line break stays one line
		}
		b.WriteString("column " + c + ": ")
	}
	b.WriteString(strings.Join(strings.Fields(e.Err.Error()), " "))
	return b.String()
}

func (e *InputError) Unwrap() error { return e.Err }

// IsInputError reports whether err is a mistake in the inputs (a truth
// file, a deployment, a workload, a profile) rather than a failed replay.
func IsInputError(err error) bool {
	var ie *InputError
	var fe *setting.FileError
	var be *runlog.BadLineError
	return errors.As(err, &ie) || errors.As(err, &fe) || errors.As(err, &be)
}

// Validate reads every input, replays each run on its deployment and
// returns the matrix: the uncalibrated section, then the calibrated one
// when Spec.Profile is set. An input's mistake is an *InputError (or a
// *setting.FileError of its deployment), found before anything runs.
func Validate(ctx context.Context, s Spec) (*validate.Matrix, error) {
	var runs []*Run
	for _, in := range s.Inputs {
		rs, err := s.read(in)
		if err != nil {
			return nil, err
		}
		runs = append(runs, rs...)
	}
	if len(runs) == 0 {
		return nil, &InputError{File: "validate", Err: errors.New("no truth file: give a records file, a points CSV or a means TSV")}
	}
	if s.Profile != "" {
		// Refuse a profile that does not load before anything runs.
		cfg := s.Base
		cfg.GPU = s.path(s.Profile)
		if _, err := sim.New(cfg); err != nil {
			return nil, &InputError{File: s.Profile, Err: err}
		}
	}
	sections := []struct{ name, profile string }{{"uncalibrated", ""}}
	if s.Profile != "" {
		sections = append(sections, struct{ name, profile string }{"calibrated", s.Profile})
	}
	m := &validate.Matrix{}
	for _, sec := range sections {
		out := validate.Section{Name: sec.name, Profile: sec.profile}
		for _, r := range runs {
			dep := r.Deployment
			if sec.profile != "" {
				dep = withGPU(dep, s.path(sec.profile))
			}
			sim, err := Replay(ctx, r, dep)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", r.Name, err)
			}
			if r.Samples != nil {
				out.AddSamples(r.Name, r.Samples, sim)
			} else {
				out.AddFigures(r.Name, r.Figures, sim)
			}
		}
		m.Sections = append(m.Sections, out)
	}
	return m, nil
}

// path resolves p against the Spec's Dir.
func (s *Spec) path(p string) string {
	if p == "" || filepath.IsAbs(p) || s.Dir == "" {
		return p
	}
	return filepath.Join(s.Dir, p)
}

// withGPU is c with every replica's GPU replaced by gpu (a profile file).
func withGPU(c cluster.Config, gpu string) cluster.Config {
	c.Replicas = append([]sim.Config(nil), c.Replicas...)
	for i := range c.Replicas {
		c.Replicas[i].GPU = gpu
	}
	if c.Disagg != nil {
		d := *c.Disagg
		c.Disagg = &d
	}
	return c
}

// Replay runs r's workload on the deployment c in virtual time and
// returns the simulated samples: one engine when c has one replica and
// nothing in front of it, else the fleet c describes.
func Replay(ctx context.Context, r *Run, c cluster.Config) (*validate.Samples, error) {
	var recs []runlog.Record
	emit := func(rec *runlog.Record) error {
		if !rec.Warmup {
			recs = append(recs, *rec)
		}
		return nil
	}
	var err error
	switch {
	case len(c.Replicas) == 1 && c.Disagg == nil && c.Gateway == nil && c.Autoscale == nil:
		var eng *sim.Engine
		if eng, err = sim.New(c.Replicas[0]); err != nil {
			return nil, err
		}
		_, err = simrun.Run(ctx, eng, r.Workload, r.Load, emit)
	default:
		var f cluster.Fleet
		if f, err = newFleet(c); err != nil {
			return nil, err
		}
		_, err = simrun.RunCluster(ctx, f, r.Workload, r.Load, emit)
	}
	if err != nil {
		return nil, err
	}
	return SamplesOf(recs), nil
}

// newFleet builds the fleet c describes, fresh.
func newFleet(c cluster.Config) (cluster.Fleet, error) {
	switch {
	case c.Gateway != nil:
		return cluster.NewGateway(c)
	case c.Disagg != nil:
		return cluster.NewDisagg(c)
	}
	return cluster.New(c)
}
