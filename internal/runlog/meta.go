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
	// Simulated describes the simulated engine (model, GPU, flags), when any.
	Simulated map[string]any `json:"simulated,omitempty"`
	// Metadata is free-form user key/values (--metadata K=V).
	Metadata map[string]string `json:"metadata,omitempty"`
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
	// DelayedArrivals counts arrivals that were due but could not be sent
	// on time because the in-flight cap was full (their wait shows in
	// response time). Known only at the end of the level.
	DelayedArrivals int `json:"delayed_arrivals,omitempty"`
	// ClientCPU is the CPU the load generator used over the level as a
	// fraction of all cores (0–1); 0 means not measured (the embedded
	// simulator shares the process, virtual time has no client). Stored so
	// that a report of the records reaches the same client-bound verdict.
	ClientCPU float64 `json:"client_cpu,omitempty"`
}
