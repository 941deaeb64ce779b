package runlog

import "time"

// Meta describes the run a records file belongs to. It is the first line of
// every records file, so a file states its own conditions; the figures known
// only at the end come in the end line (RunEnd). A later Meta line that
// describes the same run (RunDiff) replaces the earlier one, as older
// goodput versions wrote it; one that describes another run starts a new
// run (files concatenated).
type Meta struct {
	// Tool is always "goodput"; Version is the binary's version.
	Tool    string `json:"tool"`
	Version string `json:"version,omitempty"`
	// Command is the producer: bench, sweep, sim or proxy.
	Command string `json:"command"`
	// Started is the wall-clock time of the run start (time zero of every
	// Record's ns offsets).
	Started time.Time `json:"started"`
	// Target is the base URL measured, or "embedded-sim" / "virtual-time".
	Target string `json:"target"`
	// Backend is the API flavour: openai (completions) or openai-chat.
	Backend string `json:"backend"`
	// Endpoint is the request path, e.g. /v1/chat/completions.
	Endpoint string `json:"endpoint"`
	// Model is the model id sent in requests.
	Model string `json:"model"`
	// Dataset names the workload, e.g. "random" or "custom:file.jsonl".
	Dataset string `json:"dataset,omitempty"`
	// Seed drives the workload and the arrival schedule.
	Seed int64 `json:"seed"`
	// Tokenizer says how prompt lengths were made and checked against the
	// server, e.g. "approx, calibrated with /tokenize: …".
	Tokenizer string `json:"tokenizer,omitempty"`
	// Levels describes the load of each level; Levels[i] belongs to records
	// with Level == i. A single run has one level.
	Levels []Level `json:"levels"`
	// NoStream says the requests were not streamed (--no-stream): a record's
	// one chunk is the whole answer, so only E2E and response time mean
	// anything.
	NoStream bool `json:"no_stream,omitempty"`
	// Simulated describes the simulated engine (model, GPU, flags), when
	// any (zero: none).
	Simulated Engine `json:"simulated,omitzero"`
	// Analysis is how the run judged itself (SLO, sweep criteria), so a
	// report of the records reaches the same verdict; nil in older files.
	Analysis *Analysis `json:"analysis,omitempty"`
	// Metadata is free-form user key/values (--metadata K=V).
	Metadata map[string]string `json:"metadata,omitempty"`
	// Shard says the run is one shard of a run split over several
	// processes: which one, and the start it shared; nil for a whole run.
	Shard *Shard `json:"shard,omitempty"`
	// Shards is, for a run merged from shards' files, each shard as Merge
	// found it (set by Merge, never written by a run).
	Shards []ShardSummary `json:"shards,omitempty"`
}

// Level is the offered load of one level of a run.
type Level struct {
	// RequestRate is the open-loop arrival rate in requests/s; 0 means
	// unpaced ("inf"): send as fast as the concurrency cap allows.
	RequestRate float64 `json:"request_rate"`
	// Burstiness is the gamma shape of inter-arrival gaps (1 = Poisson).
	Burstiness float64 `json:"burstiness"`
	// MaxConcurrency caps in-flight requests; 0 means no cap.
	MaxConcurrency int `json:"max_concurrency"`
	// NumPrompts is the measured request count asked for (0: by duration).
	NumPrompts int `json:"num_prompts"`
	// DurationS is the time limit in seconds (0: none).
	DurationS float64 `json:"duration_s,omitempty"`
	// NumWarmups is the count of warm-up requests excluded from results.
	NumWarmups int `json:"num_warmups,omitempty"`
	// Label is a human name for the level, e.g. "rate=4" or "c=16".
	Label string `json:"label,omitempty"`
	// InputLen and OutputLen are the level's own request lengths in tokens,
	// when a sweep varies them (a Pareto sweep over length pairs); 0: the
	// workload's.
	InputLen  int `json:"input_len,omitempty"`
	OutputLen int `json:"output_len,omitempty"`
	// DelayedArrivals counts arrivals that were due but could not be sent
	// on time because the in-flight cap was full (their wait shows in
	// response time). Known only at the end of the level.
	DelayedArrivals int `json:"delayed_arrivals,omitempty"`
	// ClientCPU is the CPU the load generator used over the level as a
	// fraction of all cores (0–1); 0 means not measured (the embedded
	// simulator shares the process, virtual time has no client). Stored so
	// that a report of the records reaches the same client-bound verdict.
	ClientCPU float64 `json:"client_cpu,omitempty"`
	// Ramp, when set, raises the arrival rate over the level (vLLM's
	// --ramp-up-strategy) in place of RequestRate, which is then 0.
	Ramp *Ramp `json:"ramp,omitempty"`
	// Stopped says why the level stopped before its last request when the
	// run stopped it early (a saturation stop, or "interrupted" when the
	// user cut it short); "" when it ran to the end.
	Stopped string `json:"stopped,omitempty"`
	// Repeat is the level's place, from 1, among the repeats of one load
	// (--repeats); 0 when the load was not repeated.
	Repeat int `json:"repeat,omitempty"`
	// Precision says where the level's --target-precision stood when it
	// ended: reached (sending stopped there, the requests in flight
	// finished) or not, with each figure's relative half-width; "" when
	// none was asked for.
	Precision string `json:"precision,omitempty"`
	// Shard, on a level of one shard's run as it ended, is the whole
	// level of which this one (its rate, cap and counts) was the shard's
	// share; nil for a whole run's level, and in a meta line's plan.
	Shard *LevelShard `json:"shard,omitempty"`
	// Fleet is what a simulated fleet did over the level that its records
	// cannot say, kept so that a report of the records shows what the run
	// showed; nil for one engine or a real server.
	Fleet *LevelFleet `json:"fleet,omitempty"`
}

// LevelFleet is what a simulated fleet's replicas and autoscaler did over
// one level, as only the simulation knew it.
type LevelFleet struct {
	// KVPeak is each replica's highest KV cache usage (0–1), Routed the
	// requests routed to it, in replica order.
	KVPeak []float64 `json:"kv_peak"`
	Routed []int64   `json:"routed"`
	// Autoscale is what the fleet's autoscaler did (nil: it has none).
	Autoscale *LevelAutoscale `json:"autoscale,omitempty"`
}

// LevelAutoscale is an autoscaler's rule and what it did over a level.
type LevelAutoscale struct {
	// Rule is the rule as the report states it, Spec as a flag gives it.
	Rule string `json:"rule"`
	Spec string `json:"spec"`
	// Signal, Threshold and DownThreshold are what the rule watches and
	// the levels that scale up and down.
	Signal        string  `json:"signal"`
	Threshold     float64 `json:"threshold"`
	DownThreshold float64 `json:"down_threshold"`
	// Min and Max bound the active replicas.
	Min int `json:"min"`
	Max int `json:"max"`
	// ProvisionDelayNs and CooldownNs are the rule's delays (ns).
	ProvisionDelayNs int64 `json:"provision_delay_ns"`
	CooldownNs       int64 `json:"cooldown_ns"`
	// Start, Peak and Final are the active replicas at the start, the
	// most at once and at the end; Decisions the scalings made.
	Start     int `json:"start"`
	Peak      int `json:"peak"`
	Final     int `json:"final"`
	Decisions int `json:"decisions"`
	// GPUHours is what the replicas' lifetimes cost in GPU hours.
	GPUHours float64 `json:"gpu_hours"`
	// Timeline is the fleet's size at the start and at each change.
	Timeline []ScalePoint `json:"timeline"`
}

// ScalePoint is a fleet's size from a time on (ns since the level began).
type ScalePoint struct {
	AtNs         int64 `json:"at_ns"`
	Active       int   `json:"active"`
	Provisioning int   `json:"provisioning"`
	Draining     int   `json:"draining"`
}

// Duration is the level's time limit (0: none).
func (l Level) Duration() time.Duration { return time.Duration(l.DurationS * float64(time.Second)) }

// Ramp is a level's rising arrival rate: from StartRPS to EndRPS across
// the level's requests, linearly or exponentially.
type Ramp struct {
	Strategy string  `json:"strategy"`
	StartRPS float64 `json:"start_rps"`
	EndRPS   float64 `json:"end_rps"`
}

// Analysis is how a run judged itself — its summary options, its findings'
// reading speed and, for a sweep, the sweep's criteria — stored with the
// run so that a report of its records reaches the same verdict.
type Analysis struct {
	// SLO is the goodput SLO, as --goodput writes it ("" none).
	SLO string `json:"slo,omitempty"`
	// Percentiles, Metrics and Buckets are the summary options (nil: the
	// defaults; an empty Buckets: no buckets).
	Percentiles []float64 `json:"percentiles,omitempty"`
	Metrics     []string  `json:"metrics,omitempty"`
	Buckets     []int     `json:"buckets"`
	// Confidence is the level of the intervals the run put on its figures
	// (0: none asked for, or a run from before intervals).
	Confidence float64 `json:"confidence,omitempty"`
	// SteadyTrim says the run left each level's warm-up transient out of
	// its figures (--steady-state auto).
	SteadyTrim bool `json:"steady_trim,omitempty"`
	// ReadingSpeedMs is the findings' reading speed, ms per token.
	ReadingSpeedMs float64 `json:"reading_speed_ms,omitempty"`
	// SessionSLO is the session SLO, as --session-goodput writes it.
	SessionSLO string `json:"session_slo,omitempty"`
	// GPUCostPerHour is what one GPU costs an hour (--gpu-cost-per-hour,
	// any currency; 0: not priced) and NumGPUs how many served the run
	// (--num-gpus; 0: the simulated engine's, else 1).
	GPUCostPerHour float64 `json:"gpu_cost_per_hour,omitempty"`
	NumGPUs        int     `json:"num_gpus,omitempty"`
	// SharedPrefixTokens is how many leading prompt tokens each request
	// shares with others by the workload's design (a shared system prompt,
	// a random or repeated prefix; 0: none or cache-busted), for judging
	// the server's prefix-cache hit rate.
	SharedPrefixTokens int `json:"shared_prefix_tokens,omitempty"`
	// Sweep holds a sweep's criteria; nil for a single level.
	Sweep *SweepSpec `json:"sweep,omitempty"`
}

// SweepSpec is what a sweep varied and how it judged its levels.
type SweepSpec struct {
	// Axis is request_rate or concurrency.
	Axis string `json:"axis"`
	// Planned is the number of levels planned (a saturated level ends the
	// sweep early); Search says the levels were a bisection's runs between
	// Lo and Hi to Precision.
	Planned   int     `json:"planned"`
	Search    bool    `json:"search,omitempty"`
	Lo        float64 `json:"lo,omitempty"`
	Hi        float64 `json:"hi,omitempty"`
	Precision float64 `json:"precision,omitempty"`
	// Pareto says the levels are concurrencies × length pairs, judged by
	// their Pareto frontier of per-GPU throughput against per-user
	// interactivity rather than as one curve.
	Pareto bool `json:"pareto,omitempty"`
	// KneeK, Attainment, MaxMedianQueueMs, MaxErrorRate and SaturationStop
	// are the sweep's criteria.
	KneeK            float64 `json:"knee_k"`
	Attainment       float64 `json:"slo_attainment"`
	MaxMedianQueueMs float64 `json:"max_median_queue_ms,omitempty"`
	MaxErrorRate     float64 `json:"max_error_rate"`
	SaturationStop   bool    `json:"saturation_stop"`
	// Probe is the capacity probe an automatic sweep's levels came from.
	Probe *CapacityProbe `json:"capacity_probe,omitempty"`
}

// CapacityProbe is what an automatic sweep measured before its levels:
// its levels are Fractions of RequestThroughput.
type CapacityProbe struct {
	RequestThroughput float64   `json:"request_throughput"`
	Completed         int       `json:"completed"`
	Failed            int       `json:"failed"`
	DurationS         float64   `json:"duration_s"`
	Fractions         []float64 `json:"fractions"`
}

// LiveTraffic labels the one level of a proxy's records: load its clients
// set and it observed, with no rate or concurrency of its own.
const LiveTraffic = "live traffic"
