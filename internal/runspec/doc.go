// Package runspec is the user's settings for a run, as a user gives them
// (load, workload, output, sessions, virtual time, verdict), and the
// --fail-if schemas they are checked against. Each spec's methods check
// it and build what a run.Config holds; a bad value is a *setting.Error
// naming the field by its path in the spec, never a command-line flag (the
// command line maps fields to its flags). OutputSpec.Finish reports a
// finished run as its output settings ask and returns its outcome (an
// output that failed, the run's error, ErrInterrupted, a *GateError).
//
// Specs are plain values: a spec is not safe for concurrent use while its
// methods fill it in.
package runspec
