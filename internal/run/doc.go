// Package run is a run's lifecycle, the floor between the user's settings
// (package runspec builds a Config from them) and the packages that
// measure: a target behind a Backend (a real server, or the embedded
// simulator over HTTP), the workload, one or more load levels run by a
// levelRunner (the wall clock over loadgen, or virtual time over simrun on
// the simulated engine), the sweep driver over them (sweep.Run,
// sweep.Search, the capacity probe), every finished record fanned out once
// to the Sinks (records file, per-level collectors and findings trackers,
// the saturation monitor, live metrics, progress), and the analysis into
// one Result (per-level summaries, findings, the sweep's verdict) that
// every output renders. AnalyzeRecords over what a run wrote gives the
// same Result the run itself printed.
//
// What is not the lifecycle lives elsewhere: the user's settings and the
// --fail-if schemas in runspec, commands over saved runs (report, compare,
// fit, split comparison) in review, a run split over machines in shard.
//
// Errors a user can cause come back typed (ConfigError with its field in
// Config, FileExistsError, setting.Error), never naming command-line flags;
// the command line maps fields to its flags. Run keeps no state between
// calls, but what a Config points to (its sessions, cluster, hooks) must
// not be shared by runs in flight; one run's Sinks are called one record at
// a time.
package run
