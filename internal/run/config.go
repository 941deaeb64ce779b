package run

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"time"

	"github.com/goodput/goodput/internal/loadgen"
	"github.com/goodput/goodput/internal/publish"
	"github.com/goodput/goodput/internal/runlog"
	"github.com/goodput/goodput/internal/setting"
	"github.com/goodput/goodput/internal/shard"
	"github.com/goodput/goodput/internal/sim"
	"github.com/goodput/goodput/internal/sim/cluster"
	"github.com/goodput/goodput/internal/stats"
	"github.com/goodput/goodput/internal/sweep"
	"github.com/goodput/goodput/internal/workload"
)

// Config is everything a run needs.
type Config struct {
	// Command names the producer in the records: bench, sim or sweep.
	Command string
	// Version is the binary's version, stored in the records.
	Version string
	// Started is the wall-clock start (records' time zero; file names).
	Started time.Time
	// Target is where requests go; unused when Virtual.
	Target Target
	// Workload is what to send.
	Workload Workload
	// Load is the level of a single-level run, or every level's template
	// in a sweep (its levels set RequestRate, MaxConcurrency and Label).
	// NumPrompts 0 with no duration replays a trace whole.
	Load runlog.Level
	// Seed drives the workload and the arrival schedules.
	Seed int64
	// Virtual runs every level on the simulated engine in virtual time.
	Virtual bool
	// Engine is the simulated engine: the virtual-time target, or the
	// embedded server when Target.BaseURL is "".
	Engine sim.Config
	// Cluster, when set, runs the virtual-time levels (or sessions) on
	// replicas of the simulated engine behind a router instead of one
	// Engine, each level on a fresh cluster; records name the replica that
	// served them.
	Cluster *cluster.Config
	// Publish is the publish path after the simulated engine (virtual
	// time): output buffering and moderation that delay what the client
	// sees, not what the server did. The zero Policy publishes as emitted.
	Publish publish.Policy
	// IgnoreEOS generates every request's full output length in virtual
	// time (over HTTP it is the backend's: ignore_eos in the body);
	// NaturalStopRecorded lets requests whose dataset recorded their
	// length stop early too.
	IgnoreEOS, NaturalStopRecorded bool
	// Stats says what summaries hold (SLO, percentiles, buckets).
	Stats stats.Options
	// Precision, when set, ends each request level's sending once every
	// target's interval is that narrow (at Stats.Confidence), the
	// requests in flight finishing; NumPrompts and Duration still bound
	// the level when it never gets there.
	Precision []stats.PrecisionTarget
	// SteadyTrim leaves each level's warm-up transient (MSER-5, when the
	// level does not drift after it) out of its summary; the level keeps
	// its records to summarise again without them.
	SteadyTrim bool
	// Repeats, above 1, runs Load that many times, one level each (fresh
	// connections over HTTP, the next seed's arrivals in virtual time), and
	// the result compares the spread between them with each run's own
	// intervals (Result.Repeats).
	Repeats int
	// ReadingSpeedMs is the findings' reading speed, ms per token.
	ReadingSpeedMs float64
	// SessionSLO judges the run's sessions (session goodput).
	SessionSLO stats.SessionSLO
	// Sweep, when set, runs several levels and judges the curve.
	Sweep *SweepConfig
	// Sessions, when set, runs sessions (conversations) over HTTP instead
	// of independent requests; Load then gives only its label.
	Sessions *SessionLoad
	// Cost prices the run's GPUs and counts them, for the per-GPU and
	// cost figures of each level (zero: none).
	Cost Cost
	// Scrape, when set, polls the server's metrics endpoints during a
	// wall-clock run (the records file keeps every scrape).
	Scrape *ScrapeConfig
	// Retry, when set, retries failed requests as a client would (wall
	// clock; see RetryPolicy).
	Retry *loadgen.RetryPolicy
	// ClientTimeout is the client's limit on a whole request in virtual
	// time (sim's --timeout; 0: none), and KeepAbandoned leaves a request
	// that timed out running on the engine, a server that does not notice
	// the disconnect (simrun.Load).
	ClientTimeout time.Duration
	KeepAbandoned bool
	// Shard, when set, makes the run one shard of a run split over several
	// processes: it sends only its share of the one global schedule (see
	// Shard); nil for a whole run.
	Shard *shard.Shard
	// StartAt, when set, is the wall-clock instant the measured schedule
	// starts from (its time zero), so that processes started apart send
	// one schedule; zero starts once the run is ready.
	StartAt time.Time
	// Output names the files the run writes.
	Output Output
	// Metadata is the user's key/values, stored with the run.
	Metadata map[string]string
	// Hooks let the caller watch the run as it goes.
	Hooks Hooks
}

// Target is a server measured over HTTP.
type Target struct {
	// BaseURL is the server root; "" starts the embedded simulator
	// (Config.Engine) on loopback.
	BaseURL string
	// Name is the target as records name it (credentials removed); ""
	// means BaseURL.
	Name string
	// API is the wire API as records name it (openai, openai-chat) and
	// Endpoint the request path.
	API, Endpoint string
	// Model names the model in the records; "" takes the one the backend
	// resolves. ModelName says how the user named it, for notes about it
	// ("" says "model").
	Model, ModelName string
	// NoStream says requests are not streamed (only E2E is measured).
	NoStream bool
	// ReadyWait is how long a starting server gets to answer.
	ReadyWait time.Duration
	// RequestIDPrefix prefixes request ids ("" means goodput-<run id>-).
	RequestIDPrefix string
	// Open makes the backend for the server at baseURL, sized for
	// maxConns requests in flight, on the run's clock now.
	Open func(baseURL string, maxConns int, now func() int64) (Backend, error)
}

// Workload is what to send.
type Workload struct {
	// Options builds the dataset (NumPrompts and Seed are the run's).
	Options workload.Options
	// Calibrate fits synthesized prompts to the server's token counts
	// (its /tokenize, else probe requests) when the backend can count.
	Calibrate bool
	// OutputTokens, when > 0, asks every request of a custom dataset for
	// this many output tokens.
	OutputTokens int
}

// Output names what the run writes.
type Output struct {
	// Dir holds the result and records files ("" the working directory);
	// ResultName is the result file's name ("" a vLLM-like default).
	Dir, ResultName string
	// Label replaces the API in the default file name.
	Label string
	// Records is the records file: "" beside the result, "none" none, else
	// this path.
	Records string
	// Overwrite lets the run replace files of the names given; Saving says
	// the result file will be written (so its name must be free too), not
	// appended to.
	Overwrite, Saving bool
	// KeepRecords keeps every record in Result.Records (for an HTML
	// report or vLLM's per-request lists) instead of only the summaries.
	KeepRecords bool
	// KeepText keeps each answer's text on the records.
	KeepText bool
	// Filter passes every byte written to files (credentials blanked);
	// nil writes as is.
	Filter func(io.Writer) io.Writer

	// shard is a sharded run's identity, for its meta line and file names
	// (set once the shard has agreed its start, before they are written).
	shard *runlog.Shard
}

// Hooks let the caller watch a run; every field may be nil.
type Hooks struct {
	// Note receives a line for the user (a warning, what was chosen).
	Note func(string)
	// Log receives the embedded simulator's warnings.
	Log *slog.Logger
	// Start is told the run's meta once the target is resolved (the model
	// known) and may add sinks for the whole run (live metrics).
	Start func(meta *runlog.Meta) ([]Sink, error)
	// Level starts the caller's view of one wall-clock level (a progress
	// line): total requests (0 unknown) and the time limit; the returned
	// Watch sees the level's sends and records.
	Level func(ctx context.Context, total int, limit time.Duration) Watch
	// Sweep is told what a sweep is about to run (after its capacity probe).
	Sweep func(Plan)
	// Point receives each sweep level as it finishes, with why it counts
	// as saturated ("" if not) and, in a search, whether it met the SLO.
	Point func(p sweep.Point, saturated string, meets *Meets)
}

// Meets is a bisection run's verdict (a sweep with Search).
type Meets struct {
	OK  bool
	Why string
}

// Watch sees one level go by.
type Watch interface {
	// Sent counts a request leaving; Record a finished one; Stop ends the
	// level. Sent and Record are called concurrently.
	Sent()
	Sink
	Stop()
}

// ConfigError is a setting the run cannot use: Field names it (a
// Config/Workload/Target field or workload.Options' field, e.g. "Ramp",
// "DatasetName", "Tokenizer").
type ConfigError struct {
	Field string
	Err   error
}

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
}

// note tells the caller one line.
func (c *Config) note(format string, args ...any) {
	if c.Hooks.Note != nil {
		c.Hooks.Note(fmt.Sprintf(format, args...))
	}
}

// Cost is what the GPUs serving a run cost and how many there are.
type Cost struct {
	// GPUCostPerHour is one GPU's hourly cost (any currency; 0: not
	// priced); NumGPUs the GPUs (0: the simulated engine's tensor
	// parallelism, else 1, and only when priced).
	GPUCostPerHour float64
	NumGPUs        int
}

// Check refuses a price or count no GPU has.
func (c Cost) Check() error {
	switch {
	case !(c.GPUCostPerHour >= 0) || c.GPUCostPerHour > 1e9:
		return setting.Errorf("GPUCostPerHour", fmt.Sprint(c.GPUCostPerHour), "want a cost ≥ 0")
	case c.NumGPUs < 0 || c.NumGPUs > 1<<20:
		return setting.Errorf("NumGPUs", strconv.Itoa(c.NumGPUs), "want ≥ 1 (0: the engine's, else 1)")
	}
	return nil
}
